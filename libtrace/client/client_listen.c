/* client_listen.c -- on-demand capture of a C program: a listener thread
 * (lt_listen_start, TRACY_LISTEN=[ADDR:]PORT) that answers
 * `capture-release --connect` with a trace window (client_file.c) into a
 * private file, sent back when the window ends. The protocol is the one the
 * Python package speaks (schema/PROTOCOL.md, "On-demand capture").
 *
 * Idle, the client is off (LT__OFF): a zone is a load and a branch, and
 * nothing is recorded or connected. Each connection is served by a thread
 * of its own (a slow asker does not hold the listener); one capture at a
 * time, another asker meanwhile gets `ERR busy`.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "client_internal.h"
#include "local.h"

#define MAX_LINE 512
#define REQUEST_MS 5000
#define MAX_CAPTURE_MS (24ull * 3600 * 1000)
#define EXIT_WAIT_MS 60000
#define STALE_CAPTURE_S 60

static struct {
    pthread_mutex_t mu;
    int fd;              /* the listening socket, -1 when not listening */
    int port;
    char token[256];     /* empty: none required */
    int busy;            /* 1: a capture records, 2: it is being finished (mu) */
    int exiting;         /* the program is ending: captures end now */
    pthread_cond_t idle; /* busy went to 0 */
} L = {PTHREAD_MUTEX_INITIALIZER, -1, 0, "", 0, 0, PTHREAD_COND_INITIALIZER};

static void say(const char *what, const char *detail) {
    fprintf(stderr, "tracy: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
}

static uint64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int loopback(const char *addr) {
    return strcmp(addr, "localhost") == 0 || strcmp(addr, "::1") == 0 ||
           strncmp(addr, "127.", 4) == 0;
}

int lt__listen_parse(const char *spec, char *addr, size_t n, int *port) {
    const char *colon = strrchr(spec, ':');
    const char *p = colon ? colon + 1 : spec;
    size_t digits = strspn(p, "0123456789");
    int per_rank = strcmp(p + digits, "+rank") == 0;
    if (digits == 0 || digits > 5 || (p[digits] && !per_rank)) return LT_EINVAL;
    long v = strtol(p, NULL, 10);
    if (per_rank) {
        int64_t rank = lt__mpi_rank();
        if (rank < 0 || rank > 65535) return LT_EINVAL;
        v += (long)rank;
    }
    if (v > 65535) return LT_EINVAL;
    size_t alen = colon ? (size_t)(colon - spec) : 0;
    const char *a = spec;
    if (alen >= 2 && a[0] == '[' && a[alen - 1] == ']') {
        a++;
        alen -= 2;
    }
    if (alen >= n) return LT_EINVAL;
    if (alen == 0) snprintf(addr, n, "127.0.0.1");
    else snprintf(addr, n, "%.*s", (int)alen, a);
    *port = (int)v;
    return 0;
}

/* ---- one connection ------------------------------------------------------ */

static int send_all(int fd, const char *s, size_t n) {
    while (n) {
        ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        s += k;
        n -= (size_t)k;
    }
    return 0;
}

static int send_str(int fd, const char *s) { return send_all(fd, s, strlen(s)); }

/* The request line within REQUEST_MS, or -1 (too long, late, hung up). */
static int read_request(int fd, char *buf, size_t cap) {
    size_t n = 0;
    uint64_t deadline = mono_ms() + REQUEST_MS;
    for (;;) {
        uint64_t now = mono_ms();
        if (now >= deadline) return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)(deadline - now));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        ssize_t k = recv(fd, buf + n, cap - 1 - n, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        n += (size_t)k;
        buf[n] = 0;
        char *nl = memchr(buf, '\n', n);
        if (nl) {
            *nl = 0;
            return 0;
        }
        if (n >= cap - 1) return -1;
    }
}

static int token_ok(const char *got) {
    size_t a = strlen(L.token), b = strlen(got);
    unsigned diff = (unsigned)(a ^ b);
    for (size_t i = 0; i < a; i++) diff |= (unsigned)(L.token[i] ^ (i < b ? got[i] : 0));
    return diff == 0;
}

