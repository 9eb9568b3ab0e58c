/* runtime.c -- the process's runtime in C: what a profiled process needs
 * around the recorders for its whole life, which python -m tracy's common
 * path runs without loading a module of Python. The options applied and
 * nested enable() calls; the fatal signals' handler and the signal
 * functions the program sees (fatal.c and unseen.c do the C-level work);
 * the wrappers of os._exit, the execs, the spawns and os.fork, and the
 * at-fork guard; the environment children inherit and the notes of those
 * not profiled; the ends of python -m tracy's run (the late signals, the
 * death by a signal, multiprocessing's helpers).
 *
 * tracy/_runtime.py keeps what only some processes need (decoding the
 * options, filters, a child's start, the flight recorder's hooks) and its
 * names for these (its docs say what each does for Python callers). */
#include "pypath.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The signals whose default action ends the process and that Python leaves
 * at the default: SIGTERM, SIGHUP, Ctrl-\'s SIGQUIT, alarms and timers, the
 * user's. (SIGINT is Python's KeyboardInterrupt; SIGPIPE and SIGXFSZ are
 * ignored by Python; the crash signals are the client's, client_crash.c;
 * SIGTRAP and SIGSYS come from the instruction that raised them.) */
static const int g_fatal[] = {SIGTERM, SIGHUP,  SIGQUIT,   SIGUSR1, SIGUSR2, SIGALRM,
                              SIGVTALRM, SIGPROF, SIGXCPU, SIGIO,   SIGPWR,  SIGSTKFLT};
#define N_FATAL (sizeof g_fatal / sizeof *g_fatal)

static const char *const g_filter_keys[] = {"I", "E", "R", "MI", "ME", "MR"};
#define N_FILTER_KEYS 6

/* This process's recording and what was installed for it. */
static struct {
    int setup;           /* configured */
    int count;           /* nested enable() calls */
    int hooked;          /* the hook is on for them (not while no daemon records) */
    int start_failed;    /* the first connection failed; -1 before it */
    int threads;         /* threading's per-thread hook set */
    int fork_guard;      /* forks hold the fatal signals */
    int signals;         /* install_signals was called */
    long sig_pid;        /* ... in this process */
    PyObject *on_signal; /* what ends recording at a fatal signal, or NULL */
    PyObject *hurry;     /* an interrupt during the finish calls it; NULL: raises */
    PyObject *opts;      /* the options applied */
    PyObject *ours;      /* set: the wrappers installed */
    PyObject *real;      /* dict: os's functions they replaced */
    PyObject *sigfuncs;  /* (_signal.signal, _signal.getsignal, SIG_DFL) */
    PyObject *real_fork; /* os.fork as py__rt_init found it */
    int noted_fork;
    PyObject *on_fatal, *on_late; /* the handlers (made once) */
    PyObject *pkg_dir, *child_dir;
} g_rt = {.start_failed = -1};

/* ---- helpers ------------------------------------------------------------- */

/* sys.modules[name] (borrowed), or NULL (no exception): a dictionary
 * look-up, not PyImport_GetModule, which asks each module's spec whether
 * it is still being imported (an AttributeError raised and dropped inside,
 * some 4K instructions). */
static PyObject *in_sys_modules(const char *name) {
    PyObject *m = PyDict_GetItem(PyImport_GetModuleDict(), py__name(name));
    return m == Py_None ? NULL : m;
}

PyObject *py__module_named(const char *name) {
    PyObject *m = in_sys_modules(name);
    if (m) {
        Py_INCREF(m);
        return m;
    }
    return PyImport_ImportModule(name);
}

PyObject *py__mod_attr(const char *module, const char *name) {
    PyObject *m = py__module_named(module);
    if (!m) return NULL;
    PyObject *v = PyObject_GetAttr(m, py__name(name));
    Py_DECREF(m);
    return v;
}

PyObject *py__call_py(const char *module, const char *name, PyObject *args) {
    PyObject *fn = py__mod_attr(module, name);
    PyObject *r = NULL;
    if (fn && (args || (args = PyTuple_New(0))))
        r = PyObject_Call(fn, args, NULL);
    Py_XDECREF(fn);
    Py_XDECREF(args);
    return r;
}

/* TRACY_FLIGHT in the process's environment: the flight recorder, which
 * dumps on SIGUSR1 (libtrace/client/client_flight.c). */
static int flight_on(void) {
    const char *f = getenv("TRACY_FLIGHT");
    return f && *f && strcmp(f, "0") != 0;
}

/* The fatal signals the profiler handles: g_fatal, but SIGUSR1 under the
 * flight recorder. Fills sigs; returns how many. */
static size_t fatal_signals(int *sigs) {
    size_t n = 0;
    int flight = flight_on();
    for (size_t i = 0; i < N_FATAL; i++)
        if (!(flight && g_fatal[i] == SIGUSR1)) sigs[n++] = g_fatal[i];
    return n;
}

/* The fatal signals as a list of ints (new), or NULL with an exception. */
static PyObject *fatal_list(void) {
    int sigs[N_FATAL];
    size_t n = fatal_signals(sigs);
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; l && i < n; i++) {
        PyObject *v = PyLong_FromLong(sigs[i]);
        if (!v) Py_CLEAR(l);
        else PyList_SET_ITEM(l, (Py_ssize_t)i, v);
    }
    return l;
}

void py__rt_init(void) {
    if (g_rt.noted_fork) return;
    g_rt.noted_fork = 1;
    g_rt.real_fork = py__mod_attr("os", "fork");
    if (!g_rt.real_fork) PyErr_Clear();
}

PyObject *py__loaded(const char *name) {
    PyObject *m = in_sys_modules(name);
    Py_XINCREF(m);
    return m;
}

static PyObject *ours(void) {
    if (!g_rt.ours) g_rt.ours = PySet_New(NULL);
    return g_rt.ours;
}

/* o in the set of wrappers installed: 1 or 0. */
static int is_ours(PyObject *o) {
    PyObject *s = ours();
    int r = s && o ? PySet_Contains(s, o) : 0;
    if (r < 0) {
        PyErr_Clear();
        r = 0;
    }
    return r;
}

PyObject *py__rt_real(const char *name) {
    return g_rt.real ? PyDict_GetItemString(g_rt.real, name) : NULL;
}

/* ---- the package's folders --------------------------------------------- */

PyObject *py__pkg_dir(void) {
    if (!g_rt.pkg_dir) {
        PyObject *file = py__mod_attr("tracy", "__file__");
        PyObject *abs = file ? py__path_abspath(file) : NULL;
        g_rt.pkg_dir = abs ? py__path_dirname(abs) : NULL;
        Py_XDECREF(file);
        Py_XDECREF(abs);
    }
    return g_rt.pkg_dir;
}

PyObject *py__child_dir(void) {
    if (!g_rt.child_dir) {
        PyObject *d = py__pkg_dir(), *c = PyUnicode_FromString("_child");
        if (d && c) g_rt.child_dir = py__path_join(d, c);
        Py_XDECREF(c);
    }
    return g_rt.child_dir;
}

