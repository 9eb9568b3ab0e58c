/* check_client.c -- the client library end to end: profiled child processes
 * send to the real capture daemon ($LT_BUILD/bin/capture-release) on an
 * ephemeral loopback port, and the resulting file is read back. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include "client_internal.h"
#include "trace.h"
#include "trace_client.h"

/* ---- processes ---------------------------------------------------------- */

static void sleep_ms(int ms) {
    struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
}

/* Waits up to limit_ms for pid; kills it when it does not end. Returns its
 * wait status, or -1 on timeout. */
static int wait_bounded(pid_t pid, int limit_ms) {
    int st = 0;
    for (int t = 0; t < limit_ms; t += 10) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) return st;
        if (r < 0 && errno != EINTR) return -1;
        sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

typedef struct capd {
    pid_t pid;
    char port[16];
    char dir[64];
    char path[128];
} capd;

/* Starts capture-release -p 0 on a fresh file, stopping after `clients`
 * clients, and reads its port from the first line of its stdout: the N of
 * its Unix socket daemon-N.sock, the default transport, which the clients
 * reach with TRACY_PORT=N. */
static void daemon_start(capd *d, int clients) {
    const char *build = getenv("LT_BUILD");
    ck_assert_msg(build != NULL, "LT_BUILD is not set (run through make check)");
    char bin[512], n[16];
    snprintf(bin, sizeof bin, "%s/bin/capture-release", build);
    snprintf(n, sizeof n, "%d", clients);
    snprintf(d->dir, sizeof d->dir, "/tmp/check_client.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(d->dir));
    snprintf(d->path, sizeof d->path, "%s/t.tracy", d->dir);
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    d->pid = fork();
    ck_assert_int_ge(d->pid, 0);
    if (d->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* no daemon outlives a failed test */
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execl(bin, "capture-release", "-p", "0", "-o", d->path, "-n", n, "-q",
              (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char line[64] = "";
    size_t len = 0;
    struct pollfd pf = {fd[0], POLLIN, 0};
    while (len < sizeof line - 1 && !strchr(line, '\n') && poll(&pf, 1, 10000) > 0) {
        ssize_t k = read(fd[0], line + len, sizeof line - 1 - len);
        if (k <= 0) break;
        len += (size_t)k;
        line[len] = 0;
    }
    close(fd[0]);
    ck_assert_msg(strchr(line, '\n') != NULL, "capture-release printed no port");
    *strchr(line, '\n') = 0;
    ck_assert_int_gt(atoi(line), 0);
    snprintf(d->port, sizeof d->port, "%s", line);
}

/* Waits for the daemon to finish the file and exit 0. */
static void daemon_finish(capd *d) {
    int st = wait_bounded(d->pid, 60000);
    ck_assert_msg(st >= 0, "capture-release did not stop");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "capture-release failed (status %d)", st);
}

static void daemon_cleanup(capd *d) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
    ck_assert_int_eq(system(cmd), 0);
}

typedef void (*scenario)(void *arg);

/* A profiled child starts as a program does: the test runner's handlers of
 * SIGTERM, SIGINT, SIGHUP and SIGALRM (its timeout: they end the runner's
 * process group) are not the program's. */
static void default_signals(void) {
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGALRM};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) signal(sigs[i], SIG_DFL);
}

/* In a forked test child: default signals, the daemon at `port`. */
static void profiled_child(const char *port) {
    default_signals();
    unsetenv("TRACY_ADDR"); /* this user's daemon-PORT.sock */
    setenv("TRACY_PORT", port, 1);
}

/* Runs fn(arg) in a child process profiled into the daemon at `port` with
 * the extra environment `env` ("K=V" strings, NULL-terminated); the child
 * ends with exit(0), so the client flushes at exit. stderr goes to err_fd
 * when >= 0. Returns the child's wait status (-1 on timeout). */
static int run_child(scenario fn, void *arg, const char *port,
                     const char *const *env, int err_fd) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        default_signals();
        if (err_fd >= 0) dup2(err_fd, 2);
        unsetenv("TRACY_ADDR"); /* this user's daemon-PORT.sock */
        setenv("TRACY_PORT", port, 1);
        unsetenv("TRACY_DROP");
        unsetenv("TRACY_QUIET");
        unsetenv("TRACY_BUFFER_MB");
        unsetenv("TRACY_WAIT");
        unsetenv("TRACY_NO_TSC");
        for (; env && *env; env++) putenv((char *)*env);
        fn(arg);
        exit(0);
    }
    return wait_bounded(pid, 120000);
}

static void assert_clean_exit(int st) {
    ck_assert_msg(st >= 0, "profiled child did not finish");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "profiled child failed (status %d)", st);
}

/* ---- reading the file back ------------------------------------------- */

#define MAXT 80
#define MAXP 6 /* processes a test's trace may hold */

/* Per-stream facts gathered from a file. */
typedef struct stream {
    uint64_t last_ts;
    uint64_t begins, ends;
    uint64_t plots;          /* plot values, checked to count 0, 1, 2, ... */
    int plot_out_of_order;
    int ts_backwards;
} stream;

typedef struct facts {
    lt_reader *r;
    stream s[MAXP + 1][MAXT + 1]; /* [process][thread] */
    uint64_t unclosed, aborted, lost;
    uint64_t zones_named[8]; /* ZONE_ENDs per name in `names` */
    const char *names[8];
    uint64_t crash_notes[MAXP + 1]; /* per process: "tracy: crashed by SIG..." */
    uint64_t notes_unread[MAXP + 1]; /* those saying the runtime's part failed */
} facts;

static void facts_read(facts *f, const char *path, const char *const *names) {
    char detail[256] = "";
    memset(f, 0, sizeof *f);
    for (int i = 0; names && names[i] && i < 8; i++) f->names[i] = names[i];
    int rc = lt_reader_open(&f->r, path, detail, sizeof detail);
    ck_assert_msg(rc == 0, "lt_reader_open: %s", detail);
    ck_assert_int_eq(lt_reader_info(f->r)->complete, 1);
    lt_event ev;
    /* No ck_assert per event: each one is a message to the test runner. */
    const char *bad = NULL;
    while ((rc = lt_reader_next(f->r, &ev)) == 1) {
        if (ev.process > MAXP || ev.thread > MAXT) {
            bad = "process or thread index out of the expected range";
            break;
        }
        stream *s = &f->s[ev.process][ev.thread];
        if (ev.ts < s->last_ts) s->ts_backwards = 1;
        s->last_ts = ev.ts;
        switch (ev.type) {
        case LT_EV_ZONE_BEGIN:
            s->begins++;
            break;
        case LT_EV_ZONE_END: {
            s->ends++;
            if (ev.flags & LT_EVF_UNCLOSED) f->unclosed++;
            if (ev.flags & LT_EVF_ABORTED) f->aborted++;
            const lt_loc *l = lt_reader_loc(f->r, ev.process, ev.loc);
            if (!l) {
                bad = "zone of an undefined location";
                break;
            }
            for (int i = 0; i < 8 && f->names[i]; i++)
                if (strcmp(l->name, f->names[i]) == 0) f->zones_named[i]++;
            break;
        }
        case LT_EV_PLOT:
            if (ev.value != (double)s->plots) s->plot_out_of_order = 1;
            s->plots++;
            break;
        case LT_EV_LOST:
            f->lost += ev.count;
            break;
        case LT_EV_MESSAGE:
            if (ev.text_len > 18 && memcmp(ev.text, "tracy: crashed by ", 18) == 0) {
                f->crash_notes[ev.process]++;
                if (memmem(ev.text, ev.text_len, "could not be read", 17))
                    f->notes_unread[ev.process]++;
            }
            break;
        default:
            break;
        }
    }
    ck_assert_msg(bad == NULL, "%s", bad);
    ck_assert_msg(rc == 0, "lt_reader_next: %s", lt_reader_error(f->r));
}

