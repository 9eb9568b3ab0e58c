#define _GNU_SOURCE /* strcasestr */
/* http.c -- tracy-serve's HTTP/1.1 server: strict, small and bounded.
 *
 * One request at a time per connection: reading stops while an answer is
 * being written, so a client that does not read holds at most one answer
 * (SV_MAX_ANSWER) and its input buffer (SV_MAX_HEAD + SV_MAX_BODY); while
 * the answers being written pass SV_MAX_PENDING in all, new requests wait
 * for them to drain, and clients that have read nothing of their answer for
 * SV_STALL_MS are disconnected to make room; past
 * SV_MAX_CONNS connections a new one gets 503 (once its request is read)
 * and is closed; when the open-file limit (raised to its hard limit at
 * start) leaves fewer than SV_FD_SPARE descriptors, new connections wait
 * in the kernel's queue until one closes; a connection
 * that sends no complete request, or reads nothing of its answer, for
 * SV_IDLE_MS is closed. Only GET and POST, no chunked bodies, the Host
 * header must name the bound address (DNS rebinding), and with a token
 * every request must carry it (cookie, bearer, or ?token= once). */
#include <arpa/inet.h>
#include <ctype.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

#include "common/local.h"
#include "serve.h"

#define IN_CAP (SV_MAX_HEAD + SV_MAX_BODY)
#define NHOSTS 5

typedef struct server {
    uv_loop_t *loop;
    uv_tcp_t tcp;
    uv_signal_t sigint, sigterm;
    const sv_opts *o;
    sv_ctx ctx;
    unsigned nconns;
    size_t pending;          /* bytes of answers being written */
    struct conn *waiting;    /* connections with a request deferred */
    struct conn *all;        /* every connection */
    uv_timer_t evict;        /* while some wait: drops stalled writers */
    char hosts[NHOSTS][320];
    int nhosts;
    int any_host; /* bound to every address (with a token): any Host */
    uint64_t serials;   /* requests seen (sv_req.serial) */
    int held;           /* a connection left to libuv, not accepted yet */
} server;

typedef struct conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    server *srv;
    char *in;
    size_t inlen;
    int writing, close_after, closing, handles, queued;
    size_t out_len;          /* bytes of the answer being written */
    struct conn *next_wait;
    struct conn *next, *prev; /* in server.all */
    uint64_t write_ms;        /* when its answer started */
    int parked;               /* its request waits for an index build */
    int busy;                 /* over SV_MAX_CONNS: its request gets 503 */
    char *req;                /* that request (q points into it) */
    sv_req q;
    uv_write_t wr;
    char *head;
    sv_answer ans;
} conn;

/* ---- Parameters and errors ---------------------------------------------- */

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

long sv_param(const sv_req *q, const char *name, char *buf, size_t len) {
    size_t nl = strlen(name);
    const char *p = q->query;
    while (p && *p) {
        const char *amp = strchr(p, '&');
        size_t seg = amp ? (size_t)(amp - p) : strlen(p);
        if (seg > nl && !strncmp(p, name, nl) && p[nl] == '=') {
            size_t o = 0;
            for (size_t i = nl + 1; i < seg; i++) {
                int c = (unsigned char)p[i];
                if (c == '%') {
                    if (i + 2 >= seg || hexval(p[i + 1]) < 0 || hexval(p[i + 2]) < 0) return -2;
                    c = hexval(p[i + 1]) * 16 + hexval(p[i + 2]);
                    i += 2;
                } else if (c == '+') {
                    c = ' ';
                }
                if (c == 0 || o + 1 >= len) return -2;
                buf[o++] = (char)c;
            }
            buf[o] = 0;
            return (long)o;
        } else if (seg == nl && !strncmp(p, name, nl)) {
            if (len) buf[0] = 0;
            return 0;
        }
        p = amp ? amp + 1 : NULL;
    }
    return -1;
}

int sv_error(sv_answer *a, int status, const char *code, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jb_free(&a->body);
    jb_init(&a->body, 1 << 16);
    a->status = status;
    a->type = "application/json; charset=utf-8";
    a->static_body = NULL;
    jb_obj(&a->body);
    jb_key(&a->body, "error");
    jb_str(&a->body, msg);
    jb_key(&a->body, "code");
    jb_str(&a->body, code);
    jb_end_obj(&a->body);
    return status;
}

