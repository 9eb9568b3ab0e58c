/* unseen.c -- what the profiler does inside the program's window, done in C.
 *
 * A traced program's own tools (coverage, sys.settrace/setprofile users,
 * sys.monitoring tools) must see what they see in plain Python. A Python
 * function of the tracy package that runs while the program runs (an exec
 * or _exit wrapper, a thread's start, a signal handler, an at-fork hook)
 * would be a frame they see: a row for tracy/__init__.py in coverage's
 * report, 'call' events a tracer never gets unprofiled. So those are C
 * callables here, and the few that must stay Python (what ends the
 * recording at a fatal signal or at os._exit: python -m tracy's finish) run
 * through hidden(), with the thread's tracing suspended as CPython does
 * for a tracer's own code: no trace, profile or sys.monitoring event.
 *
 * The C callables are named as what they replace (execv, fork_exec,
 * signal, ...) and live for the rest of the process. */
#include "run.h"

#include <string.h>
#include <unistd.h>

/* A C callable of `def` with self `self`, its __module__ `module`. When
 * `like`, the builtin it stands for, is a C function of the same name, def
 * takes its internal doc: __doc__ and __text_signature__ (what
 * inspect.signature reads) are then the builtin's, as in plain Python. */
PyObject *py__c_callable(PyMethodDef *def, PyObject *self, const char *module, PyObject *like) {
    if (like && PyCFunction_Check(like)) {
        const PyMethodDef *m = ((PyCFunctionObject *)like)->m_ml;
        if (m && m->ml_doc && strcmp(m->ml_name, def->ml_name) == 0) def->ml_doc = m->ml_doc;
    }
    PyObject *mod = PyUnicode_FromString(module);
    if (!mod) return NULL;
    PyObject *f = PyCFunction_NewEx(def, self, mod);
    Py_DECREF(mod);
    return f;
}

/* ---- tracing suspended ------------------------------------------------- */

static void tracing_enter(PyThreadState *ts) {
#if PY_VERSION_HEX >= 0x030B0000
    PyThreadState_EnterTracing(ts);
#else
    ts->tracing++; /* call_trace() returns at once while set */
#endif
}

static void tracing_leave(PyThreadState *ts) {
#if PY_VERSION_HEX >= 0x030B0000
    PyThreadState_LeaveTracing(ts);
#else
    ts->tracing--;
#endif
}

void py__tracing_enter(void) {
    tracing_enter(PyThreadState_Get());
}

void py__tracing_leave(void) {
    tracing_leave(PyThreadState_Get());
}

/* self: the Python callable run unseen. */
static PyObject *hidden_call(PyObject *fn, PyObject *args, PyObject *kw) {
    PyThreadState *ts = PyThreadState_Get();
    tracing_enter(ts);
    PyObject *r = PyObject_Call(fn, args, kw);
    tracing_leave(ts);
    return r;
}

static PyMethodDef g_hidden_defs[] = {
    {"_exit", (PyCFunction)(void (*)(void))hidden_call, METH_VARARGS | METH_KEYWORDS,
     "Exit to the system with specified status, without normal exit processing."},
    {"hidden", (PyCFunction)(void (*)(void))hidden_call, METH_VARARGS | METH_KEYWORDS,
     "The profiler's own work (tracy._tracy._hidden)."},
};

const char py__hidden_doc[] = PyDoc_STR(
"_hidden(fn, name='hidden') -> callable\n--\n\n"
"fn as a C callable that runs it with this thread's tracing suspended: no\n"
"trace, profile or sys.monitoring event of fn or of what it calls. Only\n"
"for the profiler's own work (fn must not run the program's code).\n"
"name: '_exit' (named as os._exit, module posix) or 'hidden'.");

PyObject *py__hidden(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *fn;
    const char *name = "hidden";
    if (!PyArg_ParseTuple(args, "O|s", &fn, &name)) return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "_hidden(fn): fn must be callable");
        return NULL;
    }
    int ex = strcmp(name, "_exit") == 0;
    PyObject *posix = ex ? PyImport_ImportModule("posix") : NULL;
    PyObject *real = posix ? PyObject_GetAttrString(posix, "_exit") : NULL;
    Py_XDECREF(posix);
    PyErr_Clear();
    PyObject *r = py__c_callable(&g_hidden_defs[ex ? 0 : 1], fn, ex ? "posix" : "tracy", real);
    Py_XDECREF(real);
    return r;
}

/* ---- exec ------------------------------------------------------------- */

/* self: the real os.execv or os.execve. Ships what was recorded and says
 * EXEC first; should the exec fail, recording goes on (EXEC_FAILED). The
 * new program gets the environment of a profiled child (childenv.c). */
