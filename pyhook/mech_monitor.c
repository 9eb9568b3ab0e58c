/* mech_monitor.c -- the exact mechanism on CPython 3.12+: sys.monitoring
 * (PEP 669) callbacks, written in C and registered through the Python API
 * (3.12 has no C one), that hand each event to hook.c's recorders (mech.h).
 * Before 3.12 there is nothing here: the exact mechanism is hook.c's profile
 * mode, and py__mon_wanted() is 0. */
#include "mech.h"

#include <string.h>

#if PY_VERSION_HEX >= 0x030C0000

/* The tool ids sys.monitoring reserves for nobody: 0 (debugger),
 * 1 (coverage), 2 (profiler, cProfile) and 5 (optimizer) stay free for the
 * tools the program runs. */
static const int k_ids[] = {3, 4};

/* A trace or profile function is set in this thread. */
static int legacy_tool_active(void) {
    PyThreadState *ts = PyThreadState_Get();
    return (ts->c_tracefunc || ts->c_profilefunc) && !py__legacy_is_ours(ts);
}

/* A tool other than tracy holds a sys.monitoring id (0-5). */
static int monitoring_tool_active(void) {
    PyObject *mon = PySys_GetObject("monitoring"); /* borrowed */
    int other = 0;
    for (int id = 0; mon && id < 6 && !other; id++) {
        PyObject *name = PyObject_CallMethod(mon, "get_tool", "i", id);
        if (!name) {
            PyErr_Clear();
            continue;
        }
        other = PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "tracy") != 0;
        Py_DECREF(name);
    }
    return other;
}

static int g_tool = -1;        /* -2: none could be had */
static PyObject *g_set_events; /* sys.monitoring.set_events */
static long g_events;          /* the events of the current options */
/* Entries pushed by the callbacks and not yet popped, every thread: after
 * disable(), the events stay on until it is 0, so that every zone begun
 * gets its end and every run its own entry. */
static long g_open;
static int g_on; /* between enable and disable */
static PyObject *g_disable; /* sys.monitoring.DISABLE */

static void events_set(long mask) {
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    PyObject *r = PyObject_CallFunction(g_set_events, "il", g_tool, mask);
    if (!r) py__hook_failed("sys.monitoring.set_events failed (zones may be missing)");
    Py_XDECREF(r);
    PyErr_Restore(type, value, tbk);
}

static void maybe_off(void) {
    if (!g_on && g_open <= 0) {
        g_open = 0;
        events_set(0);
    }
}

/* PY_START, PY_RESUME, PY_THROW (code, offset[, exception]) */
static PyObject *cb_begin(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    if (n >= 1 && PyCode_Check(a[0])) g_open += py__rec_enter((PyCodeObject *)a[0]);
    Py_RETURN_NONE;
}

/* JUMP (code, from, to) under -l: a jump backwards to the line it jumps
 * from, which LINE does not report, begins that line again, as a trace
 * function is told of it (each run of a loop on one line). */
static PyObject *cb_jump(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    if (n < 3 || !PyCode_Check(a[0])) return Py_NewRef(Py_None);
    PyCodeObject *co = (PyCodeObject *)a[0];
    long from = PyLong_AsLong(a[1]), to = PyLong_AsLong(a[2]);
    if (from < 0 || to < 0) PyErr_Clear();
    else if (to > from && g_disable) /* never one of ours: off at this jump */
        return Py_NewRef(g_disable);
    else if (to < from) {
        int line = PyCode_Addr2Line(co, (int)to);
        if (line >= 0 && line == PyCode_Addr2Line(co, (int)from))
            g_open += py__rec_line(co, line);
    }
    Py_RETURN_NONE;
}

/* PY_RETURN, PY_YIELD, PY_UNWIND (code, offset, value) */
static PyObject *cb_end(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    if (n >= 1 && PyCode_Check(a[0])) {
        g_open -= py__rec_exit((PyCodeObject *)a[0]);
        if (!g_on) maybe_off();
    }
    Py_RETURN_NONE;
}

/* CALL (code, offset, callable, arg0): the calls PyEval_SetProfile reports
 * as C calls, C functions and method descriptors. */
static PyObject *cb_call(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    if (n >= 4 && PyCode_Check(a[0]) &&
        (PyCFunction_Check(a[2]) || Py_TYPE(a[2]) == &PyMethodDescr_Type))
        g_open += py__rec_ccall((PyCodeObject *)a[0], a[2], a[3]);
    Py_RETURN_NONE;
}

/* C_RETURN, C_RAISE (code, offset, callable, arg0) */
static PyObject *cb_creturn(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    if (n >= 3) {
        g_open -= py__rec_creturn(a[2]);
        if (!g_on) maybe_off();
    }
    Py_RETURN_NONE;
}

/* LINE (code, line) */
static PyObject *cb_line(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    if (n >= 2 && PyCode_Check(a[0])) {
        long line = PyLong_AsLong(a[1]);
        if (line < 0) PyErr_Clear();
        else g_open += py__rec_line((PyCodeObject *)a[0], (int)line);
    }
    Py_RETURN_NONE;
}

#define CB(f) (PyCFunction)(void (*)(void))f, METH_FASTCALL
static PyMethodDef g_defs[] = {
    {"_mon_begin", CB(cb_begin), "PY_START, PY_RESUME or PY_THROW (tracy's exact mechanism)."},
    {"_mon_end", CB(cb_end), "PY_RETURN, PY_YIELD or PY_UNWIND (tracy's exact mechanism)."},
    {"_mon_call", CB(cb_call), "CALL (tracy's exact mechanism, --trace-c)."},
    {"_mon_creturn", CB(cb_creturn), "C_RETURN or C_RAISE (tracy's exact mechanism)."},
    {"_mon_line", CB(cb_line), "LINE (tracy's exact mechanism, -l)."},
    {"_mon_jump", CB(cb_jump), "JUMP under -l (tracy's exact mechanism)."},
};