/* ---- Connections -------------------------------------------------------- */

static void unqueue(conn *c) {
    for (conn **p = &c->srv->waiting; *p; p = &(*p)->next_wait)
        if (*p == c) {
            *p = c->next_wait;
            break;
        }
    c->queued = 0;
}

static void on_conn(uv_stream_t *l, int status);

/* Whether one more connection leaves SV_FD_SPARE descriptors free: the
 * room counted at start less the connections and the sessions' open
 * readers. One connection is always let in. */
static int fd_left(const server *s) {
    return s->ctx.ss->fd_room == UINT64_MAX || s->nconns == 0 ||
           s->nconns + s->ctx.ss->nfiles + SV_FD_SPARE < s->ctx.ss->fd_room;
}

/* Accepts the connection held while descriptors were short, when they
 * are not any more (libuv watches the listener again). */
static void resume_accept(server *s) {
    if (s->held && fd_left(s)) {
        s->held = 0;
        on_conn((uv_stream_t *)&s->tcp, 0);
    }
}

static void on_closed(uv_handle_t *h) {
    conn *c = h->data;
    if (--c->handles) return;
    if (c->queued) unqueue(c);
    if (c->prev) c->prev->next = c->next;
    else c->srv->all = c->next;
    if (c->next) c->next->prev = c->prev;
    c->srv->nconns--;
    c->srv->ctx.ss->nconns = c->srv->nconns;
    free(c->in);
    free(c->head);
    free(c->req);
    jb_free(&c->ans.body);
    server *s = c->srv;
    free(c);
    resume_accept(s);
}

static void conn_close(conn *c) {
    if (c->closing) return;
    c->closing = 1;
    uv_read_stop((uv_stream_t *)&c->tcp);
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->tcp, on_closed);
    uv_close((uv_handle_t *)&c->timer, on_closed);
}

static void on_idle(uv_timer_t *t) { conn_close(t->data); }

static void touch(conn *c) {
    if (!c->closing) uv_timer_start(&c->timer, on_idle, SV_IDLE_MS, 0);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
    conn *c = h->data;
    (void)hint;
    if (c->inlen >= IN_CAP) {
        *buf = uv_buf_init(NULL, 0);
        return;
    }
    *buf = uv_buf_init(c->in + c->inlen, (unsigned)(IN_CAP - c->inlen));
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf);
static void process(conn *c);

static const char *reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 303: return "See Other";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    default: return "Status";
    }
}

/* While requests wait for the output budget, a client that has not read
 * its answer for SV_STALL_MS is disconnected: slow readers make room for
 * the others. */
static void on_evict(uv_timer_t *t) {
    server *s = t->data;
    uint64_t now = uv_now(s->loop);
    if (!s->waiting) {
        uv_timer_stop(t);
        return;
    }
    for (conn *c = s->all; c; c = c->next)
        if (c->writing && !c->closing && now - c->write_ms >= SV_STALL_MS) conn_close(c);
}

/* Gives deferred requests their turn while the output budget allows. */
static void run_waiting(server *s) {
    while (s->waiting && s->pending < SV_MAX_PENDING) {
        conn *c = s->waiting;
        s->waiting = c->next_wait;
        c->queued = 0;
        process(c);
    }
}

static void on_written(uv_write_t *w, int status) {
    conn *c = w->data;
    c->writing = 0;
    c->srv->pending -= c->out_len;
    c->out_len = 0;
    free(c->head);
    c->head = NULL;
    jb_free(&c->ans.body);
    memset(&c->ans, 0, sizeof c->ans);
    if (status < 0 || c->close_after) {
        conn_close(c);
        run_waiting(c->srv);
        return;
    }
    touch(c);
    if (!c->closing) uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    process(c); /* a pipelined request already buffered */
    run_waiting(c->srv);
}

