/* client_crash.c -- a process that a fatal signal (SIGSEGV, SIGBUS, SIGILL,
 * SIGFPE, SIGABRT) ends first ships every event it recorded, says that it
 * crashed, and then dies by the same signal as it would have unprofiled.
 *
 * When the client connects, each of the five signals gets on_crash()
 * (SA_SIGINFO | SA_ONSTACK: a thread with a buffer has an alternate signal
 * stack, so that a stack overflow reaches the handler too); the action it
 * replaces (the default, an ignored signal, faulthandler's or a C
 * extension's handler installed earlier) is kept. The handler, on the
 * crashing thread, takes no lock and allocates nothing:
 *   1. it notes the signal, the thread and the time, and the note of the
 *      runtime (lt__crash_set_note: the Python stack, as faulthandler
 *      prints it; a fault while it is read only cuts it), into static
 *      storage;
 *   2. the sender thread, which looks at the note at every wake-up (at
 *      most LT__SEND_PERIOD_NS later), does its last round with the
 *      note as a MESSAGE record of the crashing thread, then BYE naming
 *      the signal (protocol 1.2: the daemon ends the process as "crashed"),
 *      and sets `done`; the handler waits for that at most
 *      LT__CRASH_WAIT_MS (1 ms sleeps). When the crashing thread itself
 *      holds the client's lock the round cannot happen: the handler does
 *      not wait, and the daemon records the process as lost;
 *   3. it puts the kept action back and delivers the signal to it as the
 *      kernel did: a fault (si_code > 0) happens again when the handler
 *      returns, now to the kept action; a signal that was sent (kill,
 *      raise, abort: si_code <= 0) is queued again to this thread with
 *      its own siginfo (rt_tgsigqueueinfo), blocked until the handler
 *      returns. So the process ends by the same signal with the same core
 *      dump setting, and faulthandler or an extension's handler runs as
 *      it would have.
 * Only the socket's owner, the sender thread, writes to it. In flight
 * mode (no socket) the last round adds the note to the kept events and
 * writes them as a dump of a crashed process (client_flight.c).
 *
 * TRACY_SIGNALS=0 leaves the five signals alone. A handler the program
 * installs later replaces on_crash. The child of fork() inherits on_crash
 * and the kept actions (and whatever the program installed over on_crash
 * since); until its own client connects, on_crash only delivers the signal
 * to them, and then the child keeps that chain as it is. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "client_internal.h"

#define LT__CRASH_WAIT_MS 5000
#define LT__ALTSTACK (64u << 10)
#define LT__NOTE_MAX (32u << 10)

static const int crash_sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define N_CRASH ((int)(sizeof crash_sigs / sizeof *crash_sigs))

static struct sigaction kept[N_CRASH];  /* the actions on_crash replaced */
static volatile sig_atomic_t owner_pid;  /* the process whose client waits */
static int crashing;                     /* first crash of the process wins */
static volatile sig_atomic_t crash_sig;  /* the signal, once noted */
static volatile sig_atomic_t done;       /* the sender said goodbye */
static uint32_t crash_thread;            /* thread index, 0: no buffer */
static uint64_t crash_ts, crash_last;    /* the crash time, the thread's last */
static char note[LT__NOTE_MAX];
static size_t note_len;
static lt__crash_note_fn note_fn;
static sigjmp_buf note_jmp;              /* a fault while the note is read */
static volatile sig_atomic_t note_tid;   /* the thread reading it, or 0 */

void lt__crash_set_note(lt__crash_note_fn fn) { note_fn = fn; }

static int slot(int sig) {
    for (int i = 0; i < N_CRASH; i++)
        if (crash_sigs[i] == sig) return i;
    return -1;
}

static void append(const char *s) {
    size_t n = strlen(s);
    if (n > sizeof note - 1 - note_len) n = sizeof note - 1 - note_len;
    memcpy(note + note_len, s, n);
    note_len += n;
}

/* The header line of the note, with only async-signal-safe work. */
static void note_header(int sig) {
    static const char *names[] = {"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT"};
    char num[12], *p = num + sizeof num;
    *--p = 0;
    for (unsigned v = (unsigned)sig; v || p == num + sizeof num - 1; v /= 10)
        *--p = (char)('0' + v % 10);
    note_len = 0;
    append("tracy: crashed by ");
    append(names[slot(sig)]);
    append(" (signal ");
    append(p);
    append(")");
}

/* Whether the calling thread holds the client's lock (glibc records the
 * owner's tid): the sender cannot make its last round then. */
static int holding_lock(void) {
#if defined(__GLIBC__)
    return __atomic_load_n(&lt__g.mu.__data.__owner, __ATOMIC_RELAXED) == gettid();
#else
    return 0;
#endif
}

static void wait_done(void) {
    struct timespec tick = {0, 1000000};
    for (int ms = 0; !done && ms < LT__CRASH_WAIT_MS; ms++) nanosleep(&tick, NULL);
}

/* The runtime's account (note_fn) after the header. It reads the state of
 * a crashed program, which may be corrupt: a fault while it runs (the crash
 * signals are unblocked meanwhile) comes back here, and the note says so
 * instead of the process dying unshipped. */