/* ---- options ------------------------------------------------------------ */

PyObject *py__rt_defaults(void) {
    PyObject *mech = py__env_view("TRACY_MECHANISM");
    if (mech && PyUnicode_GET_LENGTH(mech) == 0) Py_CLEAR(mech); /* (`or "auto"`) */
    if (!mech && !PyErr_Occurred()) mech = PyUnicode_FromString("auto");
    if (!mech) return NULL;
    PyObject *d = Py_BuildValue("{sOsOsOsssisi}", "partial", Py_False, "lines", Py_False,
                                "trace_c", Py_False, "label", "", "max_depth", 0,
                                "min_duration", 0);
    for (int i = 0; d && i < N_FILTER_KEYS; i++) {
        PyObject *l = PyList_New(0);
        if (!l || PyDict_SetItemString(d, g_filter_keys[i], l) < 0) Py_CLEAR(d);
        Py_XDECREF(l);
    }
    if (d && PyDict_SetItemString(d, "mechanism", mech) < 0) Py_CLEAR(d);
    Py_DECREF(mech);
    return d;
}

static int is_filter_key(PyObject *k) {
    for (int i = 0; i < N_FILTER_KEYS; i++)
        if (PyUnicode_Check(k) && PyUnicode_CompareWithASCIIString(k, g_filter_keys[i]) == 0)
            return 1;
    return 0;
}

/* k, "=", str(v) (a bool as 0 or 1) appended to the pieces, after the
 * separator when there are some already. */
static int add_part(PyObject *pieces, PyObject *k, PyObject *v, PyObject *eq, PyObject *sep) {
    PyObject *text = PyBool_Check(v) ? PyUnicode_FromString(v == Py_True ? "1" : "0")
                     : PyUnicode_Check(v) ? (Py_INCREF(v), v)
                                          : PyObject_Str(v);
    int r = text && (PyList_GET_SIZE(pieces) == 0 || PyList_Append(pieces, sep) == 0) &&
                    PyList_Append(pieces, k) == 0 && PyList_Append(pieces, eq) == 0 &&
                    PyList_Append(pieces, text) == 0
                ? 0
                : -1;
    Py_XDECREF(text);
    return r;
}

/* encode_opts(o): the options as one environment string, "k=v" parts
 * joined by \x1f, each item of a filter's list a part of its own (child
 * processes decode it: _runtime.decode_opts). A new str, or NULL with an
 * exception. */
static PyObject *encode_opts(PyObject *o) {
    PyObject *pieces = PyList_New(0), *k, *v;
    PyObject *eq = PyUnicode_FromString("="), *sep = PyUnicode_FromString("\x1f");
    Py_ssize_t pos = 0;
    int ok = pieces && eq && sep;
    while (ok && PyDict_Next(o, &pos, &k, &v)) {
        if (!is_filter_key(k)) {
            ok = add_part(pieces, k, v, eq, sep) == 0;
            continue;
        }
        PyObject *it = PyObject_GetIter(v), *x;
        while (it && (x = PyIter_Next(it))) {
            int r = add_part(pieces, k, x, eq, sep);
            Py_DECREF(x);
            if (r < 0) break;
        }
        Py_XDECREF(it);
        ok = !PyErr_Occurred();
    }
    PyObject *empty = ok ? PyUnicode_FromString("") : NULL;
    PyObject *r = empty ? PyUnicode_Join(empty, pieces) : NULL;
    Py_XDECREF(empty);
    Py_XDECREF(eq);
    Py_XDECREF(sep);
    Py_XDECREF(pieces);
    return r;
}

/* make_filter(o): None when no filter is given, else _runtime's decision
 * function (the regular expressions are Python's). New reference. */
static PyObject *make_filter(PyObject *o) {
    int any = 0;
    for (int i = 0; i < N_FILTER_KEYS && !any; i++) {
        PyObject *l = PyDict_GetItemString(o, g_filter_keys[i]);
        any = l && PyObject_IsTrue(l) > 0;
    }
    if (!any) Py_RETURN_NONE;
    return py__call_py("tracy._runtime", "make_filter", PyTuple_Pack(1, o));
}

int py__rt_configure(PyObject *o) {
    if (py__mode() && py__disable_checked() < 0) return -1;
    Py_INCREF(o);
    Py_XSETREF(g_rt.opts, o);
    PyObject *filter = make_filter(o);
    PyObject *skip = filter ? py__pkg_dir() : NULL;
    PyObject *on_thread = skip ? py__fn("_on_thread") : NULL;
    PyObject *kw = on_thread ? PyDict_New() : NULL;
    static const char *const keys[] = {"trace_c", "lines", "label", "max_depth",
                                       "min_duration", "mechanism"};
    int ok = kw != NULL;
    for (size_t i = 0; ok && i < sizeof keys / sizeof *keys; i++) {
        PyObject *v = PyDict_GetItemString(o, keys[i]);
        if (!v) {
            PyErr_SetString(PyExc_KeyError, keys[i]);
            ok = 0;
        } else {
            ok = PyDict_SetItemString(kw, keys[i], v) == 0;
        }
    }
    ok = ok && PyDict_SetItemString(kw, "filter", filter) == 0 &&
         PyDict_SetItemString(kw, "skip_prefix", skip) == 0 &&
         PyDict_SetItemString(kw, "on_thread", on_thread) == 0;
    PyObject *args = ok ? PyTuple_New(0) : NULL;
    PyObject *r = args ? py__call_def("configure", args, kw) : NULL;
    Py_XDECREF(r);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    Py_XDECREF(on_thread);
    Py_XDECREF(filter);
    if (!r) return -1;
    g_rt.setup = 1;
    return 0;
}

/* ensure_setup(): a process that records before anything configured it
 * (a Profiler region in a plain run, a child) takes the options its
 * parent gave it (TRACY_PY_OPTS) or the defaults. */
static int ensure_setup(void) {
    if (g_rt.setup) return 0;
    const char *env = getenv("TRACY_PY_OPTS");
    PyObject *o;
    if (env) {
        PyObject *s = PyUnicode_DecodeFSDefault(env);
        o = s ? py__call_py("tracy._runtime", "decode_opts", PyTuple_Pack(1, s)) : NULL;
        Py_XDECREF(s);
    } else {
        o = py__rt_defaults();
    }
    int r = o ? py__rt_configure(o) : -1;
    Py_XDECREF(o);
    return r < 0 ? -1 : py__rt_install_process_hooks(NULL, 1);
}

/* ---- enabling ------------------------------------------------------------- */

/* Names the threads running now (a thread started later is named when it
 * first records: _on_thread). */
