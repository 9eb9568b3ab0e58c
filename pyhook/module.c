/* module.c -- tracy._tracy: the CPython extension module. A thin layer of
 * Python-callable functions over libtrace's client API and the recorders of
 * hook.c. The `tracy` package (pyhook/tracy/) builds the user API on it. */
#include "run.h"

#include <string.h>

#include "client_fast.h"
#include "client_internal.h"
#include "trace_client.h"

/* The client was stopped (process-wide, as the client). The module's
 * objects are in its state (py_mstate): the ids of user zones and plots by
 * name as (epoch << 32 | id) -- ids belong to one connection, and a forked
 * child (a new epoch) is a new client -- and its types. */
static int g_stopped;
static PyObject *g_mod; /* the module (borrowed: it lives as long as the process) */

PyObject *py__module(void) {
    return g_mod;
}

static PyObject *lazy_function(PyObject *m, PyObject *name);
static PyMethodDef *const g_lazy_tables[4];
#define N_LAZY_TABLES 4

/* The lazy tables' definition of `name`, or NULL. */
static PyMethodDef *lazy_def(const char *name) {
    for (size_t t = 0; t < N_LAZY_TABLES; t++)
        for (PyMethodDef *d = g_lazy_tables[t]; d->ml_name; d++)
            if (d->ml_name[0] == name[0] && strcmp(d->ml_name, name) == 0) return d;
    return NULL;
}

PyObject *py__call_def(const char *name, PyObject *args, PyObject *kw) {
    PyMethodDef *d = lazy_def(name);
    if (!d) return PyErr_Format(PyExc_AttributeError, "no _tracy.%s", name);
    int flags = d->ml_flags & (METH_NOARGS | METH_O | METH_VARARGS | METH_KEYWORDS);
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (flags == METH_NOARGS && n == 0 && !kw) return d->ml_meth(g_mod, NULL);
    if (flags == METH_O && n == 1 && !kw) return d->ml_meth(g_mod, PyTuple_GET_ITEM(args, 0));
    if (flags == METH_VARARGS && !kw) return d->ml_meth(g_mod, args);
    if (flags == (METH_VARARGS | METH_KEYWORDS))
        return ((PyCFunctionWithKeywords)(void (*)(void))d->ml_meth)(g_mod, args, kw);
    PyErr_Format(PyExc_TypeError, "_tracy.%s called with the wrong arguments", name);
    return NULL;
}

PyObject *py__fn(const char *name) {
    PyObject *f = PyDict_GetItem(PyModule_GetDict(g_mod), py__name(name));
    if (f) {
        Py_INCREF(f);
        return f;
    }
    PyObject *n = PyUnicode_FromString(name);
    f = n ? lazy_function(g_mod, n) : NULL;
    Py_XDECREF(n);
    if (!f && !PyErr_Occurred()) PyErr_Format(PyExc_AttributeError, "no _tracy.%s", name);
    return f;
}

py_mstate *py__mstate(PyObject *m) {
    return (py_mstate *)PyModule_GetState(m);
}

int py__module_add(PyObject *m, const char *name, PyObject *o) {
    Py_INCREF(o);
    if (PyModule_AddObject(m, name, o) < 0) {
        Py_DECREF(o);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(hook_error_doc,
"A failure inside the profiler's hook (a filter or on_thread callback that\n"
"raised, memory exhausted), raised by the next disable() or stop(); its\n"
"__cause__ is the first failure's exception.");

/* tracy._tracy.HookError, made when first needed (a failure to raise, the
 * name looked up: m_getattr): making an exception class costs every import
 * of tracy some 0.1M instructions, and most runs raise none. Borrowed. */
static PyObject *hook_error(PyObject *m) {
    py_mstate *st = py__mstate(m);
    if (!st->hook_error) {
        PyObject *t = PyErr_NewExceptionWithDoc("tracy._tracy.HookError", hook_error_doc,
                                                PyExc_RuntimeError, NULL);
        if (!t) return NULL;
        if (py__module_add(m, "HookError", t) < 0) {
            Py_DECREF(t);
            return NULL;
        }
        st->hook_error = t;
    }
    return st->hook_error;
}

/* The hook's failures since the last disable() or stop(), raised as one
 * HookError: -1 with it set, 0 when there were none. */
static int raise_hook_failures(PyObject *m) {
    if (!py__hook_failures()) return 0;
    PyObject *t = hook_error(m);
    return t ? py__hook_raise(t) : -1;
}

PyDoc_STRVAR(getattr_doc,
"__getattr__(name)\n--\n\n"
"The module's names made when first asked for (its functions, HookError,\n"
"Counts).");

static int lazy_names(PyObject *m, PyObject *names);
static PyTypeObject *counts_type(PyObject *m);

static PyObject *m_getattr(PyObject *self, PyObject *name) {
    if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "HookError") == 0) {
        PyObject *t = hook_error(self);
        Py_XINCREF(t);
        return t;
    }
    if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "Counts") == 0) {
        PyObject *t = (PyObject *)counts_type(self);
        Py_XINCREF(t);
        return t;
    }
    PyObject *f = PyUnicode_Check(name) ? lazy_function(self, name) : NULL;
    if (f || PyErr_Occurred()) return f;
    PyErr_Format(PyExc_AttributeError, "module 'tracy._tracy' has no attribute %R", name);
    return NULL;
}