static void facts_free(facts *f) { lt_reader_free(f->r); }

/* Thread index of the thread named `name` in process p, or 0. */
static uint32_t thread_named(facts *f, uint32_t p, const char *name) {
    for (uint32_t t = 1; t <= lt_reader_nthreads(f->r, p); t++)
        if (strcmp(lt_reader_thread(f->r, p, t)->name, name) == 0) return t;
    return 0;
}

static void assert_process_clean(facts *f, uint32_t p) {
    const lt_process *pr = lt_reader_process(f->r, p);
    ck_assert_ptr_nonnull(pr);
    ck_assert_int_eq(pr->status, LT_PROC_CLEAN);
    ck_assert_uint_eq(pr->events_received, pr->events_sent);
    ck_assert_str_eq(pr->client, "libtrace " LT_VERSION_STRING);
}

/* ---- scenarios --------------------------------------------------------- */

#define ZONES_PER_THREAD 20000
#define WORKERS 4

static void *zone_worker(void *arg) {
    char name[16];
    snprintf(name, sizeof name, "worker %d", (int)(intptr_t)arg);
    lt_thread_name(name);
    uint32_t plot = lt_plot_register("sequence");
    for (int i = 0; i < ZONES_PER_THREAD; i++) {
        LT_ZONE_SCOPED("outer");
        {
            LT_ZONE_SCOPED("inner");
            lt_plot(plot, i);
        }
    }
    return NULL;
}

static void many_threads(void *arg) {
    (void)arg;
    pthread_t th[WORKERS];
    lt_thread_name("main thread");
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&th[i], NULL, zone_worker, (void *)(intptr_t)i);
    for (int i = 0; i < WORKERS; i++) pthread_join(th[i], NULL);
}

START_TEST(zones_from_threads_arrive_once_in_order) {
    capd d;
    daemon_start(&d, 1);
    assert_clean_exit(run_child(many_threads, NULL, d.port, NULL, -1));
    daemon_finish(&d);

    facts f;
    const char *names[] = {"outer", "inner", NULL};
    facts_read(&f, d.path, names);
    ck_assert_uint_eq(lt_reader_nprocesses(f.r), 1);
    assert_process_clean(&f, 1);
    ck_assert_uint_eq(f.zones_named[0], WORKERS * ZONES_PER_THREAD);
    ck_assert_uint_eq(f.zones_named[1], WORKERS * ZONES_PER_THREAD);
    ck_assert_uint_eq(f.unclosed, 0);
    ck_assert_uint_ne(thread_named(&f, 1, "main thread"), 0);
    for (int i = 0; i < WORKERS; i++) {
        char name[16];
        snprintf(name, sizeof name, "worker %d", i);
        uint32_t t = thread_named(&f, 1, name);
        ck_assert_msg(t != 0, "no thread named %s", name);
        stream *s = &f.s[1][t];
        ck_assert_uint_eq(s->begins, 2 * ZONES_PER_THREAD);
        ck_assert_uint_eq(s->ends, 2 * ZONES_PER_THREAD);
        ck_assert_uint_eq(s->plots, ZONES_PER_THREAD);
        ck_assert_int_eq(s->plot_out_of_order, 0);
        ck_assert_int_eq(s->ts_backwards, 0);
    }
    facts_free(&f);
    daemon_cleanup(&d);
}
END_TEST

static pthread_barrier_t named_barrier;
static uint64_t named_tid;

static void *late_named(void *arg) {
    (void)arg;
    named_tid = (uint64_t)gettid();
    pthread_barrier_wait(&named_barrier); /* named by tid */
    pthread_barrier_wait(&named_barrier);
    LT_ZONE_SCOPED("late");
    lt_message_str("from the renamed thread");
    return NULL;
}

static void all_kinds(void *arg) {
    (void)arg;
    pthread_t th;
    pthread_barrier_init(&named_barrier, NULL, 2);
    pthread_create(&th, NULL, late_named, NULL);
    pthread_barrier_wait(&named_barrier);
    lt_thread_name_tid(named_tid, "named by tid");
    pthread_barrier_wait(&named_barrier);
    pthread_join(th, NULL);
    pthread_barrier_destroy(&named_barrier);

    LT_ZONE_SCOPED("with text");
    lt_zone_text("some text", 9);
    lt_message_str("hello");
    lt_message("bad \xff utf8", 10);
    lt_signpost("phase", "loading");
    lt_signpost("bare", NULL);
    uint32_t p = lt_plot_register("temperature");
    if (lt_plot_register("temperature") != p) exit(10);
    lt_plot(p, 21.5);
    lt_frame_mark(NULL);
    lt_frame_mark("physics");
    lt_frame_mark("physics");
    {
        LT_ZONE_SCOPED("renamed");
        lt_zone_name("new name", 8);
    }
    lt_zone_end(); /* closes "with text" early: the cleanup's end is ignored */
    lt_zone_end();
    if (lt_client_flush() != 0 || !lt_client_active()) exit(11);
}

START_TEST(messages_signposts_plots_frames_arrive) {
    capd d;
    daemon_start(&d, 1);
    assert_clean_exit(run_child(all_kinds, NULL, d.port, NULL, -1));
    daemon_finish(&d);

    char detail[256];
    lt_reader *r;
    ck_assert_int_eq(lt_reader_open(&r, d.path, detail, sizeof detail), 0);
    ck_assert_uint_eq(lt_reader_nprocesses(r), 1);
    const lt_process *pr = lt_reader_process(r, 1);
    ck_assert_int_eq(pr->status, LT_PROC_CLEAN);
    ck_assert_uint_eq(pr->events_received, pr->events_sent);
    ck_assert_str_eq(pr->program, "check_all");
    int named = 0;
    for (uint32_t t = 1; t <= lt_reader_nthreads(r, 1); t++)
        named += strcmp(lt_reader_thread(r, 1, t)->name, "named by tid") == 0;
    ck_assert_int_eq(named, 1);

    int hello = 0, bad = 0, phase = 0, bare = 0, plot = 0, frame0 = 0, physics = 0,
        text = 0, renamed = 0, late = 0, ends = 0, begins = 0;
    lt_event ev;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) == 1) {
        switch (ev.type) {
        case LT_EV_MESSAGE:
            hello += ev.text_len == 5 && memcmp(ev.text, "hello", 5) == 0;
            bad += ev.text_len == 10 && memcmp(ev.text, "bad ? utf8", 10) == 0;
            break;
        case LT_EV_SIGNPOST:
            phase += ev.text_len == 5 && memcmp(ev.text, "phase", 5) == 0 &&
                     ev.text2_len == 7 && memcmp(ev.text2, "loading", 7) == 0;
            bare += ev.text_len == 4 && ev.text2_len == 0;
            break;
        case LT_EV_PLOT:
            ck_assert_str_eq(lt_reader_plot_name(r, 1, ev.id), "temperature");
            plot += ev.value == 21.5;
            break;
        case LT_EV_FRAME:
            if (ev.id == 0) frame0++;
            else if (strcmp(lt_reader_frame_name(r, 1, ev.id), "physics") == 0) physics++;
            break;
        case LT_EV_ZONE_BEGIN:
            begins++;
            break;
        case LT_EV_ZONE_END: {
            ends++;
            ck_assert_int_eq(ev.flags, 0);
            const char *ln = lt_reader_loc(r, 1, ev.loc)->name;
            if (strcmp(ln, "with text") == 0)
                text += ev.text_len == 9 && memcmp(ev.text, "some text", 9) == 0;
            if (strcmp(ln, "renamed") == 0)
                renamed += ev.name_len == 8 && memcmp(ev.name, "new name", 8) == 0;
            late += strcmp(ln, "late") == 0;
            break;
        }
        default:
            break;
        }
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(hello, 1);
    ck_assert_int_eq(bad, 1);
    ck_assert_int_eq(phase, 1);
    ck_assert_int_eq(bare, 1);
    ck_assert_int_eq(plot, 1);
    ck_assert_int_eq(frame0, 1);
    ck_assert_int_eq(physics, 2);
    ck_assert_int_eq(text, 1);
    ck_assert_int_eq(renamed, 1);
    ck_assert_int_eq(late, 1);
    ck_assert_int_eq(begins, 3);
    ck_assert_int_eq(ends, 3);
    lt_reader_free(r);
    daemon_cleanup(&d);
}
END_TEST