static int name_threads(PyObject *th) {
    if (!th) {
        py__name_thread("MainThread");
        return 0;
    }
    PyObject *all = PyObject_CallMethod(th, "enumerate", NULL);
    PyObject *seq = all ? PySequence_Fast(all, "threading.enumerate()") : NULL;
    int ok = seq != NULL;
    for (Py_ssize_t i = 0; ok && i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *tid = PyObject_GetAttrString(t, "native_id");
        if (!tid && PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            tid = Py_None;
            Py_INCREF(tid);
        }
        PyObject *cur = tid ? PyObject_CallMethod(th, "current_thread", NULL) : NULL;
        PyObject *name = cur && (t == cur || tid != Py_None) ? PyObject_GetAttrString(t, "name")
                                                             : NULL;
        PyObject *r = !name ? NULL
                      : t == cur ? py__call_fn("thread_name", "(O)", name)
                                 : py__call_fn("thread_name", "(OO)", name,
                                                       tid);
        ok = cur && (r || (t != cur && tid == Py_None));
        Py_XDECREF(r);
        Py_XDECREF(name);
        Py_XDECREF(cur);
        Py_XDECREF(tid);
    }
    Py_XDECREF(seq);
    Py_XDECREF(all);
    return ok ? 0 : -1;
}

/* Whether a daemon records: the first enable connects, as the first
 * recorded event would. With no daemon (said once: "running unprofiled"),
 * or outside a capture when listening for one, no hook slows the program,
 * and enable() does not try again each time; a region open when a trace
 * window starts is hooked by the window's enable(). */
static int recording(void) {
    if (g_rt.start_failed < 0) g_rt.start_failed = !py__client_start();
    return !g_rt.start_failed || py__client_active();
}

/* Sets threading's per-thread hook (or clears it: v NULL). */
static void thread_hook_set(PyObject *th, const char *which, PyObject *v) {
    if (PyObject_SetAttrString(th, which, v ? v : Py_None) < 0) PyErr_Clear();
}

int py__rt_enable(void) {
    if (ensure_setup() < 0) return -1;
    g_rt.count++;
    if (g_rt.hooked || !recording()) return 0;
    PyObject *th = py__loaded("threading");
    int next = -1; /* (the mode chosen, when nothing runs before enabling) */
    if (!th) {
        next = py__next_mode();
        if (next != PY_MODE_EVAL && next != PY_MODE_MONITOR) {
            /* a thread started later gets its profile or trace function
             * from threading; the frame-evaluation hook and sys.monitoring
             * need nothing per thread */
            next = -1;
            th = PyImport_ImportModule("threading");
            if (!th) return -1;
        }
    }
    int mode = name_threads(th) < 0 ? -1 : py__enable_checked(next);
    if (mode < 0) {
        Py_XDECREF(th);
        return -1;
    }
    g_rt.hooked = mode != 0;
    if (th && (mode == PY_MODE_TRACE || mode == PY_MODE_PROFILE)) {
        PyObject *hook = py__fn("_thread_hook");
        thread_hook_set(th, mode == PY_MODE_TRACE ? "_trace_hook" : "_profile_hook", hook);
        Py_XDECREF(hook);
        g_rt.threads = 1;
    }
    Py_XDECREF(th);
    return 0;
}

int py__rt_disable(void) {
    if (g_rt.count == 0) return 0;
    g_rt.count--;
    if (g_rt.count != 0 || !g_rt.hooked) return 0;
    g_rt.hooked = 0;
    int r = py__disable_checked(); /* HookError: the hook failed while enabled */
    if (g_rt.threads) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *th = PyImport_ImportModule("threading");
        if (th) {
            thread_hook_set(th, "_trace_hook", NULL);
            thread_hook_set(th, "_profile_hook", NULL);
            Py_DECREF(th);
        }
        PyErr_Clear();
        PyErr_Restore(type, value, tb);
        g_rt.threads = 0;
    }
    return r;
}

/* ---- fatal signals -------------------------------------------------------- */

/* (_signal.signal, _signal.getsignal, _signal.SIG_DFL) as the interpreter
 * defines them (the program sees them through the wrappers): borrowed, or
 * NULL with an exception. */
static PyObject *sigfuncs(void) {
    if (!g_rt.sigfuncs) {
        PyObject *m = py__module_named("_signal");
        PyObject *set = m ? PyObject_GetAttrString(m, "signal") : NULL;
        PyObject *get = set ? PyObject_GetAttrString(m, "getsignal") : NULL;
        PyObject *dfl = get ? PyObject_GetAttrString(m, "SIG_DFL") : NULL;
        if (dfl) g_rt.sigfuncs = PyTuple_Pack(3, set, get, dfl);
        Py_XDECREF(m);
        Py_XDECREF(set);
        Py_XDECREF(get);
        Py_XDECREF(dfl);
    }
    return g_rt.sigfuncs;
}

static PyObject *sig_set(int signum, PyObject *handler) {
    PyObject *f = sigfuncs();
    return f ? PyObject_CallFunction(PyTuple_GET_ITEM(f, 0), "iO", signum, handler) : NULL;
}

static PyObject *sig_get(int signum) {
    PyObject *f = sigfuncs();
    return f ? PyObject_CallFunction(PyTuple_GET_ITEM(f, 1), "i", signum) : NULL;
}

/* What ends recording in this process: python -m tracy's own finish in its
 * process (not in a forked child of it), else stopping the client. Errors
 * are not raised (the process is ending). */
static void run_ending(void) {
    if (g_rt.on_signal && g_rt.sig_pid == (long)getpid()) {
        Py_XDECREF(py__call0(g_rt.on_signal));
    } else {
        (void)py__stop_checked();
    }
    PyErr_Clear();
}

/* A signal of the fatal set where the program left the default action (end
 * the process): ship what was recorded, then end by the same signal, so
 * that the program's parent sees what it would have seen unprofiled. Runs
 * with tracing suspended: no frame or event of the profiler's. */
static PyObject *on_fatal_call(PyObject *self, PyObject *args) {
    (void)self;
    int signum;
    PyObject *frame;
    if (!PyArg_ParseTuple(args, "iO", &signum, &frame)) return NULL;
    if (py__fatal_begin_c(signum) <= 0) {
        /* under way (here, or in the extension's watchdog: fatal.c), or no
         * signal at all: _thread.interrupt_main(signum) does nothing in plain
         * Python when the action is the default one */
        Py_RETURN_NONE;
    }
    py__tracing_enter();
    PyObject *f = sigfuncs();
    PyObject *r = f ? sig_set(signum, PyTuple_GET_ITEM(f, 2)) : NULL;
    if (!r) {
        py__tracing_leave();
        return NULL;
    }
    Py_DECREF(r);
    PyObject *ondemand = py__loaded("tracy._ondemand");
    if (ondemand) { /* a capture under way is sent first */
        Py_XDECREF(PyObject_CallMethod(ondemand, "end_capture", NULL));
        Py_DECREF(ondemand);
    }
    PyErr_Clear();
    run_ending();
    py__tracing_leave();
    kill(getpid(), signum);
    Py_RETURN_NONE;
}

/* An interrupt while python -m tracy finishes: it stops the wait for
 * children (KeyboardInterrupt), later it asks the daemon to finish at once
 * (signals_hurry). */
static PyObject *on_late_call(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    if (!g_rt.hurry) {
        PyErr_SetNone(PyExc_KeyboardInterrupt);
        return NULL;
    }
    if (g_rt.hurry == Py_None) Py_RETURN_NONE;
    return py__call0(g_rt.hurry);
}

