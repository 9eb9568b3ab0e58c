/* capture.c -- POST /api/capture: asks a program listening for captures
 * (python -m tracy --listen, tracy.start_server) to record itself, by
 * running `capture-release --connect ADDR --duration MSms -o FILE` as a
 * child process (the same code and protocol as on the command line). The
 * child's stderr says when the program records ("recording ...") or why it
 * did not; its exit says whether the trace arrived. The POST's answer waits
 * (deferred) until the program records or refuses. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

#define MAX_DURATION_MS 86400000ull
#define MAX_CAPTURES 64        /* kept in memory; finished ones are dropped first */
#define CHILD_PREFIX "capture-release: "

extern char **environ;

/* ---- The body: a flat JSON object ---------------------------------------- */

typedef struct cap_ask {
    char addr[256], token[256];
    uint64_t ms;
    int has_addr, has_ms;
} cap_ask;

static const char *skip_ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* A JSON string without escapes into buf (cap bytes): the end, or NULL. */
static const char *json_plain_str(const char *p, const char *e, char *buf, size_t cap) {
    if (p >= e || *p != '"') return NULL;
    size_t n = 0;
    for (p++; p < e && *p != '"'; p++) {
        if (*p == '\\' || (unsigned char)*p < 0x20 || n + 1 >= cap) return NULL;
        buf[n++] = *p;
    }
    if (p >= e) return NULL;
    buf[n] = 0;
    return p + 1;
}

/* Parses {"address": "...", "duration_ms": N, "token": "..."}; other keys
 * with scalar values are ignored. Returns 0, or -1 with a reason in why. */
static int parse_ask(const char *p, size_t len, cap_ask *k, const char **why) {
    const char *e = p + len;
    memset(k, 0, sizeof k[0]);
    *why = "the body must be a JSON object {\"address\": \"HOST:PORT\", \"duration_ms\": N}";
    p = skip_ws(p, e);
    if (p >= e || *p++ != '{') return -1;
    p = skip_ws(p, e);
    if (p < e && *p == '}') p++;
    else
        for (;;) {
            char key[32], val[256];
            p = json_plain_str(skip_ws(p, e), e, key, sizeof key);
            if (!p || (p = skip_ws(p, e)) >= e || *p++ != ':') return -1;
            p = skip_ws(p, e);
            if (p < e && *p == '"') {
                if (!(p = json_plain_str(p, e, val, sizeof val))) {
                    *why = "a string value is too long (255 bytes) or has escapes";
                    return -1;
                }
                if (!strcmp(key, "address")) memcpy(k->addr, val, sizeof val), k->has_addr = 1;
                else if (!strcmp(key, "token")) memcpy(k->token, val, sizeof val);
                else if (!strcmp(key, "duration_ms")) {
                    *why = "duration_ms must be an integer of ms";
                    return -1;
                }
            } else {
                const char *v = p;
                while (p < e && (isalnum((unsigned char)*p) || strchr("+-.", *p))) p++;
                if (p == v) return -1;
                if (!strcmp(key, "duration_ms")) {
                    uint64_t ms = 0;
                    for (const char *d = v; d < p; d++) {
                        if (!isdigit((unsigned char)*d) || ms > MAX_DURATION_MS) {
                            *why = "duration_ms must be an integer of ms in 1..86400000";
                            return -1;
                        }
                        ms = ms * 10 + (uint64_t)(*d - '0');
                    }
                    k->ms = ms, k->has_ms = 1;
                } else if (!strcmp(key, "address") || !strcmp(key, "token")) {
                    return -1;
                }
            }
            p = skip_ws(p, e);
            if (p < e && *p == ',') {
                p++;
                continue;
            }
            if (p < e && *p == '}') {
                p++;
                break;
            }
            return -1;
        }
    if (skip_ws(p, e) != e) return -1;
    if (!k->has_addr || !k->has_ms || k->ms < 1 || k->ms > MAX_DURATION_MS) {
        *why = "address (HOST:PORT) and duration_ms (1..86400000) are required";
        return -1;
    }
    const char *colon = strrchr(k->addr, ':');
    int ok = colon && colon > k->addr && colon[1];
    for (const char *c = colon ? colon + 1 : ""; ok && *c; c++) ok = isdigit((unsigned char)*c);
    for (const char *c = k->addr; ok && *c; c++) ok = (unsigned char)*c > ' ' && *c != 0x7f;
    if (!ok) {
        *why = "address must be HOST:PORT or [V6]:PORT";
        return -1;
    }
    for (const char *c = k->token; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("-._~", *c)) {
            *why = "token must be URL-safe characters (A-Z a-z 0-9 - . _ ~)";
            return -1;
        }
    return 0;
}