static PyObject *exec_call(PyObject *real, PyObject *args, PyObject *kw, int ve) {
    py__exec_prepare();
    PyObject *r = ve ? py__execve_env(real, args, kw) : py__execv_env(real, args, kw);
    if (!r) py__exec_failed();
    return r;
}

static PyObject *execv_call(PyObject *real, PyObject *args, PyObject *kw) {
    return exec_call(real, args, kw, 0);
}

static PyObject *execve_call(PyObject *real, PyObject *args, PyObject *kw) {
    return exec_call(real, args, kw, 1);
}

static PyMethodDef g_exec_defs[] = {
    {"execv", (PyCFunction)(void (*)(void))execv_call, METH_VARARGS | METH_KEYWORDS,
     "Execute an executable path with arguments, replacing current process."},
    {"execve", (PyCFunction)(void (*)(void))execve_call, METH_VARARGS | METH_KEYWORDS,
     "Execute an executable path with arguments, replacing current process."},
};

const char py__exec_wrapper_doc[] = PyDoc_STR(
"_exec_wrapper(real) -> callable\n--\n\n"
"os.execv or os.execve (every os.exec* goes through one of them) that first\n"
"ships what this process recorded and says an exec is coming (PROTOCOL.md,\n"
"exec); should the exec fail, recording goes on.");

PyObject *py__wrapper_named(PyMethodDef *defs, size_t n, PyObject *real) {
    PyObject *name = PyObject_GetAttrString(real, "__name__");
    if (!name) return NULL;
    size_t at = 0;
    for (size_t i = 1; i < n; i++)
        if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, defs[i].ml_name) == 0)
            at = i;
    Py_DECREF(name);
    return py__c_callable(&defs[at], real, "posix", real);
}

PyObject *py__exec_wrapper(PyObject *self, PyObject *real) {
    (void)self;
    return py__wrapper_named(g_exec_defs, sizeof g_exec_defs / sizeof *g_exec_defs, real);
}

/* ---- fork_exec with a preexec_fn ---------------------------------------- */

/* self: the program's preexec_fn, run in the child between fork and exec.
 * What it records is shipped before the exec _posixsubprocess then does
 * in C (EXEC: the child is recorded as ended by exec, and the new program
 * joins with its pid); when it raises, the child exits without exec: its
 * recording ends clean (goodbye) first. */
static PyObject *preexec_call(PyObject *fn, PyObject *unused) {
    (void)unused;
    PyObject *r = PyObject_CallObject(fn, NULL);
    if (r) {
        py__exec_prepare();
    } else {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        py__stop();
        PyErr_Clear();
        PyErr_Restore(type, value, tb);
    }
    return r;
}

static PyMethodDef g_preexec_def = {"preexec_fn", preexec_call, METH_NOARGS,
                                    "The program's preexec_fn, then the exec announced."};

/* real(*args, **kw) with the program's preexec_fn (the only callable
 * argument), if any, wrapped. */
static PyObject *call_preexec_wrapped(PyObject *real, PyObject *args, PyObject *kw) {
    Py_ssize_t n = PyTuple_GET_SIZE(args), at = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(args, i);
        if (a != Py_None && !PyType_Check(a) && PyCallable_Check(a)) {
            at = i;
            break;
        }
    }
    if (at < 0) return PyObject_Call(real, args, kw);
    PyObject *fn = PyCFunction_NewEx(&g_preexec_def, PyTuple_GET_ITEM(args, at), NULL);
    PyObject *copy = fn ? py__tuple_with(args, at, fn) : NULL;
    if (!copy) return NULL;
    PyObject *r = PyObject_Call(real, copy, kw);
    Py_DECREF(copy);
    return r;
}

/* self: the real _posixsubprocess.fork_exec. Its arguments differ from
 * version to version; in all, the program's argv is the first, the
 * executables the second, the environment list (None: inherited) the
 * sixth (childenv.c). */
static PyObject *fork_exec_call(PyObject *real, PyObject *args, PyObject *kw) {
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 6) return PyObject_Call(real, args, kw);
    PyObject *exes = PyTuple_GET_ITEM(args, 1);
    PyObject *env = py__child_env_list(PyTuple_GET_ITEM(args, 5), exes);
    PyObject *copy = env ? py__tuple_with(args, 5, env) : (Py_INCREF(args), args);
    if (!copy) return NULL;
    PyObject *r = call_preexec_wrapped(real, copy, kw);
    Py_DECREF(copy);
    if (r && PyLong_Check(r)) { /* (no exception pending: those below are cleared) */
        PyObject *exe = PySequence_Check(exes) && PySequence_Size(exes) > 0
                            ? PySequence_GetItem(exes, 0)
                            : NULL;
        PyErr_Clear();
        if (exe) py__note_unread(exe, PyTuple_GET_ITEM(args, 0), PyLong_AsLong(r));
        Py_XDECREF(exe);
    }
    return r;
}