/* Sends c->ans (status, headers, body); reading stops until it is out. */
static void send_answer(conn *c) {
    sv_answer *a = &c->ans;
    if (jb_failed(&a->body)) sv_error(a, 500, "too_large", "answer too large");
    const char *body = a->static_body ? a->static_body : a->body.buf ? a->body.buf : "";
    size_t blen = a->static_body ? a->static_len : a->body.len;
    const char *type = a->type ? a->type : "application/json; charset=utf-8";
    c->head = malloc(1024);
    if (!c->head) {
        conn_close(c);
        return;
    }
    int n = snprintf(c->head, 1024,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
                     "X-Frame-Options: DENY\r\nReferrer-Policy: no-referrer\r\n"
                     "Content-Security-Policy: default-src 'self'; style-src 'self' "
                     "'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'\r\n"
                     "%s%s\r\n",
                     a->status, reason(a->status), type, blen, a->extra,
                     c->close_after ? "Connection: close\r\n" : "");
    uv_buf_t bufs[2] = {uv_buf_init(c->head, (unsigned)n), uv_buf_init((char *)body, (unsigned)blen)};
    c->writing = 1;
    c->out_len = (size_t)n + blen;
    c->write_ms = uv_now(c->srv->loop);
    c->srv->pending += c->out_len;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->wr.data = c;
    touch(c);
    if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, bufs, blen ? 2 : 1, on_written) < 0) {
        c->writing = 0;
        c->srv->pending -= c->out_len;
        c->out_len = 0;
        conn_close(c);
    }
}

static void fail_conn(conn *c, int status, const char *code, const char *msg) {
    sv_error(&c->ans, status, code, "%s", msg);
    c->close_after = 1;
    send_answer(c);
}

/* ---- Request parsing ---------------------------------------------------- */

typedef struct heads {
    const char *host, *cookie, *auth, *clen, *te, *conn, *ctype;
} heads;

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = 0;
    return s;
}

/* Splits the header block (NUL-terminated, CRLF lines) into h. Returns 0
 * or -1 when malformed. */
static int parse_heads(char *p, heads *h) {
    memset(h, 0, sizeof *h);
    while (*p) {
        char *eol = strstr(p, "\r\n");
        if (!eol) return -1;
        *eol = 0;
        char *colon = strchr(p, ':');
        if (!colon || colon == p) return -1;
        *colon = 0;
        for (char *k = p; *k; k++)
            if (*k <= ' ' || *k >= 127) return -1;
        char *v = trim(colon + 1);
        for (char *k = v; *k; k++)
            if ((unsigned char)*k < 0x20 && *k != '\t') return -1;
        const char **slot = !strcasecmp(p, "host") ? &h->host
                            : !strcasecmp(p, "cookie") ? &h->cookie
                            : !strcasecmp(p, "authorization") ? &h->auth
                            : !strcasecmp(p, "content-length") ? &h->clen
                            : !strcasecmp(p, "transfer-encoding") ? &h->te
                            : !strcasecmp(p, "connection") ? &h->conn
                            : !strcasecmp(p, "content-type") ? &h->ctype : NULL;
        if (slot) {
            if (*slot && slot != &h->cookie) return -1; /* repeated */
            *slot = v;
        }
        p = eol + 2;
    }
    return 0;
}

static int host_ok(const server *s, const char *host) {
    if (!host) return 0;
    if (s->any_host) return 1;
    for (int i = 0; i < s->nhosts; i++)
        if (!strcasecmp(host, s->hosts[i])) return 1;
    return 0;
}

static int token_eq(const server *s, const char *t, size_t n) {
    if (n != s->o->token_len) return 0;
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++) d |= (unsigned char)(t[i] ^ s->o->token[i]);
    return d == 0;
}

/* Whether the cookie header holds tracy_token=TOKEN. */
static int cookie_ok(const server *s, const char *cookie) {
    const char *p = cookie;
    while (p && (p = strstr(p, "tracy_token=")) != NULL) {
        if (p == cookie || p[-1] == ' ' || p[-1] == ';') {
            const char *v = p + 12;
            size_t n = strcspn(v, "; ");
            if (token_eq(s, v, n)) return 1;
        }
        p += 12;
    }
    return 0;
}

