/* emptyeval.c -- a CPython extension that installs an empty frame-evaluation
 * function (PEP 523) that only calls CPython's own evaluator: the floor of
 * any tracer built on that hook, such as tracy's.
 *
 *     import emptyeval; emptyeval.install(); ...; emptyeval.uninstall()
 *
 * With any such function installed, CPython 3.11+ no longer runs a Python
 * function called from Python inside its caller's evaluation loop: every
 * call goes through the C function and a new C-level evaluation. What a run
 * costs beyond the plain interpreter is that price and nothing else.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#if PY_VERSION_HEX >= 0x030B0000
static PyObject *empty_eval(PyThreadState *ts, struct _PyInterpreterFrame *f, int exc) {
    return _PyEval_EvalFrameDefault(ts, f, exc);
}
#elif PY_VERSION_HEX >= 0x03090000
static PyObject *empty_eval(PyThreadState *ts, PyFrameObject *f, int exc) {
    return _PyEval_EvalFrameDefault(ts, f, exc);
}
#else
/* 3.8 keeps the function in the interpreter state, an internal struct */
#define Py_BUILD_CORE 1
#include "internal/pycore_pystate.h"
#undef Py_BUILD_CORE
static PyObject *empty_eval(PyFrameObject *f, int exc) {
    return _PyEval_EvalFrameDefault(f, exc);
}
#endif

static void set_eval(int on) {
    PyInterpreterState *interp = PyThreadState_Get()->interp;
#if PY_VERSION_HEX >= 0x03090000
    _PyInterpreterState_SetEvalFrameFunc(interp, on ? empty_eval : _PyEval_EvalFrameDefault);
#else
    interp->eval_frame = on ? empty_eval : _PyEval_EvalFrameDefault;
#endif
}

PyDoc_STRVAR(install_doc, "install()\n\nInstalls the empty frame-evaluation function.");
static PyObject *emptyeval_install(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    set_eval(1);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(uninstall_doc, "uninstall()\n\nPuts CPython's own evaluator back.");
static PyObject *emptyeval_uninstall(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    set_eval(0);
    Py_RETURN_NONE;
}

static PyMethodDef emptyeval_methods[] = {
    {"install", emptyeval_install, METH_NOARGS, install_doc},
    {"uninstall", emptyeval_uninstall, METH_NOARGS, uninstall_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(module_doc, "An empty PEP 523 frame-evaluation function (benchmark floor).");

static struct PyModuleDef emptyeval_module = {
    PyModuleDef_HEAD_INIT, "emptyeval", module_doc, 0, emptyeval_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_emptyeval(void) {
    return PyModule_Create(&emptyeval_module);
}
