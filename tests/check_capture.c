/* check_capture.c -- capture-release end to end: the real daemon binary
 * ($LT_BUILD/bin/capture-release, started with -p 0) and raw loopback socket
 * clients written here, checked by reading the resulting file back. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "trace.h"
#include "wire.h"
#include "local.h"
#include "faults.h"

#define WAIT_MS 20000 /* bound of every wait; never a timing assertion */

/* ---- Daemon process ---------------------------------------------------- */

typedef struct dproc {
    pid_t pid;
    int port;
    int outfd;           /* read end of its stdout, open until d_wait */
    char line[128];      /* first stdout line */
    char dir[64];
    char out[128];
    char err[128];
} dproc;

static char tmpdir_tmpl[] = "/tmp/check_capture.XXXXXX";

static const char *bin_path(void) {
    static char path[512];
    const char *b = getenv("LT_BUILD");
    ck_assert_msg(b != NULL, "LT_BUILD is not set (run through make check-c)");
    snprintf(path, sizeof path, "%s/bin/capture-release", b);
    ck_assert_msg(access(path, X_OK) == 0, "%s is missing", path);
    return path;
}

static void d_init(dproc *d) {
    memset(d, 0, sizeof *d);
    strcpy(d->dir, tmpdir_tmpl);
    ck_assert_ptr_nonnull(mkdtemp(d->dir));
    snprintf(d->out, sizeof d->out, "%s/run.tracy", d->dir);
    snprintf(d->err, sizeof d->err, "%s/stderr.txt", d->dir);
    d->port = -1;
    d->outfd = -1;
}

/* Reads the first stdout line (the port, with -p 0); returns the port or
 * -1 if the daemon exits first. */
static int read_port(int fd, char *line, size_t cap) {
    size_t n = 0;
    line[0] = 0;
    while (n < cap - 1) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, WAIT_MS) <= 0) return -1;
        ssize_t r = read(fd, line + n, 1);
        if (r <= 0) return -1;
        if (line[n] == '\n') break;
        n++;
    }
    line[n] = 0;
    return line[0] >= '0' && line[0] <= '9' ? atoi(line) : -1;
}

/* Starts argv (NULL-terminated) with stdout on a pipe and stderr in d->err;
 * fills d->port from the first stdout line. */
static void d_spawn(dproc *d, char *const argv[]) {
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int e = open(d->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(pfd[1], 1);
        if (e >= 0) dup2(e, 2);
        close(pfd[0]);
        close(pfd[1]);
        signal(SIGPIPE, SIG_DFL);
        execv(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    d->pid = pid;
    d->outfd = pfd[0];
    d->port = read_port(pfd[0], d->line, sizeof d->line);
}

/* capture-release -o OUT -a 127.0.0.1 -p 0 EXTRA... */
static void d_start(dproc *d, const char *const *extra) {
    char *argv[40];
    int n = 0;
    argv[n++] = (char *)bin_path();
    argv[n++] = "-o";
    argv[n++] = d->out;
    argv[n++] = "-a"; /* TCP: the tests speak the protocol on raw sockets */
    argv[n++] = "127.0.0.1";
    argv[n++] = "-p";
    argv[n++] = "0";
    for (; extra && *extra; extra++) argv[n++] = (char *)*extra;
    argv[n] = NULL;
    d_spawn(d, argv);
    ck_assert_msg(d->port > 0, "dproc did not report its port");
}

/* Waits for the daemon; returns its exit code, or 128+signal. Kills it and
 * fails when it does not exit in time. */
static int d_wait(dproc *d) {
    int st;
    for (int i = 0; i < WAIT_MS / 10; i++) {
        pid_t r = waitpid(d->pid, &st, WNOHANG);
        if (r == d->pid) {
            d->pid = 0;
            close(d->outfd);
            d->outfd = -1;
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        usleep(10000);
    }
    kill(d->pid, SIGKILL);
    waitpid(d->pid, &st, 0);
    d->pid = 0;
    close(d->outfd);
    d->outfd = -1;
    ck_abort_msg("dproc did not exit");
    return -1;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    char *s = calloc(1, 65536);
    size_t n = fread(s, 1, 65535, f);
    s[n] = 0;
    fclose(f);
    return s;
}

static int err_contains(const dproc *d, const char *needle) {
    char *s = slurp(d->err);
    int r = strstr(s, needle) != NULL;
    free(s);
    return r;
}

static void d_cleanup(dproc *d) {
    if (d->pid > 0) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
        close(d->outfd);
    }
    unlink(d->out);
    unlink(d->err);
    rmdir(d->dir);
}

/* ---- Raw test client --------------------------------------------------- */

typedef struct tclient {
    int fd;
    uint32_t index;       /* process index from WELCOME */
    uint64_t ts[8];       /* per thread: last timestamp sent */
    uint64_t sent;        /* events sent */
} tclient;

static uint64_t tc_bytes; /* bytes of every message tc_msg sent */

static int tc_msg(int fd, uint8_t type, const wbuf *body) {
    wbuf m = {.n = 0};
    tc_bytes += 5 + body->n;
    uint32_t len = (uint32_t)body->n + 1;
    uint8_t h[5] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                    (uint8_t)(len >> 24), type};
    w_raw(&m, h, 5);
    if (body->n) w_raw(&m, body->p, body->n);
    int rc = ft_send_all(fd, m.p, m.n);
    return rc;
}

static int tc_recv_all(int fd, uint8_t *p, size_t n) {
    while (n) {
        ssize_t r = recv(fd, p, n, 0);
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Reads one daemon message into body (at most cap bytes); returns its type
 * or -1 when the connection ended. */
static int tc_reply(int fd, uint8_t *body, size_t cap, size_t *n) {
    uint8_t h[5];
    if (tc_recv_all(fd, h, 5) < 0) return -1;
    uint32_t len = h[0] | h[1] << 8 | h[2] << 16 | (uint32_t)h[3] << 24;
    ck_assert_uint_ge(len, 1);
    ck_assert_uint_le(len - 1, cap);
    if (tc_recv_all(fd, body, len - 1) < 0) return -1;
    *n = len - 1;
    return h[4];
}

static uint16_t hello_minor; /* 0: a 1.0 client, which cannot resume */

static void hello_body(wbuf *b, const char *magic, uint16_t major, uint64_t pid,
                       const char *token) {
    w_raw(b, magic, 8);
    w_u16(b, major);
    w_u16(b, hello_minor);
    w_var(b, pid);
    w_var(b, 1); /* rank -1 zigzagged */
    w_str(b, "testhost");
    w_str(b, "check_capture");
    w_var(b, 2);
    w_str(b, "check_capture");
    w_str(b, "--flag");
    w_var(b, 1000);
    w_var(b, 2000);
    w_str(b, "check_capture 1");
    w_str(b, token);
}

/* Connects and completes the handshake (with `token`). */
static void tc_open_token(tclient *c, int port, uint64_t pid, const char *token) {
    memset(c, 0, sizeof *c);
    c->fd = ft_connect(port, WAIT_MS);
    wbuf b = {.n = 0};
    hello_body(&b, LT_WIRE_MAGIC, LT_WIRE_MAJOR, pid, token);
    ck_assert_int_eq(tc_msg(c->fd, LT_MSG_HELLO, &b), 0);
    uint8_t body[256];
    size_t n;
    int type = tc_reply(c->fd, body, sizeof body, &n);
    ck_assert_int_eq(type, LT_MSG_WELCOME);
    ck_assert_uint_ge(n, 13);
    ck_assert_int_eq(memcmp(body, LT_WIRE_MAGIC, 8), 0);
    ck_assert_uint_eq(body[8] | body[9] << 8, LT_WIRE_MAJOR);
    c->index = body[12]; /* < 128 in these tests */
    ck_assert_uint_ge(c->index, 1);
}

static void tc_open(tclient *c, int port, uint64_t pid) {
    tc_open_token(c, port, pid, "");
}

/* META: threads 1..nthreads, location 1 "work" (and 2 "inner"), plot 1. */
static void tc_meta(tclient *c, int nthreads) {
    wbuf b = {.n = 0};
    for (int t = 1; t <= nthreads; t++) {
        char name[32];
        snprintf(name, sizeof name, "thread-%d", t);
        w_u8(&b, LT_TAG_THREAD_INFO);
        w_var(&b, (uint64_t)t);
        w_var(&b, 1000 + (uint64_t)t);
        w_str(&b, name);
    }
    w_u8(&b, LT_TAG_LOC_DEF);
    w_var(&b, 1);
    w_u8(&b, LT_LOC_USER);
    w_var(&b, 10);
    w_str(&b, "work");
    w_str(&b, "check.c");
    w_u8(&b, LT_TAG_LOC_DEF);
    w_var(&b, 2);
    w_u8(&b, LT_LOC_USER);
    w_var(&b, 20);
    w_str(&b, "inner");
    w_str(&b, "check.c");
    w_u8(&b, LT_TAG_PLOT_DEF);
    w_var(&b, 1);
    w_str(&b, "seq");
    ck_assert_int_eq(tc_msg(c->fd, LT_MSG_META, &b), 0);
}

/* Appends one sequence unit to `b` for thread t: ZONE_BEGIN(1), PLOT(seq),
 * ZONE_END -- three events. */
static void put_unit(tclient *c, int t, wbuf *b, uint64_t seq) {
    w_u8(b, 0x81);
    w_var(b, c->ts[t] ? 10 : 1000000);
    w_u8(b, LT_TAG_PLOT);
    w_var(b, 1);
    w_var(b, 1);
    w_f64(b, (double)seq);
    w_u8(b, LT_TAG_ZONE_END);
    w_var(b, 5);
    c->ts[t] = (c->ts[t] ? c->ts[t] + 10 : 1000000) + 6;
    c->sent += 3;
}

/* Sends units [from, to) of thread t, 400 units per EVENTS message. */
static int tc_units(tclient *c, int t, uint64_t from, uint64_t to) {
    while (from < to) {
        wbuf b = {.n = 0};
        w_var(&b, (uint64_t)t);
        for (int k = 0; k < 400 && from < to; k++) put_unit(c, t, &b, from++);
        int rc = tc_msg(c->fd, LT_MSG_EVENTS, &b);
        if (rc < 0) return -1;
    }
    return 0;
}

/* Sends raw event records for thread t (the caller tracks counts). */
static int tc_events(tclient *c, int t, const uint8_t *recs, size_t n) {
    wbuf b = {.n = 0};
    w_var(&b, (uint64_t)t);
    w_raw(&b, recs, n);
    int rc = tc_msg(c->fd, LT_MSG_EVENTS, &b);
    return rc;
}

static void tc_bye(tclient *c) {
    wbuf b = {.n = 0};
    w_var(&b, c->sent);
    w_var(&b, 0);
    ck_assert_int_eq(tc_msg(c->fd, LT_MSG_BYE, &b), 0);
}

/* Waits until the daemon closes the connection; returns 1 when it did. If
 * it sends a REFUSE first, its reason is copied to `reason`. */
static int tc_wait_closed(int fd, char *reason, size_t rlen) {
    uint8_t tmp[4096];
    size_t have = 0;
    if (reason) reason[0] = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, WAIT_MS) <= 0) return 0;
        ssize_t r = recv(fd, tmp + have, sizeof tmp - have, 0);
        if (r == 0 || (r < 0 && errno == ECONNRESET)) break;
        if (r < 0) return 0;
        have += (size_t)r;
        if (have == sizeof tmp) have = 0;
    }
    if (reason && have >= 10 && tmp[4] == LT_MSG_REFUSE) {
        size_t n = tmp[9];
        if (n > rlen - 1) n = rlen - 1;
        if (n > have - 10) n = have - 10;
        memcpy(reason, tmp + 10, n);
        reason[n] = 0;
    }
    return 1;
}