/* Parses `TRACY-CAPTURE 1 <ms> <token>`: the milliseconds, or 0 after
 * answering ERR. */
static uint64_t request(int fd) {
    char line[MAX_LINE + 2], proto[32], ms[32], tok[MAX_LINE], more[2];
    if (read_request(fd, line, sizeof line) < 0 ||
        sscanf(line, "TRACY-CAPTURE %31s %31s %511s %1s", proto, ms, tok, more) != 3 ||
        strncmp(line, "TRACY-CAPTURE ", 14) != 0 || strspn(ms, "0123456789") != strlen(ms)) {
        send_str(fd, "ERR bad request\n");
        return 0;
    }
    if (strcmp(proto, "1") != 0) {
        char e[96];
        snprintf(e, sizeof e, "ERR protocol %.16s not spoken (this program speaks 1)\n", proto);
        send_str(fd, e);
        return 0;
    }
    if (L.token[0] && !token_ok(tok)) {
        send_str(fd, "ERR wrong token\n");
        return 0;
    }
    uint64_t v = strlen(ms) > 12 ? 0 : strtoull(ms, NULL, 10);
    if (v == 0 || v > MAX_CAPTURE_MS) {
        send_str(fd, "ERR duration out of range (1 ms to 24 h)\n");
        return 0;
    }
    return v;
}

/* Until the time is up ("time"), STOP ("stop"), the program's exit
 * ("exit"), or the asker hangs up (NULL). */
static const char *wait_end(int fd, uint64_t ms) {
    uint64_t end = mono_ms() + ms;
    for (;;) {
        uint64_t now = mono_ms();
        if (now >= end) return "time";
        if (__atomic_load_n(&L.exiting, __ATOMIC_ACQUIRE)) return "exit";
        uint64_t left = end - now;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, left < 20 ? (int)left : 20);
        if (r < 0 && errno != EINTR) return NULL;
        if (r > 0) {
            char b[64];
            ssize_t k = recv(fd, b, sizeof b, 0);
            if (k < 0 && errno == EINTR) continue;
            return k > 0 ? "stop" : NULL;
        }
    }
}

/* Takes the capture slot; a capture that is only being finished (its time
 * up, or its asker gone) is waited for, one still recording is not. */
static int busy_take(void) {
    pthread_mutex_lock(&L.mu);
    uint64_t end = mono_ms() + 30000;
    while (L.busy == 2 && mono_ms() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&L.idle, &L.mu, &ts);
    }
    int ok = !L.busy;
    if (ok) L.busy = 1;
    pthread_mutex_unlock(&L.mu);
    return ok;
}

static void busy_ending(void) {
    pthread_mutex_lock(&L.mu);
    L.busy = 2;
    pthread_mutex_unlock(&L.mu);
}

static void busy_drop(void) {
    pthread_mutex_lock(&L.mu);
    L.busy = 0;
    pthread_cond_broadcast(&L.idle);
    pthread_mutex_unlock(&L.mu);
}

/* Sends DONE and the file (why != NULL), then removes it. */
static void ship(int fd, const char *path, const char *why, uint64_t events) {
    int f = why ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    struct stat st;
    if (f >= 0 && fstat(f, &st) == 0) {
        char line[96];
        snprintf(line, sizeof line, "DONE %lld %llu %s\n", (long long)st.st_size,
                 (unsigned long long)events, why);
        /* read and send (MSG_NOSIGNAL): sendfile to an asker gone would
         * raise SIGPIPE in the program */
        char *buf = send_str(fd, line) == 0 ? malloc(1 << 16) : NULL;
        for (ssize_t k; buf && (k = read(f, buf, 1 << 16)) != 0;) {
            if (k < 0 && errno == EINTR) continue;
            if (k < 0 || send_all(fd, buf, (size_t)k) < 0) break;
        }
        free(buf);
    } else if (why) {
        send_str(fd, "ERR the trace could not be read\n");
    }
    if (f >= 0) close(f);
    unlink(path);
}

