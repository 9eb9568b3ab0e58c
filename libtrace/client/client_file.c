/* client_file.c -- trace windows: a process writes a trace file of its own
 * (lt_start_trace / lt_stop_trace, TRACY_OUTPUT, tracy.start_trace).
 *
 * Design. The window is recorded by the same private daemon `python -m
 * tracy` starts: capture-release on a socket of its own in the user's run
 * folder (-p 0), started here and connected to; it writes the file with the
 * one writer of the toolkit (the wire is turned into the file in one place,
 * the daemon). The user starts nothing. Processes forked or started in the
 * window inherit TRACY_ADDR and join that capture as under python -m tracy.
 * Stopping ships every thread's records, says goodbye, asks the daemon to
 * drain (SIGUSR1: no new process) and waits until it has finished the file
 * (complete, trailer written); a child still connected after
 * LT__STOP_WAIT_MS is recorded as stopped (SIGINT: finish now). A second
 * window starts a new daemon and a new connection: threads alive keep
 * recording, each with a renewed buffer (client_buf.c, sessions), and the
 * ends of zones begun before the window are not sent. Zones open when the
 * window ends are closed by the daemon at the end of the stream.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "client_internal.h"
#include "local.h"

extern char **environ;

#define LT__STOP_WAIT_MS 5000 /* for children still connected at the stop */

/* The open window (window_mu). */
static struct {
    pid_t daemon;        /* 0: no window */
    char path[PATH_MAX];
    char *old_addr, *old_port; /* the environment before the window */
    int had_addr, had_port;
    uint64_t stored;
    int stored_known;
} win;
static pthread_mutex_t window_mu = PTHREAD_MUTEX_INITIALIZER;

static void say(const char *what, const char *detail) {
    fprintf(stderr, "tracy: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
}

static int executable(const char *p) {
    struct stat st;
    return p && access(p, X_OK) == 0 && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* capture-release: TRACY_CAPTURE, else bin/ next to the lib/ holding this
 * library, else PATH. Copies it into out; returns 0 or -1. */
static int find_capture(char *out, size_t n) {
    const char *env = getenv("TRACY_CAPTURE");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return executable(out) ? 0 : -1;
    }
    Dl_info di;
    if (dladdr((void *)find_capture, &di) && di.dli_fname) {
        char lib[PATH_MAX];
        snprintf(lib, sizeof lib, "%s", di.dli_fname);
        char *slash = strrchr(lib, '/');
        if (slash) {
            *slash = 0;
            snprintf(out, n, "%s/../bin/capture-release", lib);
            if (executable(out)) return 0;
        }
    }
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        snprintf(out, n, "%.*s/capture-release", (int)len, len ? path : ".");
        if (executable(out)) return 0;
        path = end ? end + 1 : NULL;
    }
    return -1;
}

/* A file that may be replaced by the trace: none, an empty one or a trace
 * (the magic of FORMAT.md at offset 0 or 8). */
static int replaceable(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return errno == ENOENT;
    if (!S_ISREG(st.st_mode)) return 0;
    if (st.st_size == 0) return 1;
    uint8_t h[16] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t k = read(fd, h, sizeof h);
    close(fd);
    return k == 16 && (memcmp(h, "TRCYFILE", 8) == 0 || memcmp(h + 8, "TRCYFILE", 8) == 0);
}

/* Spawns `exe -o path -f -p 0 -q` in a process group of its own and reads
 * the port it prints. Returns its pid (port in *port), or -1 after saying
 * why. */
static pid_t spawn_daemon(const char *exe, const char *path, long *port) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) return -1;
    char *argv[] = {(char *)exe, "-o", (char *)path, "-f", "-p", "0", "-q", NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGINT);
    sigaddset(&dfl, SIGTERM);
    sigaddset(&dfl, SIGUSR1);
    sigaddset(&dfl, SIGHUP);
    sigaddset(&dfl, SIGPIPE);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    pid_t pid;
    int rc = posix_spawn(&pid, exe, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        say("cannot start capture-release", strerror(rc));
        return -1;
    }
    char line[32];
    size_t n = 0;
    while (n < sizeof line - 1) {
        ssize_t k = read(p[0], line + n, 1);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0 || line[n] == '\n') break;
        n++;
    }
    close(p[0]);
    line[n] = 0;
    char *end;
    *port = strtol(line, &end, 10);
    if (n == 0 || *end || *port < 1 || *port > 65535) {
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
        char why[64];
        snprintf(why, sizeof why, "exit status %d",
                 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        say("capture-release did not start", why);
        return -1;
    }
    return pid;
}

static char *dup_env(const char *name, int *had) {
    const char *v = getenv(name);
    *had = v != NULL;
    return v ? strdup(v) : NULL;
}

static void restore_env(const char *name, char **old, int had) {
    if (had && *old) setenv(name, *old, 1);
    else unsetenv(name);
    free(*old);
    *old = NULL;
}

/* Opens a window writing `path` (window_mu held): the daemon, then the
 * environment the client and the children connect with. */