/* Token check. Returns 1 to go on, 0 when c->ans holds the answer. */
static int authorize(conn *c, const heads *h, sv_req *q) {
    server *s = c->srv;
    if (!s->o->token) return 1;
    char tok[512];
    long n = sv_param(q, "token", tok, sizeof tok);
    if (n >= 0) {
        if (!token_eq(s, tok, (size_t)n)) {
            sv_error(&c->ans, 403, "forbidden", "wrong token");
            return 0;
        }
        sv_error(&c->ans, 303, "see_other", "token accepted");
        int len = (int)(q->path_len < 100 ? q->path_len : 1);
        snprintf(c->ans.extra, sizeof c->ans.extra,
                 "Set-Cookie: tracy_token=%.*s; HttpOnly; SameSite=Strict; Path=/\r\n"
                 "Location: %.*s\r\n",
                 (int)n, tok, len, len == 1 && q->path_len >= 100 ? "/" : q->path);
        return 0;
    }
    if (h->auth && !strncmp(h->auth, "Bearer ", 7) && token_eq(s, h->auth + 7, strlen(h->auth + 7)))
        return 1;
    if (cookie_ok(s, h->cookie)) return 1;
    sv_error(&c->ans, 403, "forbidden", "this server needs its token: open the URL it printed");
    return 0;
}

/* Parses and answers one request; returns 1 when req can be freed, 0 when
 * the parked request keeps it. */