static void tc_close(tclient *c) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
}

/* ---- Reading the result ------------------------------------------------- */

static lt_reader *open_trace(const char *path) {
    lt_reader *r = NULL;
    char detail[256] = "";
    int rc = lt_reader_open(&r, path, detail, sizeof detail);
    ck_assert_msg(rc == 0, "cannot read %s: %s %s", path, lt_strerror(rc), detail);
    return r;
}

static uint64_t total(lt_reader *r, const char *name) {
    uint64_t v = 0;
    ck_assert_msg(lt_reader_total(r, name, &v) == 1, "no total '%s'", name);
    return v;
}

/* Checks that stream (p, t) holds exactly units [0, n) in order; returns
 * the number of events read. */
static uint64_t check_units(lt_reader *r, uint32_t p, uint32_t t, uint64_t n) {
    lt_event ev;
    uint64_t seq = 0, events = 0, last_ts = 0;
    int rc;
    ck_assert_int_eq(lt_reader_select(r, p, t), 0);
    while ((rc = lt_reader_next(r, &ev)) > 0) {
        ck_assert_uint_eq(ev.process, p);
        ck_assert_uint_eq(ev.thread, t);
        ck_assert_uint_ge(ev.ts, last_ts);
        last_ts = ev.ts;
        events++;
        if (ev.type == LT_EV_PLOT) {
            ck_assert_msg(ev.value == (double)seq, "process %u thread %u: got %g, want %llu",
                          p, t, ev.value, (unsigned long long)seq);
            seq++;
        }
    }
    ck_assert_msg(rc == 0, "read error: %s", lt_reader_error(r));
    ck_assert_uint_eq(seq, n);
    return events;
}

/* Counts the events of stream (p, t) and those flagged as aborted. */
static uint64_t count_events(lt_reader *r, uint32_t p, uint32_t t, uint64_t *aborted) {
    lt_event ev;
    uint64_t n = 0, ab = 0;
    int rc;
    ck_assert_int_eq(lt_reader_select(r, p, t), 0);
    while ((rc = lt_reader_next(r, &ev)) > 0) {
        n++;
        if (ev.flags & LT_EVF_ABORTED) ab++;
    }
    ck_assert_msg(rc == 0, "read error: %s", lt_reader_error(r));
    if (aborted) *aborted = ab;
    return n;
}

/* ---- Tests: data arrives ------------------------------------------------- */

