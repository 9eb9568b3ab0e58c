/* check_window.c -- trace windows (lt_start_trace / lt_stop_trace,
 * TRACY_OUTPUT): a process writes its own trace with no daemon started by
 * anyone, through the real capture-release ($LT_BUILD/bin), and the files
 * are read back. Each scenario runs in a forked child with a clean
 * environment (no TRACY_ADDR, TRACY_PORT: no other daemon is reached). */
#define _GNU_SOURCE
#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "client_internal.h"
#include "scratch.h"
#include "trace.h"
#include "trace_client.h"

#define W1 1000 /* zones per thread in the first window */
#define W2 500  /* in the second */

/* ---- the file ------------------------------------------------------------ */

#define NAMES 8
typedef struct counts {
    uint64_t ends[NAMES];     /* ZONE_ENDs per name, all processes */
    uint64_t cut[NAMES];      /* of which closed by the end of the stream */
    uint32_t processes;
    int complete;
} counts;

static const char *const names[NAMES] = {"w1", "outer1", "between", "straddle",
                                         "w2", "out", "kid", NULL};

static int name_index(const char *n) {
    for (int i = 0; names[i]; i++)
        if (strcmp(n, names[i]) == 0) return i;
    return -1;
}

static void count_file(const char *path, counts *c) {
    lt_reader *r;
    char detail[256] = "";
    memset(c, 0, sizeof *c);
    ck_assert_msg(lt_reader_open(&r, path, detail, sizeof detail) == 0, "%s: %s", path,
                  detail);
    c->complete = lt_reader_info(r)->complete;
    c->processes = lt_reader_nprocesses(r);
    lt_event ev;
    int rc, bad = 0;
    while ((rc = lt_reader_next(r, &ev)) == 1) {
        if (ev.type != LT_EV_ZONE_END) continue;
        const lt_loc *l = lt_reader_loc(r, ev.process, ev.loc);
        int i = l ? name_index(l->name) : -1;
        if (!l) bad = 1;
        if (i < 0) continue;
        c->ends[i]++;
        if (ev.flags & LT_EVF_UNCLOSED) c->cut[i]++;
    }
    ck_assert_msg(rc == 0 && !bad, "%s: %s", path, lt_reader_error(r));
    lt_reader_free(r);
}

/* ---- child processes -------------------------------------------------------- */

static const char *capture_exe(void) {
    static char exe[200];
    const char *build = getenv("LT_BUILD");
    ck_assert_msg(build != NULL, "LT_BUILD is not set (run through make check)");
    snprintf(exe, sizeof exe, "%s/bin/capture-release", build);
    return exe;
}

/* Starts fn in a child with a clean environment; returns its pid. */
static pid_t start(int (*fn)(void)) {
    const char *exe = capture_exe();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        unsetenv("TRACY_ADDR");
        unsetenv("TRACY_PORT");
        unsetenv("TRACY_QUIET");
        setenv("TRACY_CAPTURE", exe, 1);
        exit(fn());
    }
    return pid;
}

/* Its exit status (-1 when it did not end normally). */
static int status_of(pid_t pid) {
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs fn in a child with a clean environment; returns its exit status. */
static int run(int (*fn)(void)) { return status_of(start(fn)); }

static void zones(const char *name, int n) {
    uint32_t loc = lt_loc_register(LT_LOC_USER, name, __FILE__, __LINE__);
    for (int i = 0; i < n; i++) {
        lt_zone_begin(loc);
        lt_zone_end();
    }
}

static pthread_barrier_t bar;

/* A thread alive before both windows: records in each. */
static void *worker(void *arg) {
    (void)arg;
    pthread_barrier_wait(&bar); /* window 1 open */
    lt_thread_name("worker");
    zones("w1", W1);
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar); /* between the windows */
    zones("between", 100);
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar); /* window 2 open */
    zones("w2", W2);
    pthread_barrier_wait(&bar);
    return NULL;
}

