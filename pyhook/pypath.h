/* pypath.h -- os.path's functions in C for str paths (pypath.c): the
 * results of posixpath's basename, dirname, join, normpath, abspath and
 * realpath (new references, or NULL with an exception), and of isfile,
 * isdir and exists (1 or 0, never raising); samefile: 1 or 0, -1 with the
 * OSError os.stat raises. py__getcwd: os.getcwd(). py__path_endswith: the
 * str p ends with the ASCII suffix. */
#ifndef PYHOOK_PYPATH_H
#define PYHOOK_PYPATH_H

#include "run.h"

PyObject *py__path_basename(PyObject *p);
PyObject *py__path_dirname(PyObject *p);
PyObject *py__path_join(PyObject *a, PyObject *b);
PyObject *py__path_normpath(PyObject *p);
PyObject *py__path_abspath(PyObject *p);
PyObject *py__path_realpath(PyObject *p);
PyObject *py__getcwd(void);
int py__path_isfile(PyObject *p);
int py__path_isdir(PyObject *p);
int py__path_exists(PyObject *p);
int py__path_samefile(PyObject *a, PyObject *b);
int py__path_endswith(PyObject *p, const char *suffix);

#endif /* PYHOOK_PYPATH_H */