START_TEST(clients_and_threads_every_event_once_in_order) {
    dproc d;
    d_init(&d);
    d_start(&d, (const char *[]){"-n", "4", NULL});
    enum { NCL = 4, NTH = 3, UNITS = 3000 };
    tclient c[NCL];
    /* Three clients start; the fourth joins late, the first leaves early. */
    for (int i = 0; i < 3; i++) {
        tc_open(&c[i], d.port, 100 + (uint64_t)i);
        tc_meta(&c[i], NTH);
    }
    for (uint64_t half = 0; half < 2; half++)
        for (int i = 0; i < 3; i++)
            for (int t = 1; t <= NTH; t++)
                ck_assert_int_eq(tc_units(&c[i], t, half * UNITS / 2,
                                          (half + 1) * UNITS / 2), 0);
    tc_bye(&c[0]);
    ck_assert(tc_wait_closed(c[0].fd, NULL, 0));
    tc_close(&c[0]);
    tc_open(&c[3], d.port, 103);
    tc_meta(&c[3], NTH);
    for (int t = 1; t <= NTH; t++)
        ck_assert_int_eq(tc_units(&c[3], t, 0, UNITS), 0);
    for (int i = 1; i < NCL; i++) {
        tc_bye(&c[i]);
        ck_assert(tc_wait_closed(c[i].fd, NULL, 0));
        tc_close(&c[i]);
    }
    ck_assert_int_eq(d_wait(&d), 0);

    lt_reader *r = open_trace(d.out);
    const lt_file_info *fi = lt_reader_info(r);
    ck_assert_int_eq(fi->complete, 1);
    ck_assert_uint_eq(lt_reader_nprocesses(r), NCL);
    for (int i = 0; i < NCL; i++) {
        const lt_process *p = lt_reader_process(r, c[i].index);
        ck_assert_ptr_nonnull(p);
        ck_assert_uint_eq(p->pid, 100 + (uint64_t)i);
        ck_assert_int_eq(p->status, LT_PROC_CLEAN);
        ck_assert_uint_eq(p->events_sent, c[i].sent);
        ck_assert_uint_eq(p->events_received, c[i].sent);
        ck_assert_str_eq(p->program, "check_capture");
        ck_assert_uint_eq(p->argc, 2);
        ck_assert_uint_eq(lt_reader_nthreads(r, c[i].index), NTH);
        const lt_thread *th = lt_reader_thread(r, c[i].index, 2);
        ck_assert_ptr_nonnull(th);
        ck_assert_str_eq(th->name, "thread-2");
        for (uint32_t t = 1; t <= NTH; t++)
            ck_assert_uint_eq(check_units(r, c[i].index, t, UNITS), 3 * UNITS);
    }
    ck_assert_uint_eq(total(r, "events"), (uint64_t)NCL * NTH * UNITS * 3);
    ck_assert_uint_eq(total(r, "clients_connected"), NCL);
    ck_assert_uint_eq(total(r, "clients_lost"), 0);
    ck_assert_uint_eq(total(r, "events_rejected"), 0);
    lt_reader_free(r);
    d_cleanup(&d);
}
END_TEST

START_TEST(default_stop_after_last_client_with_late_join) {
    dproc d;
    d_init(&d);
    d_start(&d, (const char *[]){"-v", NULL});
    tclient a, b, c;
    tc_open(&a, d.port, 1);
    tc_meta(&a, 1);
    tc_open(&b, d.port, 2);
    tc_meta(&b, 1);
    ck_assert_int_eq(tc_units(&a, 1, 0, 500), 0);
    tc_bye(&a); /* leaves early */
    ck_assert(tc_wait_closed(a.fd, NULL, 0));
    tc_open(&c, d.port, 3); /* joins late */
    tc_meta(&c, 1);
    ck_assert_int_eq(tc_units(&b, 1, 0, 700), 0);
    ck_assert_int_eq(tc_units(&c, 1, 0, 900), 0);
    const uint8_t lost7[] = {LT_TAG_LOST, 0x01, 0x07};
    ck_assert_int_eq(tc_events(&b, 1, lost7, sizeof lost7), 0);
    b.sent++;
    tc_bye(&b);
    ck_assert(tc_wait_closed(b.fd, NULL, 0));
    tc_bye(&c);
    ck_assert(tc_wait_closed(c.fd, NULL, 0));
    tc_close(&a);
    tc_close(&b);
    tc_close(&c);
    ck_assert_int_eq(d_wait(&d), 0);
    ck_assert(err_contains(&d, "connected from 127.0.0.1"));
    lt_reader *r = open_trace(d.out);
    ck_assert_int_eq(lt_reader_info(r)->complete, 1);
    ck_assert_uint_eq(lt_reader_nprocesses(r), 3);
    check_units(r, a.index, 1, 500);
    check_units(r, b.index, 1, 700);
    check_units(r, c.index, 1, 900);
    ck_assert_uint_eq(total(r, "events_lost_client"), 7);
    ck_assert_uint_eq(lt_reader_process(r, b.index)->events_lost, 7);
    lt_reader_free(r);
    d_cleanup(&d);
}
END_TEST

/* ---- Tests: resuming (protocol 1.1) --------------------------------------- */

/* A 1.1 client (this process's pid: it is alive); returns its session key. */
static uint64_t tc_open11(tclient *c, int port) {
    memset(c, 0, sizeof *c);
    c->fd = ft_connect(port, WAIT_MS);
    wbuf b = {.n = 0};
    hello_minor = 1;
    hello_body(&b, LT_WIRE_MAGIC, LT_WIRE_MAJOR, (uint64_t)getpid(), "");
    hello_minor = 0;
    ck_assert_int_eq(tc_msg(c->fd, LT_MSG_HELLO, &b), 0);
    uint8_t body[256];
    size_t n;
    ck_assert_int_eq(tc_reply(c->fd, body, sizeof body, &n), LT_MSG_WELCOME);
    ck_assert_uint_eq(n, 21); /* magic, version, index (< 128), key */
    c->index = body[12];
    uint64_t key = 0;
    for (int i = 0; i < 8; i++) key |= (uint64_t)body[13 + i] << (8 * i);
    ck_assert_uint_ne(key, 0);
    return key;
}

/* RESUME on a new connection; returns the answer's type (RESUMED: *offset). */
static int tc_resume(int port, uint32_t index, uint64_t key, int *fd, uint64_t *offset) {
    *fd = ft_connect(port, WAIT_MS);
    wbuf b = {.n = 0};
    w_raw(&b, LT_WIRE_MAGIC, 8);
    w_u16(&b, LT_WIRE_MAJOR);
    w_u16(&b, 1);
    w_var(&b, index);
    w_u64(&b, key);
    w_str(&b, "");
    uint64_t before = tc_bytes;
    ck_assert_int_eq(tc_msg(*fd, LT_MSG_RESUME, &b), 0);
    tc_bytes = before; /* RESUME is not part of the stream */
    uint8_t body[256];
    size_t n;
    int type = tc_reply(*fd, body, sizeof body, &n);
    if (type == LT_MSG_RESUMED) {
        const uint8_t *q = body;
        ck_assert_int_eq(lt__get_varint(&q, body + n, offset), 0);
    }
    return type;
}

START_TEST(a_process_resumes_on_a_new_connection) {
    dproc d;
    d_init(&d);
    d_start(&d, (const char *[]){"-n", "1", "-v", NULL});
    tclient a;
    uint64_t key = tc_open11(&a, d.port);
    tc_bytes = 0;
    tc_meta(&a, 1);
    ck_assert_int_eq(tc_units(&a, 1, 0, 1000), 0);
    uint64_t sent = tc_bytes;
    /* the start of a message, then the connection ends: the daemon drops
     * the partial message and keeps the process */
    uint8_t part[12] = {100, 0, 0, 0, LT_MSG_EVENTS, 1, 0x81, 10};
    ck_assert_int_eq(ft_send_all(a.fd, part, sizeof part), 0);
    tc_close(&a);
    int fd;
    uint64_t off = 0;
    ck_assert_int_eq(tc_resume(d.port, a.index, key ^ 1, &fd, &off), LT_MSG_REFUSE);
    close(fd);
    ck_assert_int_eq(tc_resume(d.port, a.index + 1, key, &fd, &off), LT_MSG_REFUSE);
    close(fd);
    ck_assert_int_eq(tc_resume(d.port, a.index, key, &fd, &off), LT_MSG_RESUMED);
    ck_assert_uint_eq(off, sent);
    a.fd = fd; /* same process, same streams: the units go on */
    ck_assert_int_eq(tc_units(&a, 1, 1000, 2000), 0);
    tc_bye(&a);
    ck_assert(tc_wait_closed(a.fd, NULL, 0));
    tc_close(&a);
    ck_assert_int_eq(d_wait(&d), 0);
    ck_assert(err_contains(&d, "resumed from"));
    lt_reader *r = open_trace(d.out);
    ck_assert_int_eq(lt_reader_info(r)->complete, 1);
    ck_assert_uint_eq(lt_reader_nprocesses(r), 1);
    const lt_process *p = lt_reader_process(r, a.index);
    ck_assert_int_eq(p->status, LT_PROC_CLEAN);
    ck_assert_uint_eq(p->events_received, a.sent);
    ck_assert_uint_eq(p->events_sent, a.sent);
    ck_assert_uint_eq(check_units(r, a.index, 1, 2000), 3 * 2000);
    ck_assert_uint_eq(total(r, "clients_resumed"), 1);
    ck_assert_uint_eq(total(r, "clients_refused"), 2);
    ck_assert_uint_eq(total(r, "clients_lost"), 0);
    ck_assert_uint_eq(total(r, "zones_aborted"), 0);
    lt_reader_free(r);
    d_cleanup(&d);
}
END_TEST

