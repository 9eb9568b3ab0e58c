/* check_hostile_daemon.c -- hostile clients against a real capture-release,
 * with a well-behaved client of the real client library beside them whose
 * zones must all be in the file: a client flooding metadata (cut off at the
 * shared budget, the file stays readable), random valid and invalid client
 * streams (every file the daemon writes, every reader reads), clients that
 * stall in the middle of messages (a new client's HELLO is still read and
 * the stalled ones are closed), and -o on a FIFO. */
#include "faults.h"
#include "file_int.h"

/* ---- Helpers ------------------------------------------------------------- */

/* The well-behaved client: registers its location, flushes, tells the test
 * on `ready` (when >= 0), then records `zones` zones and stops. Exits 10
 * when it could not connect. */
typedef struct good_args {
    int zones;
    int ready;
} good_args;

static int good_client(void *arg) {
    good_args *a = arg;
    if (lt_client_start() != 0) return 10;
    uint32_t loc = lt_loc_register(LT_LOC_USER, "good", "check_hostile_daemon.c", 1);
    lt_client_flush();
    if (a->ready >= 0) {
        char one = 1;
        if (write(a->ready, &one, 1) != 1) return 12;
        close(a->ready);
    }
    for (int i = 0; i < a->zones; i++) {
        lt_zone_begin(loc);
        lt_zone_end();
        if (i % 256 == 255) usleep(1000);
    }
    return 0; /* ft_client() stops the client */
}

/* Starts the good client; returns its pid after it has flushed its
 * location (so it is connected before the hostile ones). */
static pid_t start_good(int port, int zones, const char *err_path) {
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    good_args a = {zones, p[1]};
    pid_t pid = ft_client(port, (const char *[]){"TRACY_QUIET=1", NULL}, err_path,
                          good_client, &a);
    close(p[1]);
    char one;
    struct pollfd pf = {p[0], POLLIN, 0};
    ck_assert_msg(poll(&pf, 1, FT_WAIT_MS) == 1 && read(p[0], &one, 1) == 1,
                  "the good client did not start");
    close(p[0]);
    return pid;
}

/* Zones of the process whose pid is `pid` (its status must be clean), after
 * reading the whole file without error. */
static uint64_t zones_of(const char *path, pid_t pid) {
    lt_reader *r = ft_open(path);
    uint32_t idx = 0;
    for (uint32_t p = 1; p <= lt_reader_nprocesses(r); p++)
        if (lt_reader_process(r, p)->pid == (uint64_t)pid) idx = p;
    ck_assert_msg(idx, "the good client (pid %d) is not in the file", (int)pid);
    ck_assert_int_eq(lt_reader_process(r, idx)->status, LT_PROC_CLEAN);
    lt_event ev;
    uint64_t zones = 0;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0)
        zones += ev.process == idx && ev.type == LT_EV_ZONE_END;
    ck_assert_msg(rc == 0, "%s", lt_reader_error(r));
    lt_reader_free(r);
    return zones;
}

/* Every reader reads the file: the library to its end, tracy-csv,
 * tracy-json and tracy-sql exit 0, tracy-info (--verify) 0 or 6 (data
 * lost: the clients the daemon cut off). */
static void every_reader_reads(const ft_dir *d, const char *path) {
    char out[160], sql[160];
    snprintf(out, sizeof out, "%s/conv.out", d->dir);
    snprintf(sql, sizeof sql, "%s/conv.sqlite", d->dir);
    lt_reader *r = ft_open(path);
    lt_event ev;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0) {
    }
    ck_assert_msg(rc == 0, "%s", lt_reader_error(r));
    lt_reader_free(r);
    struct {
        const char *tool, *a1, *a2, *a3;
        int alt;
    } runs[] = {
        {"tracy-csv", path, NULL, NULL, 0},
        {"tracy-json", path, NULL, NULL, 0},
        {"tracy-sql", path, "-o", sql, 0},
        {"tracy-info", "--verify", path, NULL, 6},
        {"tracy-info", path, NULL, NULL, 6},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        unlink(sql);
        int t = ft_tool(out, d->err, ft_bin(runs[i].tool), runs[i].a1, runs[i].a2,
                        runs[i].a3, NULL);
        char *e = ft_slurp(d->err);
        ck_assert_msg(t == 0 || t == runs[i].alt, "%s %s exited %d: %s", runs[i].tool,
                      runs[i].a1, t, e);
        free(e);
    }
    unlink(sql);
}

