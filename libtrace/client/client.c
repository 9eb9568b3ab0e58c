/* client.c -- libtrace client: configuration, connection and handshake with
 * the capture daemon, the registry of definitions and the public API. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "client_internal.h"
#include "local.h"

#define LT__CLIENT_NAME "libtrace " LT_VERSION_STRING
#define LT__MAX_ARG 4096u          /* bytes kept of one argument */
#define LT__FD_MIN 200               /* the daemon socket's lowest number */
#define LT__RESUME_WAIT_S 1.0        /* connection attempts when resuming */
#define LT__MAX_ARGS (32u << 10)   /* bytes kept of all arguments: HELLO stays
                                      below LT_WIRE_MAX_HELLO */

lt__client lt__g = {.fd = -1};

/* Serialises lt_client_start / lt_client_stop / lt_client_set_info. */
static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int start_err;
static int start_failed; /* OFF because the last start failed */

/* ---- small helpers -------------------------------------------------- */

int lt__bytes_reserve(lt__bytes *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + extra) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) return LT_ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

void lt__bytes_free(lt__bytes *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

uint8_t *lt__put_text(uint8_t *p, const char *s, size_t len, size_t max) {
    if (!s) len = 0;
    len = lt__clip(s, len, max);
    p = lt__put_varint(p, len);
    if (len == 0 || lt__utf8_valid(s, len)) {
        if (len) memcpy(p, s, len);
        return p + len;
    }
    /* Replace each byte that does not start a valid sequence by '?'. */
    for (size_t i = 0; i < len;) {
        uint8_t c = (uint8_t)s[i];
        size_t k = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (i + k <= len && lt__utf8_valid(s + i, k)) {
            memcpy(p, s + i, k);
            p += k;
            i += k;
        } else {
            *p++ = '?';
            i++;
        }
    }
    return p;
}

static int env_flag(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* At most one "running unprofiled" line per process, also when a failed
 * start is tried again. */
static int warned;
/* lt__client.of_run has been read (again in a child of fork). */
static int of_run_read;

static void warn(const char *fmt, const char *a, const char *b) {
    if (lt__g.quiet || warned) return;
    warned = 1;
    fprintf(stderr, "tracy: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "; running unprofiled\n");
}

/* The same for the end of the capture, which a process of a run leaves to
 * the run to report (lt__client.of_run). */
static void warn_ended(const char *fmt, const char *a, const char *b) {
    if (lt__g.of_run)
        warned = 1;
    else
        warn(fmt, a, b);
}

/* ---- synchronisation objects, fork ------------------------------------ */

static void init_sync(void) {
    lt__client *g = &lt__g;
    pthread_condattr_t ca;
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->send_cv, &ca);
    pthread_cond_init(&g->pool_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&g->done_cv, NULL);
}

/* ---- fork: the children announced (PROTOCOL.md, fork) ------------------ */

static void init_once(void);

#define LT__KIDS_MAX 256 /* children of the forking thread compared */

/* The forking thread's children before the fork (atfork_prepare), when the
 * client records: the one that is new
 * in atfork_parent is the child. -1: not looked at. Under lt__g.mu, which
 * is held from atfork_prepare to atfork_parent. */
static uint64_t kids_before[LT__KIDS_MAX];
static int n_kids_before = -1;

/* The calling thread's live children (/proc/thread-self/children, Linux
 * 3.5+ with CONFIG_PROC_CHILDREN), at most `cap`; -1 when unreadable or
 * longer. */
static int thread_children(uint64_t *out, int cap) {
    char buf[LT__KIDS_MAX * 11 + 2];
    int fd = open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0 || (size_t)n == sizeof buf - 1) return -1;
    buf[n] = 0;
    int k = 0;
    for (char *p = buf, *end; *p; p = end) {
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p) break;
        if (k == cap) return -1;
        out[k++] = v;
    }
    return k;
}

static int kid_seen(uint64_t pid) {
    for (int i = 0; i < n_kids_before; i++)
        if (kids_before[i] == pid) return 1;
    return 0;
}

int lt__client_fork_prepare(void) {
    lt__client *g = &lt__g;
    pthread_once(&once, init_once);
    int st = __atomic_load_n(&g->state, __ATOMIC_ACQUIRE);
    const char *out = getenv("TRACY_OUTPUT");
    if (st == LT__UNINIT && (g->fork_of_active || (out && *out))) {
        (void)lt_client_start();
        st = __atomic_load_n(&g->state, __ATOMIC_ACQUIRE);
    }
    return st == LT__ACTIVE && !lt__ring_on();
}

void lt__client_forked(uint64_t pid) {
    lt__client *g = &lt__g;
    if (__atomic_load_n(&g->state, __ATOMIC_ACQUIRE) != LT__ACTIVE || pid == 0) return;
    pthread_mutex_lock(&g->mu);
    if (g->n_forks == g->cap_forks) {
        size_t cap = g->cap_forks ? 2 * g->cap_forks : 8;
        uint64_t *f = realloc(g->forks, cap * sizeof *f);
        if (!f) { /* the child may then be turned away by a draining capture */
            pthread_mutex_unlock(&g->mu);
            return;
        }
        g->forks = f;
        g->cap_forks = cap;
    }
    g->forks[g->n_forks++] = pid;
    g->kick = 1; /* before the parent can end: the daemon holds the capture for it */
    pthread_cond_signal(&g->send_cv);
    pthread_mutex_unlock(&g->mu);
}

/* fork() happens with lt__g.mu held, so the child inherits the client's
 * lists and pool in a consistent state and the sender thread is not in the
 * middle of any work (allocating, say) that the child would find locked. */
static void atfork_prepare(void) {
    int announce = lt__client_fork_prepare();
    pthread_mutex_lock(&lt__g.mu);
    n_kids_before = announce ? thread_children(kids_before, LT__KIDS_MAX) : -1;
}

static void atfork_parent(void) {
    uint64_t now[LT__KIDS_MAX], fresh[4];
    int n = n_kids_before >= 0 ? thread_children(now, LT__KIDS_MAX) : -1, k = 0;
    for (int i = 0; i < n && k < 4; i++)
        if (!kid_seen(now[i])) fresh[k++] = now[i];
    n_kids_before = -1;
    pthread_mutex_unlock(&lt__g.mu);
    for (int i = 0; i < k; i++) lt__client_forked(fresh[i]);
}