START_TEST(a_process_not_resumed_ends_lost_after_the_grace_period) {
    dproc d;
    d_init(&d);
    d_start(&d, (const char *[]){"-n", "1", NULL});
    tclient a;
    (void)tc_open11(&a, d.port);
    tc_meta(&a, 1);
    ck_assert_int_eq(tc_units(&a, 1, 0, 100), 0);
    const uint8_t open_zone[] = {0x81, 10}; /* aborted at the end */
    ck_assert_int_eq(tc_events(&a, 1, open_zone, sizeof open_zone), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tc_close(&a);
    /* the capture does not end while the process may come back */
    usleep(1000000);
    ck_assert_int_eq(waitpid(d.pid, NULL, WNOHANG), 0);
    ck_assert_int_eq(d_wait(&d), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_int_ge(t1.tv_sec - t0.tv_sec, 4);
    lt_reader *r = open_trace(d.out);
    const lt_process *p = lt_reader_process(r, a.index);
    ck_assert_int_eq(p->status, LT_PROC_LOST);
    ck_assert_ptr_nonnull(strstr(p->end_reason, "without goodbye"));
    ck_assert_uint_eq(total(r, "clients_lost"), 1);
    ck_assert_uint_eq(total(r, "zones_aborted"), 1);
    ck_assert_uint_eq(total(r, "clients_resumed"), 0);
    lt_reader_free(r);
    d_cleanup(&d);
}
END_TEST

/* ---- Tests: forked children (protocol 1.3, FORK) --------------------------- */

enum kid_mode { KID_JOINS, KID_EXECS, KID_ENDS };

/* A real child that waits for a byte on *go, then connects and records
 * 300 units (KID_JOINS), runs another program (KID_EXECS: sleep), or ends
 * without connecting (KID_ENDS). */
static pid_t kid_start(int port, enum kid_mode mode, int *go) {
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char b;
        close(p[1]);
        if (read(p[0], &b, 1) != 1) _exit(2);
        if (mode == KID_EXECS) {
            execl("/bin/sleep", "sleep", "30", (char *)NULL);
            _exit(3);
        }
        if (mode == KID_ENDS) _exit(0);
        tclient k;
        tc_open(&k, port, (uint64_t)getpid());
        tc_meta(&k, 1);
        if (tc_units(&k, 1, 0, 300) < 0) _exit(4);
        tc_bye(&k);
        _exit(tc_wait_closed(k.fd, NULL, 0) ? 0 : 5);
    }
    close(p[0]);
    *go = p[1];
    return pid;
}

/* The parent: a client of this process (alive, local) that says FORK for
 * kid, then goodbye. */
static void parent_forked(tclient *a, int port, pid_t kid) {
    tc_open(a, port, (uint64_t)getpid());
    tc_meta(a, 1);
    ck_assert_int_eq(tc_units(a, 1, 0, 100), 0);
    wbuf b = {.n = 0};
    w_var(&b, (uint64_t)kid);
    ck_assert_int_eq(tc_msg(a->fd, LT_MSG_FORK, &b), 0);
    tc_bye(a);
    ck_assert(tc_wait_closed(a->fd, NULL, 0));
    tc_close(a);
}

/* Whether the daemon's pids file (daemon-PORT.pids in the run folder) lists
 * pid, within WAIT_MS. */
static int pids_file_lists(int port, pid_t pid) {
    char dir[96], path[160], want[24];
    ck_assert_int_eq(lt__rundir(dir, sizeof dir, NULL, 0), 0);
    snprintf(path, sizeof path, "%s/daemon-%d.pids", dir, port);
    snprintf(want, sizeof want, "\n%ld\n", (long)pid); /* a line of its own */
    for (int i = 0; i < WAIT_MS / 10; i++) {
        char *s = slurp(path);
        int found = s && (strncmp(s, want + 1, strlen(want + 1)) == 0 || strstr(s, want));
        free(s);
        if (found) return 1;
        usleep(10000);
    }
    return 0;
}

START_TEST(a_forked_child_keeps_a_draining_capture_open_until_it_joins) {
    dproc d;
    d_init(&d);
    d_start(&d, (const char *[]){"-v", NULL}); /* ends when its last client leaves */
    int go;
    pid_t kid = kid_start(d.port, KID_JOINS, &go);
    tclient a;
    parent_forked(&a, d.port, kid);
    ck_assert_int_eq(kill(d.pid, SIGUSR1), 0); /* drain: no new process... */
    ck_assert(pids_file_lists(d.port, kid));  /* ...but the one held */
    usleep(300000);
    ck_assert_int_eq(waitpid(d.pid, NULL, WNOHANG), 0); /* still waiting for it */
    ck_assert_int_eq(write(go, "x", 1), 1);
    close(go);
    int st;
    ck_assert_int_eq(waitpid(kid, &st, 0), kid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
    ck_assert_int_eq(d_wait(&d), 0);
    lt_reader *r = open_trace(d.out);
    ck_assert_int_eq(lt_reader_info(r)->complete, 1);
    ck_assert_uint_eq(lt_reader_nprocesses(r), 2);
    check_units(r, a.index, 1, 100);
    check_units(r, 2, 1, 300);
    ck_assert_int_eq(lt_reader_process(r, 2)->status, LT_PROC_CLEAN);
    ck_assert_uint_eq(total(r, "clients_after_end"), 0);
    lt_reader_free(r);
    char dir[96], path[160];
    ck_assert_int_eq(lt__rundir(dir, sizeof dir, NULL, 0), 0);
    snprintf(path, sizeof path, "%s/daemon-%d.pids", dir, d.port);
    ck_assert_int_eq(access(path, F_OK), -1); /* removed at the end */
    d_cleanup(&d);
}
END_TEST

START_TEST(a_forked_child_that_runs_another_program_is_not_waited_for) {
    for (int mode = KID_EXECS; mode <= KID_ENDS; mode++) {
        dproc d;
        d_init(&d);
        d_start(&d, (const char *[]){"-v", NULL});
        int go;
        pid_t kid = kid_start(d.port, (enum kid_mode)mode, &go);
        tclient a;
        parent_forked(&a, d.port, kid);
        usleep(300000);
        ck_assert_int_eq(waitpid(d.pid, NULL, WNOHANG), 0); /* held */
        ck_assert_int_eq(write(go, "x", 1), 1);
        close(go);
        ck_assert_int_eq(d_wait(&d), 0);
        ck_assert(err_contains(&d, mode == KID_EXECS ? "ran another program before it connected"
                                                     : "ended before it connected"));
        kill(kid, SIGKILL);
        waitpid(kid, NULL, 0);
        lt_reader *r = open_trace(d.out);
        ck_assert_uint_eq(lt_reader_nprocesses(r), 1);
        ck_assert_int_eq(lt_reader_info(r)->complete, 1);
        lt_reader_free(r);
        d_cleanup(&d);
    }
}
END_TEST

START_TEST(memory_limit_pauses_reading_without_loss) {
    dproc d;
    d_init(&d);
    d_start(&d, (const char *[]){"-m", "1", "-n", "2", NULL});
    tclient c[2];
    enum { UNITS = 60000 }; /* ~1.5 MiB of records per stream */
    for (int i = 0; i < 2; i++) {
        tc_open(&c[i], d.port, 10 + (uint64_t)i);
        tc_meta(&c[i], 2);
    }
    for (int t = 1; t <= 2; t++)
        for (int i = 0; i < 2; i++) ck_assert_int_eq(tc_units(&c[i], t, 0, UNITS), 0);
    for (int i = 0; i < 2; i++) {
        tc_bye(&c[i]);
        ck_assert(tc_wait_closed(c[i].fd, NULL, 0));
        tc_close(&c[i]);
    }
    ck_assert_int_eq(d_wait(&d), 0);
    lt_reader *r = open_trace(d.out);
    for (int i = 0; i < 2; i++)
        for (uint32_t t = 1; t <= 2; t++) check_units(r, c[i].index, t, UNITS);
    ck_assert_uint_eq(total(r, "events"), 4ull * UNITS * 3);
    lt_reader_free(r);
    d_cleanup(&d);
}
END_TEST

START_TEST(many_simultaneous_clients) {
    enum { N = 300 };
    dproc d;
    d_init(&d);
    d_start(&d, (const char *[]){"-n", "300", "-q", NULL});
    tclient *c = calloc(N, sizeof *c);
    for (int i = 0; i < N; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].fd = ft_connect(d.port, WAIT_MS);
        wbuf b = {.n = 0};
        hello_body(&b, LT_WIRE_MAGIC, LT_WIRE_MAJOR, 5000 + (uint64_t)i, "");
        ck_assert_int_eq(tc_msg(c[i].fd, LT_MSG_HELLO, &b), 0);
    }
    /* All connected at once before any says goodbye. */
    for (int i = 0; i < N; i++) {
        uint8_t body[64];
        size_t n;
        ck_assert_int_eq(tc_reply(c[i].fd, body, sizeof body, &n), LT_MSG_WELCOME);
        tc_meta(&c[i], 1);
        ck_assert_int_eq(tc_units(&c[i], 1, 0, 20), 0);
    }
    for (int i = 0; i < N; i++) {
        tc_bye(&c[i]);
        ck_assert(tc_wait_closed(c[i].fd, NULL, 0));
        tc_close(&c[i]);
    }
    ck_assert_int_eq(d_wait(&d), 0);
    lt_reader *r = open_trace(d.out);
    ck_assert_uint_eq(lt_reader_nprocesses(r), N);
    ck_assert_uint_eq(total(r, "events"), (uint64_t)N * 60);
    ck_assert_uint_eq(total(r, "clients_connected"), N);
    for (uint32_t p = 1; p <= N; p++) {
        ck_assert_int_eq(lt_reader_process(r, p)->status, LT_PROC_CLEAN);
        check_units(r, p, 1, 20);
    }
    lt_reader_free(r);
    free(c);
    d_cleanup(&d);
}
END_TEST

START_TEST(connect_disconnect_cycles_are_counted) {
    enum { CYCLES = 1000 };
    dproc d;
    d_init(&d);
    d_start(&d, (const char *[]){"-n", "101", "-q", NULL});
    tclient good;
    tc_open(&good, d.port, 1);
    tc_meta(&good, 1);
    for (int i = 0; i < CYCLES; i++) {
        if (i % 10 == 0) { /* a whole session */
            tclient c;
            tc_open(&c, d.port, 2 + (uint64_t)i);
            tc_bye(&c);
            ck_assert(tc_wait_closed(c.fd, NULL, 0));
            tc_close(&c);
        } else { /* connects and leaves without a word */
            int fd = ft_connect(d.port, WAIT_MS);
            shutdown(fd, SHUT_WR);
            ck_assert(tc_wait_closed(fd, NULL, 0));
            close(fd);
        }
        if (i % 100 == 0) ck_assert_int_eq(tc_units(&good, 1, (uint64_t)i, (uint64_t)i + 100), 0);
    }
    tc_bye(&good);
    ck_assert(tc_wait_closed(good.fd, NULL, 0));
    tc_close(&good);
    ck_assert_int_eq(d_wait(&d), 0);
    lt_reader *r = open_trace(d.out);
    ck_assert_uint_eq(lt_reader_nprocesses(r), 101);
    ck_assert_uint_eq(total(r, "clients_connected"), 101);
    ck_assert_uint_eq(total(r, "clients_refused"), CYCLES - CYCLES / 10);
    ck_assert_uint_eq(total(r, "clients_lost"), 0);
    check_units(r, good.index, 1, CYCLES);
    lt_reader_free(r);
    d_cleanup(&d);
}
END_TEST

/* ---- Tests: bad clients are closed, others go on ----------------------- */

enum bad_kind {
    BAD_GARBAGE,
    BAD_MAGIC,
    BAD_VERSION,
    BAD_SILENT,
    BAD_TRUNCATED_HELLO,
    BAD_HUGE_HELLO, /* over the pre-handshake limit, under --max-message */
    BAD_WRONG_TOKEN_PLACEHOLDER, /* handled in its own test */
    BAD_OVERSIZED,
    BAD_UNBALANCED_END,
    BAD_UNDEFINED_LOC,
    BAD_INVALID_UTF8,
    BAD_UNDEFINED_THREAD,
    BAD_UNKNOWN_TYPE,
    BAD_MID_RECORD,
    BAD_SECOND_HELLO,
    BAD_LOST_OPEN_ZONE,
    BAD_REJECT_OPEN_ZONES,
    BAD_LOC_OUT_OF_ORDER,
    BAD_TOO_MANY_NAMES,
    BAD_COUNT
};

static int is_handshake_case(int k) { return k <= BAD_WRONG_TOKEN_PLACEHOLDER; }

/* Plays the bad client. Post-handshake cases first send a valid prefix: a
 * zone (2 events), plus `extra_begins` open zones. Returns the REFUSE reason
 * (if any) in `reason`. */
static void play_bad(int k, int port, tclient *bc, char *reason, size_t rlen,
                     int *extra_begins) {
    wbuf b = {.n = 0};
    *extra_begins = 0;
    if (is_handshake_case(k)) {
        memset(bc, 0, sizeof *bc);
        bc->fd = ft_connect(port, WAIT_MS);
        switch (k) {
        case BAD_GARBAGE: {
            const char g[] = "GET / HTTP/1.0\r\n\r\n";
            ft_send_all(bc->fd, g, sizeof g - 1);
            break;
        }
        case BAD_MAGIC:
            hello_body(&b, "XXXXWIRE", LT_WIRE_MAJOR, 7, "");
            tc_msg(bc->fd, LT_MSG_HELLO, &b);
            break;
        case BAD_VERSION:
            hello_body(&b, LT_WIRE_MAGIC, 2, 7, "");
            tc_msg(bc->fd, LT_MSG_HELLO, &b);
            break;
        case BAD_SILENT: break;
        case BAD_TRUNCATED_HELLO: {
            hello_body(&b, LT_WIRE_MAGIC, LT_WIRE_MAJOR, 7, "");
            uint8_t h[5] = {(uint8_t)(b.n + 1), 0, 0, 0, LT_MSG_HELLO};
            ft_send_all(bc->fd, h, 5);
            ft_send_all(bc->fd, b.p, b.n / 2);
            shutdown(bc->fd, SHUT_WR);
            break;
        }
        case BAD_HUGE_HELLO: {
            /* refused on the header alone: nothing more is sent */
            uint32_t len = LT_WIRE_MAX_HELLO + 1;
            uint8_t h[5] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                            (uint8_t)(len >> 24), LT_MSG_HELLO};
            ft_send_all(bc->fd, h, 5);
            break;
        }
        }
        ck_assert_msg(tc_wait_closed(bc->fd, reason, rlen), "bad client not closed");
        return;
    }
    tc_open(bc, port, 7);
    tc_meta(bc, 1);
    const uint8_t zone[] = {0x81, 0x10, LT_TAG_ZONE_END, 0x05};
    ck_assert_int_eq(tc_events(bc, 1, zone, sizeof zone), 0);
    switch (k) {
    case BAD_OVERSIZED: {
        uint8_t h[5] = {0xff, 0xff, 0xff, 0x7f, LT_MSG_EVENTS};
        ft_send_all(bc->fd, h, 5);
        break;
    }
    case BAD_UNBALANCED_END: {
        const uint8_t r[] = {0x81, 0x01, LT_TAG_ZONE_END, 0x01, LT_TAG_ZONE_END, 0x01};
        tc_events(bc, 1, r, sizeof r);
        break;
    }
    case BAD_UNDEFINED_LOC: {
        const uint8_t r[] = {LT_TAG_ZONE_BEGIN, 0x01, 0x09};
        tc_events(bc, 1, r, sizeof r);
        break;
    }
    case BAD_INVALID_UTF8: {
        w_u8(&b, LT_TAG_THREAD_INFO);
        w_var(&b, 2);
        w_var(&b, 99);
        w_strn(&b, "bad\xc3\x28name", 8);
        tc_msg(bc->fd, LT_MSG_META, &b);
        break;
    }
    case BAD_UNDEFINED_THREAD: {
        const uint8_t r[] = {0x81, 0x01, LT_TAG_ZONE_END, 0x01};
        tc_events(bc, 5, r, sizeof r);
        break;
    }
    case BAD_UNKNOWN_TYPE:
        w_u8(&b, 0);
        tc_msg(bc->fd, 0x09, &b);
        break;
    case BAD_MID_RECORD: {
        const uint8_t r[] = {0x81, 0x01, LT_TAG_ZONE_END, 0x01, LT_TAG_ZONE_BEGIN};
        tc_events(bc, 1, r, sizeof r);
        break;
    }
    case BAD_SECOND_HELLO:
        hello_body(&b, LT_WIRE_MAGIC, LT_WIRE_MAJOR, 7, "");
        tc_msg(bc->fd, LT_MSG_HELLO, &b);
        break;
    case BAD_LOST_OPEN_ZONE: {
        const uint8_t r[] = {0x81, 0x01};
        tc_events(bc, 1, r, sizeof r);
        *extra_begins = 1;
        shutdown(bc->fd, SHUT_RDWR);
        break;
    }
    case BAD_REJECT_OPEN_ZONES: {
        const uint8_t ok[] = {0x81, 0x01, 0x82, 0x01};
        tc_events(bc, 1, ok, sizeof ok);
        *extra_begins = 2;
        const uint8_t bad[] = {LT_TAG_ZONE_BEGIN, 0x01, 0x40};
        tc_events(bc, 1, bad, sizeof bad);
        break;
    }
    case BAD_LOC_OUT_OF_ORDER:
        w_u8(&b, LT_TAG_LOC_DEF);
        w_var(&b, 5);
        w_u8(&b, LT_LOC_USER);
        w_var(&b, 1);
        w_str(&b, "skipped");
        w_str(&b, "f.c");
        tc_msg(bc->fd, LT_MSG_META, &b);
        break;
    case BAD_TOO_MANY_NAMES: /* 4 defined, 3 more: over --max-names 6 */
        for (int id = 2; id <= 4; id++) {
            w_u8(&b, LT_TAG_PLOT_DEF);
            w_var(&b, (uint64_t)id);
            w_str(&b, "p");
        }
        tc_msg(bc->fd, LT_MSG_META, &b);
        break;
    }
    ck_assert_msg(tc_wait_closed(bc->fd, reason, rlen), "bad client not closed");
}

