/* check_limit.c -- long runs and many hosts with real daemons and clients:
 * capture-release --max-size (stop, rotation), and two simulated hosts
 * (one daemon each, TRACY_HOST and a clock offset) merged by tracy-merge. */
#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "trace.h"
#include "trace_client.h"

/* Starts capture-release -p 0 with extra arguments; returns its pid and
 * fills *port from its first stdout line. */
static pid_t spawn_daemon(const char *out, const char *errpath, const char *const *extra,
                          int *port) {
    const char *b = getenv("LT_BUILD");
    ck_assert_msg(b != NULL, "LT_BUILD is not set (run through make check-c)");
    char bin[512];
    snprintf(bin, sizeof bin, "%s/bin/capture-release", b);
    char *argv[32] = {bin, "-o", (char *)out, "-a", "127.0.0.1", "-p", "0"};
    int n = 7;
    for (; *extra; extra++) argv[n++] = (char *)*extra;
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        FILE *e = freopen(errpath, "w", stderr);
        (void)e;
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        execv(bin, argv);
        _exit(127);
    }
    close(pfd[1]);
    char line[32] = "";
    size_t k = 0;
    struct pollfd p = {pfd[0], POLLIN, 0};
    while (k < sizeof line - 1 && poll(&p, 1, 10000) > 0 && read(pfd[0], line + k, 1) == 1 &&
           line[k] != '\n')
        k++;
    close(pfd[0]);
    *port = atoi(line);
    ck_assert_msg(*port > 0, "the daemon did not print its port");
    return pid;
}

static int wait_exit(pid_t pid) {
    int st;
    for (int i = 0; i < 3000; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    ck_abort_msg("the daemon did not exit");
    return -1;
}

/* A client process recording `pairs` zones, each with a plot sample of a
 * value that does not compress; exits 0 when every event was sent. */
static pid_t spawn_client(int port, unsigned pairs) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid) return pid;
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    setenv("TRACY_PORT", p, 1);
    setenv("TRACY_ADDR", "127.0.0.1", 1);
    if (lt_client_start() != 0) _exit(3);
    uint32_t loc = lt_loc_register(LT_LOC_USER, "work", __FILE__, __LINE__);
    uint32_t plot = lt_plot_register("noise");
    uint64_t x = 88172645463325252ull;
    for (unsigned i = 0; i < pairs; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        lt_zone_begin(loc);
        lt_plot(plot, (double)x);
        lt_zone_end();
    }
    uint64_t sent, lost;
    lt_client_stop();
    lt_client_counts(&sent, &lost);
    _exit(lost == 0 && sent == 3ull * pairs ? 0 : 4);
}

START_TEST(max_size_stops_recording_and_counts_the_rest) {
    char dir[] = "/tmp/check_limit.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char out[128], err[128];
    snprintf(out, sizeof out, "%s/run.tracy", dir);
    snprintf(err, sizeof err, "%s/stderr.txt", dir);
    int port;
    pid_t d = spawn_daemon(out, err, (const char *[]){"--max-size", "1", "-m", "1", "-n", "1", NULL},
                           &port);
    enum { PAIRS = 600000 }; /* 1.8M events, about 9 MB compressed */
    pid_t c = spawn_client(port, PAIRS);
    int st;
    ck_assert_int_eq(waitpid(c, &st, 0), c);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client status %d", st);
    ck_assert_int_eq(wait_exit(d), 0);

    lt_reader *r;
    char detail[256];
    ck_assert_msg(lt_reader_open(&r, out, detail, sizeof detail) == 0, "%s", detail);
    ck_assert(lt_reader_info(r)->complete);
    uint64_t limit = 0, dropped = 0, events = 0;
    ck_assert(lt_reader_total(r, "size_limit_bytes", &limit));
    ck_assert(lt_reader_total(r, "events_dropped_size_limit", &dropped));
    ck_assert(lt_reader_total(r, "events", &events));
    ck_assert_uint_eq(limit, 1u << 20);
    ck_assert_msg(dropped > 0, "nothing dropped: %llu events, file %llu bytes", (unsigned long long)events, (unsigned long long)lt_reader_info(r)->file_size);
    ck_assert_uint_eq(events + dropped, 3ull * PAIRS); /* nothing lost unseen */
    /* the file stopped near the limit: past it only what was in flight */
    ck_assert_uint_ge(lt_reader_info(r)->file_size, 1u << 20);
    ck_assert_uint_lt(lt_reader_info(r)->file_size, (1u << 20) + (3u << 20));
    /* every stored event decodes; the process is recorded as ended */
    lt_event ev;
    uint64_t n = 0;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0) n += !(ev.flags & LT_EVF_UNCLOSED);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(n, events);
    ck_assert_int_eq(lt_reader_process(r, 1)->status, LT_PROC_CLEAN);
    lt_reader_free(r);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "grep -q 'reached --max-size' '%s'", err);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The files of a rotation, each a complete trace: every plot value the
 * client sent is found once, in order, across them; zones open at a
 * rotation continue in the next file as cut zones. */
