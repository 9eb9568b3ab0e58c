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
#include "hook.h"

#include <string.h>
#include <unistd.h>

/* A C callable of `def` with self `self`, its __module__ `module`. When
 * `like`, the builtin it stands for, is a C function of the same name, def
 * takes its internal doc: __doc__ and __text_signature__ (what
 * inspect.signature reads) are then the builtin's, as in plain Python. */
static PyObject *c_callable(PyMethodDef *def, PyObject *self, const char *module,
                            PyObject *like) {
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
    PyObject *r = c_callable(&g_hidden_defs[ex ? 0 : 1], fn, ex ? "posix" : "tracy", real);
    Py_XDECREF(real);
    return r;
}

/* ---- exec ------------------------------------------------------------- */

/* self: the real os.execv or os.execve. Ships what was recorded and says
 * EXEC first; should the exec fail, recording goes on (EXEC_FAILED). */
static PyObject *exec_call(PyObject *real, PyObject *args, PyObject *kw) {
    py__exec_prepare();
    PyObject *r = PyObject_Call(real, args, kw);
    if (!r) py__exec_failed();
    return r;
}

static PyMethodDef g_exec_defs[] = {
    {"execv", (PyCFunction)(void (*)(void))exec_call, METH_VARARGS | METH_KEYWORDS,
     "Execute an executable path with arguments, replacing current process."},
    {"execve", (PyCFunction)(void (*)(void))exec_call, METH_VARARGS | METH_KEYWORDS,
     "Execute an executable path with arguments, replacing current process."},
};

const char py__exec_wrapper_doc[] = PyDoc_STR(
"_exec_wrapper(real) -> callable\n--\n\n"
"os.execv or os.execve (every os.exec* goes through one of them) that first\n"
"ships what this process recorded and says an exec is coming (PROTOCOL.md,\n"
"exec); should the exec fail, recording goes on.");

PyObject *py__exec_wrapper(PyObject *self, PyObject *real) {
    (void)self;
    PyObject *name = PyObject_GetAttrString(real, "__name__");
    if (!name) return NULL;
    int ve = PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "execve") == 0;
    Py_DECREF(name);
    return c_callable(&g_exec_defs[ve], real, "posix", real);
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

/* ---- fork_exec of a Python child with an environment of its own ------- */

extern char **environ;

/* 1 when the file name of `path` is python*, as the interpreters' are. */
static int python_named(const char *path) {
    const char *b = strrchr(path, '/');
    return strncmp(b ? b + 1 : path, "python", 6) == 0;
}

/* The same for the first path of fork_exec's executable_list. */
static int python_child(PyObject *exe_list) {
    if (!PySequence_Check(exe_list) || PySequence_Size(exe_list) < 1) return 0;
    PyObject *first = PySequence_GetItem(exe_list, 0);
    int yes = first && PyBytes_Check(first) && python_named(PyBytes_AS_STRING(first));
    Py_XDECREF(first);
    PyErr_Clear();
    return yes;
}

/* This process's PYTHONPATH entry of tracy's _child folder (put there by
 * _runtime.setup_children_env), or NULL. Its length in *len. */
static const char *child_folder(size_t *len) {
    const char *pp = getenv("PYTHONPATH");
    static const char tail[] = "/tracy/_child";
    for (const char *e = pp; e && *e;) {
        const char *end = strchr(e, ':');
        size_t n = end ? (size_t)(end - e) : strlen(e);
        if (n >= sizeof tail - 1 && memcmp(e + n - (sizeof tail - 1), tail, sizeof tail - 1) == 0) {
            *len = n;
            return e;
        }
        e = end ? end + 1 : NULL;
    }
    return NULL;
}

/* Whether the environment list holds an entry starting with key=, and
 * which (its index, else -1). */
static Py_ssize_t env_find(PyObject *env, const char *key, size_t klen) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(env); i++) {
        PyObject *e = PyList_GET_ITEM(env, i);
        if (PyBytes_Check(e) && (size_t)PyBytes_GET_SIZE(e) > klen &&
            memcmp(PyBytes_AS_STRING(e), key, klen) == 0 && PyBytes_AS_STRING(e)[klen] == '=')
            return i;
    }
    return -1;
}