START_TEST(bad_client_closed_alone_with_stats) {
    int k = _i;
    if (k == BAD_WRONG_TOKEN_PLACEHOLDER) return; /* see token_is_checked */
    int hs = is_handshake_case(k);
    dproc d;
    d_init(&d);
    d_start(&d, (const char *[]){"-n", hs ? "1" : "2", "--handshake-timeout", "300",
                                 "--max-names", "6", NULL});
    tclient good, bad;
    char reason[256];
    int extra;
    tc_open(&good, d.port, 1);
    tc_meta(&good, 2);
    ck_assert_int_eq(tc_units(&good, 1, 0, 1000), 0);
    play_bad(k, d.port, &bad, reason, sizeof reason, &extra);
    tc_close(&bad);
    /* The good client goes on untouched. */
    ck_assert_int_eq(tc_units(&good, 1, 1000, 2000), 0);
    ck_assert_int_eq(tc_units(&good, 2, 0, 2000), 0);
    tc_bye(&good);
    ck_assert(tc_wait_closed(good.fd, NULL, 0));
    tc_close(&good);
    ck_assert_int_eq(d_wait(&d), 0);

    if (k == BAD_MAGIC) ck_assert_msg(strstr(reason, "magic"), "reason: %s", reason);
    if (k == BAD_VERSION) ck_assert_msg(strstr(reason, "version 2.0"), "reason: %s", reason);
    if (k == BAD_HUGE_HELLO)
        ck_assert_msg(err_contains(&d, "before the handshake"), "no pre-handshake limit line");
    lt_reader *r = open_trace(d.out);
    ck_assert_int_eq(lt_reader_info(r)->complete, 1);
    const lt_process *gp = lt_reader_process(r, good.index);
    ck_assert_int_eq(gp->status, LT_PROC_CLEAN);
    ck_assert_uint_eq(gp->events_received, 4000 * 3);
    check_units(r, good.index, 1, 2000);
    check_units(r, good.index, 2, 2000);
    if (hs) {
        ck_assert_uint_eq(lt_reader_nprocesses(r), 1);
        ck_assert_uint_eq(total(r, "clients_refused"), 1);
        ck_assert_uint_eq(total(r, "clients_rejected"), 0);
        ck_assert(err_contains(&d, "refused connection"));
    } else {
        ck_assert_uint_eq(lt_reader_nprocesses(r), 2);
        const lt_process *bp = lt_reader_process(r, bad.index);
        uint64_t aborted, n = count_events(r, bad.index, 1, &aborted);
        uint64_t stored = 2 + 2 * (uint64_t)(extra == 2) + (extra == 1);
        ck_assert_uint_eq(bp->events_received, stored);
        ck_assert_uint_eq(aborted, (uint64_t)extra);
        ck_assert_uint_eq(n, stored + (uint64_t)extra);
        ck_assert_uint_eq(total(r, "zones_aborted"), (uint64_t)extra);
        ck_assert_uint_eq(total(r, "clients_refused"), 0);
        if (k == BAD_LOST_OPEN_ZONE) {
            ck_assert_int_eq(bp->status, LT_PROC_LOST);
            ck_assert_uint_eq(total(r, "clients_lost"), 1);
            ck_assert_uint_eq(total(r, "clients_rejected"), 0);
        } else {
            ck_assert_int_eq(bp->status, LT_PROC_REJECTED);
            ck_assert_msg(bp->end_reason && *bp->end_reason, "no reason");
            ck_assert_uint_eq(total(r, "clients_rejected"), 1);
            ck_assert_uint_gt(total(r, "bytes_rejected"), 0);
            ck_assert(err_contains(&d, "rejected: "));
            if (k == BAD_UNBALANCED_END || k == BAD_UNDEFINED_LOC ||
                k == BAD_MID_RECORD || k == BAD_REJECT_OPEN_ZONES)
                ck_assert_uint_ge(total(r, "events_rejected"), 1);
            if (k == BAD_LOC_OUT_OF_ORDER)
                ck_assert_str_eq(bp->end_reason, "location 5 defined out of order (next is 3)");
            if (k == BAD_TOO_MANY_NAMES)
                ck_assert_msg(strstr(bp->end_reason, "more than 6"), "%s", bp->end_reason);
            if (k == BAD_UNBALANCED_END)
                ck_assert_str_eq(bp->end_reason,
                                 "zone end without open zone (thread 1, byte 4 of an EVENTS message)");
        }
    }
    lt_reader_free(r);
    d_cleanup(&d);
}
END_TEST