/* Event name -> callback (index in g_defs). */
static const struct {
    const char *event;
    int def;
} k_events[] = {
    {"PY_START", 0},  {"PY_RESUME", 0}, {"PY_THROW", 0}, {"PY_RETURN", 1},
    {"PY_YIELD", 1},  {"PY_UNWIND", 1}, {"CALL", 2},     {"C_RETURN", 3},
    {"C_RAISE", 3},   {"LINE", 4},      {"JUMP", 5},
};

static int wanted_event(int i) {
    int def = k_events[i].def;
    if (def == 2 || def == 3) return py__opts.trace_c;
    if (def == 4 || def == 5) return py__opts.lines;
    return 1;
}

static void no_tool(void) {
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    PySys_WriteStderr("tracy: sys.monitoring tool ids 3 and 4 are taken: the exact mechanism "
                      "records through PyEval_SetProfile instead\n");
    PyErr_Restore(type, value, tbk);
}

/* Takes a tool id (once). 0 or -1. */
static int take_tool(PyObject *mon) {
    if (g_tool >= 0) return 0;
    if (g_tool == -2) return -1;
    for (size_t i = 0; i < sizeof k_ids / sizeof *k_ids && g_tool < 0; i++) {
        PyObject *r = PyObject_CallMethod(mon, "use_tool_id", "is", k_ids[i], "tracy");
        if (r) g_tool = k_ids[i];
        else PyErr_Clear();
        Py_XDECREF(r);
    }
    if (g_tool < 0) {
        g_tool = -2;
        no_tool();
        return -1;
    }
    g_set_events = PyObject_GetAttrString(mon, "set_events");
    g_disable = PyObject_GetAttrString(mon, "DISABLE");
    if (!g_disable) PyErr_Clear();
    return g_set_events ? 0 : -1;
}

/* Registers the callbacks of the current options and returns the mask of
 * their events, or -1. */
static long register_all(PyObject *mon) {
    PyObject *events = PyObject_GetAttrString(mon, "events");
    PyObject *fn[sizeof g_defs / sizeof *g_defs] = {NULL};
    long mask = events ? 0 : -1;
    for (size_t i = 0; mask >= 0 && i < sizeof g_defs / sizeof *g_defs; i++)
        if (!(fn[i] = PyCFunction_New(&g_defs[i], NULL))) mask = -1;
    for (size_t i = 0; mask >= 0 && i < sizeof k_events / sizeof *k_events; i++) {
        PyObject *ev = PyObject_GetAttrString(events, k_events[i].event);
        long v = ev ? PyLong_AsLong(ev) : -1;
        PyObject *cb = wanted_event((int)i) ? fn[k_events[i].def] : Py_None;
        PyObject *r = v > 0 ? PyObject_CallMethod(mon, "register_callback", "iOO", g_tool, ev, cb)
                            : NULL;
        if (r && cb != Py_None) mask |= v;
        else if (!r) mask = -1;
        Py_XDECREF(ev);
        Py_XDECREF(r);
    }
    for (size_t i = 0; i < sizeof fn / sizeof *fn; i++) Py_XDECREF(fn[i]);
    Py_XDECREF(events);
    return mask;
}

/* auto: where the exact mechanism makes another tool see what it sees
 * plain and the hook would not. A sys.monitoring tool: from 3.12. A trace
 * or profile function (pdb, coverage's tracer): on 3.12 only, as on 3.13.0
 * any tool's PY_START/PY_RETURN/LINE events make pdb's set_trace() stop a
 * line late (45 of test_pdb's 112 tests; the hook: 1). BENCHMARKS.md 7. */
int py__mon_wanted(void) {
    int m = py__opts.mechanism;
    if (m != PY_MECH_AUTO) return m == PY_MECH_EXACT;
    return monitoring_tool_active() ||
           (PY_VERSION_HEX < 0x030D0000 && legacy_tool_active());
}

int py__mon_id_free(void) {
    if (g_tool >= 0) return 1;
    if (g_tool == -2) return 0;
    PyObject *mon = PySys_GetObject("monitoring"); /* borrowed */
    int free_id = 0;
    for (size_t i = 0; mon && i < sizeof k_ids / sizeof *k_ids && !free_id; i++) {
        PyObject *name = PyObject_CallMethod(mon, "get_tool", "i", k_ids[i]);
        free_id = name == Py_None;
        if (!name) PyErr_Clear();
        Py_XDECREF(name);
    }
    return free_id;
}

int py__mon_enable(void) {
    PyObject *mon = PySys_GetObject("monitoring"); /* borrowed */
    if (!mon || take_tool(mon) < 0) return -1;
    g_events = register_all(mon);
    if (g_events < 0) {
        py__hook_failed("sys.monitoring callbacks could not be registered (nothing recorded)");
        return 0; /* the tool id is ours: no other mechanism can record instead */
    }
    g_on = 1;
    events_set(g_events);
    return 0;
}

void py__mon_disable(void) {
    g_on = 0;
    maybe_off();
}

#else /* before 3.12: the exact mechanism is hook.c's profile mode */

int py__mon_wanted(void) {
    return 0;
}

int py__mon_id_free(void) {
    return 0;
}

int py__mon_enable(void) {
    return -1;
}

void py__mon_disable(void) {
}

#endif