static PyMethodDef g_on_fatal_def = {"_on_fatal", on_fatal_call, METH_VARARGS,
                                     "A fatal signal: ship the recording, then end by it."};
static PyMethodDef g_on_late_def = {"_on_late_signal", on_late_call, METH_VARARGS,
                                    "An interrupt while python -m tracy finishes."};

/* The handlers (borrowed; made once), or NULL with an exception. */
static PyObject *on_fatal(void) {
    if (!g_rt.on_fatal) g_rt.on_fatal = py__c_callable(&g_on_fatal_def, NULL, "tracy", NULL);
    return g_rt.on_fatal;
}

static PyObject *on_late(void) {
    if (!g_rt.on_late) g_rt.on_late = py__c_callable(&g_on_late_def, NULL, "tracy", NULL);
    return g_rt.on_late;
}

/* The fatal signals whose handler is ours in this process, into set;
 * returns how many. */
static int fatal_ours(sigset_t *set) {
    int sigs[N_FATAL], n = 0;
    size_t k = fatal_signals(sigs);
    sigemptyset(set);
    for (size_t i = 0; i < k; i++) {
        PyObject *h = sig_get(sigs[i]);
        if (h && h == g_rt.on_fatal) {
            sigaddset(set, sigs[i]);
            n++;
        }
        Py_XDECREF(h);
        PyErr_Clear();
    }
    return n;
}

/* The at-fork guard (see _guard_forks' doc in _runtime.py): the masks
 * before each fork that blocked our signals, restored after it. */
#define HELD_MAX 32
static sigset_t g_held[HELD_MAX];
static int g_nheld;

static PyObject *fork_before(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    sigset_t set;
    if (fatal_ours(&set) && g_nheld < HELD_MAX &&
        pthread_sigmask(SIG_BLOCK, &set, &g_held[g_nheld]) == 0)
        g_nheld++;
    Py_RETURN_NONE;
}

static PyObject *fork_after(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (g_nheld > 0) {
        pthread_sigmask(SIG_SETMASK, &g_held[--g_nheld], NULL);
        /* (as signal.pthread_sigmask: a signal held meanwhile runs now) */
        if (PyErr_CheckSignals() < 0) return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *fork_after_child(PyObject *self, PyObject *unused) {
    PyObject *r = py__fatal_after_fork(NULL, NULL);
    if (!r) return NULL;
    Py_DECREF(r);
    return fork_after(self, unused);
}

static PyMethodDef g_fork_defs[] = {
    {"before", fork_before, METH_NOARGS, "Holds the fatal signals across os.fork."},
    {"after", fork_after, METH_NOARGS, "Restores the mask os.fork's guard changed."},
    {"after_in_child", fork_after_child, METH_NOARGS, "The same in the child."},
};

/* A forked child forgets a signal that arrives before the interpreter has
 * finished its own after-fork work (CPython clears pending Python handlers
 * then). With the default action, SIGTERM would have ended the child
 * anyway; with ours it was lost, and a Pool worker terminated that early
 * waited for a task forever. So our signals are held blocked across
 * os.fork: the kernel keeps one that arrives meanwhile pending, and it is
 * handled once the child unblocks it. (A signal that arrives just before a
 * blocking call is delivered again by the extension: see fatal.c.) */
static int guard_forks(void) {
    if (g_rt.fork_guard) return 0;
    PyObject *reg = py__mod_attr("os", "register_at_fork");
    if (!reg) {
        PyErr_Clear();
        return 0;
    }
    g_rt.fork_guard = 1;
    PyObject *kw = PyDict_New();
    static const char *const names[] = {"before", "after_in_parent", "after_in_child"};
    int ok = kw != NULL;
    for (int i = 0; ok && i < 3; i++) {
        PyObject *f = py__c_callable(&g_fork_defs[i], NULL, "tracy", NULL);
        ok = f && PyDict_SetItemString(kw, names[i], f) == 0;
        Py_XDECREF(f);
    }
    PyObject *args = ok ? PyTuple_New(0) : NULL;
    PyObject *r = args ? PyObject_Call(reg, args, kw) : NULL;
    Py_XDECREF(r);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    Py_DECREF(reg);
    return r ? 0 : -1;
}

/* Our handler is the default action as the program knows it (the process
 * ends by the signal; it only ships the recording first): getsignal says
 * SIG_DFL for it, signal() returns SIG_DFL for it, and setting SIG_DFL
 * back on a fatal signal installs it again. The functions replaced are
 * _signal's, which signal.signal and signal.getsignal call (unseen.c). */
static int hide_ours(void) {
    PyObject *m = py__module_named("_signal");
    PyObject *cur = m ? PyObject_GetAttrString(m, "getsignal") : NULL;
    if (!cur || is_ours(cur)) {
        Py_XDECREF(cur);
        Py_XDECREF(m);
        return cur ? 0 : -1;
    }
    Py_DECREF(cur);
    PyObject *f = sigfuncs(), *h = on_fatal(), *l = fatal_list();
    PyObject *fatal = l ? PySet_New(l) : NULL;
    PyObject *args = f && h && fatal ? PyTuple_Pack(5, PyTuple_GET_ITEM(f, 0),
                                                    PyTuple_GET_ITEM(f, 1), h,
                                                    PyTuple_GET_ITEM(f, 2), fatal)
                                     : NULL;
    PyObject *pair = args ? py__signal_wrappers(NULL, args) : NULL;
    int ok = pair && PySet_Add(ours(), PyTuple_GET_ITEM(pair, 0)) == 0 &&
             PySet_Add(ours(), PyTuple_GET_ITEM(pair, 1)) == 0 &&
             PyObject_SetAttrString(m, "getsignal", PyTuple_GET_ITEM(pair, 0)) == 0 &&
             PyObject_SetAttrString(m, "signal", PyTuple_GET_ITEM(pair, 1)) == 0;
    Py_XDECREF(pair);
    Py_XDECREF(args);
    Py_XDECREF(fatal);
    Py_XDECREF(l);
    Py_DECREF(m);
    return ok ? 0 : -1;
}

/* install_signals(on_signal): our handler only where the action is the
 * default one: a signal the program ignores stays ignored, and a handler
 * the program installs later replaces ours (its handler then decides; exit
 * paths flush). on_signal (borrowed, or NULL) ends the recording then. */
static int install_signals(PyObject *on_signal) {
    g_rt.signals = 1;
    g_rt.sig_pid = (long)getpid();
    Py_XINCREF(on_signal);
    Py_XSETREF(g_rt.on_signal, on_signal);
    PyObject *f = sigfuncs(), *h = on_fatal(), *l = f && h ? fatal_list() : NULL;
    PyObject *args = l ? PyTuple_Pack(5, PyTuple_GET_ITEM(f, 0), PyTuple_GET_ITEM(f, 1),
                                      PyTuple_GET_ITEM(f, 2), l, h)
                       : NULL;
    PyObject *r = args ? py__fatal_take(NULL, args) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(l);
    if (!r) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError) && !PyErr_ExceptionMatches(PyExc_OSError))
            return -1;
        PyErr_Clear(); /* not the main thread */
    }
    Py_XDECREF(r);
    return hide_ours() < 0 ? -1 : guard_forks();
}