static void forks(void *arg) {
    (void)arg;
    {
        LT_ZONE_SCOPED("parent before");
    }
    pid_t pid = fork();
    if (pid == 0) {
        {
            LT_ZONE_SCOPED("child");
            lt_message_str("in the child");
        }
        exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) exit(3);
    LT_ZONE_SCOPED("parent after");
}

/* Runs fn, which forks once, and checks the two clean processes it made
 * and the zones named names[0..2] that they recorded. */
static void parent_and_child(scenario fn, const char *const names[3],
                             const uint64_t want[3]) {
    capd d;
    daemon_start(&d, 2);
    assert_clean_exit(run_child(fn, NULL, d.port, NULL, -1));
    daemon_finish(&d);

    facts f;
    const char *all[] = {names[0], names[1], names[2], NULL};
    facts_read(&f, d.path, all);
    ck_assert_uint_eq(lt_reader_nprocesses(f.r), 2);
    assert_process_clean(&f, 1);
    assert_process_clean(&f, 2);
    ck_assert_uint_ne(lt_reader_process(f.r, 1)->pid, lt_reader_process(f.r, 2)->pid);
    for (int i = 0; i < 3; i++) ck_assert_uint_eq(f.zones_named[i], want[i]);
    ck_assert_uint_eq(f.unclosed, 0);
    facts_free(&f);
    daemon_cleanup(&d);
}

START_TEST(forked_child_is_a_second_process) {
    static const char *const names[3] = {"parent before", "child", "parent after"};
    static const uint64_t want[3] = {1, 1, 1};
    parent_and_child(forks, names, want);
}
END_TEST

/* A daemon as a C service makes one: the program records, forks and
 * ends; the child leaves the session and forks again without recording;
 * the grandchild closes every descriptor, waits for its parents to be gone
 * and records. Each parent tells the daemon of its child (FORK), and the
 * child that recorded nothing connects before it forks: the capture, which
 * ends when its last client leaves, waits for the grandchild. */
static void daemonizes(void *arg) {
    (void)arg;
    {
        LT_ZONE_SCOPED("parent");
    }
    if (fork() != 0) exit(0);
    setsid();
    if (fork() != 0) exit(0);
    for (int fd = 3; fd < 1024; fd++) close(fd);
    sleep_ms(200);
    for (int i = 0; i < 10; i++) {
        LT_ZONE_SCOPED("grandchild");
    }
    exit(0);
}

START_TEST(a_double_forked_daemon_is_recorded) {
    capd d;
    daemon_start(&d, 1); /* ends when the last client has left */
    assert_clean_exit(run_child(daemonizes, NULL, d.port, NULL, -1));
    daemon_finish(&d);
    facts f;
    const char *names[] = {"parent", "grandchild", NULL};
    facts_read(&f, d.path, names);
    ck_assert_uint_eq(lt_reader_nprocesses(f.r), 3);
    for (uint32_t p = 1; p <= 3; p++) assert_process_clean(&f, p);
    ck_assert_uint_eq(f.zones_named[0], 1);
    ck_assert_uint_eq(f.zones_named[1], 10);
    facts_free(&f);
    daemon_cleanup(&d);
}
END_TEST

static void unprofiled_run(void *arg) {
    (void)arg;
    for (int i = 0; i < 100000; i++) {
        LT_ZONE_SCOPED("nothing");
        lt_message_str("ignored");
    }
    lt_plot(lt_plot_register("p"), 1);
    lt_frame_mark(NULL);
    if (lt_client_active()) exit(4);
    if (lt_client_start() != LT_ECONNECT) exit(5);
    if (lt_client_flush() != 0) exit(6);
    uint64_t sent = 1, lost = 1;
    lt_client_counts(&sent, &lost);
    if (sent != 0 || lost != 0) exit(7);
}