START_TEST(rotation_writes_complete_numbered_files) {
    char dir[] = "/tmp/check_limit.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char out[128], err[128], path[160];
    snprintf(out, sizeof out, "%s/run.tracy", dir);
    snprintf(err, sizeof err, "%s/stderr.txt", dir);
    int port;
    pid_t d = spawn_daemon(out, err,
                           (const char *[]){"--max-size", "1", "--rotate", "-n", "1", NULL}, &port);
    enum { PAIRS = 500000 }; /* about 7 MB compressed: 5 files or more */
    pid_t c = spawn_client(port, PAIRS);
    int st;
    ck_assert_int_eq(waitpid(c, &st, 0), c);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client status %d", st);
    ck_assert_int_eq(wait_exit(d), 0);

    uint64_t x = 88172645463325252ull, seen = 0, events = 0, cut_begins = 0;
    int files = 0;
    for (int k = 0;; k++) {
        if (k == 0) snprintf(path, sizeof path, "%s", out);
        else snprintf(path, sizeof path, "%s/run.%d.tracy", dir, k);
        if (access(path, F_OK) != 0) break;
        files++;
        lt_reader *r;
        char detail[256];
        ck_assert_msg(lt_reader_open(&r, path, detail, sizeof detail) == 0, "%s: %s", path, detail);
        ck_assert_msg(lt_reader_info(r)->complete, "%s has no trailer", path);
        uint64_t idx = 0, limit = 0, n = 0;
        ck_assert(lt_reader_total(r, "rotation_index", &idx) || k == 0);
        ck_assert_uint_eq(idx, k ? (uint64_t)k + 1 : idx);
        ck_assert(lt_reader_total(r, "size_limit_bytes", &limit));
        ck_assert_uint_eq(limit, 1u << 20);
        int named = 0; /* metadata repeated in every file */
        for (uint32_t l = 1; lt_reader_loc(r, 1, l); l++) named |= !strcmp(lt_reader_loc(r, 1, l)->name, "work");
        ck_assert_msg(named, "%s: location 'work' not defined", path);
        ck_assert_uint_le(lt_reader_info(r)->file_size, (1u << 20) + (256u << 10));
        lt_event ev;
        int rc;
        while ((rc = lt_reader_next(r, &ev)) > 0) {
            if (ev.type == LT_EV_PLOT) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                ck_assert_msg(ev.value == (double)x, "plot %llu out of order in %s",
                              (unsigned long long)seen, path);
                seen++;
            }
            if (ev.type == LT_EV_ZONE_BEGIN && (ev.flags & LT_EVF_CUT)) cut_begins++;
            if (ev.type == LT_EV_ZONE_BEGIN && !(ev.flags & LT_EVF_CUT)) n++;
        }
        ck_assert_int_eq(rc, 0);
        events += n;
        lt_reader_free(r);
    }
    ck_assert_msg(files >= 3, "only %d files", files);
    ck_assert_uint_eq(seen, PAIRS);
    ck_assert_uint_eq(events, PAIRS); /* every zone begun once (cut ones repeat) */
    ck_assert_uint_le(cut_begins, (uint64_t)files - 1);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* One "host": a client of the daemon on `port` calling itself `host`, its
 * clock `offset` ns away from the real one. It plays ROUNDS turns of a
 * ping-pong with the other host: waits for the token on `in` (except host
 * a's first turn), records a message, sleeps 1 ms, passes the token on. */
enum { ROUNDS = 20 };
static pid_t spawn_host(int port, const char *host, const char *offset, int in, int out,
                        int first) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid) return pid;
    char p[16], msg[32], c = 1;
    snprintf(p, sizeof p, "%d", port);
    setenv("TRACY_PORT", p, 1);
    setenv("TRACY_ADDR", "127.0.0.1", 1);
    setenv("TRACY_HOST", host, 1);
    setenv("TRACY_TEST_CLOCK_OFFSET_NS", offset, 1);
    if (lt_client_start() != 0) _exit(3);
    for (int i = 0; i < ROUNDS; i++) {
        if ((i > 0 || !first) && read(in, &c, 1) != 1) _exit(5);
        snprintf(msg, sizeof msg, "%s %d", host, i);
        lt_message_str(msg);
        usleep(1000);
        if (write(out, &c, 1) != 1) _exit(6);
    }
    lt_client_stop();
    _exit(0);
}