/* A HELLO; returns the connection after WELCOME, or -1 when the daemon
 * refused or closed it (no assertion: hostile clients may be refused). */
static int try_open(int port, uint64_t pid) {
    int fd = ft_connect(port, FT_WAIT_MS);
    wbuf b = {.n = 0};
    ft_hello_body(&b, "TRCYWIRE", 1, pid);
    raw_msg(fd, 0x01, &b);
    uint8_t h[5], body[512];
    if (recv(fd, h, 5, MSG_WAITALL) != 5 || h[4] != 0x81 || h[0] == 0 ||
        recv(fd, body, h[0] - 1u, MSG_WAITALL) != h[0] - 1) {
        close(fd);
        return -1;
    }
    raw_announce(fd, pid);
    return fd;
}

/* A message of `n` body bytes; returns -1 once the daemon closed. */
static int send_msg(int fd, uint8_t type, const uint8_t *body, size_t n) {
    uint32_t len = (uint32_t)n + 1;
    uint8_t h[5] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                    (uint8_t)(len >> 24), type};
    return ft_send_all(fd, h, 5) < 0 || ft_send_all(fd, body, n) < 0 ? -1 : 0;
}

/* LOC_DEF `id` with a name and a file of `len` bytes each. */
static size_t big_loc(uint8_t *p, uint32_t id, size_t len, char fill) {
    uint8_t *w = p;
    *w++ = LT_TAG_LOC_DEF;
    w = lt__put_varint_(w, id);
    *w++ = LT_LOC_USER;
    w = lt__put_varint_(w, id);
    for (int k = 0; k < 2; k++) {
        w = lt__put_varint_(w, len);
        memset(w, fill + k, len);
        w += len;
    }
    return (size_t)(w - p);
}

/* Waits (bounded) for the daemon to close `fd`, reading what it sends. */
static void wait_closed_quiet(int fd) {
    char tmp[4096];
    for (int i = 0; i < FT_WAIT_MS / 100; i++) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) > 0) {
            ssize_t r = recv(fd, tmp, sizeof tmp, 0);
            if (r <= 0) break;
        }
    }
    close(fd);
}

/* ---- 1. One client's metadata past every reader's budget ----------------- */

enum { FLOOD_LOCS = 2100, GOOD_ZONES = 1973 };

START_TEST(a_metadata_flood_is_cut_off_and_the_file_stays_readable) {
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    ft_daemon_start(&dm, &d, "-s", "600", NULL);
    pid_t good = start_good(dm.port, GOOD_ZONES, NULL);
    /* 2100 locations whose name and file are 65535 bytes each: 275 MB of
     * names that compress to almost nothing. */
    int fd = try_open(dm.port, 4242);
    ck_assert_int_ge(fd, 0);
    uint8_t *m = malloc(2 * LT_MAX_STRING + 64);
    uint32_t sent = 0;
    for (uint32_t id = 2; id <= FLOOD_LOCS + 1; id++, sent++)
        if (send_msg(fd, 0x03, m, big_loc(m, id, LT_MAX_STRING, 'a')) < 0) break;
    free(m);
    wait_closed_quiet(fd);
    ck_assert_uint_lt(sent, FLOOD_LOCS);
    ck_assert_int_eq(ft_wait(good, FT_WAIT_MS), 0);
    kill(dm.pid, SIGINT);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);

    ck_assert_uint_eq(zones_of(d.out, good), GOOD_ZONES);
    lt_reader *r = ft_open(d.out);
    int cut = 0;
    for (uint32_t p = 1; p <= lt_reader_nprocesses(r); p++) {
        const lt_process *lp = lt_reader_process(r, p);
        if (lp->pid != 4242) continue;
        cut = 1;
        ck_assert_int_eq(lp->status, LT_PROC_REJECTED);
        ck_assert_msg(strstr(lp->end_reason, "per-client budget"), "%s", lp->end_reason);
    }
    ck_assert(cut);
    ck_assert_uint_eq(ft_total(r, "clients_over_budget"), 1);
    ck_assert_uint_eq(ft_total(r, "clients_rejected"), 1);
    lt_reader_free(r);
    /* Logged once, with the reason. */
    char *s = ft_slurp(d.err);
    const char *at = strstr(s, "metadata past the per-client budget");
    ck_assert_msg(at && !strstr(at + 1, "metadata past"), "%s", s);
    free(s);
    every_reader_reads(&d, d.out);
    ft_dir_clean(&d);
}
END_TEST