START_TEST(token_is_checked_in_handshake) {
    dproc d;
    d_init(&d);
    char tok[160];
    snprintf(tok, sizeof tok, "%s/token", d.dir);
    FILE *f = fopen(tok, "w");
    ck_assert_ptr_nonnull(f);
    fputs("s3cret\n", f);
    fclose(f);
    /* Readable or writable by other users: refused with one line, exit 1. */
    static const mode_t open_modes[] = {0644, 0604, 0620, 0602};
    for (size_t i = 0; i < sizeof open_modes / sizeof open_modes[0]; i++) {
        ck_assert_int_eq(chmod(tok, open_modes[i]), 0);
        d_spawn(&d, (char *[]){(char *)bin_path(), "-o", d.out, "-a", "127.0.0.1", "-p", "0",
                               "--token-file", tok, NULL});
        ck_assert_int_eq(d.port, -1);
        ck_assert_int_eq(d_wait(&d), 1);
        ck_assert(err_contains(&d, "chmod 600"));
        ck_assert_int_eq(access(d.out, F_OK), -1);
    }
    /* Private, or shared with the group read-only: accepted. */
    ck_assert_int_eq(chmod(tok, 0640), 0);
    d_start(&d, (const char *[]){"--token-file", tok, "-n", "1", NULL});
    char reason[256];
    /* No token, then a wrong one: refused with a reason. */
    for (int i = 0; i < 2; i++) {
        int fd = ft_connect(d.port, WAIT_MS);
        wbuf b = {.n = 0};
        hello_body(&b, LT_WIRE_MAGIC, LT_WIRE_MAJOR, 9, i ? "s3creT" : "");
        ck_assert_int_eq(tc_msg(fd, LT_MSG_HELLO, &b), 0);
        ck_assert(tc_wait_closed(fd, reason, sizeof reason));
        ck_assert_msg(strstr(reason, "token"), "reason: %s", reason);
        close(fd);
    }
    tclient c;
    tc_open_token(&c, d.port, 10, "s3cret");
    tc_meta(&c, 1);
    ck_assert_int_eq(tc_units(&c, 1, 0, 10), 0);
    tc_bye(&c);
    ck_assert(tc_wait_closed(c.fd, NULL, 0));
    tc_close(&c);
    ck_assert_int_eq(d_wait(&d), 0);
    lt_reader *r = open_trace(d.out);
    ck_assert_uint_eq(total(r, "clients_refused"), 2);
    ck_assert_uint_eq(lt_reader_nprocesses(r), 1);
    check_units(r, 1, 1, 10);
    lt_reader_free(r);
    unlink(tok);
    d_cleanup(&d);
}
END_TEST