static void run_merge(const char *dir, const char *a, const char *b, const char *out) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "%s/bin/tracy-merge -q -o '%s/%s' '%s' '%s'", getenv("LT_BUILD"),
             dir, out, a, b);
    ck_assert_int_eq(system(cmd), 0);
}

/* Host b's monotonic clock reads 5000 s more than host a's (it booted
 * earlier). Merged, the messages of the two must alternate in time as they
 * were recorded, and the shift found must be the offset within the stated
 * error. */
START_TEST(two_hosts_merge_onto_one_timeline) {
    const int64_t OFFSET = 5000000000000ll;
    char dir[] = "/tmp/check_limit.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char out[2][128], err[2][128];
    int port[2], ab[2], ba[2];
    pid_t d[2], c[2];
    for (int i = 0; i < 2; i++) {
        snprintf(out[i], sizeof out[i], "%s/node-%c.tracy", dir, 'a' + i);
        snprintf(err[i], sizeof err[i], "%s/stderr-%d.txt", dir, i);
        d[i] = spawn_daemon(out[i], err[i], (const char *[]){"-n", "1", NULL}, &port[i]);
    }
    ck_assert_int_eq(pipe(ab), 0);
    ck_assert_int_eq(pipe(ba), 0);
    c[0] = spawn_host(port[0], "node-a", "0", ba[0], ab[1], 1);
    c[1] = spawn_host(port[1], "node-b", "5000000000000", ab[0], ba[1], 0);
    for (int i = 0; i < 2; i++) {
        int st;
        ck_assert_int_eq(waitpid(c[i], &st, 0), c[i]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "host %d: status %d", i, st);
        ck_assert_int_eq(wait_exit(d[i]), 0);
    }
    run_merge(dir, out[0], out[1], "all.tracy");
    char path[160];
    snprintf(path, sizeof path, "%s/all.tracy", dir);
    lt_reader *r;
    ck_assert_int_eq(lt_reader_open(&r, path, NULL, 0), 0);
    uint64_t error = 0, shift = 1;
    ck_assert(lt_reader_total(r, "clock_align_error_ns", &error));
    ck_assert(lt_reader_total(r, "clock_shift_ns:node-a", &shift));
    ck_assert_uint_gt(error, 0);
    ck_assert_uint_le(error, 10000);
    ck_assert_msg(llabs((long long)shift - OFFSET) <= (long long)error,
                  "shift %llu, offset %lld, error %llu", (unsigned long long)shift,
                  (long long)OFFSET, (unsigned long long)error);
    ck_assert_str_eq(lt_reader_process(r, 1)->hostname, "node-a");
    ck_assert_str_eq(lt_reader_process(r, 2)->hostname, "node-b");
    /* in time order: node-a 0, node-b 0, node-a 1, node-b 1, ... */
    lt_event ev;
    int n = 0, rc;
    uint64_t prev = 0;
    while ((rc = lt_reader_next(r, &ev)) > 0) {
        if (ev.type != LT_EV_MESSAGE) continue;
        char want[32];
        snprintf(want, sizeof want, "node-%c %d", n % 2 ? 'b' : 'a', n / 2);
        ck_assert_msg(ev.text_len == strlen(want) && !memcmp(ev.text, want, ev.text_len),
                      "message %d is '%.*s', want '%s'", n, (int)ev.text_len, ev.text, want);
        /* 1 ms apart in reality: apart by at least that, less the error */
        if (n) ck_assert_uint_ge(ev.ts - prev + error, 1000000);
        prev = ev.ts;
        n++;
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(n, 2 * ROUNDS);
    lt_reader_free(r);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- Flight recorder ------------------------------------------------------ */

/* In a child: flight mode keeping `size`, dumps to `out` when asked only. */
static void flight_start(const char *size, const char *out) {
    setenv("TRACY_FLIGHT", size, 1);
    setenv("TRACY_FLIGHT_OUT", out, 1);
    setenv("TRACY_FLIGHT_NO_EXIT_DUMP", "1", 1);
    setenv("TRACY_QUIET", "1", 1);
    if (lt_client_start() != 0) _exit(3);
}

/* A fresh folder in `dir` (a mkdtemp template), `out` its file `name`,
 * then fork(): 0 in the child, its pid in the parent. */
static pid_t flight_fork(char *dir, char *out, size_t n, const char *name) {
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(out, n, "%s/%s", dir, name);
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    return c;
}

/* Waits for child c, which must have exited with 0. */
static void reap_ok(pid_t c) {
    int st;
    ck_assert_int_eq(waitpid(c, &st, 0), c);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
}

enum { EARLY = 400000, LATE = 2000, AFTER = 500 };

static int wait_file(const char *path, int ms) {
    for (int i = 0; i < ms / 10; i++) {
        if (access(path, F_OK) == 0) return 1;
        usleep(10000);
    }
    return 0;
}

/* The recording process: an outer zone, EARLY zones "early" (far more than
 * 1 MiB), LATE zones "late"; tells the parent, waits for the dump the
 * parent's SIGUSR1 asks for, then AFTER zones "after", ends the outer zone
 * and exits (the exit dump is the second file). */
static void flight_child(const char *dir, int ready) {
    char out[160], first[200];
    snprintf(out, sizeof out, "%s/fl.tracy", dir);
    snprintf(first, sizeof first, "%s/fl.tracy", dir);
    setenv("TRACY_FLIGHT", "1M", 1);
    setenv("TRACY_FLIGHT_OUT", out, 1);
    setenv("TRACY_QUIET", "1", 1);
    if (lt_client_start() != 0) _exit(3);
    uint32_t outer = lt_loc_register(LT_LOC_USER, "outer", __FILE__, __LINE__);
    uint32_t early = lt_loc_register(LT_LOC_USER, "early", __FILE__, __LINE__);
    uint32_t late = lt_loc_register(LT_LOC_USER, "late", __FILE__, __LINE__);
    uint32_t after = lt_loc_register(LT_LOC_USER, "after", __FILE__, __LINE__);
    lt_zone_begin(outer);
    for (int i = 0; i < EARLY; i++) {
        lt_zone_begin(early);
        lt_zone_text("e", 1);
        lt_zone_end();
    }
    for (int i = 0; i < LATE; i++) {
        lt_zone_begin(late);
        lt_zone_end();
    }
    char c = 1;
    if (write(ready, &c, 1) != 1) _exit(4);
    /* the dump's round took its snapshot before creating the file */
    if (!wait_file(first, 10000)) _exit(5);
    for (int i = 0; i < AFTER; i++) {
        lt_zone_begin(after);
        lt_zone_end();
    }
    lt_zone_end();
    exit(0); /* the client's atexit handler stops it: the exit dump */
}

/* Zones of each location name in a file: complete ones, cut ones, unclosed
 * ones. */
typedef struct zcount {
    uint64_t whole[5], cut[5], unclosed[5], dropped;
} zcount;

static zcount count_zones(const char *path) {
    static const char *names[5] = {"outer", "early", "late", "after", "?"};
    zcount z = {0};
    lt_reader *r;
    char detail[256];
    ck_assert_msg(lt_reader_open(&r, path, detail, sizeof detail) == 0, "%s: %s", path, detail);
    ck_assert_msg(lt_reader_info(r)->complete, "%s: no trailer", path);
    ck_assert(lt_reader_total(r, "flight_events_dropped", &z.dropped));
    lt_event ev;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0) {
        if (ev.type != LT_EV_ZONE_END) continue;
        const lt_loc *l = lt_reader_loc(r, ev.process, ev.loc);
        int k = 4;
        for (int i = 0; i < 4; i++)
            if (l && !strcmp(l->name, names[i])) k = i;
        if (ev.flags & LT_EVF_UNCLOSED) z.unclosed[k]++;
        else if (ev.flags & LT_EVF_CUT) z.cut[k]++;
        else z.whole[k]++;
    }
    ck_assert_msg(rc == 0, "%s: %s", path, lt_reader_error(r));
    lt_reader_free(r);
    return z;
}

START_TEST(flight_recorder_dumps_the_window_on_signal_and_at_exit) {
    char dir[] = "/tmp/check_limit.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        close(pfd[0]);
        flight_child(dir, pfd[1]);
    }
    close(pfd[1]);
    char b;
    ck_assert_int_eq(read(pfd[0], &b, 1), 1);
    ck_assert_int_eq(kill(c, SIGUSR1), 0);
    reap_ok(c);
    char p1[160], p2[160];
    snprintf(p1, sizeof p1, "%s/fl.tracy", dir);
    snprintf(p2, sizeof p2, "%s/fl.1.tracy", dir);
    /* dumped by the signal: the window ends after the last "late" zone */
    zcount a = count_zones(p1);
    ck_assert_uint_eq(a.whole[2], LATE);       /* every late zone, whole */
    ck_assert_uint_eq(a.whole[3] + a.cut[3] + a.unclosed[3], 0); /* nothing after */
    ck_assert_uint_eq(a.unclosed[0], 1);       /* outer: open at both ends */
    ck_assert_uint_eq(a.cut[0], 0);            /* (an unclosed end counts first) */
    ck_assert_uint_eq(a.whole[0], 0);
    ck_assert_uint_le(a.cut[1], 1);            /* an early zone may straddle the start */
    ck_assert_uint_gt(a.whole[1], 1000);       /* the window holds the latest early ones */
    ck_assert_uint_lt(a.whole[1], EARLY / 2);  /* and not all: the oldest were dropped */
    ck_assert_uint_gt(a.dropped, 0);
    /* events seen = dropped + kept. Kept: both ends of each whole zone, the
     * end of an early zone straddling the start (its begin was dropped, the
     * file's begin is a repeat). The outer begin was dropped, its end not
     * yet seen: the file's pair is made up. The window may start between
     * two early zones as well as inside one (cut[1] is 0 or 1). */
    uint64_t kept = 2 * (a.whole[1] + a.whole[2]) + a.cut[1];
    ck_assert_uint_eq(a.dropped + kept, 1 + 2ull * EARLY + 2 * LATE);
    /* at exit: the after zones too, the outer zone closed (and cut) */
    zcount e = count_zones(p2);
    ck_assert_uint_eq(e.whole[3], AFTER);
    ck_assert_uint_eq(e.whole[2], LATE);
    ck_assert_uint_eq(e.cut[0], 1);
    ck_assert_uint_eq(e.unclosed[0], 0);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* TRACY_FLIGHT=0.3s: what was recorded more than 0.3 s before a dump is
 * gone from it, what came after is whole. */
START_TEST(flight_recorder_keeps_the_last_seconds) {
    char dir[] = "/tmp/check_limit.XXXXXX", out[160];
    pid_t c = flight_fork(dir, out, sizeof out, "sec.tracy");
    if (c == 0) {
        flight_start("0.3s", out);
        uint32_t early = lt_loc_register(LT_LOC_USER, "early", __FILE__, __LINE__);
        uint32_t late = lt_loc_register(LT_LOC_USER, "late", __FILE__, __LINE__);
        for (int i = 0; i < 1000; i++) {
            lt_zone_begin(early);
            lt_zone_end();
        }
        usleep(1000000); /* the early zones age past the window */
        for (int i = 0; i < LATE; i++) {
            lt_zone_begin(late);
            lt_zone_end();
        }
        _exit(lt_flight_dump() == 0 ? 0 : 4);
    }
    reap_ok(c);
    zcount z = count_zones(out);
    ck_assert_uint_eq(z.whole[2], LATE);
    ck_assert_uint_eq(z.whole[1] + z.cut[1] + z.unclosed[1], 0);
    ck_assert_uint_eq(z.dropped, 2000);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- Flight recorder: zones open where the window starts ----------------- */

/* Each thread of deep_child: `named` zones named and with text at the
 * bottom (k 3), `depth` zones "deep", then LEAVES zones "leaf" inside them,
 * far more than the window; k 1 first writes a text on a zone it closes
 * and then 20000 zones at depth 0 (its later chunks start with no zone
 * open that has a text). So many threads that what they set aside passes
 * its budget (client_flight.c). */
enum { DEEP_THREADS = 12, LEAVES = 60000 };
static const uint32_t deep_depth[DEEP_THREADS] = {1, 40, 1500, 1200, 2, 3, 4, 5, 6, 7, 8, 9};
static pthread_barrier_t deep_bar;
static uint32_t deep_loc, leaf_loc, named_loc;

static void *deep_thread(void *arg) {
    int k = (int)(intptr_t)arg;
    if (k == 1) {
        lt_zone_begin(leaf_loc);
        lt_zone_text("gone", 4);
        lt_zone_end();
        for (int i = 0; i < 20000; i++) {
            lt_zone_begin(leaf_loc);
            lt_zone_end();
        }
    }
    if (k == 3) {
        lt_zone_begin(named_loc);
        lt_zone_name("renamed", 7);
        lt_zone_text("kept", 4);
    }
    for (uint32_t i = 0; i < deep_depth[k]; i++) lt_zone_begin(deep_loc);
    for (int i = 0; i < LEAVES; i++) {
        lt_zone_begin(leaf_loc);
        lt_zone_end();
    }
    pthread_barrier_wait(&deep_bar); /* the dump */
    pthread_barrier_wait(&deep_bar);
    for (uint32_t i = 0; i < deep_depth[k] + (k == 3); i++) lt_zone_end();
    return NULL;
}

/* Records with a window smaller than one chunk (0.03M, some 31 KiB), dumps
 * while every thread is deep inside its zones. */
static void deep_child(const char *out) {
    flight_start("0.03M", out);
    deep_loc = lt_loc_register(LT_LOC_USER, "deep", __FILE__, __LINE__);
    leaf_loc = lt_loc_register(LT_LOC_USER, "leaf", __FILE__, __LINE__);
    named_loc = lt_loc_register(LT_LOC_USER, "named", __FILE__, __LINE__);
    pthread_barrier_init(&deep_bar, NULL, DEEP_THREADS + 1);
    pthread_t th[DEEP_THREADS];
    for (int k = 0; k < DEEP_THREADS; k++)
        if (pthread_create(&th[k], NULL, deep_thread, (void *)(intptr_t)k) != 0) _exit(4);
    pthread_barrier_wait(&deep_bar);
    int rc = lt_flight_dump();
    pthread_barrier_wait(&deep_bar);
    for (int k = 0; k < DEEP_THREADS; k++) pthread_join(th[k], NULL);
    _exit(rc == 0 ? 0 : 5);
}

/* Per thread (1.. the deep threads, numbered as each records its first
 * zone: in any order), the zones found. */
typedef struct deep_seen {
    uint32_t cut_deep, cut_other, cut_leaf, min_depth, max_depth, leaf_depth;
    int named_ok;
} deep_seen;

START_TEST(flight_recorder_cuts_deep_stacks_in_a_small_window) {
    char dir[] = "/tmp/check_limit.XXXXXX", out[160];
    pid_t c = flight_fork(dir, out, sizeof out, "deep.tracy");
    if (c == 0) deep_child(out);
    reap_ok(c);
    lt_reader *r;
    char detail[256];
    ck_assert_msg(lt_reader_open(&r, out, detail, sizeof detail) == 0, "%s", detail);
    uint64_t dropped = 0;
    ck_assert(lt_reader_total(r, "flight_events_dropped", &dropped));
    ck_assert_uint_gt(dropped, 2ull * LEAVES); /* most of the run */
    deep_seen seen[DEEP_THREADS + 2];
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < DEEP_THREADS + 2; i++) seen[i].min_depth = seen[i].leaf_depth = UINT32_MAX;
    uint64_t leaves = 0;
    lt_event ev;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0) {
        if (ev.type != LT_EV_ZONE_END) continue;
        ck_assert_uint_lt(ev.thread, DEEP_THREADS + 2);
        deep_seen *d = &seen[ev.thread];
        const lt_loc *l = lt_reader_loc(r, ev.process, ev.loc);
        ck_assert_ptr_nonnull(l);
        if (!strcmp(l->name, "leaf")) {
            d->cut_leaf += (ev.flags & LT_EVF_CUT) != 0; /* one may straddle the start */
            d->leaf_depth = ev.depth;
            leaves++;
        } else if (!(ev.flags & LT_EVF_CUT)) {
            ck_abort_msg("zone %s whole at depth %u", l->name, ev.depth);
        } else if (!strcmp(l->name, "deep")) {
            d->cut_deep++;
            if (ev.depth < d->min_depth) d->min_depth = ev.depth;
            if (ev.depth > d->max_depth) d->max_depth = ev.depth;
        } else {
            d->cut_other++;
            d->named_ok = !strcmp(l->name, "named") && ev.depth == 0 && ev.name &&
                          ev.name_len == 7 && !memcmp(ev.name, "renamed", 7) && ev.text &&
                          ev.text_len == 4 && !memcmp(ev.text, "kept", 4);
        }
    }
    ck_assert_msg(rc == 0, "%s", lt_reader_error(r));
    lt_reader_free(r);
    (void)leaves; /* none when each thread's last copy was larger than the window */
    /* each thread's open zones, whatever the order the threads started in */
    int found[DEEP_THREADS] = {0};
    ck_assert_uint_eq(seen[DEEP_THREADS + 1].cut_deep + seen[DEEP_THREADS + 1].cut_other, 0);
    for (int t = 1; t <= DEEP_THREADS; t++) {
        deep_seen *d = &seen[t];
        int k = -1;
        for (int j = 0; j < DEEP_THREADS; j++)
            if (d->cut_deep == deep_depth[j] && !found[j]) k = j;
        ck_assert_msg(k >= 0, "thread %d: %u cut deep zones", t, d->cut_deep);
        found[k] = 1;
        uint32_t base = k == 3; /* under the named zone */
        ck_assert_uint_eq(d->cut_other, base);
        ck_assert_uint_le(d->cut_leaf, 1);
        if (base) ck_assert_msg(d->named_ok, "thread %d: the named zone", t);
        ck_assert_uint_eq(d->min_depth, base);
        ck_assert_uint_eq(d->max_depth, base + deep_depth[k] - 1);
        if (d->leaf_depth != UINT32_MAX) ck_assert_uint_eq(d->leaf_depth, base + deep_depth[k]);
    }
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A thread records at most LT_MAX_DEPTH open zones, what a trace holds:
 * the begins beyond (and their ends) are dropped and counted as lost, the
 * zones around them are whole and the ones after at the right depth. */
START_TEST(zones_nested_beyond_the_format_limit_are_dropped) {
    enum { OVER = 3000, AFTER_N = 10 };
    char dir[] = "/tmp/check_limit.XXXXXX", out[160];
    pid_t c = flight_fork(dir, out, sizeof out, "nest.tracy");
    if (c == 0) {
        flight_start("64M", out);
        uint32_t deep = lt_loc_register(LT_LOC_USER, "deep", __FILE__, __LINE__);
        uint32_t after = lt_loc_register(LT_LOC_USER, "after", __FILE__, __LINE__);
        for (uint32_t i = 0; i < LT_MAX_DEPTH + OVER; i++) lt_zone_begin(deep);
        for (uint32_t i = 0; i < LT_MAX_DEPTH + OVER; i++) lt_zone_end();
        for (int i = 0; i < AFTER_N; i++) {
            lt_zone_begin(after);
            lt_zone_end();
        }
        uint64_t lost = 0;
        lt_client_counts(NULL, &lost);
        if (lost != 2 * OVER) _exit(4);
        _exit(lt_flight_dump() == 0 ? 0 : 5);
    }
    reap_ok(c);
    lt_reader *r;
    char detail[256];
    ck_assert_msg(lt_reader_open(&r, out, detail, sizeof detail) == 0, "%s", detail);
    lt_event ev;
    int rc;
    uint64_t deep_n = 0, after_n = 0, lost = 0, max_depth = 0;
    while ((rc = lt_reader_next(r, &ev)) > 0) {
        if (ev.type == LT_EV_LOST) lost += ev.count;
        if (ev.type != LT_EV_ZONE_END) continue;
        ck_assert_uint_eq(ev.flags, 0); /* whole */
        const lt_loc *l = lt_reader_loc(r, ev.process, ev.loc);
        if (!strcmp(l->name, "deep")) {
            deep_n++;
            if (ev.depth > max_depth) max_depth = ev.depth;
        } else {
            ck_assert_str_eq(l->name, "after");
            ck_assert_uint_eq(ev.depth, 0);
            after_n++;
        }
    }
    ck_assert_msg(rc == 0, "%s", lt_reader_error(r));
    lt_reader_free(r);
    ck_assert_uint_eq(deep_n, LT_MAX_DEPTH);
    ck_assert_uint_eq(max_depth, LT_MAX_DEPTH - 1);
    ck_assert_uint_eq(after_n, AFTER_N);
    ck_assert_uint_eq(lost, 2 * OVER);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

Suite *limit_suite(void) {
    Suite *s = suite_create("limit");
    TCase *c = tcase_create("max_size");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, max_size_stops_recording_and_counts_the_rest);
    tcase_add_test(c, rotation_writes_complete_numbered_files);
    suite_add_tcase(s, c);
    c = tcase_create("multihost");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, two_hosts_merge_onto_one_timeline);
    suite_add_tcase(s, c);
    c = tcase_create("flight");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, flight_recorder_dumps_the_window_on_signal_and_at_exit);
    tcase_add_test(c, flight_recorder_keeps_the_last_seconds);
    tcase_add_test(c, flight_recorder_cuts_deep_stacks_in_a_small_window);
    tcase_add_test(c, zones_nested_beyond_the_format_limit_are_dropped);
    suite_add_tcase(s, c);
    return s;
}