static int two_windows(void) {
    pthread_t th;
    uint32_t outer = lt_loc_register(LT_LOC_USER, "outer1", __FILE__, __LINE__);
    uint32_t straddle = lt_loc_register(LT_LOC_USER, "straddle", __FILE__, __LINE__);
    pthread_barrier_init(&bar, NULL, 2);
    pthread_create(&th, NULL, worker, NULL);
    if (lt_start_trace(scratch_path("one.tracy")) != 0) return 10;
    if (lt_start_trace(scratch_path("nested.tracy")) != LT_EINVAL) return 11;
    pthread_barrier_wait(&bar);
    lt_zone_begin(outer); /* open when the window ends: cut */
    zones("w1", W1);
    pthread_barrier_wait(&bar);
    if (lt_stop_trace() != 0) return 12;
    if (lt_stop_trace() != LT_EINVAL) return 13;
    lt_zone_end();
    pthread_barrier_wait(&bar);
    zones("between", 100);
    lt_zone_begin(straddle); /* begun before window 2, ends inside it */
    pthread_barrier_wait(&bar);
    if (lt_start_trace(scratch_path("two.tracy")) != 0) return 14;
    pthread_barrier_wait(&bar);
    zones("w2", W2);
    lt_zone_end();
    pthread_barrier_wait(&bar);
    pthread_join(th, NULL);
    if (lt_stop_trace() != 0) return 15;
    return access(scratch_path("nested.tracy"), F_OK) == 0 ? 16 : 0;
}

START_TEST(two_windows_in_a_row_hold_what_each_recorded) {
    ck_assert_int_eq(run(two_windows), 0);
    counts a, b;
    count_file(scratch_path("one.tracy"), &a);
    count_file(scratch_path("two.tracy"), &b);
    ck_assert_int_eq(a.complete, 1);
    ck_assert_int_eq(b.complete, 1);
    ck_assert_uint_eq(a.processes, 1);
    ck_assert_uint_eq(a.ends[name_index("w1")], 2 * W1);
    ck_assert_uint_eq(a.cut[name_index("w1")], 0);
    ck_assert_uint_eq(a.ends[name_index("outer1")], 1);
    ck_assert_uint_eq(a.cut[name_index("outer1")], 1);
    ck_assert_uint_eq(a.ends[name_index("w2")], 0);
    ck_assert_uint_eq(b.ends[name_index("w2")], 2 * W2);
    ck_assert_uint_eq(b.ends[name_index("w1")], 0);
    ck_assert_uint_eq(b.ends[name_index("outer1")], 0);
    ck_assert_uint_eq(a.ends[name_index("between")] + b.ends[name_index("between")], 0);
    ck_assert_uint_eq(b.ends[name_index("straddle")], 0);
}
END_TEST

static int output_and_a_child(void) {
    zones("out", 300);
    pid_t kid = fork();
    if (kid == 0) {
        zones("kid", 200);
        exit(0);
    }
    int st = 0;
    if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 20;
    return 0; /* exit: the window ends, the file is finished */
}

static int with_output(void) {
    setenv("TRACY_OUTPUT", scratch_path("out.tracy"), 1);
    return output_and_a_child();
}

/* The scratch file `name` is complete and holds `procs` processes, `outs`
 * zones "out" and `kids` zones "kid". */
static void expect_out_kid(const char *name, uint32_t procs, uint64_t outs, uint64_t kids) {
    counts c;
    count_file(scratch_path(name), &c);
    ck_assert_int_eq(c.complete, 1);
    ck_assert_uint_eq(c.processes, procs);
    ck_assert_uint_eq(c.ends[name_index("out")], outs);
    ck_assert_uint_eq(c.ends[name_index("kid")], kids);
}

START_TEST(tracy_output_writes_the_run_and_its_forked_child) {
    ck_assert_int_eq(run(with_output), 0);
    expect_out_kid("out.tracy", 2, 300, 200);
}
END_TEST

/* Three children forked before the program recorded anything: each would
 * have started a window of its own for the same file (refused: it is being
 * written), and only the first process to record was in it. */