static PyMethodDef g_fork_exec_def = {
    "fork_exec", (PyCFunction)(void (*)(void))fork_exec_call, METH_VARARGS | METH_KEYWORDS,
    "Spawn a fresh new child process (as _posixsubprocess.fork_exec; the\n"
    "child's preexec_fn is recorded and shipped before its exec)."};

static int g_fork_exec_wrapped;

/* Replaces real (module's attribute name, when it is `real`) by `ours`. */
static void replace_in(const char *module, const char *name, PyObject *real, PyObject *ours) {
    PyObject *key = PyUnicode_FromString(module);
    PyObject *m = key ? PyImport_GetModule(key) : NULL;
    PyObject *cur = m ? PyObject_GetAttrString(m, name) : NULL;
    if (cur == real && PyObject_SetAttrString(m, name, ours) < 0) PyErr_Clear();
    Py_XDECREF(cur);
    Py_XDECREF(m);
    Py_XDECREF(key);
    PyErr_Clear();
}

/* The wrapper is put in place when subprocess is first used: the first
 * sight of its Popen._execute_child, before that function reads fork_exec
 * (3.11+ bind it at import as subprocess._fork_exec; 3.8-3.10 read the
 * module's attribute). _posixsubprocess is then loaded already, by
 * subprocess: a run that never starts a subprocess loads nothing for this.
 * A program that calls _posixsubprocess.fork_exec itself, with a
 * preexec_fn, before any subprocess is started, goes unwrapped. */
void py__fork_exec_seen(PyCodeObject *co) {
    if (g_fork_exec_wrapped || !PyUnicode_Check(co->co_name) ||
        PyUnicode_CompareWithASCIIString(co->co_name, "_execute_child") != 0)
        return;
    PyObject *key = PyUnicode_FromString("_posixsubprocess");
    PyObject *m = key ? PyImport_GetModule(key) : NULL;
    if (m) /* (else a method of that name elsewhere: at a later sight) */
        g_fork_exec_wrapped = 1;
    PyObject *real = m ? PyObject_GetAttrString(m, "fork_exec") : NULL;
    PyObject *ours = real && PyCFunction_Check(real)
                         ? py__c_callable(&g_fork_exec_def, real, "_posixsubprocess", real)
                         : NULL;
    if (ours) {
        replace_in("_posixsubprocess", "fork_exec", real, ours);
        replace_in("subprocess", "_fork_exec", real, ours);
    }
    Py_XDECREF(ours);
    Py_XDECREF(real);
    Py_XDECREF(m);
    Py_XDECREF(key);
    PyErr_Clear();
}

/* ---- threads ------------------------------------------------------------ */

/* Names the calling thread after the threading.Thread `t` (its _name: the
 * `name` property is Python code). */
static void name_after(PyObject *t) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *name = PyObject_GetAttrString(t, "_name");
    const char *s = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (s) py__name_thread(s);
    Py_XDECREF(name);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

/* threading, when imported: a new reference, or NULL (no error). */
static PyObject *threading_module(void) {
    PyObject *key = PyUnicode_FromString("threading");
    PyObject *th = key ? PyImport_GetModule(key) : NULL;
    Py_XDECREF(key);
    PyErr_Clear();
    return th;
}

const char py__threading_doc[] = PyDoc_STR(
"_threading() -> module or None\n--\n\n"
"threading, when imported (the profiler changes nothing in it: a thread is\n"
"named when it first records, by _on_thread).");

PyObject *py__threading(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *th = threading_module();
    if (th) return th;
    Py_RETURN_NONE;
}

/* The threading.Thread the calling thread runs, from its start's frames
 * (self of Thread._bootstrap or _bootstrap_inner), before threading lists
 * it in _active. A new reference, or NULL (no error). */
