/* fatal.c -- a fatal signal that Python would miss is delivered again.
 *
 * The tracy package handles SIGTERM, SIGHUP and the other signals that end
 * a process by default in Python (_on_fatal: ship what was recorded, then
 * end by the same signal). A Python handler runs when the
 * main thread next checks for signals, and CPython's blocking calls check
 * after a system call fails with EINTR. A signal that arrives between such a
 * call's last check and the system call itself (multiprocessing's
 * SemLock.acquire: sem_trywait, then sem_wait) sets the handler's flag and
 * interrupts nothing: the call then blocks for ever, with the flag set. With
 * the default action the process would have ended; a Pool worker terminated
 * in that window hung its parent's Pool.terminate().
 *
 * So the C-level handler Python installs for such a signal is wrapped by
 * relay(), which calls it and then wakes a watchdog thread. Until the Python
 * handler has begun (py__fatal_begin), the watchdog sends the signal again to
 * the main thread every KICK_MS: the blocked call then fails with EINTR and
 * Python runs the handler. A program that installs its own handler later
 * replaces the relay, and the watchdog leaves that signal alone.
 *
 * A main thread inside a long C call that never returns to the bytecode
 * loop (sum(range(10**10)), a C library's computation) cannot run the Python
 * handler at all: unprofiled the signal would end the process at once. So
 * after TAKEOVER_KICKS kicks (about 1 s) the watchdog takes over, without
 * the GIL and without touching a Python object: it marks the handler begun
 * (one that starts later returns at once), stops the client in a helper
 * thread (lt_client_stop: every thread's committed events, goodbye, the
 * daemon's STORED; later writes are discarded), waits for that at most
 * STOP_WAIT_MS (the stop blocks when the interrupted thread holds the
 * client's lock: the daemon then records the process as cut off), restores
 * the default action and sends the signal to the process, which ends by it.
 * In python -m tracy's own process this ships the events and dies without
 * what the Python handler does there (finish(urgent=True) asks the daemon
 * to finish the file now): the daemon finishes it once its other clients,
 * if any, have gone, as it does when the program ends normally. */
#include "run.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client_internal.h"

#define KICK_MS 200
#define TAKEOVER_KICKS 5    /* kicks unanswered before the watchdog takes over */
#define STOP_WAIT_MS 3000   /* longest wait for the client's stop then */
#define MAX_SIG 65

static struct sigaction g_prev[MAX_SIG]; /* the handler relay() wraps */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* g_begun vs kicks */
static sem_t g_wake;                  /* relay -> watchdog */
static sem_t g_stopped;               /* stopper -> watchdog */
static volatile sig_atomic_t g_pending; /* the signal to deliver again, or 0 */
static volatile sig_atomic_t g_arrived[MAX_SIG]; /* a real one came (relay) */
static int g_begun;                   /* the Python handler has begun (g_mu) */
static int g_running;                 /* the watchdog thread exists */
static pthread_t g_main;              /* the thread Python runs handlers in */

static void relay(int sig, siginfo_t *info, void *uctx) {
    int saved = errno;
    const struct sigaction *p = &g_prev[sig];
    g_arrived[sig] = 1; /* before Python's handler is tripped */
    if (p->sa_flags & SA_SIGINFO)
        p->sa_sigaction(sig, info, uctx);
    else if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN)
        p->sa_handler(sig);
    if (g_running && !g_pending) {
        g_pending = sig;
        sem_post(&g_wake);
    }
    errno = saved;
}

