/* emptyprof.c -- a CPython extension that installs an empty C profile
 * function with PyEval_SetProfile: the floor of any setprofile-based tracer.
 *
 *     import emptyprof; emptyprof.install(); ...; emptyprof.uninstall()
 *
 * The callback does nothing, so whatever a run costs beyond the plain
 * interpreter is the price of having a profile function at all (in 3.11 it
 * puts the interpreter on its tracing path and builds an event per call).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

static int empty_callback(PyObject *obj, PyFrameObject *frame, int what,
                          PyObject *arg) {
    (void)obj;
    (void)frame;
    (void)what;
    (void)arg;
    return 0;
}

PyDoc_STRVAR(install_doc, "install()\n\n"
             "Installs the empty profile function on the calling thread.");
static PyObject *emptyprof_install(PyObject *mod, PyObject *unused) {
    PyEval_SetProfile(empty_callback, NULL);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(uninstall_doc, "uninstall()\n\n"
             "Removes the profile function from the calling thread.");
static PyObject *emptyprof_uninstall(PyObject *mod, PyObject *unused) {
    PyEval_SetProfile(NULL, NULL);
    Py_RETURN_NONE;
}

static PyMethodDef emptyprof_methods[] = {
    {"install", emptyprof_install, METH_NOARGS, install_doc},
    {"uninstall", emptyprof_uninstall, METH_NOARGS, uninstall_doc},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot emptyprof_slots[] = {
    {0, NULL},
};

PyDoc_STRVAR(module_doc, "An empty PyEval_SetProfile callback (benchmark floor).");

static struct PyModuleDef emptyprof_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "emptyprof",
    .m_doc = module_doc,
    .m_size = 0,
    .m_methods = emptyprof_methods,
    .m_slots = emptyprof_slots,
};

PyMODINIT_FUNC PyInit_emptyprof(void) {
    return PyModuleDef_Init(&emptyprof_module);
}