/* ---- The captures -------------------------------------------------------- */

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

const sv_capture *sv_capture_find(const sv_sessions *ss, const char *id) {
    for (size_t i = 0; i < ss->ncaps; i++)
        if ((ss->caps[i]->state == SV_CAP_RECORDING ||
             (ss->caps[i]->state == SV_CAP_FAILED && !ss->caps[i]->status)) &&
            !strcmp(ss->caps[i]->id, id))
            return ss->caps[i];
    return NULL;
}

void sv_captures_json(jb *j, const sv_sessions *ss) {
    for (size_t i = ss->ncaps; i-- > 0;) {
        const sv_capture *k = ss->caps[i];
        if (k->state == SV_CAP_DONE || k->state == SV_CAP_STARTING) continue;
        if (k->state == SV_CAP_FAILED && k->status) continue; /* refused: said to its POST */
        int file = 0; /* the trace arrived before the child ended */
        for (size_t s = 0; s < ss->n && !file; s++) file = !strcmp(ss->s[s].id, k->id);
        if (file) continue;
        int failed = k->state == SV_CAP_FAILED;
        jb_obj(j);
        jb_key(j, "id"), jb_str(j, k->id);
        jb_key(j, "path"), jb_str(j, k->rel);
        jb_key(j, "root"), jb_str(j, ss->roots[0]);
        jb_key(j, "size"), jb_u64(j, 0);
        jb_key(j, "mtime_ns"), jb_u64s(j, k->started_ns);
        jb_key(j, "state"), jb_str(j, failed ? "error" : "writing");
        jb_key(j, "capture"), jb_str(j, failed ? "failed" : "recording");
        jb_key(j, "address"), jb_str(j, k->addr);
        jb_key(j, "duration_ms"), jb_u64(j, k->duration_ms);
        jb_key(j, "error");
        if (failed) jb_str(j, k->error);
        else jb_null(j);
        const char *nulls[] = {"programs", "wall_start_ns", "duration_ns", "processes", "threads", "zones", "lost"};
        for (size_t n = 0; n < sizeof nulls / sizeof *nulls; n++) jb_key(j, nulls[n]), jb_null(j);
        jb_end_obj(j);
    }
}

static void cap_free(sv_capture *k) {
    free(k->path);
    free(k);
}

static void on_handle_closed(uv_handle_t *h) {
    sv_capture *k = h->data;
    k->running--; /* at 0 add_capture may drop it */
}

void sv_captures_free(sv_sessions *ss) {
    for (size_t i = 0; i < ss->ncaps; i++)
        if (!ss->caps[i]->running) cap_free(ss->caps[i]); /* else left to the exit */
    free(ss->caps);
    ss->caps = NULL;
    ss->ncaps = 0;
}

/* Classifies the child's last line when it ended before recording. */
static void failed_before(sv_capture *k) {
    const char *l = k->line;
    if (!strncmp(l, CHILD_PREFIX, strlen(CHILD_PREFIX))) l += strlen(CHILD_PREFIX);
    const char *refused = "the program refused the capture: ";
    k->status = 502;
    if (!strncmp(l, refused, strlen(refused))) k->code = "refused", l += strlen(refused);
    else if (strstr(l, "no program listening") || strstr(l, "cannot resolve")) k->code = "unreachable";
    else if (strstr(l, "--connect takes")) k->status = 400, k->code = "bad_param";
    else k->code = "capture_failed";
    snprintf(k->error, sizeof k->error, "%.250s", *l ? l : "capture-release ended without a word");
}

static void wake(sv_capture *k) {
    if (k->ss->built) k->ss->built(k->ss->built_ctx);
}

/* Once the child has exited and its stderr is read to the end (either may
 * come first): the outcome. */
static void settle(sv_capture *k) {
    if (!k->exited || !k->eof) return;
    if (k->exit_ok) {
        k->state = SV_CAP_DONE;
    } else if (k->state == SV_CAP_STARTING) {
        failed_before(k);
        k->state = SV_CAP_FAILED;
    } else {
        const char *l = k->line;
        if (!strncmp(l, CHILD_PREFIX, strlen(CHILD_PREFIX))) l += strlen(CHILD_PREFIX);
        snprintf(k->error, sizeof k->error, "%.250s", *l ? l : "capture-release failed");
        k->state = SV_CAP_FAILED;
    }
    wake(k);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig) {
    sv_capture *k = p->data;
    k->exited = 1;
    k->exit_ok = status == 0 && !sig;
    uv_close((uv_handle_t *)p, on_handle_closed);
    settle(k);
}