static void note_runtime(void) {
    sigset_t crash_set, old;
    sigemptyset(&crash_set);
    for (int i = 0; i < N_CRASH; i++) sigaddset(&crash_set, crash_sigs[i]);
    sigprocmask(SIG_BLOCK, NULL, &old);
    append("\n");
    size_t base = note_len;
    if (sigsetjmp(note_jmp, 1) == 0) { /* the mask is restored on the jump */
        note_tid = (sig_atomic_t)gettid();
        sigprocmask(SIG_UNBLOCK, &crash_set, NULL);
        note_len += note_fn(note + base, sizeof note - 1 - base);
        sigprocmask(SIG_SETMASK, &old, NULL);
    } else {
        note_len = base;
        append("(the runtime's account of the crash could not be read)\n");
    }
    note_tid = 0;
}

/* Step 1 and 2 (see the top): the first crashing thread of a recording
 * process notes the crash and waits for the sender; a thread that crashes
 * meanwhile waits too. */
static void ship(int sig) {
    if (owner_pid != getpid() ||
        __atomic_load_n(&lt__g.state, __ATOMIC_ACQUIRE) != LT__ACTIVE)
        return;
    if (__atomic_exchange_n(&crashing, 1, __ATOMIC_ACQ_REL)) {
        wait_done();
        return;
    }
    lt__tbuf *t = lt__tls;
    crash_thread = t ? t->thread : 0;
    crash_last = t ? t->last_ts : 0;
    crash_ts = lt__now();
    note_header(sig);
    if (note_fn) note_runtime();
    __atomic_store_n(&crash_sig, sig, __ATOMIC_RELEASE);
    if (!holding_lock()) wait_done();
}

static void on_crash(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    int saved = errno, i = slot(sig);
    if (note_tid && note_tid == (sig_atomic_t)gettid()) siglongjmp(note_jmp, 1);
    if (i < 0) return;
    ship(sig);
    sigaction(sig, &kept[i], NULL);
    if (si->si_code <= 0) /* sent, not a fault: send it again, as it came */
        syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sig, si);
    errno = saved;
}

static int wanted(void) {
    const char *v = getenv("TRACY_SIGNALS");
    return !(v && *v && strcmp(v, "0") == 0);
}

/* on_crash for crash_sigs[i], the action it replaces kept; `again`: not
 * over on_crash itself. */
static void take(int i, int again) {
    struct sigaction old, sa;
    if (sigaction(crash_sigs[i], NULL, &old) < 0) return;
    if (again && (old.sa_flags & SA_SIGINFO) && old.sa_sigaction == on_crash) return;
    kept[i] = old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(crash_sigs[i], &sa, NULL);
}

void lt__crash_install(void) {
    if (!wanted() || owner_pid == getpid()) return;
    done = 0;
    crashing = 0;
    crash_sig = 0;
    /* A forked child of a process that installed them inherits the
     * parent's actions and kept[] as they are: on_crash, or a handler the
     * program installed over it since (faulthandler's), which may chain to
     * on_crash. Installing on_crash over that one would make it the kept
     * action, and a cycle: faulthandler.disable() puts on_crash back, whose
     * kept action is then the disabled faulthandler's, which returns and so
     * swallows a raised SIGSEGV (3.13's test_concurrent_futures, a fork
     * pool's worker). The child keeps the parent's chain. */
    if (owner_pid != 0) {
        owner_pid = getpid();
        return;
    }
    for (int i = 0; i < N_CRASH; i++) take(i, 0);
    owner_pid = getpid();
}

void lt__crash_retake(void) {
    if (!wanted() || owner_pid != getpid()) return;
    for (int i = 0; i < N_CRASH; i++) take(i, 1);
}

unsigned lt__crash_signal(void) {
    return (unsigned)__atomic_load_n(&crash_sig, __ATOMIC_ACQUIRE);
}

size_t lt__crash_note(uint32_t *thread, uint64_t *dt, const char **text) {
    *thread = crash_thread;
    *dt = crash_ts > crash_last ? crash_ts - crash_last : 0;
    *text = note;
    return note_len;
}

void lt__crash_done(void) { done = 1; }

/* ---- alternate signal stacks ------------------------------------------- */

static __thread void *altstack;

void lt__altstack_init(void) {
    stack_t cur;
    if (owner_pid != getpid() || altstack || sigaltstack(NULL, &cur) < 0 ||
        !(cur.ss_flags & SS_DISABLE))
        return; /* the thread has one (faulthandler's, the program's) */
    void *p = mmap(NULL, LT__ALTSTACK, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) return;
    stack_t ss = {.ss_sp = p, .ss_size = LT__ALTSTACK, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) < 0) {
        munmap(p, LT__ALTSTACK);
        return;
    }
    altstack = p;
}

void lt__altstack_done(void) {
    stack_t cur;
    if (!altstack || sigaltstack(NULL, &cur) < 0 || cur.ss_sp != altstack ||
        (cur.ss_flags & SS_ONSTACK))
        return;
    stack_t off = {.ss_flags = SS_DISABLE};
    if (sigaltstack(&off, NULL) == 0) munmap(altstack, LT__ALTSTACK);
    altstack = NULL;
}