static PyObject *starting_thread(PyObject *th) {
    static const char *const names[] = {"_bootstrap", "_bootstrap_inner"};
    PyObject *codes[2] = {NULL, NULL};
    PyObject *cls = PyObject_GetAttrString(th, "Thread");
    for (int i = 0; i < 2 && cls; i++) {
        PyObject *fn = PyObject_GetAttrString(cls, names[i]);
        if (fn && PyFunction_Check(fn)) codes[i] = PyFunction_GET_CODE(fn);
        Py_XINCREF(codes[i]);
        Py_XDECREF(fn);
    }
    PyErr_Clear();
    PyObject *t = codes[0] || codes[1] ? py__frame_arg0(codes, 2) : NULL;
    if (t && !(cls && PyObject_IsInstance(t, cls) == 1)) Py_CLEAR(t);
    PyErr_Clear();
    Py_XDECREF(codes[0]);
    Py_XDECREF(codes[1]);
    Py_XDECREF(cls);
    return t;
}

const char py__on_thread_doc[] = PyDoc_STR(
"_on_thread()\n--\n\n"
"A thread records its first event: it is named after its threading.Thread,\n"
"when it has one (configure's on_thread).");

PyObject *py__on_thread(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *th = threading_module();
    if (!th) Py_RETURN_NONE;
    PyObject *active = PyObject_GetAttrString(th, "_active");
    PyObject *ident = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
    PyObject *t = active && ident && PyDict_Check(active) ? PyDict_GetItem(active, ident)
                                                          : NULL;
    Py_XINCREF(t);
    PyErr_Clear();
    if (!t) t = starting_thread(th);
    if (t) name_after(t);
    Py_XDECREF(t);
    Py_XDECREF(ident);
    Py_XDECREF(active);
    Py_DECREF(th);
    PyErr_Clear();
    Py_RETURN_NONE;
}

/* ---- _signal.getsignal / _signal.signal ---------------------------------- */

/* The state of both wrappers, a tuple: the signal module's own functions,
 * the profiler's handler (the default action as the program knows it),
 * SIG_DFL, and the set of signals the profiler's handler takes. */
enum { S_SET, S_GET, S_OURS, S_DFL, S_FATAL, S_N };

/* SIG_DFL for the profiler's handler; steals h. */
static PyObject *shown(PyObject *st, PyObject *h) {
    if (h && h == PyTuple_GET_ITEM(st, S_OURS)) {
        Py_DECREF(h);
        h = PyTuple_GET_ITEM(st, S_DFL);
        Py_INCREF(h);
    }
    return h;
}

static PyObject *getsignal_call(PyObject *st, PyObject *args, PyObject *kw) {
    return shown(st, PyObject_Call(PyTuple_GET_ITEM(st, S_GET), args, kw));
}

/* 1 when (signalnum, handler) sets SIG_DFL on a signal of the profiler's. */
static int sets_default(PyObject *st, PyObject *args, PyObject *kw) {
    if (kw || PyTuple_GET_SIZE(args) != 2) return 0;
    PyObject *sig = PyTuple_GET_ITEM(args, 0), *h = PyTuple_GET_ITEM(args, 1);
    int dfl = PyObject_RichCompareBool(h, PyTuple_GET_ITEM(st, S_DFL), Py_EQ);
    int fatal = dfl > 0 ? PySet_Contains(PyTuple_GET_ITEM(st, S_FATAL), sig) : 0;
    PyErr_Clear();
    return dfl > 0 && fatal > 0;
}

/* Setting SIG_DFL back on a signal of the set `fatal` (SIGTERM, SIGHUP...)
 * installs the profiler's handler again (it is the default action,
 * shipping the recording first). */
static PyObject *signal_call(PyObject *st, PyObject *args, PyObject *kw) {
    PyObject *set = PyTuple_GET_ITEM(st, S_SET);
    if (!sets_default(st, args, kw)) return shown(st, PyObject_Call(set, args, kw));
    PyObject *old = py__fatal_set(set, PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(st, S_OURS));
    return old ? shown(st, old) : NULL;
}

static PyMethodDef g_signal_defs[] = {
    {"getsignal", (PyCFunction)(void (*)(void))getsignal_call, METH_VARARGS | METH_KEYWORDS,
     "Return the current action for the given signal."},
    {"signal", (PyCFunction)(void (*)(void))signal_call, METH_VARARGS | METH_KEYWORDS,
     "Set the action for the given signal."},
};

const char py__signal_wrappers_doc[] = PyDoc_STR(
"_signal_wrappers(signal, getsignal, ours, SIG_DFL, fatal) -> (getsignal, signal)\n--\n\n"
"_signal's functions as a traced program sees them: the profiler's\n"
"handler `ours` (for the signals in the set `fatal`) is SIG_DFL, and\n"
"setting SIG_DFL on one of them installs it again.");