/* Clients together past the file's budget: the last one is cut off, the
 * ones before keep everything. */
START_TEST(clients_together_past_the_file_budget_are_cut_off) {
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    ft_daemon_start(&dm, &d, "-q", "-s", "600", NULL);
    pid_t good = start_good(dm.port, GOOD_ZONES, NULL);
    uint8_t *m = malloc(2 * LT_MAX_STRING + 64);
    /* 3 clients of 30 MiB each (under the per-client budget): the third
     * would take the file past LT_MAX_META. */
    size_t per = (size_t)(30u << 20) / (2 * LT_MAX_STRING + 64 + 2 * 8);
    int refused = 0;
    for (int c = 0; c < 3; c++) {
        int fd = try_open(dm.port, 5000 + (uint64_t)c);
        if (fd < 0) {
            refused++;
            continue;
        }
        int closed = 0;
        for (uint32_t id = 2; id <= per + 1 && !closed; id++)
            closed = send_msg(fd, 0x03, m, big_loc(m, id, LT_MAX_STRING, (char)('a' + c))) < 0;
        wbuf b = {.n = 0};
        w_var(&b, 0), w_var(&b, 0);
        if (!closed) raw_msg(fd, 0x04, &b);
        wait_closed_quiet(fd);
    }
    free(m);
    ck_assert_int_eq(ft_wait(good, FT_WAIT_MS), 0);
    kill(dm.pid, SIGINT);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);
    ck_assert_uint_eq(zones_of(d.out, good), GOOD_ZONES);
    lt_reader *r = ft_open(d.out);
    ck_assert_uint_eq(ft_total(r, "clients_over_budget"), 1);
    for (uint32_t p = 1; p <= lt_reader_nprocesses(r); p++) {
        const lt_process *lp = lt_reader_process(r, p);
        if (lp->pid == 5000 || lp->pid == 5001) ck_assert_int_eq(lp->status, LT_PROC_CLEAN);
        if (lp->pid == 5002) {
            ck_assert_int_eq(lp->status, LT_PROC_REJECTED);
            ck_assert_msg(strstr(lp->end_reason, "capture's budget"), "%s", lp->end_reason);
        }
    }
    lt_reader_free(r);
    ck_assert_int_eq(refused, 0);
    every_reader_reads(&d, d.out);
    ft_dir_clean(&d);
}
END_TEST

/* ---- 1b. Random client streams: whatever the daemon accepts is read ------ */

static uint64_t g_rng;
static uint32_t rnd(uint32_t n) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng % n);
}

/* One random client: a few dozen steps, valid or not, until the daemon
 * closes it or it says goodbye (or just goes). */