START_TEST(no_daemon_warns_once_and_runs_on) {
    /* A port where nothing listens: bind one, then close it. */
    capd d;
    daemon_start(&d, 1);
    kill(d.pid, SIGKILL);
    waitpid(d.pid, NULL, 0);

    char errpath[160];
    snprintf(errpath, sizeof errpath, "%s/stderr", d.dir);
    int fd = open(errpath, O_CREAT | O_RDWR | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    assert_clean_exit(run_child(unprofiled_run, NULL, d.port, NULL, fd));
    char buf[1024] = "";
    ck_assert_int_ge(pread(fd, buf, sizeof buf - 1, 0), 1);
    close(fd);
    char want[128];
    snprintf(want, sizeof want, "/daemon-%s.sock (", d.port);
    ck_assert_msg(strncmp(buf, "tracy: no capture daemon at /", 29) == 0, "stderr: %s", buf);
    ck_assert_msg(strstr(buf, want) != NULL, "stderr: %s", buf);
    ck_assert_ptr_nonnull(strstr(buf, "; running unprofiled\n"));
    ck_assert_msg(strchr(buf, '\n') + 1 == buf + strlen(buf), "stderr: %s", buf); /* one line */
    daemon_cleanup(&d);
}
END_TEST

/* Drop mode and the wait zone: the child stops the daemon (SIGSTOP) right
 * after the handshake and lets it go again once its buffers are full. */
static pid_t daemon_pid;

static void dropping(void *arg) {
    (void)arg;
    if (lt_client_start() != 0) exit(8);
    kill(daemon_pid, SIGSTOP);
    uint64_t sent, lost = 0;
    long i;
    LT_ZONE_SCOPED("outer");
    for (i = 0; i < 200000000 && lost == 0; i++) {
        LT_ZONE_SCOPED("busy");
        if ((i & 1023) == 0) lt_client_counts(&sent, &lost);
    }
    for (int k = 0; k < 1000; k++) {
        LT_ZONE_SCOPED("after");
        lt_message_str("still dropping?");
    }
    kill(daemon_pid, SIGCONT);
    if (lost == 0) exit(9);
}

START_TEST(drop_mode_counts_lost_events) {
    capd d;
    daemon_start(&d, 1);
    daemon_pid = d.pid;
    const char *env[] = {"TRACY_DROP=1", "TRACY_BUFFER_MB=1", NULL};
    int st = run_child(dropping, NULL, d.port, env, -1);
    kill(d.pid, SIGCONT);
    assert_clean_exit(st);
    daemon_finish(&d);

    facts f;
    const char *names[] = {"outer", "busy", NULL};
    facts_read(&f, d.path, names);
    assert_process_clean(&f, 1);
    const lt_process *pr = lt_reader_process(f.r, 1);
    ck_assert_uint_gt(pr->events_lost, 0);
    ck_assert_uint_eq(f.lost, pr->events_lost);
    ck_assert_uint_eq(f.zones_named[0], 1);
    ck_assert_uint_eq(f.unclosed, 0);
    ck_assert_uint_eq(f.aborted, 0);
    facts_free(&f);
    daemon_cleanup(&d);
}
END_TEST

/* Lets the daemon go once every chunk of the pool is in use. */
static void *release_when_full(void *arg) {
    (void)arg;
    for (int t = 0; t < 60000; t += 5) {
        pthread_mutex_lock(&lt__g.mu);
        int full = lt__g.free_chunks == NULL && lt__g.n_chunks >= lt__g.max_chunks;
        pthread_mutex_unlock(&lt__g.mu);
        if (full) break;
        sleep_ms(5);
    }
    sleep_ms(50);
    kill(daemon_pid, SIGCONT);
    return NULL;
}

#define SLOW_PAIRS 8000000

static void slow_daemon(void *arg) {
    (void)arg;
    if (lt_client_start() != 0) exit(8);
    kill(daemon_pid, SIGSTOP);
    pthread_t th;
    pthread_create(&th, NULL, release_when_full, NULL);
    for (long i = 0; i < SLOW_PAIRS; i++) {
        LT_ZONE_SCOPED("busy");
    }
    pthread_join(th, NULL);
}

START_TEST(slow_daemon_records_wait_zone) {
    capd d;
    daemon_start(&d, 1);
    daemon_pid = d.pid;
    const char *env[] = {"TRACY_BUFFER_MB=1", NULL};
    int st = run_child(slow_daemon, NULL, d.port, env, -1);
    kill(d.pid, SIGCONT);
    assert_clean_exit(st);
    daemon_finish(&d);

    facts f;
    const char *names[] = {"busy", "tracy: waiting for capture", NULL};
    facts_read(&f, d.path, names);
    assert_process_clean(&f, 1);
    ck_assert_uint_eq(lt_reader_process(f.r, 1)->events_lost, 0);
    ck_assert_uint_eq(f.zones_named[0], SLOW_PAIRS);
    ck_assert_uint_ge(f.zones_named[1], 1);
    ck_assert_uint_eq(f.lost, 0);
    ck_assert_uint_eq(f.unclosed, 0);
    facts_free(&f);
    daemon_cleanup(&d);
}
END_TEST

/* The client's clock: lt__now() (the TSC map where the TSC is used) against
 * CLOCK_MONOTONIC from connect for 600 ms, through the first map and the
 * sender's refinements. Exit codes: 10 no map where the processor has an
 * invariant TSC, 11 a map under TRACY_NO_TSC=1, 12 an error of 100 us or
 * more, 13 too few samples, 14 the clock went back by more than 1 us (a
 * thread may move to a core whose TSC reads a little behind). */
static uint64_t mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cpu_tsc_invariant(void) {
#if defined(__x86_64__)
    unsigned a, b, c, d;
    return __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
#else
    return 0;
#endif
}

static void clock_tracks_monotonic(void *arg) {
    int no_tsc = arg != NULL;
    if (lt_client_start() != 0) exit(8);
    if (!no_tsc && cpu_tsc_invariant() && lt__clock() == NULL) exit(10);
    if (no_tsc && lt__clock() != NULL) exit(11);
    uint64_t start = mono_now(), prev = 0;
    long samples = 0;
    while (mono_now() - start < 600000000u) {
        /* a reading bracketed by two of the clock's */
        uint64_t a = mono_now(), x = lt__now(), b = mono_now();
        if (x + 1000 < prev) exit(14);
        prev = x;
        samples++;
        if (x + 100000 < a || x > b + 100000) {
            fprintf(stderr, "clock error %lld ns\n", (long long)(x - (a + (b - a) / 2)));
            exit(12);
        }
        if ((samples & 63) == 0) sleep_ms(1); /* let the sender run */
    }
    if (samples < 100) exit(13);
}

START_TEST(client_clock_tracks_monotonic) {
    capd d;
    daemon_start(&d, 2);
    assert_clean_exit(run_child(clock_tracks_monotonic, NULL, d.port, NULL, -1));
    const char *env[] = {"TRACY_NO_TSC=1", NULL};
    assert_clean_exit(run_child(clock_tracks_monotonic, (void *)1, d.port, env, -1));
    daemon_finish(&d);
    daemon_cleanup(&d);
}
END_TEST

/* Drops by a thread still running when the client stops: the thread never
 * gets room again to write its LOST record, so the last round writes it;
 * the file's LOST records then sum to the count in BYE. */
static volatile int late_ready;

static void *late_dropper(void *arg) {
    (void)arg;
    uint64_t sent, lost = 0;
    for (long i = 0; i < 200000000 && lost == 0; i++) {
        LT_ZONE_SCOPED("late");
        if ((i & 1023) == 0) lt_client_counts(&sent, &lost);
    }
    late_ready = 1;
    for (;;) pause(); /* alive at exit, its drops not yet recorded */
    return NULL;
}

static void drops_alive_at_exit(void *arg) {
    (void)arg;
    if (lt_client_start() != 0) exit(8);
    kill(daemon_pid, SIGSTOP);
    pthread_t th;
    pthread_create(&th, NULL, late_dropper, NULL);
    while (!late_ready) sleep_ms(1);
    kill(daemon_pid, SIGCONT);
}

START_TEST(drops_of_a_thread_alive_at_exit_are_recorded) {
    capd d;
    daemon_start(&d, 1);
    daemon_pid = d.pid;
    late_ready = 0;
    const char *env[] = {"TRACY_DROP=1", "TRACY_BUFFER_MB=1", NULL};
    int st = run_child(drops_alive_at_exit, NULL, d.port, env, -1);
    kill(d.pid, SIGCONT);
    assert_clean_exit(st);
    daemon_finish(&d);

    facts f;
    facts_read(&f, d.path, NULL);
    assert_process_clean(&f, 1);
    const lt_process *pr = lt_reader_process(f.r, 1);
    ck_assert_uint_gt(pr->events_lost, 0);
    ck_assert_uint_eq(f.lost, pr->events_lost);
    facts_free(&f);
    daemon_cleanup(&d);
}
END_TEST

/* Many threads each holding their chunk (blocked at a barrier) while the
 * main thread needs more than the pool's limit: the pool counts one chunk
 * per live thread beyond its limit, so nothing waits and nothing is lost. */
#define HOLDERS 64
static pthread_barrier_t hold_bar;

static void *holder(void *arg) {
    (void)arg;
    {
        LT_ZONE_SCOPED("held");
        pthread_barrier_wait(&hold_bar); /* everyone has a chunk */
        pthread_barrier_wait(&hold_bar); /* the main thread is done */
    }
    return NULL;
}

static void threads_hold_chunks(void *arg) {
    (void)arg;
    if (lt_client_start() != 0) exit(8);
    pthread_t th[HOLDERS];
    pthread_barrier_init(&hold_bar, NULL, HOLDERS + 1);
    for (int i = 0; i < HOLDERS; i++) pthread_create(&th[i], NULL, holder, NULL);
    pthread_barrier_wait(&hold_bar);
    for (long i = 0; i < 400000; i++) { /* about 2.4 MB: 3 pools of 1 MiB */
        LT_ZONE_SCOPED("main work");
    }
    pthread_barrier_wait(&hold_bar);
    for (int i = 0; i < HOLDERS; i++) pthread_join(th[i], NULL);
}

START_TEST(threads_holding_chunks_do_not_block_the_others) {
    capd d;
    daemon_start(&d, 1);
    const char *env[] = {"TRACY_BUFFER_MB=1", "TRACY_WAIT_MAX=60", NULL};
    assert_clean_exit(run_child(threads_hold_chunks, NULL, d.port, env, -1));
    daemon_finish(&d);
    facts f;
    const char *names[] = {"main work", "held", "tracy: waiting for capture", NULL};
    facts_read(&f, d.path, names);
    assert_process_clean(&f, 1);
    ck_assert_uint_eq(f.zones_named[0], 400000);
    ck_assert_uint_eq(f.zones_named[1], HOLDERS);
    ck_assert_uint_eq(f.lost, 0);
    facts_free(&f);
    daemon_cleanup(&d);
}
END_TEST

/* A daemon that stops reading: a thread waits at most TRACY_WAIT_MAX for
 * memory, then drops and counts (LOST records) instead of blocking forever. */
static void stalled_daemon(void *arg) {
    (void)arg;
    if (lt_client_start() != 0) exit(8);
    kill(daemon_pid, SIGSTOP);
    uint64_t sent, lost = 0;
    for (long i = 0; i < 3000000; i++) {
        LT_ZONE_SCOPED("busy");
    }
    lt_client_counts(&sent, &lost);
    kill(daemon_pid, SIGCONT);
    if (lost == 0) exit(9);
}

START_TEST(a_stalled_daemon_makes_the_client_drop_after_a_bounded_wait) {
    capd d;
    daemon_start(&d, 1);
    daemon_pid = d.pid;
    const char *env[] = {"TRACY_BUFFER_MB=1", "TRACY_WAIT_MAX=0.2", NULL};
    int st = run_child(stalled_daemon, NULL, d.port, env, -1);
    kill(d.pid, SIGCONT);
    assert_clean_exit(st);
    daemon_finish(&d);
    facts f;
    const char *names[] = {"busy", NULL};
    facts_read(&f, d.path, names);
    assert_process_clean(&f, 1);
    const lt_process *pr = lt_reader_process(f.r, 1);
    ck_assert_uint_gt(pr->events_lost, 0);
    ck_assert_uint_eq(f.lost, pr->events_lost);
    ck_assert_uint_eq(f.unclosed, 0);
    /* every zone is either in the file or counted: two events per zone */
    ck_assert_uint_eq(2 * f.zones_named[0] + f.lost, 2 * 3000000);
    facts_free(&f);
    daemon_cleanup(&d);
}
END_TEST

/* ---- fatal signals ------------------------------------------------------- */

#define SIG_ZONES 3000

/* Like run_child, but once fn(arg) has returned the parent sends `sig` to
 * the child, which would otherwise sleep for 30 s and exit 9. */
static int run_signalled(scenario fn, void *arg, const char *port,
                         const char *const *env, int sig) {
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        default_signals();
        close(ready[0]);
        unsetenv("TRACY_ADDR"); /* this user's daemon-PORT.sock */
        setenv("TRACY_PORT", port, 1);
        unsetenv("TRACY_SIGNALS");
        for (; env && *env; env++) putenv((char *)*env);
        fn(arg);
        ck_assert_int_eq(write(ready[1], "r", 1), 1);
        for (int i = 0; i < 300; i++) sleep_ms(100);
        exit(9);
    }
    close(ready[1]);
    char b;
    struct pollfd pf = {ready[0], POLLIN, 0};
    ck_assert_msg(poll(&pf, 1, 60000) == 1 && read(ready[0], &b, 1) == 1,
                  "the profiled child did not get ready");
    close(ready[0]);
    kill(pid, sig);
    return wait_bounded(pid, 60000);
}

