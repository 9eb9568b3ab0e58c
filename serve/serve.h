/* serve.h -- tracy-serve: a small HTTP/1.1 server (http.c) over the
 * sessions found under the served paths (sessions.c), answering the JSON
 * API of serve/API.md (api.c, api_range.c) and serving the page embedded
 * from serve/web/ (assets.c). Single-threaded, on libuv. */
#ifndef SERVE_SERVE_H
#define SERVE_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "json.h"
#include "prog/prog.h"
#include "trace.h"
#include "view/view.h"

#define SV_NAME "tracy-serve"
#define SV_DEFAULT_PORT 8791
#define SV_MAX_HEAD 8192u           /* request line + headers */
#define SV_MAX_BODY 65536u          /* POST bodies */
#define SV_MAX_CONNS 512u           /* past it: 503 and close */
#define SV_FD_SPARE 48u             /* descriptors a new connection leaves free */
#define SV_FD_SPARE_FILES 24u       /* those a trace's reader leaves (builds, jobs, accept) */
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
/* What /api/sessions shows of a trace, as tracy-info counts it; kept while
 * the file's size and mtime stay. */
typedef struct sv_summary {
    int valid;
    uint64_t size, mtime;   /* the identity it was made for */
    int complete;
    char **programs;        /* distinct, in process order */
    uint32_t nprograms;
    uint64_t wall_start, duration, processes, threads, zones, lost;
} sv_summary;

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
    int want_build, building; /* its index is queued / being built */
    int failed;             /* the last build failed for this identity: */
    uint64_t fail_size, fail_mtime; /* not tried again until it changes, */
    int fail_fds;           /* or, when descriptors ran out, */
    uint64_t fail_ms;       /* a second after this (CLOCK_MONOTONIC) */
    sv_summary sum;
} sv_session;

/* A capture asked of a listening program (capture.c): capture-release
 * --connect runs as a child process writing into the first served folder. */
enum sv_cap_state { SV_CAP_STARTING, SV_CAP_RECORDING, SV_CAP_DONE, SV_CAP_FAILED };
typedef struct sv_capture {
    char id[17];
    char *path, *rel;       /* the trace it writes (absolute; relative to root 0) */
    char addr[256];
    uint64_t duration_ms, started_ns;
    int state;              /* enum sv_cap_state */
    int answered;           /* its POST got its answer */
    uint64_t serial;        /* the POST's request serial */
    int status;             /* the answer when it failed before recording */
    const char *code;
    char error[256];
    char line[512];         /* the child's last line of stderr */
    size_t linelen;
    int running;            /* handles of the child still open */
    int exited, exit_ok, eof; /* the child ended (well); its stderr ended */
    uv_process_t proc;
    uv_pipe_t err;
    struct sv_sessions *ss;
} sv_capture;

typedef struct sv_sessions {
    char **roots;           /* resolved served paths */
    int *root_is_dir;
    int nroots;
    sv_session *s;
    size_t n, cap;
    const char *cache;
    /* Index builds run one at a time on libuv's thread pool. */
    uv_loop_t *loop;        /* NULL: build in the caller */
    uv_work_t work;
    int busy;
    char build_id[17];
    char *build_trace, *build_out;
    uint64_t build_size, build_mtime;
    int build_rc;
    char build_err[256];
    void (*built)(void *ctx); /* called in the loop after each build */
    void *built_ctx;
    sv_capture **caps;      /* captures asked by POST /api/capture */
    size_t ncaps;
    /* Indexes (and readers) lent to jobs on the thread pool: closing their
     * session leaves them to the job, which closes them when it returns. */
    struct sv_loan { vw_index *ix; lt_reader *r; int users, retired; } *loans;
    size_t nloans;
    size_t nfiles;          /* descriptors its open readers hold (one each) */
    size_t nconns;          /* connections open (http.c keeps it) */
    uint64_t fd_room;       /* descriptors free at start (UINT64_MAX: no limit) */
} sv_sessions;

int sv_sessions_init(sv_sessions *ss, char **paths, int n, const char *cache);
void sv_sessions_free(sv_sessions *ss);
/* Walks the roots again (stat only): new traces join, vanished ones go. */
void sv_sessions_scan(sv_sessions *ss);
/* The session of an id (after a rescan when unknown), or NULL. */
sv_session *sv_session_find(sv_sessions *ss, const char *id);
/* Opens (or re-opens when the trace changed) its index and metadata.
 * Returns 0, -1 with s->error set, or 1 when its index is being built (on
 * the thread pool; ss->built is called when a build ends: ask again). A
 * trace whose build failed is not tried again until it changes. A trace
 * that changed after its index was opened (one being written) keeps
 * answering from that index while the new one is built. */