/* The child of fork() is a new process: it gets its own connection on its
 * first event. The parent's connection and buffers are left alone. */
static void atfork_child(void) {
    lt__client *g = &lt__g;
    pthread_mutex_init(&init_mu, NULL);
    start_failed = 0;
    warned = 0;
    of_run_read = 0;
    int st = __atomic_load_n(&g->state, __ATOMIC_ACQUIRE);
    /* (the handlers are in place from the library's load: a process that
     * never started is not one whose children are "forked" ones) */
    g->forked = g->forked || st != LT__UNINIT;
    g->fork_of_active = st == LT__ACTIVE;
    g->n_forks = 0; /* the parent's to announce, not this process's */
    n_kids_before = -1;
    init_sync();
    /* The parent's socket, unless its program replaced it before fork; a
     * private one (the sender's table) was never in the program's table,
     * and its number may be one of the program's own now. */
    if (g->fd >= 0 && !g->fd_private && lt__fd_ours(g->fd)) close(g->fd);
    g->fd = -1;
    g->fd_private = g->sender_ready = 0;
    g->exec_req = g->exec_held = g->exec_cancel = 0;
    g->key = g->stream_off = g->bytes_unreceived = 0;
    g->resumes = 0;
    g->sender_running = 0;
    g->stopping = g->broken = g->kick = 0;
    g->meta.len = 0;
    g->rounds_started = g->rounds_done = 0;
    g->events_sent = g->events_lost = 0;
    g->events_stored = 0;
    g->stored_known = 0;
    lt__buf_atfork_child();
    __atomic_store_n(&g->state, LT__UNINIT, __ATOMIC_RELEASE);
}

static void at_exit(void) {
    lt__listen_at_exit(); /* a capture under way ends and is sent first */
    lt_client_stop();
    lt__trace_at_exit();
}

static void init_once(void) {
    init_sync();
    lt__trace_init();
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    atexit(at_exit);
}

/* The fork handlers are in place from the start: a program that forks
 * before it records anything (TRACY_OUTPUT set, or set by the program
 * before lt_start_trace) starts its window first and its children join it
 * (lt__client_fork_prepare), instead of each starting one for the same
 * file. */
__attribute__((constructor)) static void init_at_load(void) { pthread_once(&once, init_once); }

/* ---- registry of definitions ------------------------------------------
 * Every LOC_DEF, PLOT_DEF and FRAME_DEF ever made, encoded, so that a new
 * connection (after fork) can define them again. All under lt__g.mu. */

typedef struct name_map {
    struct { char *name; uint32_t id; } *slot;
    size_t cap, n;
} name_map;

static lt__bytes defs;
static uint32_t n_locs, n_plots, n_frames, unknown_loc;
static name_map plot_names, frame_names;

typedef struct pending {
    uint64_t tid;
    char *name;
} pending;
static pending *pend;
static size_t n_pend;

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static uint32_t map_find(const name_map *m, const char *name) {
    if (!m->cap) return 0;
    for (size_t i = hash_str(name) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->slot[i].name) return 0;
        if (strcmp(m->slot[i].name, name) == 0) return m->slot[i].id;
    }
}

static int map_add(name_map *m, const char *name, uint32_t id) {
    if (2 * (m->n + 1) > m->cap) {
        name_map big = {calloc(m->cap ? 2 * m->cap : 16, sizeof *m->slot),
                        m->cap ? 2 * m->cap : 16, 0};
        if (!big.slot) return LT_ENOMEM;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->slot[i].name) continue;
            size_t j = hash_str(m->slot[i].name) & (big.cap - 1);
            while (big.slot[j].name) j = (j + 1) & (big.cap - 1);
            big.slot[j] = m->slot[i];
            big.n++;
        }
        free(m->slot);
        *m = big;
    }
    char *copy = strdup(name);
    if (!copy) return LT_ENOMEM;
    size_t j = hash_str(name) & (m->cap - 1);
    while (m->slot[j].name) j = (j + 1) & (m->cap - 1);
    m->slot[j].name = copy;
    m->slot[j].id = id;
    m->n++;
    return 0;
}

/* Appends the record just written at defs[from..] to the pending metadata
 * when connected. */
static void def_publish(size_t from) {
    lt__client *g = &lt__g;
    if (g->state != LT__ACTIVE) return;
    size_t n = defs.len - from;
    if (lt__bytes_reserve(&g->meta, n) < 0) return;
    memcpy(g->meta.p + g->meta.len, defs.p + from, n);
    g->meta.len += n;
}

static uint32_t def_loc(uint8_t kind, const char *name, const char *file,
                        uint32_t line) {
    size_t nl = name ? strlen(name) : 0, fl = file ? strlen(file) : 0;
    if (nl > LT__MAX_NAME) nl = LT__MAX_NAME;
    if (fl > LT__MAX_NAME) fl = LT__MAX_NAME;
    if (lt__bytes_reserve(&defs, 40 + nl + fl) < 0) return 0;
    size_t from = defs.len;
    uint32_t id = ++n_locs;
    uint8_t *p = defs.p + from;
    *p++ = LT_TAG_LOC_DEF;
    p = lt__put_varint(p, id);
    *p++ = kind;
    p = lt__put_varint(p, line);
    p = lt__put_text(p, name, nl, LT__MAX_NAME);
    p = lt__put_text(p, file, fl, LT__MAX_NAME);
    defs.len = (size_t)(p - defs.p);
    def_publish(from);
    return id;
}

/* PLOT_DEF or FRAME_DEF for a new name. */
static uint32_t def_named(uint8_t tag, name_map *m, uint32_t *counter,
                          const char *name) {
    uint32_t id = map_find(m, name);
    if (id) return id;
    size_t nl = strlen(name);
    if (nl > LT__MAX_NAME) nl = LT__MAX_NAME;
    if (lt__bytes_reserve(&defs, 24 + nl) < 0) return 0;
    if (map_add(m, name, *counter + 1) < 0) return 0;
    id = ++*counter;
    size_t from = defs.len;
    uint8_t *p = defs.p + from;
    *p++ = tag;
    p = lt__put_varint(p, id);
    p = lt__put_text(p, name, nl, LT__MAX_NAME);
    defs.len = (size_t)(p - defs.p);
    def_publish(from);
    return id;
}

