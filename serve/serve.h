/* serve.h -- tracy-serve: a small HTTP/1.1 server (http.c) over the
 * sessions found under the served paths (sessions.c), answering the JSON
 * API of serve/API.md (api.c, api_range.c) and serving the page embedded
 * from serve/web/ (assets.c). Single-threaded, on libuv. */
#ifndef SERVE_SERVE_H
#define SERVE_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"
#include "trace.h"
#include "view.h"

#define SV_NAME "tracy-serve"
#define SV_DEFAULT_PORT 8791
#define SV_MAX_HEAD 8192u           /* request line + headers */
#define SV_MAX_BODY 65536u          /* POST bodies */
#define SV_MAX_CONNS 512u           /* past it: 503 and close */
#define SV_MAX_ANSWER (64u << 20)   /* one answer */
#define SV_MAX_PENDING (64u << 20)  /* answers being written, all together */
#define SV_STALL_MS 2000u           /* over that: a writer stalled this long goes */
#define SV_IDLE_MS 30000u           /* no request, or no write progress */

/* ---- Options (main.c) ---- */
typedef struct sv_opts {
    const char *addr;
    int port;
    char *token;            /* NULL: none */
    size_t token_len;
    int insecure;
    char cache[4096];
    char **paths;
    int npaths;
} sv_opts;

/* ---- Sessions (sessions.c) ---- */
typedef struct sv_session {
    char id[17];
    char *path;             /* absolute, resolved */
    char *rel;              /* relative to its root */
    int root;
    uint64_t size, mtime_ns, ino, dev;
    int seen;               /* found by the last scan */
    vw_index *ix;           /* NULL until opened */
    lt_reader *r;           /* its metadata, opened with ix */
    char error[256];        /* last failure, "" when none */
    uint64_t generation;
} sv_session;

typedef struct sv_sessions {
    char **roots;           /* resolved served paths */
    int *root_is_dir;
    int nroots;
    sv_session *s;
    size_t n, cap;
    const char *cache;
} sv_sessions;

int sv_sessions_init(sv_sessions *ss, char **paths, int n, const char *cache);
void sv_sessions_free(sv_sessions *ss);
/* Walks the roots again (stat only): new traces join, vanished ones go. */
void sv_sessions_scan(sv_sessions *ss);
/* The session of an id (after a rescan when unknown), or NULL. */
sv_session *sv_session_find(sv_sessions *ss, const char *id);
/* Opens (or re-opens when the trace changed) its index and metadata.
 * Returns 0, or -1 with s->error set. */
int sv_session_open(sv_sessions *ss, sv_session *s);
/* "complete", "writing", "truncated" or "error". */
const char *sv_session_state(const sv_session *s);

/* ---- Requests and answers (http.c) ---- */
typedef struct sv_req {
    char method[8];
    const char *path;       /* without the query */
    size_t path_len;
    const char *query;      /* after '?', NUL-terminated, "" when none */
    const char *body;
    size_t body_len;
} sv_req;

typedef struct sv_answer {
    int status;
    const char *type;       /* content type */
    jb body;                /* JSON or other bytes */
    const char *static_body;/* instead of body when non-NULL */
    size_t static_len;
    char extra[256];        /* extra header lines, each ending in \r\n */
} sv_answer;

/* Query parameter `name` percent-decoded into buf; returns its length, -1
 * when absent, -2 when malformed (bad escape, NUL, longer than len - 1). */
long sv_param(const sv_req *q, const char *name, char *buf, size_t len);
/* Sets an error answer {"error":..., "code":...}. Returns status. */
int sv_error(sv_answer *a, int status, const char *code, const char *fmt, ...);

/* ---- Routing (api.c) ---- */
typedef struct sv_ctx {
    sv_sessions *ss;
    const sv_opts *o;
} sv_ctx;
void sv_route(sv_ctx *c, const sv_req *q, sv_answer *a);
/* The endpoints of api_range.c. */
void sv_api_range(sv_ctx *c, sv_session *s, const sv_req *q, sv_answer *a);
void sv_api_diff(sv_ctx *c, const sv_req *q, sv_answer *a);
void sv_api_trend(sv_ctx *c, const sv_req *q, sv_answer *a);

/* ---- Assets (assets.c) ---- */
/* The embedded file `name` (flat name) with its type; 0 or -1. */
int sv_asset(const char *name, size_t len, const char **data, size_t *dlen, const char **type);

/* ---- Server (http.c) ---- */
int sv_run(const sv_opts *o, sv_sessions *ss);

#endif