static int forks_before_any_event(void) {
    pid_t kids[3];
    setenv("TRACY_OUTPUT", scratch_path("forks.tracy"), 1);
    for (int k = 0; k < 3; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            zones("kid", 100);
            exit(0);
        }
        if (kids[k] < 0) return 20;
    }
    zones("out", 300);
    for (int k = 0; k < 3; k++) {
        int st = 0;
        if (waitpid(kids[k], &st, 0) != kids[k] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return 21 + k;
    }
    return 0;
}

START_TEST(tracy_output_children_forked_before_any_event_join_the_window) {
    ck_assert_int_eq(run(forks_before_any_event), 0);
    expect_out_kid("forks.tracy", 4, 300, 300);
}
END_TEST

static int over_a_file(void) {
    return lt_start_trace(scratch_path("notes.txt")) == LT_EEXIST ? 0 : 30;
}

START_TEST(a_file_that_is_not_a_trace_is_never_overwritten) {
    spit(scratch_path("notes.txt"), (const uint8_t *)"keep me\n", 8);
    ck_assert_int_eq(run(over_a_file), 0);
    size_t n;
    uint8_t *b = slurp(scratch_path("notes.txt"), &n);
    ck_assert_uint_eq(n, 8);
    ck_assert_int_eq(memcmp(b, "keep me\n", 8), 0);
    free(b);
}
END_TEST

/* ---- on demand: TRACY_LISTEN in a C program ------------------------------------ */

static int to_parent[2], to_child[2]; /* pipes between the test and the program */

/* The program: listens (TRACY_LISTEN, port 0), says its port, then makes
 * numbered "tick" zones until told to stop, and says how many it made. */
static int listening(void) {
    setenv("TRACY_LISTEN", "127.0.0.1:0", 1);
    close(to_parent[0]);
    close(to_child[1]);
    zones("idle", 10); /* the first zone starts the listener; not recorded */
    if (lt_client_active() || getenv("TRACY_LISTEN")) return 40;
    int port = lt_listen_port();
    if (port <= 0 || write(to_parent[1], &port, sizeof port) != sizeof port) return 41;
    uint32_t tick = lt_loc_register(LT_LOC_USER, "tick", __FILE__, __LINE__);
    uint32_t n = 0;
    char b;
    for (;; n++) {
        struct pollfd p = {to_child[0], POLLIN, 0};
        if (poll(&p, 1, 0) > 0) break;
        char text[16];
        int len = snprintf(text, sizeof text, "%u", n);
        lt_zone_begin(tick);
        lt_zone_text(text, (size_t)len);
        lt_zone_end();
        struct timespec d = {0, 100000};
        nanosleep(&d, NULL);
    }
    if (read(to_child[0], &b, 1) != 1) return 42;
    zones("after", 10); /* after the capture: not recorded */
    return write(to_parent[1], &n, sizeof n) == sizeof n ? 0 : 43;
}

/* A listening program as the test sees it. */
typedef struct prog {
    pid_t pid;
    int from, to; /* its pipes' ends */
    int port;
} prog;

static void launch(prog *p) {
    ck_assert_int_eq(pipe(to_parent), 0);
    ck_assert_int_eq(pipe(to_child), 0);
    p->pid = start(listening);
    close(to_parent[1]);
    close(to_child[0]);
    p->from = to_parent[0];
    p->to = to_child[1];
    ck_assert_int_eq(read(p->from, &p->port, sizeof p->port), (ssize_t)sizeof p->port);
}

/* Tells it to stop; the ticks it made. */
static uint32_t finish(prog *p) {
    uint32_t made = 0;
    ck_assert_int_eq(write(p->to, "x", 1), 1);
    ck_assert_int_eq(read(p->from, &made, sizeof made), (ssize_t)sizeof made);
    ck_assert_int_eq(status_of(p->pid), 0);
    close(p->from);
    close(p->to);
    return made;
}

/* capture-release --connect 127.0.0.1:PORT (each program) --duration 300ms
 * -o out: its exit status. */
static int ask_capture(const prog *p, int n, const char *out) {
    char where[4][32];
    const char *argv[16] = {"capture-release"};
    int k = 1;
    for (int i = 0; i < n; i++) {
        snprintf(where[i], sizeof where[i], "127.0.0.1:%d", p[i].port);
        argv[k++] = "--connect";
        argv[k++] = where[i];
    }
    const char *tail[] = {"--duration", "300ms", "-o", out, "-q", NULL};
    memcpy(argv + k, tail, sizeof tail);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        execv(capture_exe(), (char *const *)argv);
        _exit(127);
    }
    return status_of(pid);
}