/* ---- the os wrappers ----------------------------------------------------- */

/* os and posix, and os's supports_* sets (new references, the sets NULL
 * where os has none): what replacing its functions touches. */
typedef struct {
    PyObject *os, *posix, *sets[4];
} os_mods;

static int os_mods_open(os_mods *m) {
    static const char *const sets[] = {"supports_fd", "supports_dir_fd",
                                       "supports_follow_symlinks", "supports_effective_ids"};
    memset(m, 0, sizeof *m);
    m->os = py__module_named("os");
    m->posix = m->os ? py__module_named("posix") : NULL;
    for (int i = 0; m->posix && i < 4; i++) {
        PyObject *s = PyObject_GetAttr(m->os, py__name(sets[i]));
        if (s && PySet_Check(s)) m->sets[i] = s;
        else Py_XDECREF(s);
        PyErr_Clear();
    }
    return m->posix ? 0 : -1;
}

static void os_mods_close(os_mods *m) {
    Py_CLEAR(m->os);
    Py_CLEAR(m->posix);
    for (int i = 0; i < 4; i++) Py_CLEAR(m->sets[i]);
}

/* os.<name> and posix.<name> (the same function: test_posix calls
 * posix.execve) become ours_fn (stolen), which is in os.supports_fd
 * (os.execve: fexecve) and the other os.supports_* sets where the real
 * one is, as a program checks before it calls (`os.execve in
 * os.supports_fd`). */
static int replace(os_mods *m, const char *name, PyObject *ours_fn) {
    if (!ours_fn) return -1;
    PyObject *key = py__name(name);
    PyObject *real = key ? PyObject_GetAttr(m->os, key) : NULL;
    int ok = real && (g_rt.real || (g_rt.real = PyDict_New()));
    if (ok && !PyDict_GetItem(g_rt.real, key)) ok = PyDict_SetItem(g_rt.real, key, real) == 0;
    PyObject *mods[2] = {m->os, m->posix};
    for (int i = 0; ok && i < 2; i++) {
        PyObject *cur = PyObject_GetAttr(mods[i], key);
        if (!cur) PyErr_Clear();
        if (cur == real) ok = PyObject_SetAttr(mods[i], key, ours_fn) == 0;
        Py_XDECREF(cur);
    }
    ok = ok && PySet_Add(ours(), ours_fn) == 0;
    for (int i = 0; ok && i < 4; i++)
        if (m->sets[i] && PySet_Contains(m->sets[i], real) == 1) (void)PySet_Add(m->sets[i], ours_fn);
    PyErr_Clear();
    Py_XDECREF(real);
    Py_DECREF(ours_fn);
    return ok ? 0 : -1;
}

/* os._exit that first ships what was recorded (forked children). A call
 * os._exit would refuse is left to it. */
static PyObject *exit_call(PyObject *real, PyObject *args, PyObject *kw) {
    if (PyTuple_GET_SIZE(args) == 1 && (!kw || PyDict_GET_SIZE(kw) == 0)) {
        py__tracing_enter();
        run_ending();
        py__tracing_leave();
    }
    return PyObject_Call(real, args, kw);
}

static PyMethodDef g_exit_def = {"_exit", (PyCFunction)(void (*)(void))exit_call,
                                 METH_VARARGS | METH_KEYWORDS,
                                 "Exit to the system with specified status, without normal "
                                 "exit processing."};

/* Replaces os.<name> by wrap(real) when there is one not ours yet. */
static int wrap_os(os_mods *m, const char *name, PyObject *(*wrap)(PyObject *, PyObject *)) {
    PyObject *real = PyObject_GetAttr(m->os, py__name(name));
    if (!real) {
        PyErr_Clear();
        return 0;
    }
    int r = is_ours(real) ? 0 : replace(m, name, wrap(NULL, real));
    Py_DECREF(real);
    return r;
}

static PyObject *exit_wrapper(PyObject *self, PyObject *real) {
    (void)self;
    return py__c_callable(&g_exit_def, real, "posix", real);
}

int py__rt_install_process_hooks(PyObject *on_signal, int at_exit) {
    py__rt_init();
    os_mods m;
    int r = os_mods_open(&m);
    if (r == 0 && (wrap_os(&m, "_exit", exit_wrapper) < 0 ||
                   wrap_os(&m, "execv", py__exec_wrapper) < 0 ||
                   wrap_os(&m, "execve", py__exec_wrapper) < 0 ||
                   wrap_os(&m, "posix_spawn", py__spawn_wrapper) < 0 ||
                   wrap_os(&m, "posix_spawnp", py__spawn_wrapper) < 0))
        r = -1;
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *fork = r == 0 && g_rt.real_fork ? PyObject_GetAttr(m.os, py__name("fork")) : NULL;
    PyErr_Clear();
    if (fork && fork == g_rt.real_fork) r = replace(&m, "fork", py__fork_wrapper(NULL, fork));
    Py_XDECREF(fork);
#endif
    os_mods_close(&m);
    if (r < 0) return -1;
    if (at_exit) {
        PyObject *stop = py__fn("stop");
        int res = stop ? py__atexit_own(stop) : -1;
        Py_XDECREF(stop);
        if (res < 0) return -1;
    }
    if (install_signals(on_signal) < 0) return -1;
    if (flight_on()) {
        PyObject *res = py__call_py("tracy._runtime", "_flight_hooks", NULL);
        if (!res) return -1;
        Py_DECREF(res);
    }
    return 0;
}

/* ---- the ends of python -m tracy's run -------------------------------------- */

/* 1 when h (a handler getsignal returned) is SIG_IGN, SIG_DFL or None. */
static int plain_action(PyObject *h) {
    if (h == Py_None) return 1;
    for (long v = 0; v <= 1; v++) {
        PyObject *n = PyLong_FromLong(v);
        int eq = n ? PyObject_RichCompareBool(h, n, Py_EQ) : -1;
        Py_XDECREF(n);
        if (eq != 0) return 1; /* (an error: left alone) */
    }
    return 0;
}

void py__rt_signals_done(void) {
    int sigs[N_FATAL + 1];
    sigs[0] = SIGINT;
    size_t n = 1 + fatal_signals(sigs + 1);
    PyObject *late = on_late();
    for (size_t i = 0; late && i < n; i++) {
        PyObject *h = sig_get(sigs[i]);
        if (h && !plain_action(h)) Py_XDECREF(sig_set(sigs[i], late));
        Py_XDECREF(h);
        PyErr_Clear();
    }
    PyObject *f = sigfuncs();
    if (f) Py_XDECREF(sig_set(SIGCHLD, PyTuple_GET_ITEM(f, 2)));
    PyErr_Clear();
}

void py__rt_signals_hurry(PyObject *fn) {
    Py_XINCREF(fn);
    Py_XSETREF(g_rt.hurry, fn);
}