static void random_client(int port, uint64_t pid) {
    int fd = try_open(port, pid);
    if (fd < 0) return;
    uint8_t *m = malloc(2 * LT_MAX_STRING + 256);
    uint32_t next_loc = 2, threads = 1, depth = 0;
    int alive = 1, steps = 4 + (int)rnd(40);
    for (int s = 0; s < steps && alive; s++) {
        size_t n = 0;
        uint8_t type = 0x02;
        switch (rnd(16)) {
        case 0:
        case 1:
        case 2:
        case 3: /* big location definitions: the budgets */
            type = 0x03;
            for (int k = 0, nk = 1 + (int)rnd(300); k < nk && alive; k++) {
                n = big_loc(m, next_loc++, LT_MAX_STRING - rnd(100), 'a');
                alive = send_msg(fd, type, m, n) == 0;
            }
            continue;
        case 4: { /* many small definitions */
            type = 0x03;
            uint8_t *w = m;
            for (int k = 0; k < 2000; k++) {
                *w++ = LT_TAG_LOC_DEF;
                w = lt__put_varint_(w, next_loc);
                *w++ = LT_LOC_USER;
                w = lt__put_varint_(w, next_loc++);
                w = lt__put_str(w, "f", 1);
                w = lt__put_str(w, "x.c", 3);
            }
            n = (size_t)(w - m);
            break;
        }
        case 5: { /* a thread */
            type = 0x03;
            uint8_t *w = m;
            *w++ = LT_TAG_THREAD_INFO;
            w = lt__put_varint_(w, ++threads);
            w = lt__put_varint_(w, 77);
            w = lt__put_str(w, "t", 1);
            n = (size_t)(w - m);
            break;
        }
        case 6:
        case 7:
        case 8:
        case 9:
        case 10: { /* valid zones, maybe left open */
            uint8_t *w = m;
            w = lt__put_varint_(w, 1 + rnd(threads));
            for (int k = 0, nk = 1 + (int)rnd(500); k < nk; k++) {
                *w++ = 0x81, w = lt__put_varint_(w, 1 + rnd(next_loc - 1));
                *w++ = 0x02, *w++ = (uint8_t)(1 + rnd(100));
            }
            if (rnd(4) == 0) *w++ = 0x81, *w++ = 1, depth++;
            n = (size_t)(w - m);
            break;
        }
        case 11: /* random bytes */
            n = 1 + rnd(200);
            for (size_t k = 0; k < n; k++) m[k] = (uint8_t)rnd(256);
            type = (uint8_t)(1 + rnd(5));
            break;
        case 12: { /* a location out of order */
            type = 0x03;
            uint8_t *w = m;
            *w++ = LT_TAG_LOC_DEF;
            w = lt__put_varint_(w, next_loc + 5);
            *w++ = LT_LOC_USER;
            *w++ = 1;
            w = lt__put_str(w, "o", 1);
            w = lt__put_str(w, "o.c", 3);
            n = (size_t)(w - m);
            break;
        }
        case 13: { /* a zone end too many */
            uint8_t *w = m;
            *w++ = 1;
            for (uint32_t k = 0; k <= depth; k++) *w++ = 0x02, *w++ = 1;
            n = (size_t)(w - m);
            break;
        }
        case 14: { /* half a message, then gone */
            uint8_t h[5] = {100, 0, 0, 0, 0x02}, b[20] = {1, 0x81, 1};
            (void)ft_send_all(fd, h, 5);
            (void)ft_send_all(fd, b, 3);
            alive = 0;
            continue;
        }
        default: { /* goodbye */
            uint8_t *w = m;
            *w++ = 0, *w++ = 0;
            (void)send_msg(fd, 0x04, m, 2);
            alive = 0;
            continue;
        }
        }
        alive = send_msg(fd, type, m, n) == 0;
    }
    free(m);
    shutdown(fd, SHUT_WR); /* gone: the daemon ends it */
    wait_closed_quiet(fd);
}

enum { RANDOM_ROUNDS = 6, RANDOM_CLIENTS = 6 };

START_TEST(random_client_streams_always_give_a_readable_file) {
    uint64_t over = 0, rejected = 0;
    for (int round = 0; round < RANDOM_ROUNDS; round++) {
        ft_dir d;
        ft_dir_init(&d);
        g_rng = 0x9E3779B97F4A7C15ull * (uint64_t)(round + 1);
        ft_daemon dm;
        ft_daemon_start(&dm, &d, "-q", "-s", "600", NULL);
        pid_t good = start_good(dm.port, GOOD_ZONES, NULL);
        for (int c = 0; c < RANDOM_CLIENTS; c++) random_client(dm.port, FT_FAKE_PID + 7000 + (uint64_t)c);
        ck_assert_int_eq(ft_wait(good, FT_WAIT_MS), 0);
        kill(dm.pid, SIGINT);
        ck_assert_int_eq(ft_daemon_wait(&dm), 0);
        ck_assert_uint_eq(zones_of(d.out, good), GOOD_ZONES);
        lt_reader *r = ft_open(d.out);
        over += ft_total(r, "clients_over_budget");
        rejected += ft_total(r, "clients_rejected");
        lt_reader_free(r);
        every_reader_reads(&d, d.out);
        ft_dir_clean(&d);
    }
    /* The rounds went past the budget and broke the protocol. */
    ck_assert_uint_ge(over, 1);
    ck_assert_uint_ge(rejected, over + 1);
}
END_TEST