/* The numbers of process `process`'s "tick" zones in the file: the count,
 * the smallest and the largest; fails on a duplicate, or any other zone of
 * the program. */
static uint32_t ticks_in(const char *path, uint32_t process, uint32_t *lo, uint32_t *hi) {
    lt_reader *r;
    char detail[256] = "";
    ck_assert_msg(lt_reader_open(&r, path, detail, sizeof detail) == 0, "%s", detail);
    ck_assert_int_eq(lt_reader_info(r)->complete, 1);
    static uint8_t seen[1u << 20];
    memset(seen, 0, sizeof seen);
    uint32_t n = 0;
    *lo = UINT32_MAX;
    *hi = 0;
    lt_event ev;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) == 1) {
        if (ev.type != LT_EV_ZONE_END || ev.process != process) continue;
        const lt_loc *l = lt_reader_loc(r, ev.process, ev.loc);
        ck_assert_ptr_nonnull(l);
        ck_assert_msg(strcmp(l->name, "tick") == 0, "zone %s recorded", l->name);
        char text[16];
        snprintf(text, sizeof text, "%.*s", (int)ev.text_len, ev.text);
        uint32_t i = (uint32_t)strtoul(text, NULL, 10);
        ck_assert_uint_lt(i, sizeof seen);
        ck_assert_msg(!seen[i], "tick %u twice", i);
        seen[i] = 1;
        n++;
        *lo = i < *lo ? i : *lo;
        *hi = i > *hi ? i : *hi;
    }
    ck_assert_int_eq(rc, 0);
    lt_reader_free(r);
    return n;
}

static uint32_t nprocesses(const char *path) {
    lt_reader *r;
    char detail[256] = "";
    ck_assert_msg(lt_reader_open(&r, path, detail, sizeof detail) == 0, "%s", detail);
    uint32_t n = lt_reader_nprocesses(r);
    lt_reader_free(r);
    return n;
}

/* The window's ticks of process `process`, each once, none missing. */
static void check_ticks(const char *path, uint32_t process, uint32_t made) {
    uint32_t lo, hi, n = ticks_in(path, process, &lo, &hi);
    ck_assert_uint_gt(n, 0);
    ck_assert_uint_eq(n, hi - lo + 1);
    ck_assert_uint_lt(hi, made);
}

START_TEST(tracy_listen_records_a_c_program_for_the_capture_only) {
    prog p;
    launch(&p);
    const char *out = scratch_path("ondemand.tracy");
    int cap = ask_capture(&p, 1, out);
    uint32_t made = finish(&p);
    ck_assert_int_eq(cap, 0);
    ck_assert_uint_eq(nprocesses(out), 1);
    check_ticks(out, 1, made);
}
END_TEST

/* SIGTERM (default action) during a capture: the trace up to it is sent
 * first, then the program ends by the signal. */
START_TEST(sigterm_during_a_capture_sends_it_first) {
    prog p;
    launch(&p);
    const char *out = scratch_path("term.tracy");
    char where[32];
    snprintf(where, sizeof where, "127.0.0.1:%d", p.port);
    const char *argv[] = {"capture-release", "--connect", where, "--duration", "60s",
                          "-o", out, NULL};
    int err[2];
    ck_assert_int_eq(pipe(err), 0);
    pid_t asker = fork();
    ck_assert_int_ge(asker, 0);
    if (asker == 0) {
        dup2(err[1], 2);
        execv(capture_exe(), (char *const *)argv);
        _exit(127);
    }
    close(err[1]);
    char said[512];
    size_t got = 0;
    ssize_t k;
    while (got < sizeof said - 1 && (k = read(err[0], said + got, sizeof said - 1 - got)) > 0) {
        got += (size_t)k;
        said[got] = 0;
        if (strstr(said, "recording")) break; /* the capture is under way */
    }
    said[got] = 0;
    ck_assert_msg(strstr(said, "recording") != NULL, "capture-release said: %s", said);
    struct timespec d = {0, 200000000}; /* ticks recorded meanwhile */
    nanosleep(&d, NULL);
    ck_assert_int_eq(kill(p.pid, SIGTERM), 0);
    int ws = 0;
    ck_assert_int_eq(waitpid(p.pid, &ws, 0), p.pid);
    ck_assert_msg(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGTERM, "wait status %d", ws);
    ck_assert_int_eq(status_of(asker), 0);
    close(err[0]);
    close(p.from);
    close(p.to);
    uint32_t lo, hi, n = ticks_in(out, 1, &lo, &hi);
    ck_assert_uint_gt(n, 0);
    ck_assert_uint_eq(n, hi - lo + 1);
}
END_TEST