/* The pid of a private capture file's name (capture-PID-N.tracy, as this
 * file and the Python package name them), or 0. */
static long capture_pid(const char *name) {
    static const char digits[] = "0123456789";
    if (strncmp(name, "capture-", 8) != 0) return 0;
    size_t n = strspn(name + 8, digits); /* strtol alone takes a sign, spaces */
    if (n == 0 || n > 9 || name[8 + n] != '-') return 0;
    const char *tail = name + 8 + n + 1;
    size_t m = strspn(tail, digits);
    if (m == 0 || strcmp(tail + m, ".tracy") != 0) return 0;
    return strtol(name + 8, NULL, 10);
}

/* Whether the file `name` in dfd is a capture left by a process gone: a
 * regular file of this user, a minute old or more, whose pid is not alive. */
static int capture_left(int dfd, const char *name, time_t now) {
    struct stat st;
    long pid = capture_pid(name);
    if (pid == 0 || pid == (long)getpid()) return 0;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) return 0;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
    return S_ISREG(st.st_mode) && st.st_uid == geteuid() && now - st.st_mtime >= STALE_CAPTURE_S;
}

void lt__sweep_captures(void) {
    char dir[LT__RUNDIR_MAX];
    if (lt__rundir_said(dir, sizeof dir) < 0) return;
    DIR *d = opendir(dir);
    if (!d) return;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (capture_left(dirfd(d), e->d_name, now)) (void)unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
}

static void capture(int fd, uint64_t ms) {
    char dir[LT__RUNDIR_MAX], path[LT__RUNDIR_MAX + 80];
    static unsigned seq;
    if (lt__rundir_said(dir, sizeof dir) < 0) {
        send_str(fd, "ERR no private run folder for the trace\n");
        return;
    }
    snprintf(path, sizeof path, "%s/capture-%ld-%u.tracy", dir, (long)getpid(),
             __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
    int rc = lt_start_trace(path);
    if (rc != 0) {
        char e[128];
        snprintf(e, sizeof e, "ERR cannot record: %s\n",
                 rc == LT_EINVAL ? "the program records a trace already" : lt_strerror(rc));
        send_str(fd, e);
        unlink(path);
        return;
    }
    const char *why = send_str(fd, "OK\n") == 0 ? wait_end(fd, ms) : NULL;
    busy_ending();
    uint64_t stored = 0;
    rc = lt__trace_stop(&stored);
    if (rc != 0 && why) {
        send_str(fd, "ERR the trace is incomplete (capture-release failed)\n");
        why = NULL;
    }
    ship(fd, path, why, stored);
}

static void *serve_one(void *arg) {
    int fd = (int)(intptr_t)arg;
    uint64_t ms = request(fd);
    if (ms && !busy_take()) {
        send_str(fd, "ERR busy: a capture is already under way\n");
    } else if (ms) {
        capture(fd, ms);
        busy_drop();
    }
    close(fd);
    return NULL;
}

/* ---- the listener ---------------------------------------------------------- */

static void *accept_loop(void *arg) {
    int s = (int)(intptr_t)arg;
    for (;;) {
        int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE ||
                errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                if (errno != EINTR && errno != ECONNABORTED) usleep(10000);
                continue;
            }
            break; /* closed by lt_listen_stop */
        }
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&th, &at, serve_one, (void *)(intptr_t)c) != 0) {
            send_str(c, "ERR busy: no thread for the capture\n");
            close(c);
        }
        pthread_attr_destroy(&at);
    }
    return NULL;
}

static int open_socket(const char *addr, int port) {
    struct addrinfo hints = {0}, *res = NULL;
    char ps[8];
    snprintf(ps, sizeof ps, "%d", port);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int rc = getaddrinfo(addr, ps, &hints, &res);
    if (rc != 0) {
        say("cannot listen for captures: unknown address", addr);
        return -1;
    }
    int s = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (s >= 0) setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (s < 0 || bind(s, res->ai_addr, res->ai_addrlen) != 0 || listen(s, 4) != 0) {
        char why[300];
        snprintf(why, sizeof why, "%s:%d: %s", addr, port, strerror(errno));
        say("cannot listen for captures on", why);
        if (s >= 0) close(s);
        s = -1;
    }
    freeaddrinfo(res);
    return s;
}