static void on_err_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
    (void)hint;
    sv_capture *k = h->data;
    size_t room = sizeof k->line - 1 - k->linelen;
    if (!room) { /* a line this long: keep its start */
        k->linelen = 0;
        room = sizeof k->line - 1;
    }
    buf->base = k->line + k->linelen;
    buf->len = room;
}

/* Keeps the last complete line in k->line; "recording" moves the capture on. */
static void on_err_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf) {
    (void)buf;
    sv_capture *k = st->data;
    if (n < 0) {
        uv_close((uv_handle_t *)st, on_handle_closed);
        k->eof = 1;
        settle(k);
        return;
    }
    k->linelen += (size_t)n;
    k->line[k->linelen] = 0;
    char *nl;
    while ((nl = memchr(k->line, '\n', k->linelen)) != NULL) {
        *nl = 0;
        if (!strncmp(k->line, CHILD_PREFIX "recording", strlen(CHILD_PREFIX "recording")) &&
            k->state == SV_CAP_STARTING) {
            k->state = SV_CAP_RECORDING;
            wake(k);
        }
        size_t rest = k->linelen - (size_t)(nl + 1 - k->line);
        if (rest) {
            memmove(k->line, nl + 1, rest);
            k->linelen = rest;
            k->line[rest] = 0;
        } else {
            k->linelen = 0; /* the line stays readable as the last one */
            return;
        }
    }
}

/* capture-release beside this program, else on PATH. */
static void child_program(char *buf, size_t len) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            snprintf(buf, len, "%s/capture-release", self);
            if (access(buf, X_OK) == 0) return;
        }
    }
    snprintf(buf, len, "capture-release");
}

/* The new trace's absolute path in folder `dir`: NULL when out of memory
 * or every name is taken. */
static char *new_name(const char *dir, const char *addr, const sv_sessions *ss) {
    char host[256];
    size_t h = 0;
    for (const char *c = addr; *c && h + 1 < sizeof host; c++)
        host[h++] = isalnum((unsigned char)*c) || *c == '.' ? *c : '-';
    while (h > 0 && host[h - 1] == '-') h--;
    host[h] = 0;
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y%m%d-%H%M%S", &tm);
    size_t cap = strlen(dir) + strlen(host) + 64;
    char *p = malloc(cap);
    for (int n = 1; p && n < 1000; n++) {
        if (n == 1) snprintf(p, cap, "%s/capture-%s.%s.tracy", dir, host, when);
        else snprintf(p, cap, "%s/capture-%s.%s-%d.tracy", dir, host, when, n);
        struct stat st;
        int taken = lstat(p, &st) == 0;
        for (size_t i = 0; i < ss->ncaps && !taken; i++)
            taken = ss->caps[i]->state <= SV_CAP_RECORDING && !strcmp(ss->caps[i]->path, p);
        if (!taken) return p;
    }
    free(p);
    return NULL;
}

/* Makes room in the list (dropping the oldest finished capture whose
 * handles are closed) and adds k. Returns 0 or -1. */
static int add_capture(sv_sessions *ss, sv_capture *k) {
    if (ss->ncaps >= MAX_CAPTURES) {
        size_t i = 0;
        while (i < ss->ncaps && (ss->caps[i]->running || ss->caps[i]->state <= SV_CAP_RECORDING)) i++;
        if (i == ss->ncaps) return -1;
        cap_free(ss->caps[i]);
        memmove(ss->caps + i, ss->caps + i + 1, (ss->ncaps - i - 1) * sizeof *ss->caps);
        ss->ncaps--;
    }
    if (!ss->caps && !(ss->caps = calloc(MAX_CAPTURES, sizeof *ss->caps))) return -1;
    ss->caps[ss->ncaps++] = k;
    return 0;
}

/* The environment of the child: ours with TRACY_TOKEN set to the token (or
 * emptied: no token). */
static char **child_env(const char *token, char *tokvar, size_t len) {
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "TRACY_TOKEN=", 12)) env[o++] = environ[i];
    snprintf(tokvar, len, "TRACY_TOKEN=%s", token);
    env[o++] = tokvar;
    return env;
}