/* ---- 2. Clients stalled in the middle of messages ------------------------ */

enum { STALLERS = 40, STALL_BODY = (1 << 20) - 1 };

/* In a child: STALLERS connections each send all but the last 150 bytes of
 * a 1 MiB EVENTS message, then one byte every 500 ms (never completing it).
 * Exits with how many the daemon closed within `ms`. */
static int stallers(int port, int ms) {
    static uint8_t msg[5 + STALL_BODY];
    msg[0] = (uint8_t)STALL_BODY, msg[1] = (uint8_t)(STALL_BODY >> 8);
    msg[2] = (uint8_t)(STALL_BODY >> 16), msg[3] = 0, msg[4] = 0x02;
    memset(msg + 5, 0x81, sizeof msg - 5); /* never complete: never checked */
    int fds[STALLERS];
    size_t off[STALLERS];
    int open_n = 0;
    for (int i = 0; i < STALLERS; i++) {
        fds[i] = -1;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) continue;
        wbuf b = {.n = 0};
        ft_hello_body(&b, "TRCYWIRE", 1, FT_FAKE_PID + 9000 + (uint64_t)i);
        uint8_t h[5];
        raw_msg(fd, 0x01, &b);
        struct timeval tv = {10, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (recv(fd, h, 5, MSG_WAITALL) != 5 || h[4] != 0x81) {
            close(fd);
            continue;
        }
        uint8_t rest[64];
        if (recv(fd, rest, h[0] - 1u, MSG_WAITALL) != h[0] - 1) {
            close(fd);
            continue;
        }
        b.n = 0;
        w_u8(&b, LT_TAG_THREAD_INFO), w_var(&b, 1), w_var(&b, 1), w_str(&b, "main");
        w_u8(&b, LT_TAG_LOC_DEF), w_var(&b, 1), w_u8(&b, LT_LOC_USER), w_var(&b, 1);
        w_str(&b, "w"), w_str(&b, "w.c");
        raw_msg(fd, 0x03, &b);
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        fds[i] = fd;
        off[i] = 0;
        open_n++;
    }
    int closed = 0;
    size_t upto = sizeof msg - 150;
    for (int t = 0; t < ms / 50 && closed < open_n; t++) {
        for (int i = 0; i < STALLERS; i++) {
            if (fds[i] < 0) continue;
            char tmp[64];
            ssize_t r = recv(fds[i], tmp, sizeof tmp, MSG_DONTWAIT);
            int gone = r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
            size_t lim = off[i] < upto ? upto : off[i] + (t % 10 == 0);
            if (!gone && off[i] < lim && lim <= sizeof msg - 1) {
                ssize_t w = send(fds[i], msg + off[i], lim - off[i], MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w > 0) off[i] += (size_t)w;
                else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) gone = 1;
            }
            if (gone) {
                close(fds[i]);
                fds[i] = -1;
                closed++;
            }
        }
        usleep(50000);
    }
    for (int i = 0; i < STALLERS; i++)
        if (fds[i] >= 0) close(fds[i]);
    return closed > 255 ? 255 : closed;
}