PyDoc_STRVAR(dir_doc,
"__dir__()\n--\n\n"
"The module's names, those made when first asked for among them.");

static PyObject *m_dir(PyObject *self, PyObject *unused) {
    PyObject *names = PyDict_Keys(PyModule_GetDict(self));
    if (!names || lazy_names(self, names) < 0) {
        Py_XDECREF(names);
        return NULL;
    }
    const char *unmade[2] = {py__mstate(self)->hook_error ? NULL : "HookError",
                             py__mstate(self)->counts ? NULL : "Counts"};
    for (int i = 0; i < 2; i++) {
        PyObject *n = unmade[i] ? PyUnicode_FromString(unmade[i]) : NULL;
        if (unmade[i] && (!n || PyList_Append(names, n) < 0)) {
            Py_XDECREF(n);
            Py_DECREF(names);
            return NULL;
        }
        Py_XDECREF(n);
    }
    return names;
}

/* ---- Configuration and recording -------------------------------------------- */

PyDoc_STRVAR(configure_doc,
"configure(trace_c=False, lines=False, label='', max_depth=0, min_duration=0,\n"
"          filter=None, skip_prefix=None, on_thread=None, force_profile=False,\n"
"          mechanism='auto')\n"
"--\n\n"
"Sets the recording options. Takes effect for code first seen afterwards;\n"
"mechanism: 'hook' (PEP 523 frame-evaluation hook), 'exact' (sys.monitoring\n"
"on 3.12+, a profile function before: CPython runs the program as unprofiled)\n"
"or 'auto' (exact on 3.12+ when another tool is active at enable(), else hook).\n"
"cached decisions are dropped. Must be called while disabled.");

static void set_obj(PyObject **slot, PyObject *v) {
    if (v == Py_None) v = NULL;
    Py_XINCREF(v);
    Py_XSETREF(*slot, v);
}

static PyObject *m_configure(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"trace_c", "lines", "label", "max_depth", "min_duration",
                             "filter", "skip_prefix", "on_thread", "force_profile",
                             "mechanism", NULL};
    int trace_c = 0, lines = 0, force_profile = 0;
    const char *label = "", *mech = "auto";
    unsigned long long max_depth = 0, min_dur = 0;
    PyObject *filter = Py_None, *skip = Py_None, *on_thread = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|ppsKKOOOps", kwlist, &trace_c,
                                     &lines, &label, &max_depth, &min_dur, &filter,
                                     &skip, &on_thread, &force_profile, &mech))
        return NULL;
    int mechanism = strcmp(mech, "auto") == 0    ? PY_MECH_AUTO
                    : strcmp(mech, "hook") == 0  ? PY_MECH_HOOK
                    : strcmp(mech, "exact") == 0 ? PY_MECH_EXACT
                                                 : -1;
    if (mechanism < 0) {
        PyErr_Format(PyExc_ValueError, "mechanism must be 'auto', 'hook' or 'exact', not '%s'",
                     mech);
        return NULL;
    }
    if (py__mode() != PY_MODE_OFF) {
        PyErr_SetString(PyExc_RuntimeError, "configure() while recording");
        return NULL;
    }
    if (filter != Py_None && !PyCallable_Check(filter)) {
        PyErr_SetString(PyExc_TypeError, "filter must be callable");
        return NULL;
    }
    if (skip != Py_None && !PyUnicode_Check(skip)) {
        PyErr_SetString(PyExc_TypeError, "skip_prefix must be a str");
        return NULL;
    }
    py_opts *o = &py__opts;
    o->trace_c = trace_c;
    o->lines = lines;
    o->force_profile = force_profile;
    o->mechanism = mechanism;
    o->label_args = strstr(label, "args") != NULL;
    o->label_file = strstr(label, "file") != NULL;
    o->label_line = strstr(label, "line") != NULL;
    o->max_depth = max_depth && max_depth < UINT32_MAX ? (uint32_t)max_depth : UINT32_MAX;
    o->min_duration = min_dur;
    set_obj(&o->filter, filter);
    set_obj(&o->skip_prefix, skip);
    set_obj(&o->on_thread, on_thread);
    py__new_epoch();
    Py_RETURN_NONE;
}

PyDoc_STRVAR(enable_doc,
"enable() -> int\n--\n\n"
"Starts recording function zones in every thread. Returns the mechanism:\n"
"1 frame-evaluation hook, 2 profile function, 3 trace function (lines),\n"
"4 sys.monitoring (the exact mechanism on 3.12+).");

int py__enable_checked(int mode) {
    return g_stopped ? 0 : py__enable_as(mode);
}

static PyObject *m_enable(PyObject *self, PyObject *unused) {
    int m = py__enable_checked(-1);
    if (m < 0) return NULL;
    return PyLong_FromLong(m);
}

PyDoc_STRVAR(disable_doc,
"disable()\n--\n\n"
"Stops recording. Zones that began end when their frames return.\n"
"Raises HookError (once) when the hook failed since the last disable()\n"
"or stop(): a filter or on_thread callback raised, or memory ran out.\n"
"Recording is stopped all the same.");

int py__disable_checked(void) {
    py__disable();
    return raise_hook_failures(g_mod);
}