void py__rt_signals_quiet(void) {
    py__rt_signals_hurry(Py_None);
    PyObject *h = sig_get(SIGINT);
    if (h && h == g_rt.on_late) {
        PyObject *ign = PyLong_FromLong(1);
        if (ign) Py_XDECREF(sig_set(SIGINT, ign));
        Py_XDECREF(ign);
    }
    Py_XDECREF(h);
    PyErr_Clear();
}

int py__rt_die_by(int signum) {
    PyObject *f = sigfuncs();
    PyObject *r = f ? sig_set(signum, PyTuple_GET_ITEM(f, 2)) : NULL;
    if (!r) return -1;
    Py_DECREF(r);
    kill(getpid(), signum);
    return 0;
}

void py__rt_stop_mp_helpers(void) {
    static const char *const helpers[][2] = {
        {"multiprocessing.forkserver", "_forkserver"},
        {"multiprocessing.resource_tracker", "_resource_tracker"}};
    for (int i = 0; i < 2; i++) {
        PyObject *m = py__loaded(helpers[i][0]);
        PyObject *h = m ? PyObject_GetAttrString(m, helpers[i][1]) : NULL;
        PyObject *stop = h ? PyObject_GetAttrString(h, "_stop") : NULL;
        PyErr_Clear();
        if (stop) {
            PyObject *r = py__call0(stop);
            if (r) Py_DECREF(r);
            else if (PyErr_ExceptionMatches(PyExc_Exception)) PyErr_Clear();
            /* (anything else, a KeyboardInterrupt, is left set: raised) */
        }
        Py_XDECREF(stop);
        Py_XDECREF(h);
        Py_XDECREF(m);
    }
}

/* ---- the children's environment ---------------------------------------------- */

/* os.putenv(name, value) for str value. 0, or -1 with an exception. */
static int putenv_str(const char *name, PyObject *value) {
    PyObject *b = py__fsenc(value);
    if (!b) return -1;
    int r = setenv(name, PyBytes_AS_STRING(b), 1);
    Py_DECREF(b);
    if (r < 0) PyErr_SetFromErrno(PyExc_OSError);
    return r;
}

int py__rt_set_env(const char *name, PyObject *value) {
    if (putenv_str(name, value) < 0) return -1;
    PyObject *seen = py__env_view(name);
    if (seen || PyErr_Occurred()) {
        Py_XDECREF(seen);
        return seen ? 0 : -1;
    }
    const char *h = getenv("TRACY_PY_HIDE");
    size_t n = strlen(name), hn = h ? strlen(h) : 0;
    for (const char *p = h; p && *p;) { /* already named? */
        const char *end = strchr(p, ',');
        size_t k = end ? (size_t)(end - p) : strlen(p);
        if (k == n && memcmp(p, name, n) == 0) return 0;
        p = end ? end + 1 : NULL;
    }
    char *v = PyMem_Malloc(hn + n + 2);
    if (!v) {
        PyErr_NoMemory();
        return -1;
    }
    size_t o = 0; /* the names already there (empty ones dropped), then name */
    for (const char *p = h; p && *p;) {
        const char *end = strchr(p, ',');
        size_t k = end ? (size_t)(end - p) : strlen(p);
        if (k) {
            memcpy(v + o, p, k);
            o += k;
            v[o++] = ',';
        }
        p = end ? end + 1 : NULL;
    }
    memcpy(v + o, name, n + 1);
    int r = setenv("TRACY_PY_HIDE", v, 1);
    PyMem_Free(v);
    if (r < 0) PyErr_SetFromErrno(PyExc_OSError);
    return r;
}

void py__rt_unset_env(const char *name) {
    unsetenv(name);
}

/* This process's notes file in the user's private run folder (a new str),
 * or NULL (no exception) when there is no such folder. */
static PyObject *notes_path(void) {
    PyObject *d = py__call_fn("_rundir", NULL);
    if (!d || d == Py_None) {
        Py_XDECREF(d);
        PyErr_Clear();
        return NULL;
    }
    PyObject *name = PyUnicode_FromFormat("unprofiled-%ld.txt", (long)getpid());
    PyObject *p = name ? py__path_join(d, name) : NULL;
    Py_XDECREF(name);
    Py_DECREF(d);
    if (!p) PyErr_Clear();
    return p;
}

int py__rt_setup_children_env(PyObject *opts, PyObject *program) {
    PyObject *notes = notes_path();
    PyObject *o = notes ? PyDict_Copy(opts) : (Py_INCREF(opts), opts);
    if (o && notes && PyDict_SetItemString(o, "notes", notes) < 0) Py_CLEAR(o);
    Py_XDECREF(notes);
    PyObject *enc = o ? encode_opts(o) : NULL;
    Py_XDECREF(o);
    int ok = enc && py__rt_set_env("TRACY_PY_OPTS", enc) == 0 &&
             py__rt_set_env("TRACY_PY_PROGRAM", program) == 0;
    Py_XDECREF(enc);
    PyObject *child = ok ? py__child_dir() : NULL;
    if (!child) return -1;
    PyObject *old = py__env_view("PYTHONPATH");
    if (!old && PyErr_Occurred()) return -1;
    PyObject *v = old ? PyUnicode_FromFormat("%U:%U", child, old) : (Py_INCREF(child), child);
    Py_XDECREF(old);
    int r = v ? putenv_str("PYTHONPATH", v) : -1;
    Py_XDECREF(v);
    PyObject *res = r == 0 ? py__children(NULL, child) : NULL;
    Py_XDECREF(res);
    return res ? 0 : -1;
}

/* end_children_env(): children are no longer profiled: PYTHONPATH is
 * os.environ's again. */
static int end_children_env(void) {
    PyObject *res = py__children(NULL, Py_None);
    if (!res) return -1;
    Py_DECREF(res);
    PyObject *old = py__env_view("PYTHONPATH");
    if (old) {
        int r = putenv_str("PYTHONPATH", old);
        Py_DECREF(old);
        return r;
    }
    if (PyErr_Occurred()) return -1;
    unsetenv("PYTHONPATH");
    return 0;
}

/* The notes file's bytes (a new bytes object), or NULL (no exception) when
 * there is none of this user's to read; the file is removed. */
static PyObject *read_notes(PyObject *path) {
    PyObject *b = py__fsenc(path);
    if (!b) {
        PyErr_Clear();
        return NULL;
    }
    int fd = open(PyBytes_AS_STRING(b), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != geteuid()) {
        if (fd >= 0) close(fd);
        Py_DECREF(b);
        return NULL;
    }
    PyObject *data = PyBytes_FromStringAndSize(NULL, 0);
    char buf[4096];
    ssize_t k = 0;
    while (data && ((k = read(fd, buf, sizeof buf)) > 0 || (k < 0 && errno == EINTR))) {
        if (k < 0) continue;
        PyObject *more = PyBytes_FromStringAndSize(buf, k);
        PyBytes_ConcatAndDel(&data, more);
    }
    if (k == 0) unlink(PyBytes_AS_STRING(b));
    close(fd);
    Py_DECREF(b);
    PyErr_Clear();
    return data;
}