static int bound_port(int s) {
    struct sockaddr_storage ss;
    socklen_t n = sizeof ss;
    if (getsockname(s, (struct sockaddr *)&ss, &n) != 0) return -1;
    if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* A forked child does not listen: the port stays the parent's alone. */
static void atfork_child(void) {
    pthread_mutex_init(&L.mu, NULL);
    pthread_cond_init(&L.idle, NULL);
    if (L.fd >= 0) close(L.fd);
    L.fd = -1;
    L.port = 0;
    L.busy = 0;
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, atfork_child); }

int lt_listen_start(const char *spec, const char *token) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    char addr[256];
    int port;
    pthread_once(&once, register_atfork);
    if (!spec || lt__listen_parse(spec, addr, sizeof addr, &port) < 0) {
        say("TRACY_LISTEN / lt_listen_start take [ADDR:]PORT or [ADDR:]PORT+rank (with an "
            "MPI rank) giving a port in 0..65535, not", spec ? spec : "NULL");
        return LT_EINVAL;
    }
    if (!token) token = getenv("TRACY_TOKEN");
    if (token && (strlen(token) >= sizeof L.token || strchr(token, ' '))) {
        say("the capture token is too long or holds a space", NULL);
        return LT_EINVAL;
    }
    if (!loopback(addr) && !(token && *token)) {
        say("listening for captures on an address other than the loopback needs a token "
            "(TRACY_TOKEN)", addr);
        return LT_EINVAL;
    }
    pthread_mutex_lock(&L.mu);
    if (L.fd >= 0) {
        pthread_mutex_unlock(&L.mu);
        say("already listening for captures", NULL);
        return LT_EINVAL;
    }
    int s = open_socket(addr, port);
    pthread_t th;
    if (s >= 0 && pthread_create(&th, NULL, accept_loop, (void *)(intptr_t)s) != 0) {
        close(s);
        s = -1;
    }
    if (s < 0) {
        pthread_mutex_unlock(&L.mu);
        return LT_ECONNECT;
    }
    pthread_detach(th);
    lt__sweep_captures();
    L.fd = s;
    L.port = bound_port(s);
    snprintf(L.token, sizeof L.token, "%s", token ? token : "");
    port = L.port;
    pthread_mutex_unlock(&L.mu);
    return port;
}

void lt_listen_stop(void) {
    pthread_mutex_lock(&L.mu);
    int s = L.fd;
    L.fd = -1;
    pthread_mutex_unlock(&L.mu);
    if (s < 0) return;
    shutdown(s, SHUT_RDWR); /* wakes accept(); the loop then ends */
    close(s);
}

int lt_listen_port(void) {
    pthread_mutex_lock(&L.mu);
    int p = L.fd >= 0 ? L.port : 0;
    pthread_mutex_unlock(&L.mu);
    return p;
}

int lt__listen_from_env(void) {
    static int done;
    if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL)) return 0;
    const char *spec = getenv("TRACY_LISTEN");
    if (!spec || !*spec) return 0;
    const char *a = getenv("TRACY_ADDR");
    if (a && *a) return 0; /* already part of a capture */
    char copy[300];
    snprintf(copy, sizeof copy, "%s", spec);
    unsetenv("TRACY_LISTEN"); /* its children do not listen on the port */
    (void)lt_listen_start(copy, NULL);
    return 1;
}

void lt__listen_at_exit(void) {
    pthread_mutex_lock(&L.mu);
    __atomic_store_n(&L.exiting, 1, __ATOMIC_RELEASE);
    uint64_t end = mono_ms() + EXIT_WAIT_MS;
    while (L.busy && mono_ms() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&L.idle, &L.mu, &ts);
    }
    pthread_mutex_unlock(&L.mu);
}
