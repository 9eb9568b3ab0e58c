/* check_window.c -- trace windows (lt_start_trace / lt_stop_trace,
 * TRACY_OUTPUT): a process writes its own trace with no daemon started by
 * anyone, through the real capture-release ($LT_BUILD/bin), and the files
 * are read back. Each scenario runs in a forked child with a clean
 * environment (no TRACY_ADDR, TRACY_PORT: no other daemon is reached). */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
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

/* Runs fn in a child with a clean environment; returns its exit status
 * (-1 when it did not end normally). */
static int run(int (*fn)(void)) {
    char exe[200];
    const char *build = getenv("LT_BUILD");
    ck_assert_msg(build != NULL, "LT_BUILD is not set (run through make check)");
    snprintf(exe, sizeof exe, "%s/bin/capture-release", build);
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
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

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

START_TEST(tracy_output_writes_the_run_and_its_forked_child) {
    ck_assert_int_eq(run(with_output), 0);
    counts c;
    count_file(scratch_path("out.tracy"), &c);
    ck_assert_int_eq(c.complete, 1);
    ck_assert_uint_eq(c.processes, 2);
    ck_assert_uint_eq(c.ends[name_index("out")], 300);
    ck_assert_uint_eq(c.ends[name_index("kid")], 200);
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

static void setup(void) { scratch_make("check_window"); }
static void teardown(void) { scratch_remove(); }

Suite *window_suite(void) {
    Suite *s = suite_create("window");
    TCase *t = tcase_create("window");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, two_windows_in_a_row_hold_what_each_recorded);
    tcase_add_test(t, a_file_that_is_not_a_trace_is_never_overwritten);
    suite_add_tcase(s, t);
    /* fork() with the client's sender thread running: not under ASan (see
     * check_client.c's "fork" case) */
    t = tcase_create("fork");
    tcase_set_tags(t, "fork_with_threads");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, tracy_output_writes_the_run_and_its_forked_child);
    suite_add_tcase(s, t);
    return s;
}