/* The notes' lines "pid<TAB>why" as (pid, tab, why) tuples, but those of
 * a pid that also wrote "pid<TAB>profiled" (a child noted at its start as
 * not reading tracy's sitecustomize, profiled after all through
 * tracy-isolated.pth: _child/sitecustomize.py). */
static PyObject *notes_parts(PyObject *lines) {
    PyObject *all = PyList_New(0), *done = PySet_New(NULL), *out = NULL;
    for (Py_ssize_t i = 0; all && done && i < PyList_GET_SIZE(lines); i++) {
        PyObject *parts = PyObject_CallMethod(PyList_GET_ITEM(lines, i), "partition", "s", "\t");
        int bad = !parts || PyList_Append(all, parts) < 0;
        if (!bad && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(parts, 2), "profiled") == 0)
            bad = PySet_Add(done, PyTuple_GET_ITEM(parts, 0)) < 0;
        Py_XDECREF(parts);
        if (bad) Py_CLEAR(all);
    }
    out = all && done ? PyList_New(0) : NULL;
    for (Py_ssize_t i = 0; out && i < PyList_GET_SIZE(all); i++) {
        PyObject *parts = PyList_GET_ITEM(all, i);
        int in = PySet_Contains(done, PyTuple_GET_ITEM(parts, 0));
        if (in < 0 || (!in && PyList_Append(out, parts) < 0)) Py_CLEAR(out);
    }
    Py_XDECREF(all);
    Py_XDECREF(done);
    return out;
}

/* One line per reason from the notes' lines "pid<TAB>why". */
static PyObject *notes_lines(PyObject *data) {
    PyObject *text = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data),
                                          "replace");
    PyObject *lines = text ? PyUnicode_Splitlines(text, 0) : NULL;
    PyObject *notes = lines ? notes_parts(lines) : NULL;
    PyObject *by_why = notes ? PyDict_New() : NULL; /* why: [pid, ...], first seen first */
    for (Py_ssize_t i = 0; by_why && i < PyList_GET_SIZE(notes); i++) {
        PyObject *parts = PyList_GET_ITEM(notes, i);
        Py_INCREF(parts);
        PyObject *pids = PyDict_GetItemWithError(by_why, PyTuple_GET_ITEM(parts, 2));
        if (parts && !pids && !PyErr_Occurred() && (pids = PyList_New(0))) {
            if (PyDict_SetItem(by_why, PyTuple_GET_ITEM(parts, 2), pids) < 0) Py_CLEAR(by_why);
            Py_DECREF(pids); /* (the dict holds it) */
        }
        if (!parts || !pids || !by_why || PyList_Append(pids, PyTuple_GET_ITEM(parts, 0)) < 0)
            Py_CLEAR(by_why);
        Py_XDECREF(parts);
    }
    PyObject *out = by_why ? PyList_New(0) : NULL, *why, *pids;
    Py_ssize_t pos = 0;
    while (out && PyDict_Next(by_why, &pos, &why, &pids)) {
        Py_ssize_t n = PyList_GET_SIZE(pids);
        PyObject *head = PyList_GetSlice(pids, 0, 10), *sp = PyUnicode_FromString(" ");
        PyObject *joined = head && sp ? PyUnicode_Join(sp, head) : NULL;
        PyObject *line =
            !joined ? NULL
            : n == 1 ? PyUnicode_FromFormat("a child process not profiled (pid %U): %U", joined, why)
                     : PyUnicode_FromFormat("%zd child processes not profiled (pids %U%s): %U", n,
                                            joined, n > 10 ? " ..." : "", why);
        if (!line || PyList_Append(out, line) < 0) Py_CLEAR(out);
        Py_XDECREF(line);
        Py_XDECREF(joined);
        Py_XDECREF(sp);
        Py_XDECREF(head);
    }
    Py_XDECREF(by_why);
    Py_XDECREF(notes);
    Py_XDECREF(lines);
    Py_XDECREF(text);
    return out;
}

PyObject *py__rt_take_unprofiled(void) {
    PyObject *path = notes_path();
    PyObject *data = path ? read_notes(path) : NULL;
    Py_XDECREF(path);
    if (!data) return PyList_New(0);
    PyObject *out = notes_lines(data);
    Py_DECREF(data);
    return out;
}

/* ---- Python-callable ------------------------------------------------------ */

static PyObject *none_or_null(int r) {
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *m_rt_configure(PyObject *self, PyObject *o) {
    (void)self;
    if (!PyDict_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "configure(opts): a dict");
        return NULL;
    }
    return none_or_null(py__rt_configure(o));
}

static PyObject *m_rt_enable(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return none_or_null(py__rt_enable());
}

static PyObject *m_rt_disable(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return none_or_null(py__rt_disable());
}

static PyObject *m_rt_end_regions(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    g_rt.count = 1;
    return none_or_null(py__rt_disable());
}

static PyObject *m_rt_ensure_setup(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return none_or_null(ensure_setup());
}

static PyObject *m_rt_lines_on(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *v = g_rt.opts ? PyDict_GetItemString(g_rt.opts, "lines") : NULL;
    return PyBool_FromLong(v && PyObject_IsTrue(v) > 0);
}

static PyObject *m_rt_install_process_hooks(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"on_signal", "at_exit", NULL};
    PyObject *on_signal = Py_None;
    int at_exit = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Op", kwlist, &on_signal, &at_exit))
        return NULL;
    return none_or_null(
        py__rt_install_process_hooks(on_signal == Py_None ? NULL : on_signal, at_exit));
}

static PyObject *m_rt_install_signals(PyObject *self, PyObject *on_signal) {
    (void)self;
    py__rt_init();
    return none_or_null(install_signals(on_signal == Py_None ? NULL : on_signal));
}

static PyObject *m_rt_signals_installed(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(g_rt.signals);
}

static PyObject *m_rt_set_env(PyObject *self, PyObject *args) {
    (void)self;
    const char *name;
    PyObject *value;
    if (!PyArg_ParseTuple(args, "sU", &name, &value)) return NULL;
    return none_or_null(py__rt_set_env(name, value));
}

static PyObject *m_rt_unset_env(PyObject *self, PyObject *name) {
    (void)self;
    PyObject *b = py__fsenc(name);
    if (!b) return NULL;
    unsetenv(PyBytes_AS_STRING(b));
    Py_DECREF(b);
    Py_RETURN_NONE;
}

static PyObject *m_rt_setup_children_env(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *opts, *program;
    if (!PyArg_ParseTuple(args, "O!U", &PyDict_Type, &opts, &program)) return NULL;
    return none_or_null(py__rt_setup_children_env(opts, program));
}

static PyObject *m_rt_end_children_env(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return none_or_null(end_children_env());
}

static PyObject *m_rt_take_unprofiled(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return py__rt_take_unprofiled();
}

static PyObject *m_rt_encode_opts(PyObject *self, PyObject *o) {
    (void)self;
    if (!PyDict_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "encode_opts(o): a dict");
        return NULL;
    }
    return encode_opts(o);
}

static PyObject *m_rt_defaults(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return py__rt_defaults();
}