static void zones_then_wait(void *arg) {
    (void)arg;
    for (int i = 0; i < SIG_ZONES; i++) {
        LT_ZONE_SCOPED("before signal");
    }
}

START_TEST(fatal_signals_ship_then_end_the_process_by_them) {
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGALRM};
    capd d;
    daemon_start(&d, 6);
    for (int i = 0; i < 6; i++) {
        int st = run_signalled(zones_then_wait, NULL, d.port, NULL, sigs[i]);
        ck_assert_msg(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == sigs[i],
                      "signal %d: child status %d", sigs[i], st);
    }
    daemon_finish(&d);
    facts f;
    const char *names[] = {"before signal", NULL};
    facts_read(&f, d.path, names);
    ck_assert_uint_eq(lt_reader_nprocesses(f.r), 6);
    static const char *reasons[] = {"SIGTERM (signal 15)", "SIGINT (signal 2)",
                                    "SIGHUP (signal 1)", "SIGQUIT (signal 3)",
                                    "SIGUSR1 (signal 10)", "SIGALRM (signal 14)"};
    for (uint32_t p = 1; p <= 6; p++) { /* BYE names the signal (1.2) */
        assert_process_clean(&f, p);
        ck_assert_str_eq(lt_reader_process(f.r, p)->end_reason, reasons[p - 1]);
    }
    ck_assert_uint_eq(f.zones_named[0], 6 * SIG_ZONES);
    facts_free(&f);
    daemon_cleanup(&d);
}
END_TEST

static volatile sig_atomic_t own_handler_ran;
static void own_handler(int sig) { own_handler_ran = sig; }

START_TEST(a_program_handler_and_signals_off_are_respected) {
    capd d;
    daemon_start(&d, 2);
    /* the program's own handler: it runs, the process is not ended by us */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        profiled_child(d.port);
        signal(SIGTERM, own_handler); /* before the client connects */
        zones_then_wait(NULL);
        kill(getpid(), SIGTERM); /* the handler decides: here, exit 7 */
        for (int i = 0; i < 300 && !own_handler_ran; i++) sleep_ms(10);
        exit(own_handler_ran == SIGTERM ? 7 : 8);
    }
    int st = wait_bounded(pid, 60000);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 7, "status %d", st);
    /* TRACY_SIGNALS=0: the default action, at once; the daemon sees the
     * connection cut without a goodbye */
    const char *off[] = {"TRACY_SIGNALS=0", NULL};
    st = run_signalled(zones_then_wait, NULL, d.port, off, SIGTERM);
    ck_assert_msg(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %d", st);
    daemon_finish(&d);
    facts f;
    const char *names[] = {"before signal", NULL};
    facts_read(&f, d.path, names);
    ck_assert_uint_eq(lt_reader_nprocesses(f.r), 2);
    assert_process_clean(&f, 1);
    ck_assert_int_eq(lt_reader_process(f.r, 2)->status, LT_PROC_LOST);
    facts_free(&f);
    daemon_cleanup(&d);
}
END_TEST

/* ---- crashes -------------------------------------------------------------- */

#define CRASH_ZONES 2500

static void zones_then_fault(void *arg) {
    (void)arg;
    for (int i = 0; i < CRASH_ZONES; i++) {
        LT_ZONE_SCOPED("before crash");
    }
    volatile uintptr_t bad = 16; /* not NULL: sanitizers let it through */
    *(volatile int *)bad = 1;    /* a real fault: si_code SEGV_MAPERR */
}

static void zones_then_abort(void *arg) {
    (void)arg;
    for (int i = 0; i < CRASH_ZONES; i++) {
        LT_ZONE_SCOPED("before crash");
    }
    abort();
}

static int prior_fd = -1;
static void prior_handler(int sig, siginfo_t *si, void *uc) {
    (void)si;
    (void)uc;
    if (write(prior_fd, "prior", 5) != 5) _exit(3);
    signal(sig, SIG_DFL); /* the fault happens again, and ends the process */
}

/* A runtime's account of the crash that faults itself (a corrupt state). */
static size_t faulting_note(char *buf, size_t cap) {
    (void)buf;
    (void)cap;
    volatile uintptr_t bad = 16;
    return *(volatile size_t *)bad;
}

/* In a test child: SIGSEGV and SIGABRT as a program without ASan has them
 * (the default), or, `prior`, an extension's handler set before the client
 * connects, which writes to the pipe. */
static void crash_child(const char *port, int prior) {
    profiled_child(port);
    unsetenv("TRACY_SIGNALS");
    signal(SIGSEGV, SIG_DFL);
    signal(SIGABRT, SIG_DFL);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    if (prior) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = prior_handler;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, NULL);
    }
}

/* Three crashes: a fault; abort(), whose note's runtime part faults; a
 * fault with an extension's handler set before the client connected. */