static int window_open(const char *path, const char *exe_or_null) {
    char exe[PATH_MAX], dir[LT__RUNDIR_MAX], addr[LT__RUNDIR_MAX + 40];
    long port = 0;
    if (win.daemon) return LT_EINVAL;
    if (!path || !*path || strlen(path) >= sizeof win.path) return LT_EINVAL;
    const char *flight = getenv("TRACY_FLIGHT");
    if (flight && *flight && strcmp(flight, "0") != 0) {
        say("no trace window in flight recorder mode (TRACY_FLIGHT is set)", NULL);
        return LT_EINVAL;
    }
    if (!replaceable(path)) {
        say("refusing to write the trace over a file that is not a trace", path);
        return LT_EEXIST;
    }
    if (exe_or_null) snprintf(exe, sizeof exe, "%s", exe_or_null);
    if (!exe_or_null && find_capture(exe, sizeof exe) < 0) {
        say("capture-release not found (set TRACY_CAPTURE, or put it on PATH)", NULL);
        return LT_EOPEN;
    }
    if (lt__rundir_said(dir, sizeof dir) < 0) {
        say("no private run folder for the capture's socket", NULL);
        return LT_ECONNECT;
    }
    pid_t pid = spawn_daemon(exe, path, &port);
    if (pid < 0) return LT_ECONNECT;
    snprintf(addr, sizeof addr, "%s%s/" LT_LOCAL_SOCK_FMT, LT_UNIX_PREFIX, dir, port);
    win.daemon = pid;
    snprintf(win.path, sizeof win.path, "%s", path);
    win.old_addr = dup_env("TRACY_ADDR", &win.had_addr);
    win.old_port = dup_env("TRACY_PORT", &win.had_port);
    win.stored_known = 0;
    setenv("TRACY_ADDR", addr, 1);
    unsetenv("TRACY_PORT");
    /* children of the window join it; they do not open windows of their own */
    unsetenv("TRACY_OUTPUT");
    return 0;
}

static uint64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Waits for the daemon to finish the file (window_mu held, the client
 * stopped). Returns 0, or LT_EIO when it failed (said). */
static int window_close(void) {
    pid_t pid = win.daemon;
    int st = 0, asked = 0;
    uint64_t deadline = mono_ms() + LT__STOP_WAIT_MS;
    win.stored_known = lt_client_stored(&win.stored);
    kill(pid, SIGUSR1); /* drain: the window's processes only */
    for (;;) {
        pid_t r = waitpid(pid, &st, asked ? 0 : WNOHANG);
        if (r == pid) break;
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) { /* reaped by someone else: nothing to tell */
            st = 0;
            break;
        }
        if (!asked && mono_ms() >= deadline) {
            /* processes of the window still connected: recorded as stopped */
            kill(pid, SIGINT);
            asked = 1;
            continue;
        }
        struct timespec d = {0, 2000000};
        nanosleep(&d, NULL);
    }
    win.daemon = 0;
    restore_env("TRACY_ADDR", &win.old_addr, win.had_addr);
    restore_env("TRACY_PORT", &win.old_port, win.had_port);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        (void)lt__trace_cut_file(win.path); /* a failure leaves the file usable */
        return 0;
    }
    lt__trace_cut_reset();
    char why[64];
    snprintf(why, sizeof why, "capture-release exit status %d",
             WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    say("the trace may be incomplete", why);
    return LT_EIO;
}

/* A forked child is a process of the window, not its owner. */
static void atfork_child(void) {
    pthread_mutex_init(&window_mu, NULL);
    win.daemon = 0;
    free(win.old_addr);
    free(win.old_port);
    win.old_addr = win.old_port = NULL;
}

static void init_once(void) { pthread_atfork(NULL, NULL, atfork_child); }
static pthread_once_t once = PTHREAD_ONCE_INIT;

void lt__trace_init(void) { pthread_once(&once, init_once); }

int lt__trace_start(const char *path, const char *exe) {
    pthread_once(&once, init_once);
    pthread_mutex_lock(&window_mu);
    int rc = win.daemon || lt_client_active() ? LT_EINVAL : window_open(path, exe);
    if (rc == 0) lt__trace_cut_reset();
    pthread_mutex_unlock(&window_mu);
    if (rc < 0) return rc;
    rc = lt__client_rearm();
    if (rc == 0) rc = lt_client_start();
    if (rc < 0) {
        pthread_mutex_lock(&window_mu);
        kill(win.daemon, SIGINT);
        (void)window_close();
        pthread_mutex_unlock(&window_mu);
    }
    return rc;
}

int lt__trace_stop(uint64_t *stored) {
    pthread_mutex_lock(&window_mu);
    if (!win.daemon) {
        pthread_mutex_unlock(&window_mu);
        return LT_EINVAL;
    }
    lt_client_stop();
    int rc = window_close();
    if (stored) *stored = win.stored_known ? win.stored : 0;
    pthread_mutex_unlock(&window_mu);
    return rc;
}

int lt_start_trace(const char *path) { return lt__trace_start(path, NULL); }

int lt_stop_trace(void) { return lt__trace_stop(NULL); }

int lt_trace_path(char *buf, size_t n) {
    pthread_mutex_lock(&window_mu);
    int open = win.daemon != 0;
    if (open && buf && n) snprintf(buf, n, "%s", win.path);
    pthread_mutex_unlock(&window_mu);
    return open;
}

int lt__output_start(void) {
    const char *out = getenv("TRACY_OUTPUT");
    if (!out || !*out) return 0;
    pthread_once(&once, init_once);
    pthread_mutex_lock(&window_mu);
    int rc = win.daemon ? 0 : window_open(out, NULL);
    pthread_mutex_unlock(&window_mu);
    return rc;
}

void lt__trace_at_exit(void) {
    pthread_mutex_lock(&window_mu);
    if (win.daemon) (void)window_close();
    pthread_mutex_unlock(&window_mu);
}