static PyObject *m_rt_signals_done(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    py__rt_signals_done();
    Py_RETURN_NONE;
}

static PyObject *m_rt_signals_hurry(PyObject *self, PyObject *fn) {
    (void)self;
    py__rt_signals_hurry(fn);
    Py_RETURN_NONE;
}

static PyObject *m_rt_signals_quiet(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    py__rt_signals_quiet();
    Py_RETURN_NONE;
}

static PyObject *m_rt_die_by(PyObject *self, PyObject *arg) {
    (void)self;
    int sig = PyLong_AsLong(arg);
    if (sig == -1 && PyErr_Occurred()) return NULL;
    return none_or_null(py__rt_die_by(sig));
}

static PyObject *m_rt_stop_mp_helpers(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    py__rt_stop_mp_helpers();
    return PyErr_Occurred() ? NULL : (Py_INCREF(Py_None), Py_None);
}

static PyObject *m_rt_sig(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *f = sigfuncs();
    Py_XINCREF(f);
    return f;
}

static PyObject *m_rt_on_fatal(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *h = on_fatal();
    Py_XINCREF(h);
    return h;
}

static PyObject *m_rt_real(PyObject *self, PyObject *name) {
    (void)self;
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (!s) return NULL;
    PyObject *r = py__rt_real(s);
    if (!r) r = Py_None;
    Py_INCREF(r);
    return r;
}

static PyObject *m_rt_init(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    py__rt_init();
    Py_RETURN_NONE;
}

static PyObject *m_pkg_dir(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *d = py__pkg_dir();
    Py_XINCREF(d);
    return d;
}

static PyObject *m_env_get(PyObject *self, PyObject *name) {
    (void)self;
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (!s) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "_env_get(name): a str");
        return NULL;
    }
    PyObject *v = py__env_view(s);
    if (!v && !PyErr_Occurred()) Py_RETURN_NONE;
    return v;
}

#define RT_FN(name, fn, flags, doc) {name, (PyCFunction)(void (*)(void))fn, flags, PyDoc_STR(doc)}
PyMethodDef py__runtime_methods[] = {
    RT_FN("_rt_configure", m_rt_configure, METH_O,
          "_rt_configure(opts)\n--\n\nApplies the options (a dict as _rt_defaults())."),
    RT_FN("_rt_enable", m_rt_enable, METH_NOARGS,
          "_rt_enable()\n--\n\nA region begins: recording starts with the first one."),
    RT_FN("_rt_disable", m_rt_disable, METH_NOARGS,
          "_rt_disable()\n--\n\nA region ends: recording stops with the last one."),
    RT_FN("_rt_end_regions", m_rt_end_regions, METH_NOARGS,
          "_rt_end_regions()\n--\n\nEnds every region at once."),
    RT_FN("_rt_ensure_setup", m_rt_ensure_setup, METH_NOARGS,
          "_rt_ensure_setup()\n--\n\nConfigured from TRACY_PY_OPTS when nothing did it."),
    RT_FN("_rt_lines_on", m_rt_lines_on, METH_NOARGS,
          "_rt_lines_on() -> bool\n--\n\nConfigured to record lines (-l)."),
    RT_FN("_rt_install_process_hooks", m_rt_install_process_hooks,
          METH_VARARGS | METH_KEYWORDS,
          "_rt_install_process_hooks(on_signal=None, at_exit=True)\n--\n\n"
          "The os wrappers and the fatal signals' handler (see _runtime.py)."),
    RT_FN("_rt_install_signals", m_rt_install_signals, METH_O,
          "_rt_install_signals(on_signal)\n--\n\nThe fatal signals' handler."),
    RT_FN("_rt_signals_installed", m_rt_signals_installed, METH_NOARGS,
          "_rt_signals_installed() -> bool\n--\n\nWhether _rt_install_signals was called."),
    RT_FN("_rt_set_env", m_rt_set_env, METH_VARARGS,
          "_rt_set_env(name, value)\n--\n\nIn the process's environment, not os.environ."),
    RT_FN("_rt_unset_env", m_rt_unset_env, METH_O,
          "_rt_unset_env(name)\n--\n\nOff the process's environment, not os.environ."),
    RT_FN("_rt_setup_children_env", m_rt_setup_children_env, METH_VARARGS,
          "_rt_setup_children_env(opts, program)\n--\n\nChild processes are profiled."),
    RT_FN("_rt_end_children_env", m_rt_end_children_env, METH_NOARGS,
          "_rt_end_children_env()\n--\n\nChild processes are no longer profiled."),
    RT_FN("_rt_take_unprofiled", m_rt_take_unprofiled, METH_NOARGS,
          "_rt_take_unprofiled() -> list\n--\n\nThe notes of children not profiled."),
    RT_FN("_rt_encode_opts", m_rt_encode_opts, METH_O,
          "_rt_encode_opts(opts) -> str\n--\n\nThe options as TRACY_PY_OPTS holds them."),
    RT_FN("_rt_defaults", m_rt_defaults, METH_NOARGS,
          "_rt_defaults() -> dict\n--\n\nThe default options."),
    RT_FN("_rt_signals_done", m_rt_signals_done, METH_NOARGS,
          "_rt_signals_done()\n--\n\nThe program ended: interrupts stop the finish."),
    RT_FN("_rt_signals_hurry", m_rt_signals_hurry, METH_O,
          "_rt_signals_hurry(fn)\n--\n\nAn interrupt now calls fn."),
    RT_FN("_rt_signals_quiet", m_rt_signals_quiet, METH_NOARGS,
          "_rt_signals_quiet()\n--\n\nEverything is written: interrupts are ignored."),
    RT_FN("_rt_die_by", m_rt_die_by, METH_O,
          "_rt_die_by(signum)\n--\n\nEnds this process by signum, default action."),
    RT_FN("_rt_stop_mp_helpers", m_rt_stop_mp_helpers, METH_NOARGS,
          "_rt_stop_mp_helpers()\n--\n\nmultiprocessing's helper processes stopped."),
    RT_FN("_rt_sig", m_rt_sig, METH_NOARGS,
          "_rt_sig() -> (signal, getsignal, SIG_DFL)\n--\n\n_signal's own functions."),
    RT_FN("_rt_on_fatal", m_rt_on_fatal, METH_NOARGS,
          "_rt_on_fatal() -> handler\n--\n\nThe fatal signals' handler."),
    RT_FN("_rt_real", m_rt_real, METH_O,
          "_rt_real(name) -> function or None\n--\n\nos's function a wrapper replaced."),
    RT_FN("_rt_init", m_rt_init, METH_NOARGS,
          "_rt_init()\n--\n\nNotes os.fork as it is now (the one to wrap)."),
    RT_FN("_pkg_dir", m_pkg_dir, METH_NOARGS,
          "_pkg_dir() -> str\n--\n\nThe tracy package's folder."),
    RT_FN("_env_get", m_env_get, METH_O,
          "_env_get(name) -> str or None\n--\n\nos.environ.get(name), without its KeyError."),
    {NULL, NULL, 0, NULL}};
