/* pypath.c -- posixpath's string functions and os.path's tests in C, for
 * python -m tracy's common path (run.c, runtime.c, rundaemon.c): the same
 * results as os.path.basename, dirname, join, normpath and abspath, and as
 * isfile, isdir, exists and samefile, on str paths (os.fsencode'd, worked
 * on as bytes, decoded back: '/' is the byte 0x2f in every encoding a
 * file system name uses). */
#include "pypath.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

PyObject *py__fsenc(PyObject *s) {
    PyObject *b = NULL;
    if (!PyUnicode_FSConverter(s, &b)) return NULL;
    return b;
}

static PyObject *fsdec(const char *s, size_t n) {
    return PyUnicode_DecodeFSDefaultAndSize(s, (Py_ssize_t)n);
}

PyObject *py__path_basename(PyObject *p) {
    PyObject *b = py__fsenc(p);
    if (!b) return NULL;
    const char *s = PyBytes_AS_STRING(b);
    const char *slash = strrchr(s, '/');
    PyObject *r = PyUnicode_DecodeFSDefault(slash ? slash + 1 : s);
    Py_DECREF(b);
    return r;
}

/* dirname of the bytes s[0..n): its length (posixpath.dirname: the head,
 * trailing slashes taken off unless it is all slashes). */
static size_t dirname_len(const char *s, size_t n) {
    size_t i = n;
    while (i > 0 && s[i - 1] != '/') i--;
    size_t head = i;
    size_t k = 0;
    while (k < head && s[k] == '/') k++;
    if (head && k != head)
        while (head > 0 && s[head - 1] == '/') head--;
    return head;
}