void lt__meta_thread(uint32_t thread, uint64_t tid, const char *name) {
    lt__client *g = &lt__g;
    size_t nl = name ? strlen(name) : 0;
    if (nl > LT__MAX_NAME) nl = LT__MAX_NAME;
    if (lt__bytes_reserve(&g->meta, 24 + nl) < 0) return;
    uint8_t *p = g->meta.p + g->meta.len;
    *p++ = LT_TAG_THREAD_INFO;
    p = lt__put_varint(p, thread);
    p = lt__put_varint(p, tid);
    p = lt__put_text(p, name, nl, LT__MAX_NAME);
    g->meta.len = (size_t)(p - g->meta.p);
}

const char *lt__pending_name(uint64_t tid) {
    for (size_t i = 0; i < n_pend; i++)
        if (pend[i].tid == tid) return pend[i].name;
    return NULL;
}

static void set_pending(uint64_t tid, const char *name) {
    for (size_t i = 0; i < n_pend; i++) {
        if (pend[i].tid == tid) {
            char *c = strdup(name);
            if (!c) return;
            free(pend[i].name);
            pend[i].name = c;
            return;
        }
    }
    pending *p = realloc(pend, (n_pend + 1) * sizeof *p);
    if (!p) return;
    pend = p;
    pend[n_pend].tid = tid;
    pend[n_pend].name = strdup(name);
    if (pend[n_pend].name) n_pend++;
}

uint32_t lt_loc_register(uint8_t kind, const char *name, const char *file,
                         uint32_t line) {
    pthread_once(&once, init_once);
    pthread_mutex_lock(&lt__g.mu);
    uint32_t id = def_loc(kind, name, file, line);
    pthread_mutex_unlock(&lt__g.mu);
    return id;
}

uint32_t lt_plot_register(const char *name) {
    if (!name) return 0;
    pthread_once(&once, init_once);
    pthread_mutex_lock(&lt__g.mu);
    uint32_t id = def_named(LT_TAG_PLOT_DEF, &plot_names, &n_plots, name);
    pthread_mutex_unlock(&lt__g.mu);
    return id;
}

/* ---- process information and handshake ---------------------------------- */

static struct {
    char *program;
    int argc;
    char **argv;
} info;

static void info_clear(void) {
    free(info.program);
    for (int i = 0; i < info.argc; i++) free(info.argv[i]);
    free(info.argv);
    memset(&info, 0, sizeof info);
}

static void set_info(const char *program, int argc, const char *const *argv) {
    info_clear();
    info.program = strdup(program ? program : "");
    info.argv = calloc(argc > 0 ? (size_t)argc : 1, sizeof *info.argv);
    if (info.argv) {
        for (int i = 0; i < argc; i++) {
            info.argv[i] = strdup(argv && argv[i] ? argv[i] : "");
            if (!info.argv[i]) break;
            info.argc = i + 1;
        }
    }
}

void lt_client_set_info(const char *program, int argc, const char *const *argv) {
    pthread_mutex_lock(&init_mu);
    set_info(program, argc, argv);
    pthread_mutex_unlock(&init_mu);
}

/* Program and argv from /proc/self/cmdline when not set. */
static void info_default(void) {
    if (info.program) return;
    FILE *f = fopen("/proc/self/cmdline", "rb");
    char *buf = malloc(LT__MAX_ARGS + 1);
    size_t n = 0;
    if (f && buf) n = fread(buf, 1, LT__MAX_ARGS, f);
    if (f) fclose(f);
    if (!buf) return;
    buf[n] = 0;
    const char *argv[4096];
    int argc = 0;
    for (size_t i = 0; i < n && argc < 4096; i += strlen(buf + i) + 1)
        argv[argc++] = buf + i;
    const char *prog = argc ? strrchr(argv[0], '/') : NULL;
    prog = prog ? prog + 1 : argc ? argv[0] : "";
    set_info(prog, argc, argv);
    free(buf);
}

int64_t lt__mpi_rank(void) {
    static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                 "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        if (!v || !*v) continue;
        long long r = strtoll(v, &end, 10);
        if (*end == 0 && r >= 0) return r;
    }
    return -1;
}

/* Encodes HELLO (header included) into *out. */
static int hello_encode(lt__bytes *out, const char *token) {
    char host[256];
    lt__host_name(host, sizeof host);
    size_t need = 128 + strlen(host) + (token ? strlen(token) : 0) +
                  strlen(info.program ? info.program : "");
    for (int i = 0; i < info.argc; i++) need += 10 + strlen(info.argv[i]);
    if (lt__bytes_reserve(out, need) < 0 || !out->p) return LT_ENOMEM;
    uint8_t *p = lt__wire_hello_start(out->p);
    p = lt__put_varint(p, (uint64_t)getpid());
    int64_t rank = lt__mpi_rank();
    p = lt__put_varint(p, ((uint64_t)rank << 1) ^ (uint64_t)(rank >> 63));
    p = lt__put_text(p, host, strlen(host), LT__MAX_NAME);
    const char *prog = info.program ? info.program : "";
    p = lt__put_text(p, prog, strlen(prog), LT__MAX_NAME);
    /* Arguments, clipped so that HELLO stays far below the message limit. */
    size_t total = 0;
    int argc = 0;
    while (argc < info.argc && total < LT__MAX_ARGS) {
        size_t l = strlen(info.argv[argc]);
        total += l < LT__MAX_ARG ? l : LT__MAX_ARG;
        argc++;
    }
    p = lt__put_varint(p, (uint64_t)argc);
    for (int i = 0; i < argc; i++)
        p = lt__put_text(p, info.argv[i], strlen(info.argv[i]), LT__MAX_ARG);
    struct timespec m, w;
    clock_gettime(CLOCK_MONOTONIC, &m);
    clock_gettime(CLOCK_REALTIME, &w);
    p = lt__put_varint(p, (uint64_t)m.tv_sec * 1000000000u + (uint64_t)m.tv_nsec +
                              (uint64_t)lt__mono_bias);
    p = lt__put_varint(p, (uint64_t)w.tv_sec * 1000000000u + (uint64_t)w.tv_nsec);
    p = lt__put_text(p, LT__CLIENT_NAME, strlen(LT__CLIENT_NAME), 64);
    p = lt__wire_hello_finish(out->p, p, token, token ? strlen(token) : 0);
    out->len = (size_t)(p - out->p);
    return 0;
}