/* ---- Tests: stopping ----------------------------------------------------- */

/* SIGINT, SIGTERM, SIGHUP (a daemon whose terminal closed: it died with
 * no trailer), and SIGHUP ignored as nohup leaves it, then SIGINT. */
static const int stop_sigs[] = {SIGINT, SIGTERM, SIGHUP, -SIGHUP};

START_TEST(stop_signals_leave_complete_file) {
    int sig = stop_sigs[_i];
    if (sig < 0) signal(SIGHUP, SIG_IGN); /* (inherited by the daemon) */
    dproc d;
    d_init(&d);
    d_start(&d, NULL);
    tclient c;
    tc_open(&c, d.port, 77);
    tc_meta(&c, 1);
    ck_assert_int_eq(tc_units(&c, 1, 0, 100), 0);
    const uint8_t open2[] = {0x81, 0x01, 0x82, 0x01};
    ck_assert_int_eq(tc_events(&c, 1, open2, sizeof open2), 0);
    /* Wait (bounded) until the daemon has flushed it all, so the signal
     * finds the zones open. */
    ck_assert_uint_eq(ft_wait_events(d.out, 302), 302);
    if (sig < 0) {
        int st;
        ck_assert_int_eq(kill(d.pid, -sig), 0);
        usleep(200000);
        ck_assert_msg(waitpid(d.pid, &st, WNOHANG) == 0, "an ignored SIGHUP ended the daemon");
        sig = SIGINT;
    }
    ck_assert_int_eq(kill(d.pid, sig), 0);
    ck_assert_int_eq(d_wait(&d), 0);
    ck_assert(tc_wait_closed(c.fd, NULL, 0));
    tc_close(&c);
    lt_reader *r = open_trace(d.out);
    ck_assert_int_eq(lt_reader_info(r)->complete, 1);
    const lt_process *p = lt_reader_process(r, c.index);
    ck_assert_int_eq(p->status, LT_PROC_STOPPED);
    uint64_t aborted, n = count_events(r, c.index, 1, &aborted);
    ck_assert_uint_eq(aborted, 2);
    ck_assert_uint_eq(n, 300 + 2 + 2);
    ck_assert_uint_eq(total(r, "zones_aborted"), 2);
    lt_reader_free(r);
    d_cleanup(&d);
}
END_TEST

START_TEST(kill9_leaves_readable_prefix) {
    dproc d;
    d_init(&d);
    d_start(&d, NULL);
    tclient c;
    tc_open(&c, d.port, 88);
    tc_meta(&c, 1);
    ck_assert_int_eq(tc_units(&c, 1, 0, 5000), 0);
    /* Wait (bounded) until the periodic flush has put every unit sent so far
     * in the file, then kill the daemon while the client is connected. */
    uint64_t have = ft_wait_events(d.out, 15000);
    ck_assert_uint_eq(have, 15000);
    ck_assert_int_eq(tc_units(&c, 1, 5000, 5100), 0);
    kill(d.pid, SIGKILL);
    ck_assert_int_eq(d_wait(&d), 128 + SIGKILL);
    tc_close(&c);
    lt_reader *r = open_trace(d.out);
    const lt_file_info *fi = lt_reader_info(r);
    ck_assert_int_eq(fi->complete, 0);
    ck_assert_int_eq(lt_reader_process(r, 1)->status, LT_PROC_RUNNING);
    /* Units 0..N in order, N at least everything flushed before the kill. */
    lt_event ev;
    uint64_t seq = 0;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0)
        if (ev.type == LT_EV_PLOT) {
            ck_assert(ev.value == (double)seq);
            seq++;
        }
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_ge(seq, 5000);
    lt_reader_free(r);
    d_cleanup(&d);
}
END_TEST

START_TEST(time_limit_stops_with_clients_connected) {
    dproc d;
    d_init(&d);
    d_start(&d, (const char *[]){"-s", "1", NULL});
    /* A client that stays connected (it may or may not have completed its
     * handshake when the time is up): the daemon stops all the same. */
    int fd = ft_connect(d.port, WAIT_MS);
    wbuf b = {.n = 0};
    hello_body(&b, LT_WIRE_MAGIC, LT_WIRE_MAJOR, 5, "");
    tc_msg(fd, LT_MSG_HELLO, &b);
    ck_assert_int_eq(d_wait(&d), 0);
    close(fd);
    lt_reader *r = open_trace(d.out);
    ck_assert_int_eq(lt_reader_info(r)->complete, 1);
    ck_assert_uint_le(lt_reader_nprocesses(r), 1);
    if (lt_reader_nprocesses(r) == 1)
        ck_assert_int_eq(lt_reader_process(r, 1)->status, LT_PROC_STOPPED);
    lt_reader_free(r);
    d_cleanup(&d);
}
END_TEST