START_TEST(two_listening_programs_are_captured_into_one_trace) {
    prog p[2];
    launch(&p[0]);
    launch(&p[1]);
    const char *out = scratch_path("two.tracy");
    int cap = ask_capture(p, 2, out);
    uint32_t made0 = finish(&p[0]), made1 = finish(&p[1]);
    ck_assert_int_eq(cap, 0);
    ck_assert_uint_eq(nprocesses(out), 2);
    check_ticks(out, 1, made0); /* processes in the order of --connect */
    check_ticks(out, 2, made1);
}
END_TEST

/* libtrace internal (client_internal.h): TRACY_LISTEN's syntax. */
int lt__listen_parse(const char *spec, char *addr, size_t n, int *port);

START_TEST(tracy_listen_port_plus_rank) {
    char addr[64];
    int port = -1;
    static const char *const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                        "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof ranks / sizeof *ranks; i++) unsetenv(ranks[i]);
    ck_assert_int_eq(lt__listen_parse(":0", addr, sizeof addr, &port), 0);
    ck_assert_str_eq(addr, "127.0.0.1");
    ck_assert_int_eq(port, 0);
    ck_assert_int_eq(lt__listen_parse("9000+rank", addr, sizeof addr, &port), LT_EINVAL);
    setenv("PMI_RANK", "3", 1);
    ck_assert_int_eq(lt__listen_parse("9000+rank", addr, sizeof addr, &port), 0);
    ck_assert_int_eq(port, 9003);
    ck_assert_int_eq(lt__listen_parse("[::1]:70+rank", addr, sizeof addr, &port), 0);
    ck_assert_str_eq(addr, "::1");
    ck_assert_int_eq(port, 73);
    ck_assert_int_eq(lt__listen_parse("65535+rank", addr, sizeof addr, &port), LT_EINVAL);
    ck_assert_int_eq(lt__listen_parse("90x", addr, sizeof addr, &port), LT_EINVAL);
    ck_assert_int_eq(lt__listen_parse("9000+ranks", addr, sizeof addr, &port), LT_EINVAL);
    ck_assert_int_eq(lt__listen_parse("host:", addr, sizeof addr, &port), LT_EINVAL);
    ck_assert_int_eq(lt__listen_parse("123456", addr, sizeof addr, &port), LT_EINVAL);
    unsetenv("PMI_RANK");
}
END_TEST

/* What the Python package does for the calls a thread is inside when a
 * window opens: their begins just before the window's start S, then
 * lt__trace_cut_at(S); the finished file holds them as cut zones from S. */
static uint64_t cut_start;

/* A thread inside a call for the whole window: its stream holds nothing
 * but that begin. */
static void *idle_caller(void *arg) {
    (void)arg;
    uint32_t loc = lt_loc_register(LT_LOC_USER, "outer1", __FILE__, __LINE__);
    lt__put_begin(lt__tb(), loc, cut_start - 1);
    pthread_barrier_wait(&bar); /* begun */
    pthread_barrier_wait(&bar); /* the window has ended */
    return NULL;
}