static uint64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Waits until fd is ready for `events` or the deadline passes; a signal
 * (the program's handler) is not a timeout. poll()'s result: > 0 ready,
 * 0 timed out, < 0 error. */
static int wait_fd(int fd, short events, uint64_t deadline) {
    struct pollfd pf = {fd, events, 0};
    int rc;
    do {
        uint64_t now = mono_ms();
        rc = now >= deadline ? 0 : poll(&pf, 1, (int)(deadline - now));
    } while (rc < 0 && errno == EINTR);
    return rc;
}

/* Connects to one address within timeout_ms. Returns the socket or -errno. */
static int connect_addr(const struct sockaddr *sa, socklen_t len, int timeout_ms) {
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -errno;
    int rc = connect(fd, sa, len);
    if (rc < 0 && (errno == EINPROGRESS || errno == EAGAIN)) {
        int err = 0;
        socklen_t elen = sizeof err;
        rc = wait_fd(fd, POLLOUT, mono_ms() + (uint64_t)timeout_ms);
        if (rc == 0) {
            errno = ETIMEDOUT;
            rc = -1;
        } else if (rc > 0) {
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
            errno = err;
            rc = err ? -1 : 0;
        }
    }
    if (rc < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    /* Out of the way of the program's own descriptors: one that expects
     * open() to give it the lowest free number (3 in a fresh process) still
     * gets it. */
    int high = fcntl(fd, F_DUPFD_CLOEXEC, LT__FD_MIN);
    if (high >= 0) {
        close(fd);
        fd = high;
    }
    int sz = 8 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    return fd;
}

static int resuming; /* check_owner says nothing it said at the start */

/* A daemon that is not this user's is not sent a byte: on a Unix socket
 * its credentials say who it is; on loopback TCP (an address named in
 * TRACY_ADDR) the kernel's socket table does, and another user's daemon is
 * joined only with a token (sharing on purpose), said in one line.
 * Returns 0, or -1 with the reason in why. */
static int check_owner(int fd, int is_unix, const char *token, char *why,
                       size_t why_len) {
    uid_t uid, me = geteuid();
    if (is_unix) {
        if (lt__unix_peer(fd, &uid, NULL) < 0) {
            snprintf(why, why_len, "cannot tell which user runs it: %s", strerror(errno));
            return -1;
        }
        if (uid == me) return 0;
        snprintf(why, why_len, "it runs as another user (uid %lu)", (unsigned long)uid);
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0 || !lt__is_loopback(&ss))
        return 0; /* a remote daemon: the token is the proof */
    if (lt__tcp_peer_uid(fd, &uid) < 0) {
        snprintf(why, why_len, "cannot tell which user runs it");
        return -1;
    }
    if (uid == me) return 0;
    if (token && *token) { /* said even when quiet, as a refusal is; once */
        if (!resuming)
            fprintf(stderr, "tracy: sending to the capture daemon at %s of another "
                    "user (uid %lu), as TRACY_ADDR and TRACY_TOKEN ask\n", lt__g.where,
                    (unsigned long)uid);
        return 0;
    }
    snprintf(why, why_len, "it runs as another user (uid %lu); set TRACY_TOKEN to "
             "share a daemon on purpose", (unsigned long)uid);
    return -1;
}

/* Connects to a Unix socket, retrying for wait_s seconds while nothing
 * listens. */
static int connect_unix(const char *path, double wait_s, char *why, size_t why_len) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) {
        snprintf(why, why_len, "socket path too long");
        return -1;
    }
    memcpy(a.sun_path, path, strlen(path) + 1);
    uint64_t deadline = mono_ms() + (uint64_t)(wait_s * 1000);
    int fd;
    for (;;) {
        fd = connect_addr((struct sockaddr *)&a, sizeof a, LT_WIRE_HANDSHAKE_MS);
        if (fd >= 0 || mono_ms() >= deadline) break;
        struct timespec d = {0, 100000000};
        nanosleep(&d, NULL);
    }
    if (fd < 0) snprintf(why, why_len, "%s", strerror(-fd));
    return fd;
}

/* Connects, retrying for wait_s seconds while nothing listens. */
static int connect_daemon(const char *addr, const char *port, double wait_s,
                          char *why, size_t why_len) {
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(addr, port, &hints, &res);
    if (rc != 0) {
        snprintf(why, why_len, "%s", gai_strerror(rc));
        return -1;
    }
    uint64_t deadline = mono_ms() + (uint64_t)(wait_s * 1000);
    int fd;
    for (;;) {
        fd = -ECONNREFUSED;
        for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
            fd = connect_addr(ai->ai_addr, ai->ai_addrlen, LT_WIRE_HANDSHAKE_MS);
        if (fd >= 0 || mono_ms() >= deadline) break;
        struct timespec d = {0, 100000000};
        nanosleep(&d, NULL);
    }
    freeaddrinfo(res);
    if (fd < 0) snprintf(why, why_len, "%s", strerror(-fd));
    return fd;
}