static int handle_parsed(conn *c, char *req, size_t hlen, size_t blen) {    req[hlen - 2] = 0; /* the blank line's CRLF */
    char *line_end = strstr(req, "\r\n");
    if (!line_end) {
        fail_conn(c, 400, "bad_request", "malformed request line");
        return 1;
    }
    *line_end = 0;
    char *sp1 = strchr(req, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    heads h;
    if (!sp1 || !sp2 || strchr(sp2 + 1, ' ') || parse_heads(line_end + 2, &h) < 0) {
        fail_conn(c, 400, "bad_request", "malformed request");
        return 1;
    }
    *sp1 = *sp2 = 0;
    if (strcmp(sp2 + 1, "HTTP/1.1") && strcmp(sp2 + 1, "HTTP/1.0")) {
        fail_conn(c, 400, "bad_request", "HTTP/1.1 only");
        return 1;
    }
    c->close_after = !strcmp(sp2 + 1, "HTTP/1.0") || (h.conn && !strcasecmp(h.conn, "close"));
    sv_req q;
    memset(&q, 0, sizeof q);
    size_t ml = strlen(req);
    memcpy(q.method, ml < sizeof q.method ? req : "?", ml < sizeof q.method ? ml + 1 : 2);
    char *target = sp1 + 1;
    if (target[0] != '/') {
        fail_conn(c, 400, "bad_request", "target must be a path");
        return 1;
    }
    for (char *k = target; *k; k++)
        if ((unsigned char)*k <= ' ' || (unsigned char)*k >= 127) {
            fail_conn(c, 400, "bad_request", "bad character in target");
            return 1;
        }
    char *qm = strchr(target, '?');
    q.path = target;
    q.path_len = qm ? (size_t)(qm - target) : strlen(target);
    if (qm) *qm = 0;
    q.query = qm ? qm + 1 : "";
    q.body = req + hlen;
    q.body_len = blen;
    q.serial = ++c->srv->serials;
    q.ctype = h.ctype;
    memset(&c->ans, 0, sizeof c->ans);
    if (!host_ok(c->srv, h.host)) {
        sv_error(&c->ans, 403, "forbidden", "Host header is not this server's address");
    } else if (authorize(c, &h, &q)) {
        c->ans.status = 200;
        c->srv->ctx.o = c->srv->o;
        sv_route(&c->srv->ctx, &q, &c->ans);
        if (c->ans.deferred) { /* an index is being built: asked again after */
            c->parked = 1;
            c->req = req;
            c->q = q;
            uv_timer_stop(&c->timer);
            return 0;
        }
    }
    send_answer(c);
    return 1;
}

/* Handles one complete request of `hlen` header bytes and `blen` body; owns
 * req (kept while the request is parked). */
static void handle(conn *c, char *req, size_t hlen, size_t blen) {
    if (c->busy) { /* its request read (closing leaves nothing unread): 503 */
        free(req);
        sv_error(&c->ans, 503, "busy", "too many connections: try again");
        snprintf(c->ans.extra, sizeof c->ans.extra, "Retry-After: 1\r\n");
        c->close_after = 1;
        send_answer(c);
        return;
    }
    if (handle_parsed(c, req, hlen, blen)) free(req);
}

/* After an index build: the parked requests are routed again. */
static void on_built(void *ctx) {
    server *s = ctx;
    for (conn *c = s->all; c; c = c->next) {
        if (!c->parked || c->closing) continue;
        jb_free(&c->ans.body);
        memset(&c->ans, 0, sizeof c->ans);
        c->ans.status = 200;
        sv_route(&s->ctx, &c->q, &c->ans);
        if (c->ans.deferred) continue;
        c->parked = 0;
        free(c->req);
        c->req = NULL;
        send_answer(c);
    }
}

/* Parses what is buffered: one request when complete. */
static void process(conn *c) {
    if (c->writing || c->closing || !c->inlen || c->queued || c->parked) return;
    if (c->srv->pending >= SV_MAX_PENDING) { /* answered when others drain */
        c->queued = 1;
        c->next_wait = c->srv->waiting;
        c->srv->waiting = c;
        if (!uv_is_active((uv_handle_t *)&c->srv->evict))
            uv_timer_start(&c->srv->evict, on_evict, SV_STALL_MS / 4, SV_STALL_MS / 4);
        return;
    }
    char *end = NULL;
    size_t scan = c->inlen < SV_MAX_HEAD ? c->inlen : SV_MAX_HEAD;
    for (size_t i = 3; i < scan; i++)
        if (c->in[i] == '\n' && c->in[i - 1] == '\r' && c->in[i - 2] == '\n' && c->in[i - 3] == '\r') {
            end = c->in + i + 1;
            break;
        }
    if (!end) {
        if (c->inlen >= SV_MAX_HEAD) fail_conn(c, 413, "too_large", "request head over 8 KiB");
        return;
    }
    size_t hlen = (size_t)(end - c->in);
    /* Content-Length, Transfer-Encoding: looked at before the full parse */
    size_t blen = 0;
    char save = *end;
    *end = 0;
    const char *cl = strcasestr(c->in, "\r\ncontent-length:");
    int chunked = strcasestr(c->in, "\r\ntransfer-encoding:") != NULL;
    *end = save;
    if (chunked) {
        fail_conn(c, 400, "bad_request", "chunked bodies are not accepted");
        return;
    }
    if (cl) {
        char *e;
        cl += 17;
        while (*cl == ' ') cl++;
        unsigned long long v = strtoull(cl, &e, 10);
        if (e == cl || !isdigit((unsigned char)*cl) || (*e != '\r' && *e != ' ')) {
            fail_conn(c, 400, "bad_request", "bad Content-Length");
            return;
        }
        if (v > SV_MAX_BODY) {
            fail_conn(c, 413, "too_large", "body over 64 KiB");
            return;
        }
        blen = (size_t)v;
    }
    if (c->inlen < hlen + blen) return; /* body still coming */
    char *req = malloc(hlen + blen + 1);
    if (!req) {
        conn_close(c);
        return;
    }
    memcpy(req, c->in, hlen + blen);
    req[hlen + blen] = 0;
    memmove(c->in, c->in + hlen + blen, c->inlen - hlen - blen);
    c->inlen -= hlen + blen;
    handle(c, req, hlen, blen);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf) {
    conn *c = st->data;
    (void)buf;
    if (n < 0) {
        conn_close(c);
        return;
    }
    if (n == 0) {
        if (c->inlen < IN_CAP) return;
        if (c->parked || c->writing) uv_read_stop(st); /* resumed after its answer */
        else fail_conn(c, 413, "too_large", "request too large");
        return;
    }
    c->inlen += (size_t)n;
    touch(c);
    process(c);
}

/* A new connection. Past SV_MAX_CONNS it is answered 503 (once its
 * request is read) and closed. When descriptors run short it is not
 * accepted: libuv holds it and stops watching the listener, the others
 * wait in the kernel's queue, and resume_accept takes it when one closes
 * (rather than running out, where libuv would accept and reset them). */
static void on_conn(uv_stream_t *l, int status) {
    server *s = l->data;
    if (status < 0) return;
    if (!fd_left(s)) {
        s->held = 1;
        return;
    }
    conn *c = calloc(1, sizeof *c);
    if (!c) return;
    c->srv = s;
    c->in = malloc(IN_CAP);
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    c->handles = 2;
    s->nconns++;
    s->ctx.ss->nconns = s->nconns;
    c->next = s->all;
    if (s->all) s->all->prev = c;
    s->all = c;
    if (!c->in || uv_accept(l, (uv_stream_t *)&c->tcp) < 0) {
        conn_close(c);
        return;
    }
    c->busy = s->nconns > SV_MAX_CONNS;
    touch(c);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* ---- Start ------------------------------------------------------------- */

static void on_signal(uv_signal_t *sg, int signum) {
    (void)signum;
    uv_stop(sg->loop);
}

static void add_host(server *s, const char *h, int port) {
    if (s->nhosts < NHOSTS)
        snprintf(s->hosts[s->nhosts++], sizeof s->hosts[0], "%s:%d", h, port);
}

int sv_run(const sv_opts *o, sv_sessions *ss) {
    server s;
    memset(&s, 0, sizeof s);
    s.loop = uv_default_loop();
    s.o = o;
    s.ctx.ss = ss;
    s.ctx.o = o;
    ss->loop = s.loop;
    ss->built = on_built;
    ss->built_ctx = &s;
    struct sockaddr_storage sa;
    int v6 = strchr(o->addr, ':') != NULL;
    int rc = v6 ? uv_ip6_addr(o->addr, o->port, (struct sockaddr_in6 *)&sa)
                : uv_ip4_addr(o->addr, o->port, (struct sockaddr_in *)&sa);
    if (rc < 0) {
        cv_err("bad address '%s'", o->addr);
        return 1;
    }
    /* A write to a client that reset its connection fails with EPIPE
     * (the connection closes); the default SIGPIPE would end the server. */
    signal(SIGPIPE, SIG_IGN);
    lt__nofile_raise();
    uv_tcp_init(s.loop, &s.tcp);
    s.tcp.data = &s;
    rc = uv_tcp_bind(&s.tcp, (struct sockaddr *)&sa, 0);
    if (!rc) rc = uv_listen((uv_stream_t *)&s.tcp, 511, on_conn);
    if (rc < 0) {
        cv_err("cannot listen on %s port %d: %s", o->addr, o->port, uv_strerror(rc));
        return 3;
    }
    struct sockaddr_storage got;
    int gl = sizeof got;
    uv_tcp_getsockname(&s.tcp, (struct sockaddr *)&got, &gl);
    int port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                               : ((struct sockaddr_in *)&got)->sin_port);
    char shown[300];
    snprintf(shown, sizeof shown, v6 ? "[%s]" : "%s", o->addr);
    add_host(&s, shown, port);
    s.any_host = !strcmp(o->addr, "0.0.0.0") || !strcmp(o->addr, "::");
    if (lt__is_loopback(&sa)) {
        add_host(&s, "127.0.0.1", port);
        add_host(&s, "localhost", port);
        add_host(&s, "[::1]", port);
    }
    printf("%s: serving %zu trace(s) at http://%s:%d/%s%s\n", SV_NAME, ss->n, shown, port,
           o->token ? "?token=" : "", o->token ? o->token : "");
    fflush(stdout);
    uv_timer_init(s.loop, &s.evict);
    s.evict.data = &s;
    uv_signal_init(s.loop, &s.sigint);
    uv_signal_init(s.loop, &s.sigterm);
    uv_signal_start(&s.sigint, on_signal, SIGINT);
    uv_signal_start(&s.sigterm, on_signal, SIGTERM);
    uv_unref((uv_handle_t *)&s.sigint);
    uv_unref((uv_handle_t *)&s.sigterm);
    ss->fd_room = lt__nofile_room();
    uv_run(s.loop, UV_RUN_DEFAULT);
    return 0;
}