PyObject *py__signal_wrappers(PyObject *self, PyObject *args) {
    (void)self;
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) != S_N ||
        !PyAnySet_Check(PyTuple_GET_ITEM(args, S_FATAL))) {
        PyErr_SetString(PyExc_TypeError,
                        "_signal_wrappers(signal, getsignal, ours, SIG_DFL, fatal set)");
        return NULL;
    }
    PyObject *g = py__c_callable(&g_signal_defs[0], args, "_signal", PyTuple_GET_ITEM(args, S_GET));
    PyObject *s = g ? py__c_callable(&g_signal_defs[1], args, "_signal",
                                 PyTuple_GET_ITEM(args, S_SET)) : NULL;
    PyObject *r = s ? PyTuple_Pack(2, g, s) : NULL;
    Py_XDECREF(g);
    Py_XDECREF(s);
    return r;
}

PyObject *py__replace_builtin(PyObject *mod, const char *module, PyMethodDef *def) {
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    PyObject *real = PyObject_GetAttrString(mod, def->ml_name);
    PyObject *ours = real && PyCFunction_Check(real) ? py__c_callable(def, mod, module, real) : NULL;
    if (!ours || PyObject_SetAttrString(mod, def->ml_name, ours) < 0) Py_CLEAR(real);
    Py_XDECREF(ours);
    PyErr_Clear();
    PyErr_Restore(type, value, tbk);
    return real;
}

/* ---- the child's own exit callback ------------------------------------ */

/* A profiled child (sitecustomize) ends its recording through an atexit
 * callback, registered before the program's own and so run after them. The
 * program's introspection of atexit sees its callbacks only: _ncallbacks()
 * leaves it out, _clear() keeps it, and _run_exitfuncs() (run early by the
 * program) runs the program's without ending the recording, which goes on
 * to the real exit. The module's functions are replaced by C functions of
 * the same name, doc and signature whose __self__ is the module, as the
 * builtins'. */
enum { AX_NCALLBACKS, AX_CLEAR, AX_RUN, AX_N };
static PyObject *g_ax_real[AX_N]; /* the builtins replaced */
static PyObject *g_ax_ours;       /* the callback registered, or NULL */

static PyObject *ax_register(PyObject *mod) {
    return PyObject_CallMethod(mod, "register", "O", g_ax_ours);
}

static PyObject *ax_ncallbacks(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    PyObject *n = PyObject_CallObject(g_ax_real[AX_NCALLBACKS], NULL);
    long v = n ? PyLong_AsLong(n) : -1;
    if (!n || v < 1) return n; /* (ours gone: unregistered by the program) */
    Py_DECREF(n);
    return PyLong_FromLong(v - 1);
}

static PyObject *ax_clear(PyObject *mod, PyObject *unused) {
    (void)unused;
    PyObject *r = PyObject_CallObject(g_ax_real[AX_CLEAR], NULL);
    PyObject *again = r ? ax_register(mod) : NULL;
    if (!again) PyErr_Clear(); /* the recording then ends at the C exit */
    Py_XDECREF(again);
    return r;
}

/* The program's callbacks, last registered first, without ours; ours is
 * registered again after them (the list is empty then, as after the real
 * run: what the program registers later runs before it). */
static PyObject *ax_run(PyObject *mod, PyObject *unused) {
    (void)unused;
    PyObject *un = PyObject_CallMethod(mod, "unregister", "O", g_ax_ours);
    if (!un) return NULL;
    Py_DECREF(un);
    PyObject *r = PyObject_CallObject(g_ax_real[AX_RUN], NULL);
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    PyObject *again = ax_register(mod);
    if (!again) PyErr_Clear();
    Py_XDECREF(again);
    PyErr_Restore(type, value, tbk);
    return r;
}

static PyMethodDef g_ax_defs[AX_N] = {
    {"_ncallbacks", ax_ncallbacks, METH_NOARGS, "Return the number of registered exit functions."},
    {"_clear", ax_clear, METH_NOARGS, "Clear the list of previously registered exit functions."},
    {"_run_exitfuncs", ax_run, METH_NOARGS, "Run all registered exit functions."},
};

int py__atexit_own(PyObject *fn) {
    PyObject *mod = PyImport_ImportModule("atexit");
    if (!mod) return -1;
    PyObject *r = PyObject_CallMethod(mod, "register", "O", fn);
    if (!r) {
        Py_DECREF(mod);
        return -1;
    }
    Py_DECREF(r);
    if (!g_ax_ours) {
        g_ax_ours = fn;
        Py_INCREF(fn);
        for (int i = 0; i < AX_N; i++) g_ax_real[i] = py__replace_builtin(mod, "atexit", &g_ax_defs[i]);
    }
    Py_DECREF(mod);
    return 0;
}