START_TEST(a_crash_ships_every_event_and_ends_by_the_same_signal) {
    capd d;
    daemon_start(&d, 3);
    int pipefd[2];
    ck_assert_int_eq(pipe(pipefd), 0);
    for (int i = 0; i < 3; i++) {
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            close(pipefd[0]);
            prior_fd = pipefd[1];
            crash_child(d.port, i == 2);
            if (i == 1) lt__crash_set_note(faulting_note);
            (i == 1 ? zones_then_abort : zones_then_fault)(NULL);
            _exit(9);
        }
        int st = wait_bounded(pid, 60000), sig = i == 1 ? SIGABRT : SIGSEGV;
        ck_assert_msg(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == sig,
                      "crash %d: child status %d", i, st);
    }
    close(pipefd[1]);
    char got[16] = "";
    ck_assert_int_eq(read(pipefd[0], got, sizeof got - 1), 5); /* once */
    ck_assert_str_eq(got, "prior");
    close(pipefd[0]);
    daemon_finish(&d);
    facts f;
    const char *names[] = {"before crash", NULL};
    facts_read(&f, d.path, names);
    ck_assert_uint_eq(lt_reader_nprocesses(f.r), 3);
    static const char *const why[3] = {"SIGSEGV (signal 11)", "SIGABRT (signal 6)",
                                       "SIGSEGV (signal 11)"};
    for (uint32_t p = 1; p <= 3; p++) {
        const lt_process *pr = lt_reader_process(f.r, p);
        ck_assert_int_eq(pr->status, LT_PROC_CRASHED);
        ck_assert_str_eq(pr->end_reason, why[p - 1]);
        ck_assert_uint_eq(pr->events_received, pr->events_sent);
        ck_assert_uint_eq(pr->events_lost, 0);
        ck_assert_uint_eq(f.crash_notes[p], 1);
        ck_assert_uint_eq(f.notes_unread[p], p == 2);
    }
    ck_assert_uint_eq(f.zones_named[0], 3 * CRASH_ZONES);
    ck_assert_uint_eq(f.aborted, 0); /* no zone was open at the crash */
    facts_free(&f);
    daemon_cleanup(&d);
}
END_TEST

/* A crash the handler cannot ship (`signals_off`: TRACY_SIGNALS=0, the
 * handler is not there; else the crashing thread holds the client's lock,
 * as for a heap corruption found inside the client, and the last round
 * cannot happen): the process still ends by its signal at once, and the
 * daemon counts it lost, saying what it does not know. */
static void assert_unshipped_crash_is_lost(int signals_off) {
    capd d;
    daemon_start(&d, 1);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        crash_child(d.port, 0);
        if (signals_off) setenv("TRACY_SIGNALS", "0", 1);
        for (int i = 0; i < CRASH_ZONES; i++) {
            LT_ZONE_SCOPED("before crash");
        }
        if (!signals_off) pthread_mutex_lock(&lt__g.mu);
        raise(SIGSEGV);
        _exit(9);
    }
    int st = wait_bounded(pid, 60000);
    ck_assert_msg(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status %d", st);
    daemon_finish(&d);
    facts f;
    facts_read(&f, d.path, NULL);
    const lt_process *pr = lt_reader_process(f.r, 1);
    ck_assert_int_eq(pr->status, LT_PROC_LOST);
    ck_assert_ptr_nonnull(strstr(pr->end_reason, "events recorded but not sent: unknown"));
    ck_assert_uint_eq(f.crash_notes[1], 0);
    facts_free(&f);
    daemon_cleanup(&d);
}

START_TEST(a_crash_holding_the_clients_lock_still_ends_by_its_signal) {
    assert_unshipped_crash_is_lost(0);
}
END_TEST

START_TEST(signals_off_leaves_a_crash_alone) {
    assert_unshipped_crash_is_lost(1);
}
END_TEST

/* A forked child, signalled, ships its own events and ends; its parent's
 * client goes on (the child has a reaper and pipes of its own). */
static void child_signalled(void *arg) {
    (void)arg;
    {
        LT_ZONE_SCOPED("parent before");
    }
    int ready[2];
    if (pipe(ready) < 0) exit(3);
    pid_t pid = fork();
    if (pid == 0) {
        close(ready[0]);
        zones_then_wait(NULL);
        if (write(ready[1], "r", 1) != 1) _exit(3);
        for (int i = 0; i < 300; i++) sleep_ms(100);
        _exit(9);
    }
    close(ready[1]);
    char b;
    if (read(ready[0], &b, 1) != 1) exit(4);
    kill(pid, SIGTERM);
    int st = wait_bounded(pid, 60000);
    if (st < 0 || !WIFSIGNALED(st) || WTERMSIG(st) != SIGTERM) exit(5);
    for (int i = 0; i < 100; i++) {
        LT_ZONE_SCOPED("parent after");
    }
}

START_TEST(a_signalled_forked_child_ships_and_its_parent_goes_on) {
    static const char *const names[3] = {"parent before", "before signal", "parent after"};
    static const uint64_t want[3] = {1, SIG_ZONES, 100};
    parent_and_child(child_signalled, names, want);
}
END_TEST

/* A signal the program handles, arriving while the client waits for the
 * daemon's WELCOME, is not a timeout: the handshake goes on. */
static void on_alarm(int sig) { (void)sig; }

START_TEST(a_signal_during_the_handshake_is_not_a_timeout) {
    capd d;
    daemon_start(&d, 1);
    ck_assert_int_eq(kill(d.pid, SIGSTOP), 0); /* the daemon answers late */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        profiled_child(d.port);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm; /* no SA_RESTART: poll() fails with EINTR */
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = {{0, 0}, {0, 200000}};
        setitimer(ITIMER_REAL, &it, NULL);
        int rc = lt_client_start();
        for (int i = 0; i < 10; i++) {
            LT_ZONE_SCOPED("after handshake");
        }
        exit(rc == 0 ? 0 : 4);
    }
    sleep_ms(700);
    ck_assert_int_eq(kill(d.pid, SIGCONT), 0);
    assert_clean_exit(wait_bounded(pid, 60000));
    daemon_finish(&d);
    facts f;
    const char *names[] = {"after handshake", NULL};
    facts_read(&f, d.path, names);
    assert_process_clean(&f, 1);
    ck_assert_uint_eq(f.zones_named[0], 10);
    facts_free(&f);
    daemon_cleanup(&d);
}
END_TEST

/* ---- the guarded descriptor (PROTOCOL.md, Resuming) ---------------------
 * A program that closes every descriptor it does not know, or puts its own
 * socket or pipe where the profiler's is, keeps a complete trace, and gets
 * back only its own bytes. */

#define GUARD_PHASES 6
#define GUARD_ZONES 3000
enum { G_CLOSE = 1, G_SOCKET = 2, G_PIPE = 4 };

/* The profiler's socket as the program can find it: a socket numbered 200
 * or more in /proc/self/fd. -1 when there is none. */
static int profiler_fd(void) {
    DIR *d = opendir("/proc/self/fd");
    int found = -1;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int n = atoi(e->d_name);
        char path[64], link[64] = "";
        if (n < 200 || n == dirfd(d)) continue;
        snprintf(path, sizeof path, "/proc/self/fd/%d", n);
        if (readlink(path, link, sizeof link - 1) > 0 && strncmp(link, "socket:", 7) == 0)
            found = n;
    }
    if (d) closedir(d);
    return found;
}

/* Puts a socketpair's end (or a pipe's write end) over the profiler's
 * descriptor, writes through it and, once the profiler has had rounds to
 * ship, reads the other end: exactly the program's bytes must be there. */
static void replace_profiler_fd(int pipe_not_socket, int phase) {
    int fd = profiler_fd();
    if (fd < 0) exit(20);
    int p[2];
    if (pipe_not_socket ? pipe(p) : socketpair(AF_UNIX, SOCK_STREAM, 0, p)) exit(21);
    int mine = pipe_not_socket ? p[1] : p[0], other = pipe_not_socket ? p[0] : p[1];
    if (dup2(mine, fd) != fd) exit(22);
    close(mine);
    char msg[64];
    int n = snprintf(msg, sizeof msg, "the program's own bytes, phase %d", phase);
    if (write(fd, msg, (size_t)n) != n) exit(23);
    for (int i = 0; i < GUARD_ZONES; i++) {
        LT_ZONE_SCOPED("guarded extra");
    }
    sleep_ms(150); /* rounds run: none may write to fd */
    char got[256];
    fcntl(other, F_SETFL, O_NONBLOCK);
    ssize_t k = read(other, got, sizeof got);
    if (k != n || memcmp(got, msg, (size_t)n) != 0) exit(24);
    if (read(other, got, sizeof got) > 0) exit(25); /* nothing more */
    close(other);
    close(fd);
}