START_TEST(stalled_clients_do_not_lock_new_ones_out) {
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    /* -m 16: 40 partial messages of 1 MiB are more than it holds. */
    ft_daemon_start(&dm, &d, "-s", "600", "-m", "16", NULL);
    pid_t st = fork();
    ck_assert_int_ge(st, 0);
    if (st == 0) _exit(stallers(dm.port, 15000));
    /* Let them fill -m (bounded: the daemon's log says when it paused is
     * not needed, the assertions below do not depend on timing). */
    sleep(2);
    pid_t good = start_good(dm.port, GOOD_ZONES, NULL);
    ck_assert_int_eq(ft_wait(good, FT_WAIT_MS), 0);
    int closed = ft_wait(st, FT_WAIT_MS);
    kill(dm.pid, SIGINT);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);
    ck_assert_uint_eq(zones_of(d.out, good), GOOD_ZONES);
    lt_reader *r = ft_open(d.out);
    uint64_t slow = ft_total(r, "clients_too_slow");
    ck_assert_uint_ge(slow, 1);
    ck_assert_uint_eq(ft_total(r, "clients_refused"), 0);
    lt_reader_free(r);
    ck_assert_int_ge(closed, 1);
    char *s = ft_slurp(d.err);
    ck_assert_msg(strstr(s, "slower than the minimum rate of 1 MiB/s"), "%s", s);
    ck_assert_msg(!strstr(s, "no HELLO"), "%s", s);
    free(s);
    every_reader_reads(&d, d.out);
    ft_dir_clean(&d);
}
END_TEST

/* ---- 5. -o on a FIFO ------------------------------------------------------- */

START_TEST(a_fifo_output_waits_for_its_reader_without_blocking) {
    ft_dir d;
    ft_dir_init(&d);
    char fifo[160], *s;
    snprintf(fifo, sizeof fifo, "%s/out.fifo", d.dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    char *argv[] = {(char *)ft_bin("capture-release"), "-o", fifo, "-a", "127.0.0.1",
                    "-p", "0", "-s", "600", NULL, NULL};
    /* Without -f: refused at once, in one line. */
    ft_daemon dm;
    ft_spawn(&dm, argv, d.err, 0);
    ck_assert_int_eq(ft_daemon_wait(&dm), 2);
    s = ft_slurp(d.err);
    ck_assert_msg(strstr(s, "is a FIFO: give -f") && ft_count_lines(s) == 1, "%s", s);
    free(s);
    /* With -f and no reader: the port first, one line, and a signal still
     * ends it (the loop is not blocked in open). */
    argv[9] = "-f";
    ft_spawn(&dm, argv, d.err, 1);
    for (int i = 0; i < FT_WAIT_MS / 10; i++) {
        s = ft_slurp(d.err);
        int said = strstr(s, "waiting for a reader") != NULL;
        free(s);
        if (said) break;
        usleep(10000);
    }
    s = ft_slurp(d.err);
    ck_assert_msg(strstr(s, "is a FIFO: waiting for a reader"), "%s", s);
    free(s);
    kill(dm.pid, SIGINT);
    ck_assert_int_eq(ft_daemon_wait(&dm), 2);
    /* With a reader: a client that connects before it is served after. */
    ft_spawn(&dm, argv, d.err, 1);
    pid_t rd = fork();
    ck_assert_int_ge(rd, 0);
    if (rd == 0) {
        usleep(300000);
        int in = open(fifo, O_RDONLY), out = open(d.out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        char buf[65536];
        ssize_t n;
        while ((n = read(in, buf, sizeof buf)) > 0)
            if (write(out, buf, (size_t)n) != n) _exit(1);
        _exit(n < 0);
    }
    good_args a = {GOOD_ZONES, -1};
    pid_t good = ft_client(dm.port, (const char *[]){"TRACY_QUIET=1", NULL}, NULL,
                           good_client, &a);
    ck_assert_int_eq(ft_wait(good, FT_WAIT_MS), 0);
    kill(dm.pid, SIGINT);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);
    ck_assert_int_eq(ft_wait(rd, FT_WAIT_MS), 0);
    ck_assert_uint_eq(zones_of(d.out, good), GOOD_ZONES);
    unlink(fifo);
    ft_dir_clean(&d);
}
END_TEST

Suite *hostile_daemon_suite(void) {
    Suite *s = suite_create("hostile_daemon");
    TCase *tc = tcase_create("budget");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, a_metadata_flood_is_cut_off_and_the_file_stays_readable);
    tcase_add_test(tc, clients_together_past_the_file_budget_are_cut_off);
    tcase_add_test(tc, random_client_streams_always_give_a_readable_file);
    suite_add_tcase(s, tc);
    tc = tcase_create("admission");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, stalled_clients_do_not_lock_new_ones_out);
    tcase_add_test(tc, a_fifo_output_waits_for_its_reader_without_blocking);
    suite_add_tcase(s, tc);
    return s;
}