PyObject *py__path_dirname(PyObject *p) {
    PyObject *b = py__fsenc(p);
    if (!b) return NULL;
    size_t n = dirname_len(PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
    PyObject *r = fsdec(PyBytes_AS_STRING(b), n);
    Py_DECREF(b);
    return r;
}

PyObject *py__path_join(PyObject *a, PyObject *b) {
    PyObject *ea = py__fsenc(a), *eb = ea ? py__fsenc(b) : NULL;
    PyObject *r = NULL;
    if (eb) {
        const char *x = PyBytes_AS_STRING(ea), *y = PyBytes_AS_STRING(eb);
        size_t nx = (size_t)PyBytes_GET_SIZE(ea), ny = (size_t)PyBytes_GET_SIZE(eb);
        if (y[0] == '/') {
            r = fsdec(y, ny);
        } else {
            int sep = nx > 0 && x[nx - 1] != '/';
            char *buf = PyMem_Malloc(nx + ny + 2);
            if (!buf) {
                PyErr_NoMemory();
            } else {
                memcpy(buf, x, nx);
                if (sep) buf[nx] = '/';
                memcpy(buf + nx + sep, y, ny);
                r = fsdec(buf, nx + sep + ny);
                PyMem_Free(buf);
            }
        }
    }
    Py_XDECREF(ea);
    Py_XDECREF(eb);
    return r;
}

/* normpath of s[0..n) into out (room for n + 2 bytes); its length. */
static size_t normpath_into(const char *s, size_t n, char *out) {
    if (n == 0) {
        out[0] = '.';
        return 1;
    }
    size_t initial = s[0] == '/';
    if (initial && n >= 2 && s[1] == '/' && !(n >= 3 && s[2] == '/')) initial = 2;
    size_t o = initial; /* out[0..o): the slashes, then components joined */
    memset(out, '/', initial);
    size_t ncomp = 0; /* components in out */
    for (size_t i = 0; i <= n;) {
        size_t j = i;
        while (j < n && s[j] != '/') j++;
        const char *c = s + i;
        size_t cn = j - i;
        i = j + 1;
        if (cn == 0 || (cn == 1 && c[0] == '.')) continue;
        int dotdot = cn == 2 && c[0] == '.' && c[1] == '.';
        /* the last component in out, to see whether it is '..' */
        size_t last = o;
        while (last > initial && out[last - 1] != '/') last--;
        int last_dotdot = ncomp && o - last == 2 && out[last] == '.' && out[last + 1] == '.';
        if (!dotdot || (!initial && !ncomp) || (ncomp && last_dotdot)) {
            if (ncomp) out[o++] = '/';
            memcpy(out + o, c, cn);
            o += cn;
            ncomp++;
        } else if (ncomp) {
            o = last > initial ? last - 1 : initial;
            ncomp--;
        }
    }
    if (o == 0) {
        out[0] = '.';
        return 1;
    }
    return o;
}

PyObject *py__path_normpath(PyObject *p) {
    PyObject *b = py__fsenc(p);
    if (!b) return NULL;
    size_t n = (size_t)PyBytes_GET_SIZE(b);
    char *buf = PyMem_Malloc(n + 2);
    PyObject *r = NULL;
    if (!buf) {
        PyErr_NoMemory();
    } else {
        r = fsdec(buf, normpath_into(PyBytes_AS_STRING(b), n, buf));
        PyMem_Free(buf);
    }
    Py_DECREF(b);
    return r;
}

PyObject *py__getcwd(void) {
    char buf[PATH_MAX + 1];
    if (!getcwd(buf, sizeof buf)) return PyErr_SetFromErrno(PyExc_OSError);
    return PyUnicode_DecodeFSDefault(buf);
}

PyObject *py__path_abspath(PyObject *p) {
    PyObject *b = py__fsenc(p);
    if (!b) return NULL;
    int abs = PyBytes_AS_STRING(b)[0] == '/';
    Py_DECREF(b);
    if (abs) return py__path_normpath(p);
    PyObject *cwd = py__getcwd();
    PyObject *j = cwd ? py__path_join(cwd, p) : NULL;
    Py_XDECREF(cwd);
    PyObject *r = j ? py__path_normpath(j) : NULL;
    Py_XDECREF(j);
    return r;
}

PyObject *py__path_realpath(PyObject *p) {
    PyObject *b = py__fsenc(p);
    if (!b) return NULL;
    char buf[PATH_MAX + 1];
    char *got = realpath(PyBytes_AS_STRING(b), buf);
    Py_DECREF(b);
    if (got) return PyUnicode_DecodeFSDefault(buf);
    /* (a loop, a missing part: posixpath's own answer) */
    PyObject *fn = py__mod_attr("posixpath", "realpath");
    PyObject *r = fn ? PyObject_CallFunctionObjArgs(fn, p, NULL) : NULL;
    Py_XDECREF(fn);
    return r;
}

/* stat() of the str path: 0, or -1 (errno set; no exception, but for a
 * path that cannot be encoded: ValueError cleared, errno EINVAL). */
static int stat_of(PyObject *p, struct stat *st) {
    PyObject *b = py__fsenc(p);
    if (!b) {
        PyErr_Clear();
        errno = EINVAL;
        return -1;
    }
    int r = stat(PyBytes_AS_STRING(b), st);
    Py_DECREF(b);
    return r;
}

int py__path_isfile(PyObject *p) {
    struct stat st;
    return stat_of(p, &st) == 0 && S_ISREG(st.st_mode);
}

int py__path_isdir(PyObject *p) {
    struct stat st;
    return stat_of(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int py__path_exists(PyObject *p) {
    struct stat st;
    return stat_of(p, &st) == 0;
}

/* os.stat(p) as a raising call: -1 with the OSError os.stat raises. */
static int stat_raising(PyObject *p, struct stat *st) {
    PyObject *b = py__fsenc(p);
    if (!b) return -1;
    int r = stat(PyBytes_AS_STRING(b), st);
    Py_DECREF(b);
    if (r < 0) {
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, p);
        return -1;
    }
    return 0;
}

int py__path_samefile(PyObject *a, PyObject *b) {
    struct stat sa, sb;
    if (stat_raising(a, &sa) < 0 || stat_raising(b, &sb) < 0) return -1;
    return sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

int py__path_endswith(PyObject *p, const char *suffix) {
    PyObject *s = PyUnicode_FromString(suffix);
    if (!s) {
        PyErr_Clear();
        return 0;
    }
    Py_ssize_t r = PyUnicode_Tailmatch(p, s, 0, PY_SSIZE_T_MAX, 1);
    Py_DECREF(s);
    if (r < 0) PyErr_Clear();
    return r > 0;
}