static int spawn(sv_sessions *ss, sv_capture *k, const char *token) {
    char prog[PATH_MAX + 32], dur[32], tokvar[300];
    child_program(prog, sizeof prog);
    snprintf(dur, sizeof dur, "%llums", (unsigned long long)k->duration_ms);
    char *args[] = {prog, "--connect", k->addr, "--duration", dur, "-o", k->path, NULL};
    char **env = child_env(token, tokvar, sizeof tokvar);
    if (!env) return UV_ENOMEM;
    uv_pipe_init(ss->loop, &k->err, 0);
    k->err.data = k;
    uv_stdio_container_t io[3];
    io[0].flags = UV_IGNORE;
    io[1].flags = UV_IGNORE;
    io[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    io[2].data.stream = (uv_stream_t *)&k->err;
    uv_process_options_t po;
    memset(&po, 0, sizeof po);
    po.file = prog;
    po.args = args;
    po.env = env;
    po.exit_cb = on_exit_cb;
    po.stdio = io;
    po.stdio_count = 3;
    k->proc.data = k;
    int rc = uv_spawn(ss->loop, &k->proc, &po);
    free(env);
    if (rc < 0) {
        k->running = 2; /* both handles close */
        uv_close((uv_handle_t *)&k->proc, on_handle_closed);
        uv_close((uv_handle_t *)&k->err, on_handle_closed);
        return rc;
    }
    k->running = 2;
    uv_read_start((uv_stream_t *)&k->err, on_err_alloc, on_err_read);
    return 0;
}

/* The answer of a capture that recorded or failed before recording. */
static void answer(sv_capture *k, sv_answer *a) {
    k->answered = 1;
    if (k->state == SV_CAP_FAILED && k->status) {
        sv_error(a, k->status, k->code, "%s", k->error);
        return;
    }
    jb_init(&a->body, 4096);
    a->status = 202;
    a->type = "application/json; charset=utf-8";
    jb *j = &a->body;
    jb_obj(j);
    jb_key(j, "id"), jb_str(j, k->id);
    jb_key(j, "path"), jb_str(j, k->rel);
    jb_key(j, "address"), jb_str(j, k->addr);
    jb_key(j, "duration_ms"), jb_u64(j, k->duration_ms);
    jb_key(j, "state"), jb_str(j, k->state == SV_CAP_DONE ? "complete" : k->state == SV_CAP_FAILED ? "error" : "recording");
    jb_end_obj(j);
}

void sv_api_capture(sv_ctx *c, const sv_req *q, sv_answer *a) {
    sv_sessions *ss = c->ss;
    for (size_t i = 0; i < ss->ncaps; i++) { /* the same request, asked again */
        sv_capture *k = ss->caps[i];
        if (k->serial != q->serial || k->answered) continue;
        if (k->state == SV_CAP_STARTING) a->deferred = 1;
        else answer(k, a);
        return;
    }
    /* JSON only: a page of another site cannot send that without asking
     * first (CORS), which this server never grants */
    if (!q->ctype || strncasecmp(q->ctype, "application/json", 16) ||
        (q->ctype[16] && q->ctype[16] != ';' && q->ctype[16] != ' ')) {
        sv_error(a, 415, "media_type", "the body must be sent as Content-Type: application/json");
        return;
    }
    cap_ask ask;
    const char *why;
    if (parse_ask(q->body, q->body_len, &ask, &why) < 0) {
        sv_error(a, 400, "bad_param", "%s", why);
        return;
    }
    for (size_t i = 0; i < ss->ncaps; i++)
        if (ss->caps[i]->state <= SV_CAP_RECORDING && !strcmp(ss->caps[i]->addr, ask.addr)) {
            sv_error(a, 409, "busy", "a capture of %s is under way", ask.addr);
            return;
        }
    if (!ss->nroots || !ss->root_is_dir[0]) {
        sv_error(a, 409, "no_folder", "no folder is served: nowhere to write a capture");
        return;
    }
    if (!ss->loop) {
        sv_error(a, 500, "internal", "captures need the server's loop");
        return;
    }
    sv_capture *k = calloc(1, sizeof *k);
    if (k && !(k->path = new_name(ss->roots[0], ask.addr, ss))) {
        free(k);
        k = NULL;
    }
    if (!k || add_capture(ss, k) < 0) {
        if (k) cap_free(k);
        sv_error(a, 500, "internal", "cannot start another capture now");
        return;
    }
    k->ss = ss;
    k->rel = k->path + strlen(ss->roots[0]) + (strcmp(ss->roots[0], "/") ? 1 : 0);
    snprintf(k->id, sizeof k->id, "%016llx", (unsigned long long)vw_hash(k->path));
    memcpy(k->addr, ask.addr, sizeof k->addr);
    k->duration_ms = ask.ms;
    k->started_ns = now_ns();
    k->serial = q->serial;
    int rc = spawn(ss, k, ask.token);
    if (rc < 0) {
        k->state = SV_CAP_FAILED;
        k->answered = 1;
        sv_error(a, 500, "internal", "cannot run capture-release: %s", uv_strerror(rc));
        return;
    }
    a->deferred = 1;
}