/* A Python child that subprocess starts with a copy of this process's
 * environment (env_list, argument 5 in every version; None inherits it)
 * from which PYTHONPATH was dropped (venv's ensurepip, pip's build steps:
 * the copy still has TRACY_PY_OPTS) is profiled as one that inherits it:
 * the list gets PYTHONPATH=<tracy's _child folder>, which leaves the
 * child's sys.path once read (its sys.path is the one the program asked
 * for), and the TRACY_ variables of this process it lacks. An environment
 * that has no TRACY_PY_OPTS (env={}, a few variables) or a PYTHONPATH of
 * its own is the program's choice, left as it is. Returns a new list, or
 * NULL with no exception when nothing is to change. */
static PyObject *child_env(PyObject *args) {
    size_t clen = 0;
    const char *child = child_folder(&clen);
    if (!child || PyTuple_GET_SIZE(args) < 6) return NULL;
    PyObject *env = PyTuple_GET_ITEM(args, 5);
    if (!PyList_Check(env) || env_find(env, "TRACY_PY_OPTS", 13) < 0 ||
        env_find(env, "PYTHONPATH", 10) >= 0 || !python_child(PyTuple_GET_ITEM(args, 1)))
        return NULL;
    PyObject *out = PyList_GetSlice(env, 0, PyList_GET_SIZE(env));
    if (!out) return NULL;
    for (char **v = environ; *v; v++) {
        const char *eq = strchr(*v, '=');
        if (strncmp(*v, "TRACY_", 6) != 0 || !eq || env_find(out, *v, (size_t)(eq - *v)) >= 0)
            continue;
        PyObject *t = PyBytes_FromString(*v);
        int r = t ? PyList_Append(out, t) : -1;
        Py_XDECREF(t);
        if (r < 0) goto fail;
    }
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(11 + clen));
    if (!b) goto fail;
    memcpy(PyBytes_AS_STRING(b), "PYTHONPATH=", 11);
    memcpy(PyBytes_AS_STRING(b) + 11, child, clen);
    int r = PyList_Append(out, b);
    Py_DECREF(b);
    if (r < 0) goto fail;
    return out;
fail:
    Py_DECREF(out);
    PyErr_Clear();
    return NULL;
}

/* The same for os.posix_spawn(path, argv, env, ...), which subprocess uses
 * where it can (3.13: with close_fds too): a new dict when env is a dict
 * (os.environ, inherited, is not) holding TRACY_PY_OPTS and no PYTHONPATH
 * and path names a python*, else NULL with no exception. */
static PyObject *child_env_map(PyObject *path, PyObject *env) {
    size_t clen = 0;
    const char *child = child_folder(&clen);
    if (!child || !PyDict_Check(env) || !PyDict_GetItemString(env, "TRACY_PY_OPTS") ||
        PyDict_GetItemString(env, "PYTHONPATH"))
        return NULL;
    PyObject *fs = NULL;
    if (!PyUnicode_FSConverter(path, &fs)) {
        PyErr_Clear();
        return NULL;
    }
    int py = python_named(PyBytes_AS_STRING(fs));
    Py_DECREF(fs);
    if (!py) return NULL;
    PyObject *out = PyDict_Copy(env);
    if (!out) goto fail;
    for (char **v = environ; *v; v++) {
        const char *eq = strchr(*v, '=');
        if (strncmp(*v, "TRACY_", 6) != 0 || !eq) continue;
        PyObject *k = PyUnicode_DecodeFSDefaultAndSize(*v, eq - *v);
        PyObject *kb = PyBytes_FromStringAndSize(*v, eq - *v);
        PyObject *val = PyUnicode_DecodeFSDefault(eq + 1);
        int r = k && kb && val ? 0 : -1;
        if (r == 0 && !PyDict_Contains(out, k) && !PyDict_Contains(out, kb))
            r = PyDict_SetItem(out, k, val);
        Py_XDECREF(k);
        Py_XDECREF(kb);
        Py_XDECREF(val);
        if (r < 0) goto fail;
    }
    PyObject *v = PyUnicode_DecodeFSDefaultAndSize(child, (Py_ssize_t)clen);
    if (!v || PyDict_SetItemString(out, "PYTHONPATH", v) < 0) {
        Py_XDECREF(v);
        goto fail;
    }
    Py_DECREF(v);
    return out;
fail:
    Py_XDECREF(out);
    PyErr_Clear();
    return NULL;
}

/* A copy of the tuple args with item `at` replaced by v (stolen), or NULL
 * with an exception. */
static PyObject *tuple_with(PyObject *args, Py_ssize_t at, PyObject *v) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *copy = PyTuple_New(n);
    if (!copy) {
        Py_DECREF(v);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = i == at ? v : PyTuple_GET_ITEM(args, i);
        if (i != at) Py_INCREF(a);
        PyTuple_SET_ITEM(copy, i, a);
    }
    return copy;
}