static int relay_installed(int sig) {
    struct sigaction cur;
    return sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
           cur.sa_sigaction == relay;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

static void *stopper(void *unused) {
    (void)unused;
    lt_client_stop();
    sem_post(&g_stopped);
    return NULL;
}

/* Stops the client, waiting at most STOP_WAIT_MS, then ends the process by
 * `sig` (default action). The watchdog blocks every signal: the kill goes to
 * another thread, or to this one once `sig` is unblocked here. */
static void take_over(int sig) {
    pthread_t t;
    if (lt__thread_nosig(&t, stopper, 1) == 0) {
        struct timespec end;
        clock_gettime(CLOCK_REALTIME, &end);
        end.tv_sec += STOP_WAIT_MS / 1000;
        end.tv_nsec += (STOP_WAIT_MS % 1000) * 1000000L;
        if (end.tv_nsec >= 1000000000L) {
            end.tv_sec++;
            end.tv_nsec -= 1000000000L;
        }
        while (sem_timedwait(&g_stopped, &end) < 0 && errno == EINTR) {}
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    kill(getpid(), sig);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
}

/* Sends `sig` to the main thread until the Python handler has begun or the
 * program replaced the relay; takes over after TAKEOVER_KICKS kicks. */
static void deliver_again(int sig) {
    for (int kicks = 0;; kicks++) {
        sleep_ms(KICK_MS);
        pthread_mutex_lock(&g_mu);
        int go = !g_begun && relay_installed(sig);
        int mine = go && kicks >= TAKEOVER_KICKS;
        if (mine) g_begun = 1; /* a Python handler starting now returns */
        else if (go) pthread_kill(g_main, sig);
        pthread_mutex_unlock(&g_mu);
        if (mine) {
            lt__end_signal(sig);
            take_over(sig);
        }
        if (!go) return;
    }
}

static void *watchdog(void *unused) {
    (void)unused;
    for (;;) {
        while (sem_wait(&g_wake) < 0 && errno == EINTR) {}
        int sig = g_pending;
        if (sig > 0) deliver_again(sig);
        g_pending = 0;
    }
    return NULL;
}

/* The watchdog never takes a signal: they stay for the program's threads. */
static int start_watchdog(void) {
    if (g_running) return 0;
    if (sem_init(&g_wake, 0, 0) < 0 || sem_init(&g_stopped, 0, 0) < 0) return -1;
    pthread_t t;
    if (lt__thread_nosig(&t, watchdog, 1) < 0) return -1;
    g_running = 1;
    return 0;
}

static int fatal_guard(int sig) {
    if (sig <= 0 || sig >= MAX_SIG) return 0;
    struct sigaction cur;
    if (sigaction(sig, NULL, &cur) < 0) return 0;
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == relay) return 1;
    if (!(cur.sa_flags & SA_SIGINFO) &&
        (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN))
        return 0; /* no handler of Python's to wrap */
    g_main = pthread_self();
    if (start_watchdog() < 0) return 0;
    g_prev[sig] = cur;
    struct sigaction r = cur;
    r.sa_flags |= SA_SIGINFO;
    r.sa_sigaction = relay;
    return sigaction(sig, &r, NULL) == 0;
}

static void after_fork_child(void) {
    for (int i = 0; i < MAX_SIG; i++) g_arrived[i] = 0; /* the parent's */
    /* the parent's watchdog did not come along; its semaphore may hold a
     * count; g_mu may have been held by it */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    g_mu = fresh;
    g_running = 0;
    g_pending = 0;
    g_begun = 0;
    for (int sig = 1; sig < MAX_SIG; sig++) {
        if (relay_installed(sig)) {
            g_main = pthread_self();
            start_watchdog();
            return;
        }
    }
}

static int fatal_begin(int sig) {
    /* The Python handler also runs for _thread.interrupt_main(sig), which
     * trips it without a signal: plain Python does nothing then, as the
     * program's action is the default one. Only a signal that came through
     * the relay ends the process. */
    if (sig > 0 && sig < MAX_SIG && relay_installed(sig)) {
        if (!g_arrived[sig]) return -1;
        g_arrived[sig] = 0;
    }
    pthread_mutex_lock(&g_mu);
    int first = !g_begun;
    g_begun = 1;
    pthread_mutex_unlock(&g_mu);
    if (first && sig > 0 && sig < MAX_SIG) {
        lt__end_signal(sig); /* the goodbye names it */
        /* a kick sent just before g_begun was set may still be pending: take
         * it now, before the handler restores the default action */
        sigset_t one, old;
        sigemptyset(&one);
        sigaddset(&one, sig);
        pthread_sigmask(SIG_BLOCK, &one, &old);
        struct timespec zero = {0, 0};
        while (sigtimedwait(&one, NULL, &zero) == sig) {}
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    return first;
}

/* ---- the Python stack of a crash ---------------------------------------- */

/* CPython's own dumper, which faulthandler uses: exported by some builds,
 * hidden in others but named in the symbol table (symtab.c), which is read
 * when the first crash needs it (g_where: where to read it; g_where_ok
 * cleared once read); in a stripped one that hides it, a crash note has no
 * stack. */
typedef const char *(*dump_threads_fn)(int fd, PyInterpreterState *interp,
                                       PyThreadState *current);
static const char g_dump_name[] = "_Py_DumpTracebackThreads";
static dump_threads_fn g_dump;
static py_symtab_where g_where;
static volatile sig_atomic_t g_where_ok;

static dump_threads_fn dumper(void) {
    if (!g_dump && g_where_ok) {
        g_where_ok = 0;
        g_dump = (dump_threads_fn)py__symtab_find(&g_where, "Py_Initialize", g_dump_name);
    }
    return g_dump;
}

/* The stack of every Python thread, the crashing one first named "Current
 * thread", as faulthandler prints it; from the crash handler (client_crash.c):
 * a pipe, no lock, no allocation. A dump longer than the pipe is cut. */
static size_t crash_note(char *buf, size_t cap) {
    int fds[2];
    dump_threads_fn dump = dumper();
    if (!dump || pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0) return 0;
    (void)dump(fds[1], NULL, PyGILState_GetThisThreadState());
    close(fds[1]);
    size_t n = 0;
    ssize_t k;
    while (n < cap && (k = read(fds[0], buf + n, cap - n)) > 0) n += (size_t)k;
    close(fds[0]);
    return n;
}

void py__fatal_init(void) {
    g_dump = (dump_threads_fn)dlsym(RTLD_DEFAULT, g_dump_name);
    if (!g_dump && !g_where_ok)
        g_where_ok = py__symtab_where((const void *)Py_Initialize, &g_where) == 0;
    lt__crash_set_note(crash_note);
}

/* ---- faulthandler enabled first ------------------------------------------ */

/* faulthandler.<name>(*args) (py__call_py: args stolen, NULL for none): 0,
 * or -1 (cleared). */
static int fh_call(const char *name, PyObject *args) {
    PyObject *r = py__call_py("faulthandler", name, args);
    if (!r) {
        PyErr_Clear();
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

/* Whether the interpreter's start enabled faulthandler (-X faulthandler,
 * PYTHONFAULTHANDLER unless -E): faulthandler.enable() with no argument. */
static int fh_by_start(void) {
    PyObject *xo = PySys_GetXOptions(); /* borrowed */
    if (xo && PyDict_GetItemString(xo, "faulthandler")) return 1;
    const char *env = getenv("PYTHONFAULTHANDLER");
    if (!env || !*env) return 0;
    PyObject *flags = PySys_GetObject("flags"); /* borrowed */
    PyObject *ign = flags ? PyObject_GetAttrString(flags, "ignore_environment") : NULL;
    int r = ign && !PyObject_IsTrue(ign);
    Py_XDECREF(ign);
    PyErr_Clear();
    return r;
}

void py__fatal_after_start(void) {
    static int once; /* the process's first start (a fork child keeps its chain) */
    if (once) return;
    once = 1;
    if (!fh_by_start()) return;
    PyObject *on = py__call_py("faulthandler", "is_enabled", NULL);
    /* the stream it writes to, to enable it again the same way */
    PyObject *err = on == Py_True ? PySys_GetObject("stderr") : NULL; /* borrowed */
    PyObject *fd = err && err != Py_None ? PyObject_CallMethod(err, "fileno", NULL) : NULL;
    PyErr_Clear();
    if (fd && fh_call("disable", NULL) == 0) {
        lt__crash_retake();
        if (fh_call("enable", NULL) < 0) (void)fh_call("enable", PyTuple_Pack(1, fd));
    }
    Py_XDECREF(fd);
    Py_XDECREF(on);
}

/* ---- Python-callable ---------------------------------------------------- */

const char py__fatal_begin_doc[] = PyDoc_STR(
"_fatal_begin(signum) -> int\n--\n\n"
"The fatal-signal handler has begun: 1 the first time in this process;\n"
"0 after the watchdog took over (the main thread was stuck in C); -1 when\n"
"no signal arrived (_thread.interrupt_main tripped the handler): nothing\n"
"is to be done, as plain Python does nothing then.");
const char py__fatal_after_fork_doc[] = PyDoc_STR(
"_fatal_after_fork()\n--\n\n"
"In a forked child, before the signals held across fork are unblocked.");

const char py__fatal_install_doc[] = PyDoc_STR(
"_fatal_install(set, signum, handler) -> old\n--\n\n"
"set(signum, handler) (signal.signal, in the main thread), then the relay\n"
"around Python's C-level handler: a signum the main thread misses is sent\n"
"to it again until _fatal_begin(signum). signum is blocked in this thread\n"
"meanwhile: one that came in between would reach Python's handler alone,\n"
"which then takes it for _thread.interrupt_main.");

PyObject *py__fatal_set(PyObject *set, PyObject *num, PyObject *handler) {
    long sig = PyLong_AsLong(num);
    if (sig == -1 && PyErr_Occurred()) return NULL;
    sigset_t one, old;
    sigemptyset(&one);
    if (sig > 0 && sig < MAX_SIG) sigaddset(&one, (int)sig);
    pthread_sigmask(SIG_BLOCK, &one, &old);
    PyObject *prev = PyObject_CallFunctionObjArgs(set, num, handler, NULL);
    if (prev) fatal_guard((int)sig);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return prev;
}

PyObject *py__fatal_install(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *set, *num, *handler;
    if (!PyArg_ParseTuple(args, "OOO", &set, &num, &handler)) return NULL;
    return py__fatal_set(set, num, handler);
}

const char py__fatal_take_doc[] = PyDoc_STR(
"_fatal_take(set, get, SIG_DFL, signums, handler)\n--\n\n"
"_fatal_install(set, signum, handler) for each signum whose action\n"
"get(signum) is SIG_DFL: one call for the dozen signals that end a\n"
"process by default (a Python loop costs some 10K instructions more a\n"
"signal, at every start).");

PyObject *py__fatal_take(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *set, *get, *dfl, *nums, *handler;
    if (!PyArg_ParseTuple(args, "OOOOO", &set, &get, &dfl, &nums, &handler)) return NULL;
    PyObject *seq = PySequence_Fast(nums, "signums must be a sequence");
    if (!seq) return NULL;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *num = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *cur = PyObject_CallFunctionObjArgs(get, num, NULL);
        int is_dfl = cur ? PyObject_RichCompareBool(cur, dfl, Py_EQ) : -1;
        Py_XDECREF(cur);
        PyObject *prev = is_dfl > 0 ? py__fatal_set(set, num, handler) : NULL;
        if (is_dfl < 0 || (is_dfl > 0 && !prev)) {
            Py_DECREF(seq);
            return NULL;
        }
        Py_XDECREF(prev);
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

int py__fatal_begin_c(int sig) {
    return fatal_begin(sig);
}

PyObject *py__fatal_begin(PyObject *self, PyObject *arg) {
    (void)self;
    long sig = PyLong_AsLong(arg);
    if (sig == -1 && PyErr_Occurred()) return NULL;
    return PyLong_FromLong(fatal_begin((int)sig));
}

const char py__end_signal_doc[] = PyDoc_STR(
"_end_signal(signum)\n--\n\n"
"The goodbye names signum as what ends the process, which then dies by it\n"
"(an uncaught KeyboardInterrupt: SIGINT, as the interpreter does).");

PyObject *py__end_signal(PyObject *self, PyObject *arg) {
    (void)self;
    long sig = PyLong_AsLong(arg);
    if (sig == -1 && PyErr_Occurred()) return NULL;
    if (sig <= 0 || sig >= MAX_SIG) {
        PyErr_SetString(PyExc_ValueError, "signal number out of range");
        return NULL;
    }
    lt__end_signal((int)sig);
    Py_RETURN_NONE;
}

PyObject *py__fatal_after_fork(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    after_fork_child();
    Py_RETURN_NONE;
}

/* ---- os.fork without a warning about the profiler's threads ------------- */

/* Threads of this process from /proc/self/stat, or 0. */
static long os_threads(void) {
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f) return 0;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    long v = 0;
    /* after ") ": state, then fields 4..; num_threads is field 20 */
    for (int field = 2; p && field < 20; field++) p = strchr(p + 1, ' ');
    if (p) v = strtol(p + 1, NULL, 10);
    return v;
}

/* warnings.filters (the module's, which catch_warnings may have replaced,
 * else _warnings'), and _warnings._filters_mutated. New references. */
static int warn_filters(PyObject **filters, PyObject **mutated) {
    PyObject *key = PyUnicode_FromString("warnings");
    PyObject *w = key ? PyImport_GetModule(key) : NULL;
    Py_XDECREF(key);
    PyObject *cw = PyImport_ImportModule("_warnings"); /* built in: no Python code */
    *filters = PyObject_GetAttrString(w ? w : cw, "filters");
    *mutated = cw ? PyObject_GetAttrString(cw, "_filters_mutated") : NULL;
    Py_XDECREF(w);
    Py_XDECREF(cw);
    if (*filters && *mutated && PyList_Check(*filters)) return 0;
    Py_CLEAR(*filters);
    Py_CLEAR(*mutated);
    return -1;
}

/* real() with 3.12+'s warning about forking with threads ignored: a filter
 * of its exact text (this pid) first in warnings.filters meanwhile, as
 * warnings.catch_warnings would, without a Python frame. */
static PyObject *quiet_fork(PyObject *real) {
    PyObject *filters, *mutated;
    if (warn_filters(&filters, &mutated) < 0) {
        PyErr_Clear();
        return PyObject_CallObject(real, NULL);
    }
    PyObject *entry = Py_BuildValue(
        "(sNOOi)", "ignore",
        PyUnicode_FromFormat("This process (pid=%d) is multi-threaded, use of fork() may "
                             "lead to deadlocks in the child.", (int)getpid()),
        PyExc_DeprecationWarning, Py_None, 0);
    int in = entry && PyList_Insert(filters, 0, entry) == 0;
    if (in) Py_XDECREF(PyObject_CallObject(mutated, NULL));
    PyErr_Clear();
    PyObject *r = PyObject_CallObject(real, NULL);
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    for (Py_ssize_t i = 0; in && i < PyList_GET_SIZE(filters); i++) {
        if (PyList_GET_ITEM(filters, i) == entry) {
            (void)PySequence_DelItem(filters, i);
            Py_XDECREF(PyObject_CallObject(mutated, NULL));
            break;
        }
    }
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    Py_XDECREF(entry);
    Py_DECREF(filters);
    Py_DECREF(mutated);
    return r;
}

/* self: the real os.fork. A C function adds no Python frame: the warning
 * CPython 3.12+ gives for a fork with threads names the program's line, as
 * unprofiled. Only when the threads besides the caller are all the
 * profiler's (the program, unprofiled, would get no warning) is that
 * warning ignored. */
static PyObject *fork_call(PyObject *real, PyObject *unused) {
    (void)unused;
    long own = (long)lt__g.sender_running + g_running;
    return own > 0 && os_threads() - own == 1 ? quiet_fork(real)
                                              : PyObject_CallObject(real, NULL);
}

static PyMethodDef g_fork_def = {"fork", fork_call, METH_NOARGS,
                                 "Fork a child process. Return 0 to child process and "
                                 "PID of child to parent process."};

const char py__fork_wrapper_doc[] = PyDoc_STR(
"_fork_wrapper(real_fork) -> callable\n--\n\n"
"os.fork for a profiled program (see fatal.c).");

PyObject *py__fork_wrapper(PyObject *self, PyObject *real) {
    (void)self;
    PyObject *mod = PyUnicode_FromString("posix");
    if (!mod) return NULL;
    PyObject *f = PyCFunction_NewEx(&g_fork_def, real, mod);
    Py_DECREF(mod);
    return f;
}