static PyObject *m_disable(PyObject *self, PyObject *unused) {
    py__disable();
    if (raise_hook_failures(self) < 0) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(mode_doc, "mode() -> int\n--\n\nThe mechanism in use, 0 when disabled.");

static PyObject *m_mode(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(py__mode());
}

PyDoc_STRVAR(next_mode_doc, "_next_mode() -> int\n--\n\n"
"The mechanism enable() would use now (the current one when enabled).");

static PyObject *m_next_mode(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(py__next_mode());
}

/* ---- Client ------------------------------------------------------------------ */

PyDoc_STRVAR(set_info_doc,
"set_info(program, argv)\n--\n\n"
"Sets the program name and arguments reported to the capture daemon.");

static PyObject *m_set_info(PyObject *self, PyObject *args) {
    PyObject *program, *argv;
    if (!PyArg_ParseTuple(args, "UO", &program, &argv)) return NULL;
    PyObject *seq = PySequence_Fast(argv, "argv must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    const char **v = PyMem_Calloc((size_t)n + 1, sizeof *v);
    PyObject *kept = PyList_New(0); /* the escaped texts (py__utf8_escaped) */
    if (!v || !kept) {
        PyMem_Free(v);
        Py_XDECREF(kept);
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        v[i] = PyUnicode_Check(it) ? PyUnicode_AsUTF8(it) : NULL;
        if (!v[i] && PyUnicode_Check(it)) {
            PyErr_Clear();
            PyObject *b = py__utf8_escaped(it);
            if (b && PyList_Append(kept, b) == 0) v[i] = PyBytes_AS_STRING(b);
            Py_XDECREF(b);
        }
        if (!v[i]) {
            PyErr_Clear();
            v[i] = "?";
        }
    }
    lt_client_set_info(py__utf8(program, "?", NULL), (int)n, v);
    PyMem_Free(v);
    Py_DECREF(kept);
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(start_doc,
"start() -> bool\n--\n\n"
"Connects to the capture daemon now. False when none answered (the\n"
"client has printed why and records nothing).");

int py__client_start(void) {
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = lt_client_start();
    Py_END_ALLOW_THREADS
    if (rc == 0) py__fatal_after_start();
    return rc == 0;
}

int py__client_active(void) {
    return !g_stopped && lt_client_active();
}

static PyObject *m_start(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(py__client_start());
}

PyDoc_STRVAR(active_doc, "active() -> bool\n--\n\nTrue when connected and recording.");

static PyObject *m_active(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(py__client_active());
}

PyDoc_STRVAR(flush_doc,
"flush()\n--\n\nSends everything recorded so far and waits until it is written.");

static PyObject *m_flush(PyObject *self, PyObject *unused) {
    if (g_stopped) Py_RETURN_NONE;
    py__pending_flush();
    Py_BEGIN_ALLOW_THREADS
    (void)lt_client_flush();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

PyDoc_STRVAR(exec_prepare_doc,
"_exec_prepare()\n--\n\n"
"Just before an exec: sends everything recorded so far and tells the\n"
"daemon the process is about to be replaced; nothing more is sent until\n"
"_exec_failed().");

void py__exec_prepare(void) {
    if (g_stopped) return;
    py__pending_flush();
    Py_BEGIN_ALLOW_THREADS
    (void)lt_client_exec_prepare();
    Py_END_ALLOW_THREADS
}

void py__exec_failed(void) {
    if (!g_stopped) lt_client_exec_failed();
}

static PyObject *m_exec_prepare(PyObject *self, PyObject *unused) {
    py__exec_prepare();
    Py_RETURN_NONE;
}

PyDoc_STRVAR(exec_failed_doc,
"_exec_failed()\n--\n\nThe exec failed: recording goes on.");

static PyObject *m_exec_failed(PyObject *self, PyObject *unused) {
    py__exec_failed();
    Py_RETURN_NONE;
}

PyDoc_STRVAR(dump_doc,
"dump() -> str\n--\n\n"
"Flight recorder (TRACY_FLIGHT): writes the events kept in memory as a\n"
"trace and returns its path. RuntimeError when not in flight mode or when\n"
"the file cannot be written.");

static PyObject *m_dump(PyObject *self, PyObject *unused) {
    int rc;
    char path[4200];
    py__pending_flush();
    Py_BEGIN_ALLOW_THREADS
    rc = lt_flight_dump();
    Py_END_ALLOW_THREADS
    if (rc == LT_EINVAL) {
        PyErr_SetString(PyExc_RuntimeError, "tracy.dump(): not recording in flight "
                        "recorder mode (TRACY_FLIGHT or python -m tracy --flight)");
        return NULL;
    }
    if (rc < 0) return PyErr_Format(PyExc_RuntimeError, "tracy.dump(): %s", lt_strerror(rc));
    lt_flight_last_path(path, sizeof path);
    return PyUnicode_DecodeFSDefault(path);
}

PyDoc_STRVAR(stop_doc,
"stop()\n--\n\n"
"Stops recording, flushes every thread and disconnects from the daemon.\n"
"Later events are ignored. Safe to call twice. Then raises HookError, as\n"
"disable() does, when the hook failed since the last check.");

void py__stop(void) {
    if (g_stopped) return;
    py__disable();
    py__pending_flush();
    py__client_stopped();
    g_stopped = 1;
    Py_BEGIN_ALLOW_THREADS
    lt_client_stop();
    Py_END_ALLOW_THREADS
}

int py__stop_checked(void) {
    if (g_stopped) return 0;
    py__stop();
    return raise_hook_failures(g_mod);
}

static PyObject *m_stop(PyObject *self, PyObject *unused) {
    if (py__stop_checked() < 0) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(trace_start_doc,
"_trace_start(path, capture) -> str\n--\n\n"
"Opens a trace window (lt_start_trace): the capture-release at `capture`\n"
"writes `path`; this process connects to it (again after an earlier\n"
"window). Returns TRACY_ADDR as set for the window's children. OSError\n"
"when it cannot be opened (the reason was said).");

static PyObject *m_trace_start(PyObject *self, PyObject *args) {
    PyObject *path, *exe;
    int rc;
    if (!PyArg_ParseTuple(args, "O&O&", PyUnicode_FSConverter, &path, PyUnicode_FSConverter,
                          &exe))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = lt__trace_start(PyBytes_AS_STRING(path), PyBytes_AS_STRING(exe));
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    Py_DECREF(exe);
    if (rc < 0) return PyErr_Format(PyExc_OSError, "%s", lt_strerror(rc));
    g_stopped = 0;
    py__client_restarted();
    const char *addr = getenv("TRACY_ADDR"); /* set for the window's children */
    return PyUnicode_DecodeFSDefault(addr ? addr : "");
}

PyDoc_STRVAR(trace_stop_doc,
"_trace_stop() -> int\n--\n\n"
"Ends the trace window: ships every thread's records and waits until the\n"
"daemon has finished the file. Returns the events it confirmed storing.\n"
"OSError when the daemon failed (said).");

static PyObject *m_trace_stop(PyObject *self, PyObject *unused) {
    uint64_t stored = 0;
    int rc;
    py__disable();
    py__release_classes();
    py__pending_flush();
    py__client_stopped();
    g_stopped = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = lt__trace_stop(&stored);
    Py_END_ALLOW_THREADS
    if (raise_hook_failures(self) < 0) return NULL;
    if (rc < 0) return PyErr_Format(PyExc_OSError, "%s", lt_strerror(rc));
    return PyLong_FromUnsignedLongLong((unsigned long long)stored);
}

PyDoc_STRVAR(counts_doc,
"counts() -> Counts(sent, lost)\n--\n\n"
"Events handed to the sender and events dropped.");

static PyStructSequence_Field counts_fields[] = {
    {"sent", "events handed to the sender"}, {"lost", "events dropped"}, {NULL, NULL}};
static PyStructSequence_Desc counts_desc = {
    "tracy._tracy.Counts", "Result of counts(): events sent and lost.", counts_fields, 2};

/* tracy._tracy.Counts, made when first needed (a counts() call, the name
 * looked up): a type costs every import of tracy some 20K instructions, and
 * python -m tracy reads the counts in C. Borrowed. */
static PyTypeObject *counts_type(PyObject *m) {
    py_mstate *st = py__mstate(m);
    if (!st->counts) {
        st->counts = PyStructSequence_NewType(&counts_desc);
        if (st->counts && py__module_add(m, "Counts", (PyObject *)st->counts) < 0)
            Py_CLEAR(st->counts);
    }
    return st->counts;
}

static PyObject *m_counts(PyObject *self, PyObject *unused) {
    uint64_t sent = 0, lost = 0;
    lt_client_counts(&sent, &lost);
    PyTypeObject *type = counts_type(self);
    PyObject *o = type ? PyStructSequence_New(type) : NULL;
    if (!o) return NULL;
    PyObject *a = PyLong_FromUnsignedLongLong(sent), *b = PyLong_FromUnsignedLongLong(lost);
    if (!a || !b) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_DECREF(o);
        return NULL;
    }
    PyStructSequence_SET_ITEM(o, 0, a);
    PyStructSequence_SET_ITEM(o, 1, b);
    return o;
}

PyDoc_STRVAR(stored_doc,
"stored() -> int or None\n--\n\nEvents the daemon confirmed storing (after stop()),\n"
"or None when it did not confirm.");

static PyObject *m_stored(PyObject *self, PyObject *unused) {
    uint64_t n = 0;
    if (!lt_client_stored(&n)) Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong((unsigned long long)n);
}

/* ---- Events of the user API -------------------------------------------------------- */

static int ready(void) {
    if (g_stopped) return 0;
    lt__tbuf *t = lt__tls;
    if (!t) {
        t = lt__tbuf_create();
        if (!t) return 0;
        py__thread_first();
    }
    py__pending_flush();
    return 1;
}

/* Cached id for `key` in `cache`, registering it with `reg` when new. */
static long cached_id(PyObject *cache, PyObject *key, uint32_t (*reg)(void *),
                      void *ctx) {
    uint64_t epoch = py__epoch();
    PyObject *v = PyDict_GetItemWithError(cache, key);
    if (v) {
        uint64_t packed = PyLong_AsUnsignedLongLong(v);
        if ((packed >> 32) == epoch) return (long)(uint32_t)packed;
    } else if (PyErr_Occurred()) {
        return -1;
    }
    uint32_t id = reg(ctx);
    if (id == 0) return 0;
    PyObject *o = PyLong_FromUnsignedLongLong(epoch << 32 | id);
    if (!o || PyDict_SetItem(cache, key, o) < 0) {
        Py_XDECREF(o);
        return -1;
    }
    Py_DECREF(o);
    return id;
}

typedef struct { const char *name, *file; unsigned line; } user_loc;

static uint32_t reg_user(void *ctx) {
    user_loc *u = ctx;
    return lt_loc_register(LT_LOC_USER, u->name, u->file, u->line);
}

static uint32_t reg_plot(void *ctx) {
    return lt_plot_register((const char *)ctx);
}

PyDoc_STRVAR(zone_begin_doc,
"zone_begin(name, file='', line=0, frame=None) -> int\n--\n\n"
"Opens a user zone on this thread. Returns its token (true) when it was\n"
"recorded, else False; then zone_end(token) must follow. frame: the frame\n"
"that opens it; when that is a generator's or coroutine's that suspends\n"
"inside the zone, the zone ends there and begins again when it resumes.");

static PyObject *m_zone_begin(PyObject *self, PyObject *args) {
    user_loc u = {.file = ""};
    PyObject *name, *file = NULL, *frame = NULL;
    if (!PyArg_ParseTuple(args, "U|UIO", &name, &file, &u.line, &frame)) return NULL;
    if (!ready()) Py_RETURN_FALSE;
    u.name = py__utf8(name, "?", NULL);
    if (file) u.file = py__utf8(file, "", NULL);
    PyObject *key = Py_BuildValue("(ssI)", u.name, u.file, u.line);
    if (!key) return NULL;
    long id = cached_id(py__mstate(self)->user_locs, key, reg_user, &u);
    Py_DECREF(key);
    if (id < 0) return NULL;
    if (id == 0) Py_RETURN_FALSE;
    lt__tbuf *t = lt__tls;
    if (!t) Py_RETURN_FALSE;
    py__uz_before_begin(t);
    lt__put_begin(t, (uint32_t)id, lt__now());
    uint64_t token = py__uz_begun(t, (uint32_t)id, py__uz_frame_key(frame));
    if (!token) Py_RETURN_TRUE;
    return PyLong_FromUnsignedLongLong(token);
}

PyDoc_STRVAR(mark_profiled_doc,
"_mark_profiled(file, line)\n--\n\n"
"Records that the function whose code starts at file:line is decorated\n"
"with tracy.profile (an internal location 'tracy: profiled', FORMAT.md):\n"
"a line report then shows such functions only.");

static PyObject *m_mark_profiled(PyObject *self, PyObject *args) {
    PyObject *file;
    unsigned line;
    if (!PyArg_ParseTuple(args, "UI", &file, &line)) return NULL;
    if (ready())
        lt_loc_register(LT_LOC_INTERNAL, "tracy: profiled", py__utf8(file, "", NULL), line);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(zone_end_doc,
"zone_end(token=None)\n--\n\n"
"Closes the zone zone_begin returned the token of, when it is still open\n"
"and the innermost; without a token, the innermost zone of this thread.");

static PyObject *m_zone_end(PyObject *self, PyObject *args) {
    PyObject *token = NULL;
    if (!PyArg_ParseTuple(args, "|O", &token)) return NULL;
    lt__tbuf *t = lt__tls;
    if (!t || g_stopped) Py_RETURN_NONE;
    if (token && PyLong_Check(token) && !PyBool_Check(token)) {
        unsigned long long serial = PyLong_AsUnsignedLongLong(token);
        if (serial == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
        py__uz_end(t, serial);
    } else {
        py__uz_end_innermost(t);
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(zone_text_doc, "zone_text(text)\n--\n\nAttaches text to the innermost zone.");

static PyObject *m_zone_text(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "U", &text)) return NULL;
    if (!ready()) Py_RETURN_NONE;
    const char *s = py__utf8(text, "", &n);
    lt_zone_text(s, (size_t)n);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(message_doc, "message(text)\n--\n\nRecords a log message.");

static PyObject *m_message(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "U", &text)) return NULL;
    if (!ready()) Py_RETURN_NONE;
    const char *s = py__utf8(text, "", &n);
    lt_message(s, (size_t)n);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(signpost_doc,
"signpost(header, body=None)\n--\n\nRecords a phase marker (a row in the op report).");

static PyObject *m_signpost(PyObject *self, PyObject *args) {
    PyObject *h, *b = Py_None;
    if (!PyArg_ParseTuple(args, "U|O", &h, &b)) return NULL;
    if (b != Py_None && !PyUnicode_Check(b)) {
        PyErr_SetString(PyExc_TypeError, "signpost body must be str or None");
        return NULL;
    }
    if (ready()) lt_signpost(py__utf8(h, "", NULL), py__utf8(b, "", NULL));
    Py_RETURN_NONE;
}

PyDoc_STRVAR(plot_doc, "plot(name, value)\n--\n\nRecords a sample of the counter `name`.");

static PyObject *m_plot(PyObject *self, PyObject *args) {
    PyObject *name;
    double value;
    if (!PyArg_ParseTuple(args, "Ud", &name, &value)) return NULL;
    if (!ready()) Py_RETURN_NONE;
    const char *s = py__utf8(name, "?", NULL);
    long id = cached_id(py__mstate(self)->plots, name, reg_plot, (void *)s);
    if (id < 0) return NULL;
    if (id > 0) lt_plot((uint32_t)id, value);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(frame_mark_doc, "frame_mark(name=None)\n--\n\nRecords a frame mark.");

static PyObject *m_frame_mark(PyObject *self, PyObject *args) {
    PyObject *name = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &name)) return NULL;
    if (name != Py_None && !PyUnicode_Check(name)) {
        PyErr_SetString(PyExc_TypeError, "frame_mark name must be str or None");
        return NULL;
    }
    if (ready()) lt_frame_mark(name == Py_None ? NULL : py__utf8(name, "", NULL));
    Py_RETURN_NONE;
}

void py__name_thread(const char *name) {
    if (g_stopped || (!lt__tls && !lt__tbuf_create())) return;
    lt_thread_name(name);
}

PyDoc_STRVAR(thread_name_doc,
"thread_name(name, tid=None)\n--\n\n"
"Names the calling thread, or the thread with OS id `tid`.");

static PyObject *m_thread_name(PyObject *self, PyObject *args) {
    PyObject *uname, *tid = Py_None;
    if (!PyArg_ParseTuple(args, "U|O", &uname, &tid)) return NULL;
    if (g_stopped) Py_RETURN_NONE;
    const char *name = py__utf8(uname, "?", NULL);
    if (tid == Py_None) {
        py__name_thread(name);
    } else {
        unsigned long long v = PyLong_AsUnsignedLongLong(tid);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
        lt_thread_name_tid(v, name);
    }
    Py_RETURN_NONE;
}

/* ---- Compiling the program ------------------------------------------------- */

PyDoc_STRVAR(compile_exec_doc,
"_compile_exec(source, filename) -> code\n--\n\n"
"compile(source, filename, 'exec') for the bytes of a script, as the\n"
"interpreter compiles `python script.py`: the builtin compile() first sets up\n"
"the AST node types (millions of instructions), which a script does not\n"
"need. The source must hold no NUL byte (ValueError).");

static PyObject *m_compile_exec(PyObject *self, PyObject *args) {
    const char *src;
    Py_ssize_t len;
    PyObject *filename;
    if (!PyArg_ParseTuple(args, "y#U", &src, &len, &filename)) return NULL;
    if (memchr(src, 0, (size_t)len)) {
        PyErr_SetString(PyExc_ValueError, "source code string cannot contain null bytes");
        return NULL;
    }
    /* the builtin's flags for bytes: a coding cookie applies */
    PyCompilerFlags cf = _PyCompilerFlags_INIT;
    cf.cf_flags = PyCF_SOURCE_IS_UTF8;
    return Py_CompileStringObject(src, filename, Py_file_input, &cf, -1);
}

PyDoc_STRVAR(call_detached_doc,
"_call_detached(fn, *args)\n--\n\n"
"fn(*args) with no Python caller seen from the frames it runs (hook.h).");

PyDoc_STRVAR(unrecorded_doc,
"_unrecorded(*codes)\n--\n\n"
"These code objects are the profiler's: never recorded (hook.h).");

PyDoc_STRVAR(thread_hook_doc,
"_thread_hook(frame, event, arg)\n--\n\n"
"For threading.setprofile/settrace: installs the C callbacks in a new thread.");

PyDoc_STRVAR(function_stats_doc,
"_function_stats(path) -> list\n--\n\n"
"Per-function totals of a .tracy file on the converters' call-tree model:\n"
"(name, kind, file, line, calls, self_ns, cum_ns), cum_ns counting each\n"
"function's outermost activations only (cProfile's cumtime).");

PyDoc_STRVAR(trace_summary_doc,
"_trace_summary(path) -> (events, processes, lost) or None\n--\n\n"
"What a finished .tracy file's trailer says (tracy-info's events, processes\n"
"and lost events), read without decoding an event; None for a file without\n"
"a trailer. ValueError when it cannot be opened as a trace.");

PyDoc_STRVAR(read_trace_doc,
"_read_trace(path) -> dict\n--\n\n"
"Decodes a .tracy file: processes, threads, zones (process, thread, name,\n"
"kind, file, line, begin_ts, end_ts, depth, text, flags, child_ns),\n"
"messages,\n"
"signposts, plots, frames, lost: lists of named tuples (Zone, Message,\n"
"Signpost, PlotSample, FrameMark, Lost, Thread: module attributes from the\n"
"first call on), each still indexable as the plain tuple it replaces. For\n"
"tests and small tools.");

PyDoc_STRVAR(rundir_doc,
"_rundir() -> path or None\n--\n\n"
"This user's private run folder (daemon sockets, rendezvous files), found\n"
"or created now (None: no candidate is private). A candidate passed over\n"
"is said once per process on stderr.");

static PyObject *m_rundir(PyObject *self, PyObject *unused) {
    char dir[LT__RUNDIR_MAX];
    if (lt__rundir_said(dir, sizeof dir) < 0) Py_RETURN_NONE;
    return PyUnicode_DecodeFSDefault(dir);
}

PyDoc_STRVAR(fnv_doc,
"_fnv(text) -> str\n--\n\n"
"The 64-bit FNV-1a hash of text's UTF-8 bytes (surrogateescape), as 16 hex\n"
"digits: the key of a rendezvous file (tracy/_capture.py), which every\n"
"process of a run computes; in Python some 1.5K instructions a byte.");

static PyObject *m_fnv(PyObject *self, PyObject *text) {
    PyObject *b = PyUnicode_AsEncodedString(text, "utf-8", "surrogateescape");
    if (!b) return NULL;
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(b);
    Py_ssize_t n = PyBytes_GET_SIZE(b);
    uint64_t h = 1469598103934665603ull;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    Py_DECREF(b);
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
    return PyUnicode_FromString(hex);
}

PyDoc_STRVAR(sweep_captures_doc,
"_sweep_captures() -> None\n--\n\n"
"Removes from the run folder the private capture files of programs that\n"
"ended during an on-demand capture (a process gone, a minute ago or more).");

static PyObject *m_sweep_captures(PyObject *self, PyObject *unused) {
    Py_BEGIN_ALLOW_THREADS
    lt__sweep_captures();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* The module's functions, made when first asked for (m_getattr): making
 * the hundred of them costs every import of tracy some 0.2M instructions,
 * and a run uses a few. */
static PyMethodDef lazy_methods[] = {
    {"configure", (PyCFunction)(void (*)(void))m_configure, METH_VARARGS | METH_KEYWORDS,
     configure_doc},
    {"enable", m_enable, METH_NOARGS, enable_doc},
    {"disable", m_disable, METH_NOARGS, disable_doc},
    {"mode", m_mode, METH_NOARGS, mode_doc},
    {"_next_mode", m_next_mode, METH_NOARGS, next_mode_doc},
    {"set_info", m_set_info, METH_VARARGS, set_info_doc},
    {"start", m_start, METH_NOARGS, start_doc},
    {"active", m_active, METH_NOARGS, active_doc},
    {"flush", m_flush, METH_NOARGS, flush_doc},
    {"dump", m_dump, METH_NOARGS, dump_doc},
    {"stop", m_stop, METH_NOARGS, stop_doc},
    {"_trace_start", m_trace_start, METH_VARARGS, trace_start_doc},
    {"_trace_stop", m_trace_stop, METH_NOARGS, trace_stop_doc},
    {"counts", m_counts, METH_NOARGS, counts_doc},
    {"stored", m_stored, METH_NOARGS, stored_doc},
    {"zone_begin", m_zone_begin, METH_VARARGS, zone_begin_doc},
    {"zone_end", m_zone_end, METH_VARARGS, zone_end_doc},
    {"zone_text", m_zone_text, METH_VARARGS, zone_text_doc},
    {"message", m_message, METH_VARARGS, message_doc},
    {"signpost", m_signpost, METH_VARARGS, signpost_doc},
    {"plot", m_plot, METH_VARARGS, plot_doc},
    {"frame_mark", m_frame_mark, METH_VARARGS, frame_mark_doc},
    {"thread_name", m_thread_name, METH_VARARGS, thread_name_doc},
    {"_rundir", m_rundir, METH_NOARGS, rundir_doc},
    {"_fnv", m_fnv, METH_O, fnv_doc},
    {"_sweep_captures", m_sweep_captures, METH_NOARGS, sweep_captures_doc},
    {"_mark_profiled", m_mark_profiled, METH_VARARGS, mark_profiled_doc},
    {"_compile_exec", m_compile_exec, METH_VARARGS, compile_exec_doc},
    {"_thread_hook", py__thread_hook, METH_VARARGS, thread_hook_doc},
    {"_call_detached", py__call_detached, METH_VARARGS, call_detached_doc},
    {"_read_trace", py__read_trace, METH_O, read_trace_doc},
    {"_trace_summary", py__trace_summary, METH_O, trace_summary_doc},
    {"_function_stats", py__function_stats, METH_O, function_stats_doc},
    {"_fatal_install", py__fatal_install, METH_VARARGS, py__fatal_install_doc},
    {"_fatal_take", py__fatal_take, METH_VARARGS, py__fatal_take_doc},
    {"_fatal_begin", py__fatal_begin, METH_O, py__fatal_begin_doc},
    {"_fatal_after_fork", py__fatal_after_fork, METH_NOARGS, py__fatal_after_fork_doc},
    {"_end_signal", py__end_signal, METH_O, py__end_signal_doc},
    {"_exec_prepare", m_exec_prepare, METH_NOARGS, exec_prepare_doc},
    {"_exec_failed", m_exec_failed, METH_NOARGS, exec_failed_doc},
    {"_fork_wrapper", py__fork_wrapper, METH_O, py__fork_wrapper_doc},
    {"_hidden", py__hidden, METH_VARARGS, py__hidden_doc},
    {"_unrecorded", py__unrecorded, METH_VARARGS, unrecorded_doc},
    {"_exec_wrapper", py__exec_wrapper, METH_O, py__exec_wrapper_doc},
    {"_spawn_wrapper", py__spawn_wrapper, METH_O, py__spawn_wrapper_doc},
    {"_children", py__children, METH_O, py__children_doc},
    {"_getenv", py__getenv, METH_O, py__getenv_doc},
    {"_threading", py__threading, METH_NOARGS, py__threading_doc},
    {"_on_thread", py__on_thread, METH_NOARGS, py__on_thread_doc},
    {"_signal_wrappers", py__signal_wrappers, METH_VARARGS, py__signal_wrappers_doc},
    {NULL, NULL, 0, NULL}};

static PyMethodDef tracy_methods[] = {
    {"__getattr__", m_getattr, METH_O, getattr_doc},
    {"__dir__", m_dir, METH_NOARGS, dir_doc},
    {NULL, NULL, 0, NULL}};

static PyMethodDef *const g_lazy_tables[N_LAZY_TABLES] = {
    lazy_methods, py__runtime_methods, py__rundaemon_methods, py__run_methods};

/* The function `name` of the lazy tables, made and added to module m: a new
 * reference, or NULL (no exception) when there is none of that name. (A
 * name with a NUL byte matches none: strcmp stops there, and so does no
 * table name.) */
static PyObject *lazy_function(PyObject *m, PyObject *name) {
    const char *s = PyUnicode_AsUTF8(name);
    if (!s) {
        PyErr_Clear();
        return NULL;
    }
    for (size_t t = 0; t < N_LAZY_TABLES; t++) {
        for (PyMethodDef *d = g_lazy_tables[t]; d->ml_name; d++) {
            if (d->ml_name[0] != s[0] || strcmp(d->ml_name, s) != 0) continue;
            PyObject *modname = PyModule_GetNameObject(m);
            PyObject *f = modname ? PyCFunction_NewEx(d, m, modname) : NULL;
            Py_XDECREF(modname);
            if (f && PyDict_SetItem(PyModule_GetDict(m), name, f) < 0) Py_CLEAR(f);
            return f;
        }
    }
    return NULL;
}

/* Appends the lazy functions not made yet to the list names. */
static int lazy_names(PyObject *m, PyObject *names) {
    PyObject *d = PyModule_GetDict(m);
    for (size_t t = 0; t < N_LAZY_TABLES; t++) {
        for (PyMethodDef *def = g_lazy_tables[t]; def->ml_name; def++) {
            if (PyDict_GetItemString(d, def->ml_name)) continue;
            PyObject *n = PyUnicode_FromString(def->ml_name);
            int r = n ? PyList_Append(names, n) : -1;
            Py_XDECREF(n);
            if (r < 0) return -1;
        }
    }
    return 0;
}

/* The hook, the code-extra slot and the client are process-wide: a second
 * interpreter would replace the first one's hook or share its connection.
 * 3.12+ declares it (Py_mod_multiple_interpreters), which CPython enforces
 * for isolated interpreters only; legacy sub-interpreters
 * (Py_NewInterpreter) reach this check. */
static int refuse_subinterpreter(void) {
    if (py__main_interpreter()) return 0;
    PyErr_SetString(PyExc_ImportError,
                    "tracy._tracy cannot be imported in a sub-interpreter: its hook and "
                    "its connection to the capture daemon belong to the whole process "
                    "(import tracy in the main interpreter)");
    return -1;
}

static int tracy_exec(PyObject *m) {
    py_mstate *st = py__mstate(m);
    if (refuse_subinterpreter() < 0 || py__hook_init() < 0) return -1;
    g_mod = m;
    st->user_locs = PyDict_New();
    st->plots = PyDict_New();
    if (!st->user_locs || !st->plots ||
        PyModule_AddIntConstant(m, "MODE_EVAL", PY_MODE_EVAL) < 0 ||
        PyModule_AddIntConstant(m, "MODE_PROFILE", PY_MODE_PROFILE) < 0 ||
        PyModule_AddIntConstant(m, "MODE_TRACE", PY_MODE_TRACE) < 0 ||
        PyModule_AddIntConstant(m, "MODE_MONITOR", PY_MODE_MONITOR) < 0 ||
        PyModule_AddStringConstant(m, "VERSION", LT_VERSION_STRING) < 0)
        return -1;
    return 0;
}

/* Every object of the state, for traverse and clear. */
#define STATE_OBJECTS(X, st)                                                          \
    X(st->user_locs) X(st->plots) X(st->hook_error) X(st->counts) X(st->trace.zone)  \
    X(st->trace.message) X(st->trace.signpost) X(st->trace.plot) X(st->trace.frame)  \
    X(st->trace.lost) X(st->trace.thread)

static int tracy_traverse(PyObject *m, visitproc visit, void *arg) {
    py_mstate *st = py__mstate(m);
    if (!st) return 0;
#define VISIT(o) Py_VISIT(o);
    STATE_OBJECTS(VISIT, st)
#undef VISIT
    return 0;
}

static int tracy_clear(PyObject *m) {
    py_mstate *st = py__mstate(m);
    if (!st) return 0;
#define CLEAR(o) Py_CLEAR(o);
    STATE_OBJECTS(CLEAR, st)
#undef CLEAR
    return 0;
}

static void tracy_free(void *m) {
    tracy_clear((PyObject *)m);
}

static PyModuleDef_Slot tracy_slots[] = {
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
    {Py_mod_exec, tracy_exec},
    {0, NULL}};

PyDoc_STRVAR(module_doc, "Low-level hooks of the tracy profiler (see the tracy package).");

static struct PyModuleDef tracy_module = {
    PyModuleDef_HEAD_INIT, "tracy._tracy", module_doc, sizeof(py_mstate), tracy_methods,
    tracy_slots, tracy_traverse, tracy_clear, tracy_free};
#if PY_VERSION_HEX < 0x03090000
/* 3.8's PyMODINIT_FUNC leaves it to -fvisibility=hidden */
__attribute__((visibility("default")))
#endif
PyMODINIT_FUNC PyInit__tracy(void) {
    return PyModuleDef_Init(&tracy_module);
}