/* self: the real os.posix_spawn (child_env_map). */
static PyObject *posix_spawn_call(PyObject *real, PyObject *args, PyObject *kw) {
    PyObject *env = PyTuple_Check(args) && PyTuple_GET_SIZE(args) >= 3
                        ? child_env_map(PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(args, 2))
                        : NULL;
    if (!env) return PyObject_Call(real, args, kw);
    PyObject *copy = tuple_with(args, 2, env);
    if (!copy) return NULL;
    PyObject *r = PyObject_Call(real, copy, kw);
    Py_DECREF(copy);
    return r;
}

static PyMethodDef g_posix_spawn_def = {
    "posix_spawn", (PyCFunction)(void (*)(void))posix_spawn_call, METH_VARARGS | METH_KEYWORDS,
    "Execute the program specified by path in a new process (as os.posix_spawn;\n"
    "a Python child given an environment of its own is profiled too)."};

/* self: the real _posixsubprocess.fork_exec. Its arguments differ from
 * version to version; the preexec_fn is the only callable one, the
 * environment list the sixth (child_env). */
static PyObject *fork_exec_call(PyObject *real, PyObject *args, PyObject *kw) {
    PyObject *env = PyTuple_Check(args) ? child_env(args) : NULL;
    if (env) {
        PyObject *copy = tuple_with(args, 5, env);
        if (!copy) return NULL;
        PyObject *r = fork_exec_call(real, copy, kw);
        Py_DECREF(copy);
        return r;
    }
    Py_ssize_t n = PyTuple_Check(args) ? PyTuple_GET_SIZE(args) : 0, at = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(args, i);
        if (a != Py_None && !PyType_Check(a) && PyCallable_Check(a)) {
            at = i;
            break;
        }
    }
    if (at < 0) return PyObject_Call(real, args, kw);
    PyObject *fn = PyCFunction_NewEx(&g_preexec_def, PyTuple_GET_ITEM(args, at), NULL);
    PyObject *copy = fn ? tuple_with(args, at, fn) : NULL;
    if (!copy) return NULL;
    PyObject *r = PyObject_Call(real, copy, kw);
    Py_DECREF(copy);
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
                         ? c_callable(&g_fork_exec_def, real, "_posixsubprocess", real)
                         : NULL;
    if (ours) {
        replace_in("_posixsubprocess", "fork_exec", real, ours);
        replace_in("subprocess", "_fork_exec", real, ours);
    }
    Py_XDECREF(ours);
    Py_XDECREF(real);
    PyObject *os = m ? PyImport_ImportModule("os") : NULL; /* (loaded at every start) */
    PyObject *spawn = os ? PyObject_GetAttrString(os, "posix_spawn") : NULL;
    PyObject *ours2 = spawn && PyCFunction_Check(spawn)
                          ? c_callable(&g_posix_spawn_def, spawn, "posix", spawn)
                          : NULL;
    if (ours2) replace_in("os", "posix_spawn", spawn, ours2);
    Py_XDECREF(ours2);
    Py_XDECREF(spawn);
    Py_XDECREF(os);
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

/* Setting SIG_DFL back on SIGTERM/SIGHUP installs the profiler's handler
 * again (it is the default action, shipping the recording first). */
static PyObject *signal_call(PyObject *st, PyObject *args, PyObject *kw) {
    PyObject *set = PyTuple_GET_ITEM(st, S_SET);
    if (!sets_default(st, args, kw)) return shown(st, PyObject_Call(set, args, kw));
    PyObject *sig = PyTuple_GET_ITEM(args, 0);
    PyObject *old = PyObject_CallFunctionObjArgs(set, sig, PyTuple_GET_ITEM(st, S_OURS), NULL);
    if (!old) return NULL;
    PyObject *num = PyNumber_Index(sig);
    PyObject *ok = num ? py__fatal_guard(NULL, num) : NULL;
    Py_XDECREF(num);
    Py_XDECREF(ok);
    PyErr_Clear();
    return shown(st, old);
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
    PyObject *g = c_callable(&g_signal_defs[0], args, "_signal", PyTuple_GET_ITEM(args, S_GET));
    PyObject *s = g ? c_callable(&g_signal_defs[1], args, "_signal",
                                 PyTuple_GET_ITEM(args, S_SET)) : NULL;
    PyObject *r = s ? PyTuple_Pack(2, g, s) : NULL;
    Py_XDECREF(g);
    Py_XDECREF(s);
    return r;
}
