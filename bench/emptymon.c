/* emptymon.c -- the floor of a sys.monitoring (PEP 669) tracer: a C
 * function that does nothing, registered for the events a function-level
 * profiler needs (PY_START, PY_RESUME, PY_RETURN, PY_YIELD, PY_UNWIND,
 * PY_THROW) by bench/sec_py.py's runner. CPython 3.12 and later.
 *
 *     import emptymon; sys.monitoring.register_callback(2, ev, emptymon.noop)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *noop(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    (void)self;
    (void)args;
    (void)n;
    Py_RETURN_NONE;
}

static PyMethodDef emptymon_methods[] = {
    {"noop", (PyCFunction)(void (*)(void))noop, METH_FASTCALL, "Does nothing."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef emptymon_module = {
    PyModuleDef_HEAD_INIT, "emptymon", "An empty sys.monitoring callback (benchmark floor).",
    -1, emptymon_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_emptymon(void) {
    return PyModule_Create(&emptymon_module);
}