/* ---- Tests: exit codes ------------------------------------------------- */

START_TEST(existing_output_needs_force) {
    dproc d;
    d_init(&d);
    FILE *f = fopen(d.out, "w");
    fputs("precious", f);
    fclose(f);
    d_spawn(&d, (char *[]){(char *)bin_path(), "-o", d.out, "-a", "127.0.0.1", "-p", "0", NULL});
    ck_assert_int_eq(d.port, -1);
    ck_assert_int_eq(d_wait(&d), 2);
    ck_assert(err_contains(&d, "file exists"));
    char *s = slurp(d.out);
    ck_assert_str_eq(s, "precious");
    free(s);
    /* With -f it is replaced. */
    d_start(&d, (const char *[]){"-f", "-s", "0.2", NULL});
    ck_assert_int_eq(d_wait(&d), 0);
    lt_reader *r = open_trace(d.out);
    ck_assert_int_eq(lt_reader_info(r)->complete, 1);
    lt_reader_free(r);
    d_cleanup(&d);
}
END_TEST

START_TEST(port_in_use_exits_3) {
    dproc d;
    d_init(&d);
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(ls, 1), 0);
    socklen_t al = sizeof a;
    getsockname(ls, (struct sockaddr *)&a, &al);
    char port[16];
    snprintf(port, sizeof port, "%d", ntohs(a.sin_port));
    d_spawn(&d, (char *[]){(char *)bin_path(), "-o", d.out, "-a", "127.0.0.1", "-p", port, NULL});
    ck_assert_int_eq(d_wait(&d), 3);
    ck_assert(err_contains(&d, "cannot listen"));
    ck_assert_int_eq(access(d.out, F_OK), -1); /* nothing created */
    close(ls);
    d_cleanup(&d);
}
END_TEST

START_TEST(file_size_limit_exits_4_with_readable_file) {
    dproc d;
    d_init(&d);
    char *argv[] = {"/bin/sh", "-c", "ulimit -f 64; exec \"$0\" \"$@\"",
                    (char *)bin_path(), "-o", d.out, "-a", "127.0.0.1", "-p", "0", "--level", "1",
                    NULL};
    d_spawn(&d, argv);
    ck_assert_int_gt(d.port, 0);
    tclient c;
    tc_open(&c, d.port, 3);
    tc_meta(&c, 1);
    /* Messages of pseudo-random text compress poorly: megabytes of them
     * overflow a 32 KiB (or 64 KiB) file limit. */
    uint64_t x = 88172645463325252ull;
    int closed = 0;
    for (int m = 0; m < 400 && !closed; m++) {
        wbuf b = {.n = 0};
        w_var(&b, 1);
        for (int k = 0; k < 40; k++) {
            char text[200];
            for (size_t i = 0; i < sizeof text; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                text[i] = (char)('!' + x % 90);
            }
            w_u8(&b, LT_TAG_MESSAGE);
            w_var(&b, 1);
            w_strn(&b, text, sizeof text);
        }
        closed = tc_msg(c.fd, LT_MSG_EVENTS, &b) < 0;
    }
    ck_assert_int_eq(d_wait(&d), 4);
    tc_close(&c);
    ck_assert(err_contains(&d, "File too large") || err_contains(&d, "file too large"));
    /* the summary does not call what it received written */
    ck_assert(err_contains(&d, " events received in "));
    ck_assert(err_contains(&d, "is incomplete (no trailer)"));
    lt_reader *r = open_trace(d.out);
    ck_assert_int_eq(lt_reader_info(r)->complete, 0);
    lt_event ev;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0) {}
    ck_assert_int_eq(rc, 0);
    lt_reader_free(r);
    d_cleanup(&d);
}
END_TEST

START_TEST(non_loopback_without_token_refused) {
    dproc d;
    d_init(&d);
    d_spawn(&d, (char *[]){(char *)bin_path(), "-o", d.out, "-a", "0.0.0.0", "-p", "0", NULL});
    ck_assert_int_eq(d_wait(&d), 1);
    ck_assert(err_contains(&d, "non-loopback"));
    ck_assert_int_eq(access(d.out, F_OK), -1);
    d_cleanup(&d);
}
END_TEST

START_TEST(help_and_bad_usage) {
    dproc d;
    d_init(&d);
    /* --help: usage on stdout (read through the port pipe's first line). */
    d_spawn(&d, (char *[]){(char *)bin_path(), "--help", NULL});
    ck_assert_msg(strncmp(d.line, "Usage: capture-release", 22) == 0, "%s", d.line);
    ck_assert_int_eq(d_wait(&d), 0);
    const char *bad[][6] = {
        {"-p", "70000", NULL},
        {"-m", "0", NULL},
        {"--max-message", "1", NULL},
        {"-v", "-q", NULL},
        {"--bogus", NULL},
        {"extra", NULL},
        {"-s", "-1", NULL},
        {"-m", "1", "--max-message", "300000", NULL}, /* over a quarter of -m */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[12] = {(char *)bin_path(), "-o", d.out};
        int n = 3;
        for (int j = 0; bad[i][j]; j++) argv[n++] = (char *)bad[i][j];
        argv[n] = NULL;
        d_spawn(&d, argv);
        ck_assert_int_eq(d_wait(&d), 1);
        ck_assert(err_contains(&d, "capture-release: "));
    }
    /* No -o at all. */
    d_spawn(&d, (char *[]){(char *)bin_path(), NULL});
    ck_assert_int_eq(d_wait(&d), 1);
    ck_assert(err_contains(&d, "-o FILE"));
    ck_assert_int_eq(access(d.out, F_OK), -1);
    d_cleanup(&d);
}
END_TEST

Suite *capture_suite(void) {
    Suite *s = suite_create("capture");
    TCase *tc = tcase_create("delivery");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, clients_and_threads_every_event_once_in_order);
    tcase_add_test(tc, default_stop_after_last_client_with_late_join);
    tcase_add_test(tc, memory_limit_pauses_reading_without_loss);
    tcase_add_test(tc, many_simultaneous_clients);
    tcase_add_test(tc, connect_disconnect_cycles_are_counted);
    suite_add_tcase(s, tc);

    tc = tcase_create("resume");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_process_resumes_on_a_new_connection);
    tcase_add_test(tc, a_process_not_resumed_ends_lost_after_the_grace_period);
    suite_add_tcase(s, tc);

    tc = tcase_create("fork");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_forked_child_keeps_a_draining_capture_open_until_it_joins);
    tcase_add_test(tc, a_forked_child_that_runs_another_program_is_not_waited_for);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad_input");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, bad_client_closed_alone_with_stats, 0, BAD_COUNT);
    tcase_add_test(tc, token_is_checked_in_handshake);
    suite_add_tcase(s, tc);

    tc = tcase_create("stopping");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, stop_signals_leave_complete_file, 0,
                        (int)(sizeof stop_sigs / sizeof *stop_sigs));
    tcase_add_test(tc, kill9_leaves_readable_prefix);
    tcase_add_test(tc, time_limit_stops_with_clients_connected);
    suite_add_tcase(s, tc);

    tc = tcase_create("exit_codes");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, existing_output_needs_force);
    tcase_add_test(tc, port_in_use_exits_3);
    tcase_add_test(tc, file_size_limit_exits_4_with_readable_file);
    tcase_add_test(tc, non_loopback_without_token_refused);
    tcase_add_test(tc, help_and_bad_usage);
    suite_add_tcase(s, tc);
    return s;
}
