/* client_signal.c -- a profiled process that SIGTERM, SIGINT, SIGHUP or
 * another signal ends by its default action (SIGQUIT, SIGUSR1, SIGALRM...:
 * fatal_sigs) first ships what it recorded.
 *
 * When the client connects, each of these signals whose action is still the
 * default gets on_fatal(), installed with SA_RESETHAND | SA_NODEFER: the
 * default action is back as soon as it runs, so a second signal ends the
 * process at once. The handler only does async-signal-safe things: it wakes
 * the reaper thread (sem_post), waits (bounded, in 1 ms sleeps) until the reaper
 * has stopped the client (an on-demand capture under way ends and is sent;
 * then lt_client_stop: last send, goodbye, the daemon's STORED), and raises
 * the signal again, which now ends the process as it
 * would have unprofiled. The handler and the reaper meet through a semaphore
 * and a flag, not descriptors: a program that closes or replaces descriptors
 * it does not know neither wakes the reaper nor receives the handler's bytes
 * (PROTOCOL.md, Resuming). If the signal interrupted a thread holding the
 * client's lock the stop cannot finish; the wait then ends after
 * LT__FATAL_WAIT_MS and the daemon records the process as cut off.
 *
 * A handler the program installed before the client connected, or an
 * ignored signal, is left alone; one it installs later replaces on_fatal.
 * TRACY_SIGNALS=0 or lt_client_catch_signals(0) before the start turns this
 * off (the Python extension does: Python code handles these signals). The
 * child of fork() inherits on_fatal but not the reaper: it gets its own when
 * its client connects; until then on_fatal just ends it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "client_internal.h"

#define LT__FATAL_WAIT_MS 5000

/* Every signal whose default action ends the process, but the crash signals
 * (client_crash.c), those that the instruction raising them decides
 * (SIGTRAP, SIGSYS), SIGPIPE and SIGXFSZ (a write's error) and the
 * real-time ones. Under the flight recorder SIGUSR1 is already its dump's
 * (lt__ring_start, earlier in the same start): not the default action, so
 * left alone like any handler. */
static const int fatal_sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
                                 SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGIO, SIGPWR,
                                 SIGSTKFLT};
static int catch_mode = -1;           /* -1 from TRACY_SIGNALS, else 0/1 */
static sem_t req;                     /* handler -> reaper (sem_post is
                                         async-signal-safe) */
static volatile sig_atomic_t done;    /* reaper -> handler(s): stays set */
static volatile sig_atomic_t reaper_pid; /* the process the reaper belongs to */

void lt_client_catch_signals(int on) { catch_mode = on != 0; }

static int wanted(void) {
    if (catch_mode >= 0) return catch_mode;
    const char *v = getenv("TRACY_SIGNALS");
    return !(v && *v && strcmp(v, "0") == 0);
}

static long ms_left(const struct timespec *end) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (end->tv_sec - now.tv_sec) * 1000 + (end->tv_nsec - now.tv_nsec) / 1000000;
}

static void on_fatal(int sig) {
    int saved = errno;
    if (reaper_pid == getpid()) {
        lt__end_signal(sig);
        sem_post(&req);
        struct timespec end, tick = {0, 1000000};
        clock_gettime(CLOCK_MONOTONIC, &end);
        end.tv_sec += LT__FATAL_WAIT_MS / 1000;
        while (!done && ms_left(&end) > 0) nanosleep(&tick, NULL);
    }
    /* the default action is back (SA_RESETHAND), and the signal is not
     * blocked in its handler (SA_NODEFER): this ends the process */
    signal(sig, SIG_DFL);
    raise(sig);
    errno = saved;
}

static void *reaper(void *arg) {
    (void)arg;
    while (sem_wait(&req) < 0 && errno == EINTR) {}
    lt__listen_at_exit(); /* an on-demand capture under way is sent first */
    lt_client_stop();
    done = 1;
    return NULL;
}

/* The reaper of this process (a forked child starts its own). The reaper
 * takes no signal. Returns 0 or -1. */
static int start_reaper(void) {
    done = 0;
    if (sem_init(&req, 0, 0) < 0) return -1;
    pthread_t t;
    if (lt__thread_nosig(&t, reaper, 1) < 0) return -1;
    reaper_pid = getpid();
    return 0;
}

void lt__signals_install(void) {
    if (!wanted() || reaper_pid == getpid() || start_reaper() < 0) return;
    for (size_t i = 0; i < sizeof fatal_sigs / sizeof *fatal_sigs; i++) {
        struct sigaction old, sa;
        if (sigaction(fatal_sigs[i], NULL, &old) < 0) continue;
        if (old.sa_handler == on_fatal) continue; /* a forked child's, inherited */
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal;
        sa.sa_flags = SA_RESETHAND | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(fatal_sigs[i], &sa, NULL);
    }
}