static int running_calls(void) {
    uint32_t run = lt_loc_register(LT_LOC_USER, "straddle", __FILE__, __LINE__);
    pthread_t th;
    pthread_barrier_init(&bar, NULL, 2);
    if (lt_start_trace(scratch_path("cut.tracy")) != 0) return 30;
    cut_start = lt__now();
    lt__tbuf *t = lt__tb();
    if (!t) return 31;
    lt__put_begin(t, run, cut_start - 1); /* still running at the stop */
    lt__put_begin(t, run, cut_start - 1); /* returns in the window */
    lt__trace_cut_at(cut_start);
    pthread_create(&th, NULL, idle_caller, NULL);
    pthread_barrier_wait(&bar);
    zones("w2", 10);
    lt__put_end(t, lt__now());
    zones("w1", 5);
    int rc = lt_stop_trace() == 0 ? 0 : 32;
    pthread_barrier_wait(&bar);
    pthread_join(th, NULL);
    return rc;
}

START_TEST(calls_running_at_the_start_become_cut_zones) {
    ck_assert_int_eq(run(running_calls), 0);
    lt_reader *r;
    char detail[256] = "";
    const char *path = scratch_path("cut.tracy");
    ck_assert_msg(lt_reader_open(&r, path, detail, sizeof detail) == 0, "%s", detail);
    ck_assert(lt_reader_info(r)->complete);
    lt_event ev;
    int rc, n = 0, idle = 0;
    /* name, depth, flags of each end, and the begins of the cut ones */
    char got[512] = "";
    uint64_t cut_begin = 0, first_other = UINT64_MAX;
    while ((rc = lt_reader_next(r, &ev)) == 1) {
        if (ev.type != LT_EV_ZONE_END) continue;
        const lt_loc *l = lt_reader_loc(r, ev.process, ev.loc);
        if (strcmp(l->name, "outer1") == 0) { /* the idle thread's */
            ck_assert_uint_eq(ev.flags, LT_EVF_CUT | LT_EVF_UNCLOSED);
            idle++;
        } else if (n++ < 20)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s/%u/%u ", l->name, ev.depth,
                     ev.flags);
        if (ev.flags & LT_EVF_CUT) {
            ck_assert(cut_begin == 0 || cut_begin == ev.begin_ts);
            cut_begin = ev.begin_ts;
        } else if (ev.begin_ts < first_other) {
            first_other = ev.begin_ts;
        }
    }
    ck_assert_int_eq(rc, 0);
    lt_reader_free(r);
    ck_assert_str_eq(got, "w2/2/0 w2/2/0 w2/2/0 w2/2/0 w2/2/0 w2/2/0 w2/2/0 w2/2/0 w2/2/0 "
                          "w2/2/0 straddle/1/4 w1/1/0 w1/1/0 w1/1/0 w1/1/0 w1/1/0 "
                          "straddle/0/6 ");
    ck_assert(cut_begin != 0 && cut_begin <= first_other);
    ck_assert_int_eq(idle, 1);
    /* no stray file beside it */
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s.cut~", path);
    ck_assert_int_ne(access(tmp, F_OK), 0);
}
END_TEST

static void setup(void) { scratch_make("check_window"); }
static void teardown(void) { scratch_remove(); }

Suite *window_suite(void) {
    Suite *s = suite_create("window");
    TCase *t = tcase_create("window");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, two_windows_in_a_row_hold_what_each_recorded);
    tcase_add_test(t, a_file_that_is_not_a_trace_is_never_overwritten);
    tcase_add_test(t, tracy_listen_records_a_c_program_for_the_capture_only);
    tcase_add_test(t, two_listening_programs_are_captured_into_one_trace);
    tcase_add_test(t, sigterm_during_a_capture_sends_it_first);
    tcase_add_test(t, tracy_listen_port_plus_rank);
    tcase_add_test(t, calls_running_at_the_start_become_cut_zones);
    suite_add_tcase(s, t);
    /* fork() with the client's sender thread running: not under ASan (see
     * check_client.c's "fork" case) */
    t = tcase_create("fork");
    tcase_set_tags(t, "fork_with_threads");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, tracy_output_writes_the_run_and_its_forked_child);
    tcase_add_test(t, tracy_output_children_forked_before_any_event_join_the_window);
    suite_add_tcase(s, t);
    return s;
}