/* Reads exactly n bytes before the deadline. Returns 0 or -1. */
static int read_full(int fd, uint8_t *p, size_t n, uint64_t deadline) {
    while (n > 0) {
        if (wait_fd(fd, POLLIN, deadline) <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        ssize_t k = read(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (k == 0) errno = ECONNRESET;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* The reason of a REFUSE body as one printable line in safe (at most
 * cap - 1 bytes; a malformed reason leaves it empty: the refusal stands),
 * and the daemon's protocol version. The reason is the daemon's text. */
static void refusal_text(const uint8_t *body, size_t n, unsigned *maj, unsigned *min,
                         char *safe, size_t cap) {
    const char *reason = "", *why;
    size_t rl = 0;
    *maj = *min = 0;
    (void)lt__wire_refuse_decode(body, n, maj, min, &reason, &rl, &why);
    size_t sl = rl < cap - 1 ? rl : cap - 1;
    for (size_t i = 0; i < sl; i++) {
        unsigned char ch = (unsigned char)reason[i];
        safe[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    safe[sl] = 0;
}

/* Sends HELLO and reads the answer. Returns 0, LT_ECONNECT or LT_EPROTO
 * after printing the reason. */
static int handshake(int fd, const char *token) {
    lt__client *g = &lt__g;
    lt__bytes hello = {0};
    char msg[400];
    int rc = hello_encode(&hello, token);
    if (rc < 0) return rc;
    size_t off = 0;
    while (off < hello.len) {
        ssize_t k = send(fd, hello.p + off, hello.len - off, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            lt__bytes_free(&hello);
            warn("cannot send to the capture daemon at %s (%s)", g->where,
                 strerror(errno));
            return LT_ECONNECT;
        }
        off += (size_t)k;
    }
    lt__bytes_free(&hello);

    uint64_t deadline = mono_ms() + LT_WIRE_HANDSHAKE_MS;
    uint8_t h[LT_WIRE_HEADER], body[1024];
    if (read_full(fd, h, sizeof h, deadline) < 0) {
        if (errno == ETIMEDOUT)
            warn("capture daemon at %s did not answer within 5 s%s", g->where, "");
        else
            warn_ended("capture daemon at %s closed the connection%s", g->where, "");
        return LT_ECONNECT;
    }
    uint32_t len = lt__wire_length(h);
    if (len < 1 || len - 1 > sizeof body ||
        (h[4] != LT_MSG_WELCOME && h[4] != LT_MSG_REFUSE) ||
        read_full(fd, body, len - 1, deadline) < 0) {
        warn("unexpected answer from %s%s (not a capture daemon?)", g->where, "");
        return LT_EPROTO;
    }
    unsigned maj = 0, min = 0;
    const char *why;
    if (h[4] == LT_MSG_REFUSE) {
        char safe[201];
        refusal_text(body, len - 1, &maj, &min, safe, sizeof safe);
        snprintf(msg, sizeof msg, "%s; daemon protocol %u.%u, client %u.%u", safe, maj,
                 min, LT_WIRE_MAJOR, LT_WIRE_MINOR);
        if (strncmp(safe, LT_WIRE_REFUSE_FINISHING, strlen(LT_WIRE_REFUSE_FINISHING)) == 0)
            warn_ended("capture daemon at %s refused the connection (%s)", g->where, msg);
        else
            warn("capture daemon at %s refused the connection (%s)", g->where, msg);
        return LT_EPROTO;
    }
    uint32_t index = 0;
    if (lt__wire_welcome_decode(body, len - 1, &maj, &min, &index, &why) < 0) {
        warn("unexpected answer from %s%s (not a capture daemon?)", g->where, "");
        return LT_EPROTO;
    }
    if (maj != LT_WIRE_MAJOR) {
        snprintf(msg, sizeof msg, "protocol %u.%u, this client %u.%u", maj, min,
                 LT_WIRE_MAJOR, LT_WIRE_MINOR);
        warn("capture daemon at %s speaks %s", g->where, msg);
        return LT_EPROTO;
    }
    g->process_index = index;
    g->daemon_minor = min;
    g->key = lt__wire_welcome_key(body, len - 1); /* 0 from a 1.0 daemon */
    return 0;
}

/* Where this process's daemon is, from TRACY_ADDR and TRACY_PORT: a Unix
 * socket (TRACY_ADDR=unix:PATH, or, with no TRACY_ADDR, daemon-<port>.sock
 * in this user's run folder) or a TCP address. */
typedef struct {
    char addr[256];         /* host for TCP; "" for a Unix socket */
    char port[16];
    char path[108];         /* the Unix socket */
} lt__target;

int lt__rundir_said(char *out, size_t out_len) {
    static int noted;
    char note[300];
    int rc = lt__rundir(out, out_len, note, sizeof note);
    if (note[0] && !__atomic_exchange_n(&noted, 1, __ATOMIC_RELAXED))
        fprintf(stderr, "tracy: not using %s\n", note);
    return rc;
}

/* The socket of the local daemon named by `port` in this user's run
 * folder, found (and checked) now. Returns 0 or -1 with the reason. */
static int local_socket(lt__target *t, char *why, size_t why_len) {
    char dir[LT__RUNDIR_MAX];
    int rc = lt__rundir_said(dir, sizeof dir);
    if (rc < 0) {
        snprintf(why, why_len, "no private run folder for its socket");
        return -1;
    }
    snprintf(t->path, sizeof t->path, "%s/" LT_LOCAL_SOCK_FMT, dir, atol(t->port));
    snprintf(lt__g.where, sizeof lt__g.where, "%s", t->path);
    return 0;
}

/* Reads the environment into lt__g. Returns 0 or -1 after a warning. */
static int configure(lt__target *t, double *wait_s, int flight) {
    lt__client *g = &lt__g;
    const char *a = getenv("TRACY_ADDR"), *p = flight ? NULL : getenv("TRACY_PORT");
    if (a && strncmp(a, LT_UNIX_PREFIX, strlen(LT_UNIX_PREFIX)) == 0)
        p = NULL; /* (a socket path: no port; TRACY_PORT=0, which python -m
                     tracy takes for "a daemon of the run's", may be there) */
    g->quiet = env_flag("TRACY_QUIET");
    /* (read at the first start only: the run's own process sets it after) */
    if (!of_run_read) {
        of_run_read = 1;
        g->of_run = getenv("TRACY_PY_OPTS") != NULL;
    }
    const char *pv = getenv("TRACY_PRIVATE_FD");
    g->private_wanted = !(pv && strcmp(pv, "0") == 0);
    g->drop = env_flag("TRACY_DROP");
    memset(t, 0, sizeof *t);
    snprintf(t->port, sizeof t->port, "%d", LT_DEFAULT_PORT);
    if (p && *p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (*end || v < 1 || v > 65535) {
            warn("invalid TRACY_PORT '%s'%s (expected 1..65535)", p, "");
            return -1;
        }
        snprintf(t->port, sizeof t->port, "%ld", v);
    }
    if (a && strncmp(a, LT_UNIX_PREFIX, strlen(LT_UNIX_PREFIX)) == 0) {
        a += strlen(LT_UNIX_PREFIX);
        if (!*a || strlen(a) >= sizeof t->path) {
            warn("invalid TRACY_ADDR 'unix:%s'%s (expected a socket path)", a, "");
            return -1;
        }
        snprintf(t->path, sizeof t->path, "%s", a);
        snprintf(g->where, sizeof g->where, "%s", a);
    } else if (a && *a) {
        snprintf(t->addr, sizeof t->addr, "%s", a);
        snprintf(g->where, sizeof g->where, "%s:%s", a, t->port);
    } else {
        snprintf(g->where, sizeof g->where, "daemon %s of this user", t->port);
    }
    const char *mb = getenv("TRACY_BUFFER_MB");
    long mbv = 64;
    if (mb && *mb) {
        char *end;
        mbv = strtol(mb, &end, 10);
        if (*end || mbv < 1 || mbv > (1 << 20)) {
            warn("invalid TRACY_BUFFER_MB '%s'%s (expected a number of MiB)", mb, "");
            return -1;
        }
    }
    g->max_chunks = (size_t)mbv * (1u << 20) / LT__CHUNK_BYTES;
    if (g->max_chunks < 4) g->max_chunks = 4;
    const char *wm = getenv("TRACY_WAIT_MAX");
    double wmax = 10;
    if (wm && *wm) {
        char *end;
        wmax = strtod(wm, &end);
        if (*end || !(wmax >= 0) || wmax > 86400) {
            warn("invalid TRACY_WAIT_MAX '%s'%s (expected seconds)", wm, "");
            return -1;
        }
    }
    g->wait_max_ms = (uint64_t)(wmax * 1000);
    const char *w = getenv("TRACY_WAIT");
    *wait_s = 0;
    if (w && *w) {
        char *end;
        *wait_s = strtod(w, &end);
        if (*end || !(*wait_s >= 0) || *wait_s > 86400) {
            warn("invalid TRACY_WAIT '%s'%s (expected seconds)", w, "");
            return -1;
        }
    }
    return 0;
}

/* Connects to the daemon of `t` and checks whose it is. Returns the
 * socket, or -1 after saying why. */
static int open_daemon(lt__target *t, double wait_s) {
    char why[256];
    int fd;
    if (!t->path[0] && !t->addr[0] && local_socket(t, why, sizeof why) < 0) {
        warn("no capture daemon at %s (%s)", lt__g.where, why);
        return -1;
    }
    fd = t->path[0] ? connect_unix(t->path, wait_s, why, sizeof why)
                    : connect_daemon(t->addr, t->port, wait_s, why, sizeof why);
    if (t->path[0] && (fd == -ENOENT || fd == -ECONNREFUSED)) {
        /* (the run's socket, gone: over TCP, another host's process may
           have been given a wrong address, which only it can say) */
        warn_ended("no capture daemon at %s (%s)", lt__g.where, why);
        return -1;
    }
    if (fd < 0) {
        warn("no capture daemon at %s (%s)", lt__g.where, why);
        return -1;
    }
    if (check_owner(fd, t->path[0] != 0, getenv("TRACY_TOKEN"), why, sizeof why) < 0) {
        close(fd);
        /* said even when quiet: the caller may go on with a daemon of its own */
        if (lt__g.quiet)
            fprintf(stderr, "tracy: not sending to the capture daemon at %s: %s\n",
                    lt__g.where, why);
        else
            warn("not sending to the capture daemon at %s: %s", lt__g.where, why);
        return -1;
    }
    return fd;
}

/* The daemon this process connected to: a resumed connection goes there. */
static lt__target daemon_target;

/* Records the identity of the socket just connected: the guard compares
 * the descriptor with it before every use. */
static void remember(int fd) {
    struct stat st;
    lt__client *g = &lt__g;
    g->sock_dev = g->sock_ino = 0;
    if (fstat(fd, &st) == 0) {
        g->sock_dev = (uint64_t)st.st_dev;
        g->sock_ino = (uint64_t)st.st_ino;
    }
}

int lt__fd_ours(int fd) {
    struct stat st;
    const lt__client *g = &lt__g;
    return fd >= 0 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
           (uint64_t)st.st_dev == g->sock_dev && (uint64_t)st.st_ino == g->sock_ino;
}

int lt__resume(uint64_t *offset, char *why, size_t why_len) {
    lt__client *g = &lt__g;
    lt__target *t = &daemon_target;
    if (!g->key) {
        snprintf(why, why_len, "the daemon cannot resume a connection (protocol 1.0)");
        return -1;
    }
    int fd = t->path[0] ? connect_unix(t->path, LT__RESUME_WAIT_S, why, why_len)
                        : connect_daemon(t->addr, t->port, LT__RESUME_WAIT_S, why, why_len);
    if (fd < 0) return -1;
    const char *token = getenv("TRACY_TOKEN");
    resuming = 1;
    int rc = check_owner(fd, t->path[0] != 0, token, why, why_len);
    resuming = 0;
    if (rc < 0) {
        close(fd);
        return -1;
    }
    size_t tl = token ? strlen(token) : 0;
    if (tl > 4096) tl = 4096; /* HELLO would have been refused already */
    uint8_t msg[LT_WIRE_RESUME_START + 4096];
    size_t n = lt__wire_resume(msg, g->process_index, g->key, token, tl), off = 0;
    while (off < n) {
        ssize_t k = send(fd, msg + off, n - off, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            snprintf(why, why_len, "cannot send: %s", strerror(errno));
            close(fd);
            return -1;
        }
        off += (size_t)k;
    }
    uint64_t deadline = mono_ms() + LT_WIRE_HANDSHAKE_MS;
    uint8_t h[LT_WIRE_HEADER], body[1024];
    const char *err;
    uint32_t len = 0;
    if (read_full(fd, h, sizeof h, deadline) < 0 || (len = lt__wire_length(h)) < 1 ||
        len - 1 > sizeof body || read_full(fd, body, len - 1, deadline) < 0) {
        snprintf(why, why_len, "no answer to RESUME");
        close(fd);
        return -1;
    }
    if (h[4] == LT_MSG_RESUMED && lt__wire_resumed_decode(body, len - 1, offset, &err) == 0) {
        g->fd = fd;
        remember(fd);
        g->resumes++;
        return 0;
    }
    if (h[4] == LT_MSG_REFUSE) {
        unsigned maj, min;
        char safe[201];
        refusal_text(body, len - 1, &maj, &min, safe, sizeof safe);
        snprintf(why, why_len, "resuming refused: %s", safe);
    } else {
        snprintf(why, why_len, "unexpected answer to RESUME");
    }
    close(fd);
    return -1;
}

/* Connects and starts the sender (init_mu held, state LT__UNINIT). */
static int start_locked(void) {
    lt__client *g = &lt__g;
    lt__target t;
    double wait_s;
    int fd = -1, rc, flight = lt__ring_config(); /* no daemon: no address */
    if (flight < 0 || configure(&t, &wait_s, flight) < 0)
        return LT_EINVAL;
    info_default();
    lt__host_init();
    lt__clock_start();
    if (flight) { /* no daemon: the sender keeps the events in memory */
        lt__bytes h = {0};
        rc = hello_encode(&h, NULL);
        if (rc == 0) rc = lt__ring_start(h.p, h.len);
        lt__bytes_free(&h);
        if (rc < 0) return rc;
    } else {
        fd = open_daemon(&t, wait_s);
        if (fd < 0) return LT_ECONNECT;
        rc = handshake(fd, getenv("TRACY_TOKEN"));
        if (rc < 0) {
            close(fd);
            return rc;
        }
    }
    g->fd = fd;
    g->stream_off = g->bytes_unreceived = 0;
    g->resumes = 0;
    if (fd >= 0) {
        remember(fd);
        daemon_target = t;
    }
    lt__clock_first();
    rc = lt__sender_start();
    if (rc < 0) {
        if (fd >= 0) close(fd);
        g->fd = -1;
        return rc;
    }
    /* The sender holds the socket in its own table: out of the program's
     * (unless the program already replaced the number meanwhile). */
    if (g->fd_private && lt__fd_ours(fd)) close(fd);
    /* Definitions made from now on go to META (def_publish). */
    pthread_mutex_lock(&g->mu);
    lt__buf_reap(1); /* what fork() left behind */
    if (!g->wait_loc)
        g->wait_loc = def_loc(LT_LOC_INTERNAL, "tracy: waiting for capture",
                              "libtrace", 0);
    g->meta.len = 0;
    if (lt__bytes_reserve(&g->meta, defs.len) == 0) {
        if (defs.len) memcpy(g->meta.p, defs.p, defs.len);
        g->meta.len = defs.len;
    }
    __atomic_store_n(&g->state, LT__ACTIVE, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g->mu);
    lt__signals_install();
    lt__crash_install(); /* the flight recorder dumps on a crash */
    return 0;
}

/* ---- lifecycle -------------------------------------------------------- */

int lt_client_start(void) {
    pthread_once(&once, init_once);
    pthread_mutex_lock(&init_mu);
    int st = __atomic_load_n(&lt__g.state, __ATOMIC_ACQUIRE);
    int rc = st == LT__ACTIVE ? 0 : start_err ? start_err : LT_ECONNECT;
    /* A failed connection is tried again on an explicit call (a daemon may
     * have been started since); a stopped client stays stopped. */
    if (st == LT__UNINIT && lt__listen_from_env()) {
        /* TRACY_LISTEN: off until a capture opens a window */
        start_err = rc = LT_ECONNECT;
        start_failed = 0;
        __atomic_store_n(&lt__g.state, LT__OFF, __ATOMIC_RELEASE);
    } else if (st == LT__UNINIT || (st == LT__OFF && start_failed)) {
        rc = lt__output_start();
        if (rc == 0) rc = start_locked();
        start_err = rc;
        start_failed = rc < 0;
        if (rc < 0) __atomic_store_n(&lt__g.state, LT__OFF, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&init_mu);
    return rc;
}

void lt_client_stop(void) {
    pthread_once(&once, init_once);
    pthread_mutex_lock(&init_mu);
    int st = __atomic_load_n(&lt__g.state, __ATOMIC_ACQUIRE);
    if (st == LT__ACTIVE) {
        lt__buf_thread_done();
        lt__sender_stop();
    }
    if (st == LT__UNINIT) start_err = LT_ECONNECT;
    start_failed = 0;
    __atomic_store_n(&lt__g.state, LT__OFF, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&init_mu);
}

int lt__client_rearm(void) {
    lt__client *g = &lt__g;
    pthread_once(&once, init_once);
    pthread_mutex_lock(&init_mu);
    if (__atomic_load_n(&g->state, __ATOMIC_ACQUIRE) == LT__ACTIVE) {
        pthread_mutex_unlock(&init_mu);
        return LT_EINVAL;
    }
    pthread_mutex_lock(&g->mu);
    lt__buf_new_session();
    g->key = g->stream_off = g->bytes_unreceived = 0;
    g->resumes = 0;
    g->stopping = g->broken = g->kick = 0;
    g->rounds_started = g->rounds_done = 0;
    g->events_sent = g->events_lost = 0;
    g->events_stored = 0;
    g->stored_known = 0;
    g->fd_private = g->sender_ready = 0;
    g->exec_req = g->exec_held = g->exec_cancel = 0;
    __atomic_store_n(&g->state, LT__UNINIT, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g->mu);
    start_err = 0;
    start_failed = 0;
    warned = 0;
    of_run_read = 0;
    pthread_mutex_unlock(&init_mu);
    return 0;
}

/* Asks the sender for a round that starts after this call, followed by
 * EXEC when `exec`, and waits until it is done. Returns 0 or LT_EIO. */
static int round_and_wait(int exec) {
    lt__client *g = &lt__g;
    pthread_mutex_lock(&g->mu);
    /* nothing is sent after EXEC until the exec fails */
    if ((g->exec_held && !g->exec_cancel) || (exec && (!g->sender_running || g->stopping))) {
        pthread_mutex_unlock(&g->mu);
        return 0;
    }
    uint64_t target = g->rounds_started + 1;
    g->exec_req |= exec;
    g->kick = 1;
    pthread_cond_signal(&g->send_cv);
    while (g->sender_running && !g->stopping && g->rounds_done < target)
        pthread_cond_wait(&g->done_cv, &g->mu);
    int rc = g->broken ? LT_EIO : 0;
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int lt_client_flush(void) {
    if (__atomic_load_n(&lt__g.state, __ATOMIC_ACQUIRE) != LT__ACTIVE) return 0;
    return round_and_wait(0);
}

int lt_client_exec_prepare(void) {
    if (__atomic_load_n(&lt__g.state, __ATOMIC_ACQUIRE) != LT__ACTIVE) return 0;
    if (lt__ring_on()) return lt__ring_exit_dump() ? lt_flight_dump() : 0;
    return round_and_wait(1);
}

void lt_client_exec_failed(void) {
    lt__client *g = &lt__g;
    if (__atomic_load_n(&g->state, __ATOMIC_ACQUIRE) != LT__ACTIVE) return;
    pthread_mutex_lock(&g->mu);
    if (g->exec_held) {
        g->exec_cancel = 1;
        g->kick = 1;
        pthread_cond_signal(&g->send_cv);
    }
    pthread_mutex_unlock(&g->mu);
}

int lt_client_active(void) {
    return __atomic_load_n(&lt__g.state, __ATOMIC_ACQUIRE) == LT__ACTIVE &&
           !__atomic_load_n(&lt__g.broken, __ATOMIC_RELAXED);
}

int lt_client_stored(uint64_t *stored) {
    if (!lt__g.stored_known) return 0;
    if (stored) *stored = lt__g.events_stored;
    return 1;
}

void lt_client_counts(uint64_t *sent, uint64_t *lost) {
    if (sent) *sent = __atomic_load_n(&lt__g.events_sent, __ATOMIC_RELAXED);
    if (lost) *lost = __atomic_load_n(&lt__g.events_lost, __ATOMIC_RELAXED);
}

/* ---- events ------------------------------------------------------------ */

static uint32_t unknown(void) {
    pthread_mutex_lock(&lt__g.mu);
    if (!unknown_loc)
        unknown_loc = def_loc(LT_LOC_INTERNAL, "(unregistered zone)", "", 0);
    uint32_t id = unknown_loc;
    pthread_mutex_unlock(&lt__g.mu);
    return id;
}

void lt_zone_begin(uint32_t loc) {
    lt__tbuf *t = lt__tb();
    if (__builtin_expect(t == NULL, 0)) return;
    if (__builtin_expect(loc == 0, 0)) loc = unknown();
    lt__put_begin(t, loc, lt__now());
}

void lt_zone_end(void) {
    lt__tbuf *t = lt__tls;
    if (__builtin_expect(t != NULL, 1)) lt__put_end(t, lt__now());
}

static void zone_str(uint8_t tag, const char *s, size_t len) {
    lt__thr *t = (lt__thr *)lt__tls;
    if (!t || t->pub.depth == 0 || t->skip || !s) return;
    len = lt__clip(s, len, LT__MAX_TEXT);
    uint8_t *p = lt__reserve(t, 12 + len, t->pub.last_ts);
    if (!p) return;
    *p++ = tag;
    p = lt__put_text(p, s, len, LT__MAX_TEXT);
    lt__commit(t, p, 0);
    t->decorated = 1; /* the open zones' snapshots lack it (client_buf.c) */
}

void lt_zone_text(const char *text, size_t len) { zone_str(LT_TAG_ZONE_TEXT, text, len); }
void lt_zone_name(const char *name, size_t len) { zone_str(LT_TAG_ZONE_NAME, name, len); }

void lt_message(const char *text, size_t len) {
    lt__thr *t = (lt__thr *)lt__tb();
    if (!t) return;
    if (!text) len = 0;
    len = lt__clip(text, len, LT__MAX_TEXT);
    uint64_t ts = lt__now();
    uint8_t *p = lt__reserve(t, 22 + len, ts);
    if (!p) return;
    *p++ = LT_TAG_MESSAGE;
    p = lt__put_varint(p, lt__dt(&t->pub, ts));
    p = lt__put_text(p, text, len, LT__MAX_TEXT);
    lt__commit(t, p, 1);
}

void lt_message_str(const char *text) { lt_message(text, text ? strlen(text) : 0); }

void lt_signpost(const char *header, const char *body) {
    lt__thr *t = (lt__thr *)lt__tb();
    if (!t) return;
    size_t hl = header ? strlen(header) : 0, bl = body ? strlen(body) : 0;
    hl = lt__clip(header, hl, LT__MAX_TEXT / 2);
    bl = lt__clip(body, bl, LT__MAX_TEXT - hl);
    uint64_t ts = lt__now();
    uint8_t *p = lt__reserve(t, 32 + hl + bl, ts);
    if (!p) return;
    *p++ = LT_TAG_SIGNPOST;
    p = lt__put_varint(p, lt__dt(&t->pub, ts));
    p = lt__put_text(p, header, hl, hl);
    p = lt__put_text(p, body, bl, bl);
    lt__commit(t, p, 1);
}

void lt_plot(uint32_t plot, double value) {
    if (plot == 0) return;
    lt__thr *t = (lt__thr *)lt__tb();
    if (!t) return;
    uint64_t ts = lt__now();
    uint8_t *p = lt__reserve(t, 30, ts);
    if (!p) return;
    *p++ = LT_TAG_PLOT;
    p = lt__put_varint(p, lt__dt(&t->pub, ts));
    p = lt__put_varint(p, plot);
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    for (int i = 0; i < 8; i++) *p++ = (uint8_t)(bits >> (8 * i));
    lt__commit(t, p, 1);
}

void lt_frame_mark(const char *name) {
    lt__thr *t = (lt__thr *)lt__tb();
    if (!t) return;
    uint32_t id = 0;
    if (name) {
        pthread_mutex_lock(&lt__g.mu);
        id = def_named(LT_TAG_FRAME_DEF, &frame_names, &n_frames, name);
        pthread_mutex_unlock(&lt__g.mu);
        if (!id) return;
    }
    uint64_t ts = lt__now();
    uint8_t *p = lt__reserve(t, 22, ts);
    if (!p) return;
    *p++ = LT_TAG_FRAME;
    p = lt__put_varint(p, lt__dt(&t->pub, ts));
    p = lt__put_varint(p, id);
    lt__commit(t, p, 1);
}

void lt_thread_name(const char *name) {
    lt__thr *t = (lt__thr *)lt__tb();
    if (!t || !name) return;
    pthread_mutex_lock(&lt__g.mu);
    if (lt__buf_stale(t)) /* named when its buffer is renewed */
        set_pending(t->tid, name);
    else if (lt__g.state == LT__ACTIVE)
        lt__meta_thread(t->pub.thread, t->tid, name);
    pthread_mutex_unlock(&lt__g.mu);
}

void lt_thread_name_tid(uint64_t tid, const char *name) {
    if (!name) return;
    pthread_once(&once, init_once);
    pthread_mutex_lock(&lt__g.mu);
    lt__thr *t = lt__g.threads;
    while (t && (t->tid != tid || t->finished)) t = t->next;
    if (t && lt__g.state == LT__ACTIVE)
        lt__meta_thread(t->pub.thread, tid, name);
    else
        set_pending(tid, name);
    pthread_mutex_unlock(&lt__g.mu);
}