static void guarded_program(void *arg) {
    int mode = (int)(intptr_t)arg, step = 0;
    for (int ph = 0; ph < GUARD_PHASES; ph++) {
        for (int i = 0; i < GUARD_ZONES; i++) {
            LT_ZONE_SCOPED("guarded");
        }
        sleep_ms(80); /* a round ships them */
        if (ph == GUARD_PHASES - 1) break;
        /* each disruption the mode allows, in turn */
        int kinds[3], nk = 0;
        if (mode & G_CLOSE) kinds[nk++] = G_CLOSE;
        if (mode & G_SOCKET) kinds[nk++] = G_SOCKET;
        if (mode & G_PIPE) kinds[nk++] = G_PIPE;
        int kind = kinds[step++ % nk];
        if (kind == G_CLOSE) {
            /* os.closerange(3, 65536), as python-daemon does; in the
             * middle of a zone. */
            LT_ZONE_SCOPED("guarded extra");
            for (int fd = 3; fd < 65536; fd++) close(fd);
        } else {
            replace_profiler_fd(kind == G_PIPE, ph);
        }
    }
    /* the program's output, unchanged */
    printf("done\n");
}

/* Runs guarded_program(mode); the trace must be complete and exact, the
 * program's stderr empty, and the daemon must have resumed `resumes`
 * connections. */
static void guarded_run_of(scenario program, int mode, uint64_t resumes,
                           uint64_t extra_zones);

/* A new file in the daemon's test folder, for a program's stderr. */
static int stderr_file(const capd *d) {
    char path[160];
    snprintf(path, sizeof path, "%s/stderr", d->dir);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    return fd;
}

/* The program printed nothing on its stderr (fd, closed here). */
static void assert_no_stderr(int fd) {
    char buf[1024] = "";
    ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    ck_assert_msg(k == 0, "the program's stderr: %s", buf);
}

static void guarded_run(int mode, uint64_t resumes, uint64_t extra_zones) {
    guarded_run_of(guarded_program, mode, resumes, extra_zones);
}

/* The same for another program, run with the guarded descriptor (the
 * socket in the program's table, TRACY_PRIVATE_FD=0) when it is
 * guarded_program, else with the sender's private table. */
static void guarded_run_of(scenario program, int mode, uint64_t resumes,
                           uint64_t extra_zones) {
    static const char *const shared_table[] = {"TRACY_PRIVATE_FD=0", NULL};
    capd d;
    daemon_start(&d, 1);
    int fd = stderr_file(&d);
    assert_clean_exit(run_child(program, (void *)(intptr_t)mode, d.port,
                                program == guarded_program ? shared_table : NULL, fd));
    assert_no_stderr(fd);
    daemon_finish(&d);

    facts f;
    const char *names[] = {"guarded", "guarded extra", NULL};
    facts_read(&f, d.path, names);
    ck_assert_uint_eq(lt_reader_nprocesses(f.r), 1);
    assert_process_clean(&f, 1);
    ck_assert_uint_eq(f.zones_named[0], GUARD_PHASES * GUARD_ZONES);
    ck_assert_uint_eq(f.zones_named[1], extra_zones);
    ck_assert_uint_eq(f.unclosed, 0);
    ck_assert_uint_eq(f.aborted, 0);
    ck_assert_uint_eq(f.lost, 0);
    ck_assert_uint_eq(lt_reader_process(f.r, 1)->events_lost, 0);
    uint64_t v = 99;
    ck_assert_int_eq(lt_reader_total(f.r, "clients_resumed", &v), 1);
    ck_assert_uint_eq(v, resumes);
    v = 99;
    ck_assert_int_eq(lt_reader_total(f.r, "clients_lost", &v), 1);
    ck_assert_uint_eq(v, 0);
    v = 99;
    ck_assert_int_eq(lt_reader_total(f.r, "clients_refused", &v), 1);
    ck_assert_uint_eq(v, 0);
    for (uint32_t t = 1; t <= MAXT; t++) ck_assert_int_eq(f.s[1][t].ts_backwards, 0);
    facts_free(&f);
    daemon_cleanup(&d);
}

START_TEST(closing_every_descriptor_keeps_the_whole_trace) {
    guarded_run(G_CLOSE, GUARD_PHASES - 1, GUARD_PHASES - 1);
}
END_TEST

START_TEST(a_socket_over_the_profilers_descriptor_gets_only_its_bytes) {
    guarded_run(G_SOCKET, GUARD_PHASES - 1, (GUARD_PHASES - 1) * GUARD_ZONES);
}
END_TEST

START_TEST(a_pipe_over_the_profilers_descriptor_gets_only_its_bytes) {
    guarded_run(G_PIPE, GUARD_PHASES - 1, (GUARD_PHASES - 1) * GUARD_ZONES);
}
END_TEST

START_TEST(closing_and_replacing_several_times_keeps_the_whole_trace) {
    /* close, socket, pipe, close, socket */
    guarded_run(G_CLOSE | G_SOCKET | G_PIPE, GUARD_PHASES - 1, 2 + 3 * GUARD_ZONES);
}
END_TEST

/* ---- the private descriptor table (PROTOCOL.md, The daemon's socket) ----
 * The socket is in no table the program sees: /proc/self/fd lists the same
 * descriptors as before the client connected, a pipe the program closes
 * gives its reader end of file at once (the sender holds no copy), and
 * closing every descriptor or putting its own at every number loses
 * nothing, without even a resumed connection. */

/* The descriptors /proc/self/fd lists, as a bit set of numbers < 1024. */
static void fd_set_of(uint8_t bits[128]) {
    memset(bits, 0, 128);
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int n = atoi(e->d_name);
        if (e->d_name[0] == '.' || n == dirfd(d)) continue;
        if (n < 1024) bits[n / 8] |= (uint8_t)(1u << (n % 8));
        else exit(40); /* no descriptor that high in this program */
    }
    if (d) closedir(d);
}

static void private_program(void *arg) {
    int mode = (int)(intptr_t)arg;
    uint8_t before[128], after[128];
    int p[2];
    if (pipe(p) < 0) exit(41);
    fd_set_of(before);
    for (int ph = 0; ph < GUARD_PHASES; ph++) {
        for (int i = 0; i < GUARD_ZONES; i++) {
            LT_ZONE_SCOPED("guarded");
        }
        if (ph == 0) {
            /* connected, the sender running: nothing new in the table */
            if (lt_client_flush() != 0) exit(42);
            fd_set_of(after);
            if (memcmp(before, after, sizeof before) != 0) exit(43);
            /* the sender took its copy of the table with this pipe in it */
            close(p[1]);
            struct pollfd pf = {p[0], POLLIN, 0};
            char c;
            if (poll(&pf, 1, 10000) != 1 || read(p[0], &c, 1) != 0) exit(44);
            close(p[0]);
        }
        sleep_ms(80); /* a round ships them */
        if (ph == GUARD_PHASES - 1) break;
        LT_ZONE_SCOPED("guarded extra");
        if (mode == G_CLOSE) {
            /* close_range(3, ~0U), in the middle of a zone */
            for (int fd = 3; fd < 65536; fd++) close(fd);
            continue;
        }
        /* a pipe at every number from 3 to 1023 */
        int q[2];
        if (pipe(q) < 0) exit(45);
        for (int fd = 3; fd < 1024; fd++)
            if (fd != q[0] && fd != q[1] && dup2(q[1], fd) != fd) exit(46);
        for (int fd = 3; fd < 1024; fd++) {
            if (fd == q[0]) continue;
            char b = (char)('a' + fd % 26);
            if (write(fd, &b, 1) != 1) exit(47);
        }
        for (int i = 0; i < GUARD_ZONES; i++) {
            LT_ZONE_SCOPED("guarded extra");
        }
        if (lt_client_flush() != 0) exit(48);
        /* exactly the program's bytes, in order */
        fcntl(q[0], F_SETFL, O_NONBLOCK);
        char got[1100];
        ssize_t k = read(q[0], got, sizeof got);
        if (k != 1023 - 3) exit(49);
        for (int fd = 3, j = 0; fd < 1024; fd++)
            if (fd != q[0] && got[j++] != (char)('a' + fd % 26)) exit(50);
        for (int fd = 3; fd < 1024; fd++) close(fd);
    }
    printf("done\n");
}