int sv_session_open(sv_sessions *ss, sv_session *s);
/* Lends s->ix and s->r (open) to a job on another thread: they stay
 * mapped until sv_session_return, even when the session closes them
 * meanwhile (a growing trace reindexed, a file gone). 0 or -1 (memory). */
int sv_session_lend(sv_sessions *ss, const sv_session *s);
void sv_session_return(sv_sessions *ss, const vw_index *ix);
/* Fills s->sum: from the file's header and trailer when it is complete,
 * else with the index's counts. Returns 0, -1 (s->error), or 1 when an
 * index is being built first. */
int sv_session_summary(sv_sessions *ss, sv_session *s);
/* Whether a failure's reason says descriptors ran out (EMFILE, ENFILE). */
int sv_no_fds(const char *why);
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
    uint64_t serial;        /* distinct per request (kept when it waits) */
    const char *ctype;      /* Content-Type, NULL when none */
} sv_req;

typedef struct sv_answer {
    int status;
    const char *type;       /* content type */
    jb body;                /* JSON or other bytes */
    const char *static_body;/* instead of body when non-NULL */
    size_t static_len;
    char extra[256];        /* extra header lines, each ending in \r\n */
    int deferred;           /* no answer yet: asked again after a build */
} sv_answer;

/* Query parameter `name` percent-decoded into buf; returns its length, -1
 * when absent, -2 when malformed (bad escape, NUL, longer than len - 1). */
long sv_param(const sv_req *q, const char *name, char *buf, size_t len);
/* A time parameter: a finite number of ns in [0, 2^53] into *out. Returns
 * 1 found, 0 absent, -1 malformed or out of range (a 400 answer set). */
int sv_time_param(const sv_req *q, sv_answer *a, const char *name, uint64_t *out);
/* Parses tracks=1,2,3 into n flags, one per track (every track when
 * absent): a malloc'd array, or NULL with a 400 (or 500) answer set. */
uint8_t *sv_tracks_param(const sv_req *q, sv_answer *a, uint32_t n);
/* Sets an error answer {"error":..., "code":...}. Returns status. */
int sv_error(sv_answer *a, int status, const char *code, const char *fmt, ...);
/* Sets the answer for trace `name` that could not be read: 503
 * `no_descriptors` when descriptors ran out (try again), else 422
 * `unreadable`. */
void sv_unreadable(sv_answer *a, const char *name, const char *why);


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
/* /api/t/ID/lines (api_lines.c): a function's line heat, counted on the
 * thread pool as /range is (sv_job_lines). */
void sv_api_lines(sv_ctx *c, sv_session *s, const sv_req *q, sv_answer *a);
/* The answer of /lines for function `func` (any thread: reads the
 * session's index and reader only). */
void sv_lines_compute(sv_session *s, uint32_t func, sv_answer *a);
/* Whether request q's job is done (1, its answer moved into a), waiting (1,
 * a deferred) or unknown (0); else queues sv_lines_compute for it. */
int sv_job_take(const sv_req *q, sv_answer *a);
void sv_job_lines(sv_ctx *c, sv_session *s, const sv_req *q, sv_answer *a, uint32_t func);

/* ---- Captures (capture.c) ---- */
/* POST /api/capture: starts a capture (the answer waits, deferred, until
 * the program records or refuses), or answers a waiting one. */
void sv_api_capture(sv_ctx *c, const sv_req *q, sv_answer *a);
/* The capture of a session id that is not a file yet (recording, or
 * failed), or NULL. */
const sv_capture *sv_capture_find(const sv_sessions *ss, const char *id);
/* Writes the captures not yet files as /api/sessions entries. */
void sv_captures_json(jb *j, const sv_sessions *ss);
/* Lets the captures go (their children run on; called at exit). */
void sv_captures_free(sv_sessions *ss);

/* ---- Assets (assets.c) ---- */
/* The embedded file `name` (flat name) with its type; 0 or -1. */
int sv_asset(const char *name, size_t len, const char **data, size_t *dlen, const char **type);

/* ---- Server (http.c) ---- */
int sv_run(const sv_opts *o, sv_sessions *ss);

#endif