START_TEST(the_socket_is_in_no_table_the_program_sees) {
    guarded_run_of(private_program, G_CLOSE, 0, GUARD_PHASES - 1);
}
END_TEST

START_TEST(a_descriptor_at_every_number_gets_only_the_programs_bytes) {
    guarded_run_of(private_program, G_PIPE, 0, (GUARD_PHASES - 1) * (1 + GUARD_ZONES));
}
END_TEST

/* ---- exec (PROTOCOL.md, exec) -------------------------------------------
 * A failed exec between lt_client_exec_prepare and lt_client_exec_failed
 * changes nothing; a successful one ends the process clean, "exec", with
 * everything recorded before it. */
static void execs(void *arg) {
    (void)arg;
    for (int i = 0; i < 1000; i++) {
        LT_ZONE_SCOPED("before exec");
    }
    if (lt_client_exec_prepare() != 0) exit(60);
    execl("/nonexistent/program", "program", (char *)NULL);
    lt_client_exec_failed();
    for (int i = 0; i < 1000; i++) {
        LT_ZONE_SCOPED("after a failed exec");
    }
    if (lt_client_exec_prepare() != 0) exit(61);
    /* not profiled, and long enough for the daemon to flush while it holds
     * the pid for the new program */
    execl("/bin/sh", "sh", "-c", "sleep 1.5", (char *)NULL);
    exit(62);
}

START_TEST(a_failed_exec_goes_on_and_a_successful_one_ends_clean) {
    capd d;
    daemon_start(&d, 1);
    int fd = stderr_file(&d);
    assert_clean_exit(run_child(execs, NULL, d.port, NULL, fd));
    assert_no_stderr(fd);
    daemon_finish(&d);
    facts f;
    const char *names[] = {"before exec", "after a failed exec", NULL};
    facts_read(&f, d.path, names);
    ck_assert_uint_eq(lt_reader_nprocesses(f.r), 1);
    assert_process_clean(&f, 1);
    ck_assert_str_eq(lt_reader_process(f.r, 1)->end_reason, "exec");
    ck_assert_uint_eq(f.zones_named[0], 1000);
    ck_assert_uint_eq(f.zones_named[1], 1000);
    ck_assert_uint_eq(f.aborted, 0);
    uint64_t v = 99;
    ck_assert_int_eq(lt_reader_total(f.r, "clients_lost", &v), 1);
    ck_assert_uint_eq(v, 0);
    facts_free(&f);
    daemon_cleanup(&d);
}
END_TEST

/* The daemon is killed while the program runs: one line, unprofiled, and
 * the program ends without waiting long. */
static void daemon_dies(void *arg) {
    (void)arg;
    for (int i = 0; i < 1000; i++) {
        LT_ZONE_SCOPED("before");
    }
    if (lt_client_flush() != 0) exit(30);
    kill(daemon_pid, SIGKILL);
    /* The sender finds the connection gone, tries to resume for about a
     * second, and gives up. */
    for (int r = 0; r < 100 && lt_client_active(); r++) {
        for (int i = 0; i < 1000; i++) {
            LT_ZONE_SCOPED("after");
        }
        sleep_ms(60);
    }
    if (lt_client_active()) exit(31);
}

START_TEST(a_killed_daemon_still_means_one_line_and_unprofiled) {
    capd d;
    daemon_start(&d, 1);
    daemon_pid = d.pid;
    char errpath[160];
    snprintf(errpath, sizeof errpath, "%s/stderr", d.dir);
    int fd = open(errpath, O_CREAT | O_RDWR | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    assert_clean_exit(run_child(daemon_dies, NULL, d.port, NULL, fd));
    waitpid(d.pid, NULL, 0);
    char buf[1024] = "";
    ck_assert_int_ge(pread(fd, buf, sizeof buf - 1, 0), 1);
    close(fd);
    ck_assert_msg(strncmp(buf, "tracy: lost the connection to the capture daemon at ", 52) == 0,
                  "stderr: %s", buf);
    ck_assert_msg(strstr(buf, "; running unprofiled\n") != NULL, "stderr: %s", buf);
    ck_assert_msg(strchr(buf, '\n') + 1 == buf + strlen(buf), "stderr: %s", buf);
    /* (the reconnect attempts are bounded: the child exits 31 when the
     * client is still active after its 100 rounds; no timed assertion) */
    daemon_cleanup(&d);
}
END_TEST

Suite *client_suite(void) {
    Suite *s = suite_create("client");
    TCase *t = tcase_create("capture");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, zones_from_threads_arrive_once_in_order);
    tcase_add_test(t, messages_signposts_plots_frames_arrive);
    tcase_add_test(t, client_clock_tracks_monotonic);
    suite_add_tcase(s, t);
    /* fork() with the client's sender thread running. Run by `make check-c`
     * only: GCC 12's ASan runtime does not lock its allocator around fork(),
     * so under `make check-asan` a child can inherit that lock held and hang
     * in ASan's own thread start-up (glibc's malloc is fork-safe). */
    t = tcase_create("fork");
    tcase_set_tags(t, "fork_with_threads");
    tcase_set_timeout(t, 180);
    tcase_add_test(t, forked_child_is_a_second_process);
    tcase_add_test(t, a_double_forked_daemon_is_recorded);
    tcase_add_test(t, a_signalled_forked_child_ships_and_its_parent_goes_on);
    suite_add_tcase(s, t);
    t = tcase_create("signals");
    tcase_set_timeout(t, 180);
    tcase_add_test(t, fatal_signals_ship_then_end_the_process_by_them);
    tcase_add_test(t, a_program_handler_and_signals_off_are_respected);
    tcase_add_test(t, a_signal_during_the_handshake_is_not_a_timeout);
    tcase_add_test(t, a_crash_ships_every_event_and_ends_by_the_same_signal);
    tcase_add_test(t, signals_off_leaves_a_crash_alone);
    tcase_add_test(t, a_crash_holding_the_clients_lock_still_ends_by_its_signal);
    suite_add_tcase(s, t);
    t = tcase_create("no_daemon");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, no_daemon_warns_once_and_runs_on);
    suite_add_tcase(s, t);
    t = tcase_create("back_pressure");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, drop_mode_counts_lost_events);
    tcase_add_test(t, slow_daemon_records_wait_zone);
    tcase_add_test(t, drops_of_a_thread_alive_at_exit_are_recorded);
    tcase_add_test(t, threads_holding_chunks_do_not_block_the_others);
    tcase_add_test(t, a_stalled_daemon_makes_the_client_drop_after_a_bounded_wait);
    suite_add_tcase(s, t);
    t = tcase_create("guard");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, closing_every_descriptor_keeps_the_whole_trace);
    tcase_add_test(t, a_socket_over_the_profilers_descriptor_gets_only_its_bytes);
    tcase_add_test(t, a_pipe_over_the_profilers_descriptor_gets_only_its_bytes);
    tcase_add_test(t, closing_and_replacing_several_times_keeps_the_whole_trace);
    tcase_add_test(t, a_killed_daemon_still_means_one_line_and_unprofiled);
    suite_add_tcase(s, t);
    t = tcase_create("exec");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, a_failed_exec_goes_on_and_a_successful_one_ends_clean);
    suite_add_tcase(s, t);
    t = tcase_create("private_fd");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, the_socket_is_in_no_table_the_program_sees);
    tcase_add_test(t, a_descriptor_at_every_number_gets_only_the_programs_bytes);
    suite_add_tcase(s, t);
    return s;
}
