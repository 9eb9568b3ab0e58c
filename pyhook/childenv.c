/* childenv.c -- the environment of a child process while the program's
 * children are profiled.
 *
 * A Python child is profiled when tracy's _child folder comes first on its
 * PYTHONPATH (its sitecustomize starts the recording) and TRACY_PY_OPTS is
 * set. The process's own environment (what children inherit, also through
 * a shell or mpirun) holds both, and the other TRACY_ variables tracy set
 * for them; the program's view of it, os.environ, is left as the program
 * was given it (_runtime.set_env: none of those variables, PYTHONPATH as
 * the program set it), and TRACY_PY_HIDE names what a child's sitecustomize
 * takes off its own view.
 *
 * So a child given an environment (subprocess's env=, os.execve,
 * os.posix_spawn) that is a copy of the program's view (copy_of_view: most
 * of the process's other variables, with their values; any program: a
 * shell, mpirun) or that holds TRACY_PY_OPTS, or that is made anew for a
 * Python child (env={...}, a few variables), gets this process's TRACY_
 * variables it lacks, named in TRACY_PY_HIDE, and the folder put back first
 * on its PYTHONPATH: it sees the environment it was given. A child that
 * inherits the environment after the program replaced PYTHONPATH gets the
 * folder back in front of the new value. A non-Python child given an
 * environment made anew is left as given. */
#include "hook.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static char *g_child;    /* the _child folder, or NULL: children not profiled */
static size_t g_child_len;

const char py__getenv_doc[] = PyDoc_STR(
"_getenv(name) -> str or None\n--\n\n"
"name's value in the process's environment (what children inherit), which\n"
"os.environ, the program's view, does not show for tracy's own variables.");

PyObject *py__getenv(PyObject *self, PyObject *name) {
    (void)self;
    PyObject *b = NULL;
    if (!PyUnicode_FSConverter(name, &b)) return NULL;
    const char *v = getenv(PyBytes_AS_STRING(b));
    Py_DECREF(b);
    if (!v) Py_RETURN_NONE;
    return PyUnicode_DecodeFSDefault(v);
}

const char py__children_doc[] = PyDoc_STR(
"_children(folder)\n--\n\n"
"Child processes are profiled from now on (folder: tracy's _child folder,\n"
"put first on their PYTHONPATH), or no longer (None).");

PyObject *py__children(PyObject *self, PyObject *folder) {
    (void)self;
    char *copy = NULL;
    if (folder != Py_None) {
        PyObject *b = NULL;
        if (!PyUnicode_FSConverter(folder, &b)) return NULL;
        copy = strdup(PyBytes_AS_STRING(b));
        Py_DECREF(b);
        if (!copy) return PyErr_NoMemory();
    }
    free(g_child);
    g_child = copy;
    g_child_len = copy ? strlen(copy) : 0;
    Py_RETURN_NONE;
}

/* 1 when the file name of `path` is python*, as the interpreters' are. */
static int python_named(const char *path) {
    const char *b = strrchr(path, '/');
    return strncmp(b ? b + 1 : path, "python", 6) == 0;
}

/* 1 when the PYTHONPATH value v has a tracy _child folder: this one, or
 * one the program put there (another installation's). */
static int has_child(const char *v) {
    static const char tail[] = "/tracy/_child";
    for (const char *e = v; e && *e;) {
        const char *end = strchr(e, ':');
        size_t n = end ? (size_t)(end - e) : strlen(e);
        if (n >= sizeof tail - 1 && memcmp(e + n - (sizeof tail - 1), tail, sizeof tail - 1) == 0)
            return 1;
        e = end ? end + 1 : NULL;
    }
    return 0;
}

/* The index of the entry "key=..." in the list of bytes `env`, or -1. */
static Py_ssize_t env_find(PyObject *env, const char *key, size_t klen) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(env); i++) {
        PyObject *e = PyList_GET_ITEM(env, i);
        if (PyBytes_Check(e) && (size_t)PyBytes_GET_SIZE(e) > klen &&
            memcmp(PyBytes_AS_STRING(e), key, klen) == 0 && PyBytes_AS_STRING(e)[klen] == '=')
            return i;
    }
    return -1;
}

static int append_bytes(PyObject *list, const char *a, size_t an, const char *b, size_t bn) {
    PyObject *e = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(an + bn));
    if (!e) return -1;
    memcpy(PyBytes_AS_STRING(e), a, an);
    memcpy(PyBytes_AS_STRING(e) + an, b, bn);
    int r = PyList_Append(list, e);
    Py_DECREF(e);
    return r;
}

/* out gets this process's TRACY_ variables it lacks, and TRACY_PY_HIDE
 * naming them (none: not set). */
static int add_tracy_vars(PyObject *out) {
    char hide[1024];
    size_t hn = 0;
    for (char **v = environ; *v; v++) {
        const char *eq = strchr(*v, '=');
        size_t kn = eq ? (size_t)(eq - *v) : 0;
        if (!eq || strncmp(*v, "TRACY_", 6) != 0 || strncmp(*v, "TRACY_PY_HIDE=", 14) == 0 ||
            env_find(out, *v, kn) >= 0)
            continue;
        if (append_bytes(out, *v, strlen(*v), "", 0) < 0) return -1;
        if (hn + kn + 1 < sizeof hide) {
            if (hn) hide[hn++] = ',';
            memcpy(hide + hn, *v, kn);
            hn += kn;
        }
    }
    return hn ? append_bytes(out, "TRACY_PY_HIDE=", 14, hide, hn) : 0;
}

/* 1 when env holds at least half of this process's variables but the
 * TRACY_ ones and PYTHONPATH (and one at least), each with its value: a
 * copy of the program's view, changed or not (os.environ.copy(),
 * dict(os.environ, ...)), not one made anew. */
static int copy_of_view(PyObject *env) {
    size_t mine = 0, same = 0;
    for (char **v = environ; *v; v++) {
        const char *eq = strchr(*v, '=');
        if (!eq || strncmp(*v, "TRACY_", 6) == 0 || strncmp(*v, "PYTHONPATH=", 11) == 0)
            continue;
        mine++;
        Py_ssize_t i = env_find(env, *v, (size_t)(eq - *v));
        same += i >= 0 && strcmp(PyBytes_AS_STRING(PyList_GET_ITEM(env, i)), *v) == 0;
    }
    return same > 0 && 2 * same >= mine;
}

/* The TRACY_ entries of out (a copy of the program's view) made this
 * process's: those it has not (unset by tracy, TRACY_PORT=0) dropped, the
 * others given its values. Returns 0, or -1 with an exception. */
static int sync_tracy_vars(PyObject *out) {
    for (Py_ssize_t i = PyList_GET_SIZE(out) - 1; i >= 0; i--) {
        const char *e = PyBytes_AS_STRING(PyList_GET_ITEM(out, i));
        const char *eq = strchr(e, '=');
        if (!eq || strncmp(e, "TRACY_", 6) != 0) continue;
        char key[256];
        size_t kn = (size_t)(eq - e);
        if (kn >= sizeof key) continue;
        memcpy(key, e, kn);
        key[kn] = 0;
        const char *mine = getenv(key);
        if (mine && strcmp(mine, eq + 1) == 0) continue;
        if (!mine) {
            if (PyList_SetSlice(out, i, i + 1, NULL) < 0) return -1;
            continue;
        }
        PyObject *fixed = PyBytes_FromFormat("%s=%s", key, mine);
        if (!fixed || PyList_SetItem(out, i, fixed) < 0) return -1;
    }
    return 0;
}

/* The entries of env (a list of b"K=V") a child is to get instead, or
 * NULL with no exception when they stay as they are. python: the child is
 * a python*. */
static PyObject *fixed_entries(PyObject *env, int python) {
    if (!g_child || !getenv("TRACY_PY_OPTS")) return NULL;
    Py_ssize_t pp = env_find(env, "PYTHONPATH", 10);
    const char *ppv = pp >= 0 ? PyBytes_AS_STRING(PyList_GET_ITEM(env, pp)) + 11 : NULL;
    int opts = env_find(env, "TRACY_PY_OPTS", 13) >= 0;
    int copy = !opts && copy_of_view(env);
    if (opts ? has_child(ppv) : !python && !copy) return NULL;
    PyObject *out = PyList_GetSlice(env, 0, PyList_GET_SIZE(env));
    if (!out || (copy && sync_tracy_vars(out) < 0) || add_tracy_vars(out) < 0) goto fail;
    if (has_child(ppv)) return out; /* (the program put one there: kept first) */
    pp = env_find(out, "PYTHONPATH", 10); /* (ppv is env's: out holds it too) */
    PyObject *e = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(11 + g_child_len +
                                                               (ppv ? 1 + strlen(ppv) : 0)));
    if (!e) goto fail;
    char *p = PyBytes_AS_STRING(e);
    memcpy(p, "PYTHONPATH=", 11);
    memcpy(p + 11, g_child, g_child_len);
    if (ppv) {
        p[11 + g_child_len] = ':';
        memcpy(p + 12 + g_child_len, ppv, strlen(ppv));
    }
    if (pp >= 0) {
        PyList_SetItem(out, pp, e); /* (steals e) */
    } else {
        int r = PyList_Append(out, e);
        Py_DECREF(e);
        if (r < 0) goto fail;
    }
    return out;
fail:
    Py_XDECREF(out);
    PyErr_Clear();
    return NULL;
}

/* This process's environment as entries. */
static PyObject *environ_entries(void) {
    PyObject *out = PyList_New(0);
    for (char **v = environ; out && *v; v++)
        if (strchr(*v, '=') && append_bytes(out, *v, strlen(*v), "", 0) < 0) Py_CLEAR(out);
    return out;
}

/* A mapping (os.environ, a dict of str or bytes) as entries, or NULL with
 * no exception when it is not one the exec functions would take (a name
 * empty or with '=', a NUL: the real function then raises). */
static PyObject *mapping_entries(PyObject *env) {
    PyObject *items = PyMapping_Check(env) ? PyMapping_Items(env) : NULL;
    PyObject *out = items ? PyList_New(0) : NULL;
    for (Py_ssize_t i = 0; out && i < PyList_GET_SIZE(items); i++) {
        PyObject *kv = PyList_GET_ITEM(items, i), *k = NULL, *v = NULL, *e = NULL;
        int ok = PyTuple_Check(kv) && PyTuple_GET_SIZE(kv) == 2 &&
                 PyUnicode_FSConverter(PyTuple_GET_ITEM(kv, 0), &k) &&
                 PyUnicode_FSConverter(PyTuple_GET_ITEM(kv, 1), &v) &&
                 PyBytes_GET_SIZE(k) > 0 && !strchr(PyBytes_AS_STRING(k), '=') &&
                 (e = PyBytes_FromFormat("%s=%s", PyBytes_AS_STRING(k), PyBytes_AS_STRING(v))) &&
                 PyList_Append(out, e) == 0;
        Py_XDECREF(k);
        Py_XDECREF(v);
        Py_XDECREF(e);
        if (!ok) Py_CLEAR(out);
    }
    Py_XDECREF(items);
    PyErr_Clear();
    return out;
}

/* Entries as a dict of bytes, as os.execve and os.posix_spawn take it. */
static PyObject *entries_dict(PyObject *entries) {
    PyObject *d = PyDict_New();
    for (Py_ssize_t i = 0; d && i < PyList_GET_SIZE(entries); i++) {
        const char *e = PyBytes_AS_STRING(PyList_GET_ITEM(entries, i));
        const char *eq = strchr(e, '=');
        if (!eq) continue;
        PyObject *k = PyBytes_FromStringAndSize(e, eq - e), *v = PyBytes_FromString(eq + 1);
        if (!k || !v || PyDict_SetItem(d, k, v) < 0) Py_CLEAR(d);
        Py_XDECREF(k);
        Py_XDECREF(v);
    }
    return d;
}

/* 1 when the environment this process's children inherit needs the
 * _child folder put back (the program replaced or removed PYTHONPATH). */
static int inherited_needs_fix(void) {
    return g_child && getenv("TRACY_PY_OPTS") && !has_child(getenv("PYTHONPATH"));
}

/* The entries of env: fork_exec's list of b"K=V" (a new reference), a
 * mapping (os.execve's, os.posix_spawn's), or None, the environment the
 * child inherits (only when the _child folder must be put back on it).
 * NULL with no exception: none to change. */
static PyObject *entries_of(PyObject *env) {
    if (env == Py_None) return inherited_needs_fix() ? environ_entries() : NULL;
    if (PyList_Check(env)) {
        Py_INCREF(env);
        return env;
    }
    return mapping_entries(env);
}

PyObject *py__child_env_list(PyObject *env, PyObject *exe_list) {
    if (!g_child) return NULL;
    int python = 0;
    if (PySequence_Check(exe_list) && PySequence_Size(exe_list) >= 1) {
        PyObject *first = PySequence_GetItem(exe_list, 0);
        python = first && PyBytes_Check(first) && python_named(PyBytes_AS_STRING(first));
        Py_XDECREF(first);
    }
    PyObject *entries = entries_of(env);
    PyObject *out = entries ? fixed_entries(entries, python) : NULL;
    Py_XDECREF(entries);
    PyErr_Clear();
    return out;
}

/* The mapping a child started by `path` is to get instead of env (None:
 * 3.13's subprocess, inherited), or NULL with no exception. */
static PyObject *child_env_map(PyObject *path, PyObject *env) {
    if (!g_child) return NULL;
    PyObject *fs = NULL;
    if (!PyUnicode_FSConverter(path, &fs)) {
        PyErr_Clear();
        return NULL;
    }
    int python = python_named(PyBytes_AS_STRING(fs));
    Py_DECREF(fs);
    PyObject *entries = entries_of(env);
    PyObject *fixed = entries ? fixed_entries(entries, python) : NULL;
    PyObject *out = fixed ? entries_dict(fixed) : NULL;
    Py_XDECREF(entries);
    Py_XDECREF(fixed);
    PyErr_Clear();
    return out;
}

/* A copy of the tuple args with item `at` replaced by v (stolen), or NULL
 * with an exception. */
PyObject *py__tuple_with(PyObject *args, Py_ssize_t at, PyObject *v) {
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

/* real(*args, **kw) with the environment argument (position `at`, or the
 * keyword "env") replaced as child_env_map says. */
static PyObject *call_with_env(PyObject *real, PyObject *args, PyObject *kw, Py_ssize_t at) {
    PyObject *path = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
    PyObject *given = PyTuple_GET_SIZE(args) > at ? PyTuple_GET_ITEM(args, at)
                      : kw                        ? PyDict_GetItemString(kw, "env")
                                                  : NULL;
    PyObject *env = path && given ? child_env_map(path, given) : NULL;
    if (!env) return PyObject_Call(real, args, kw);
    PyObject *r = NULL;
    if (PyTuple_GET_SIZE(args) > at) {
        PyObject *copy = py__tuple_with(args, at, env);
        if (copy) r = PyObject_Call(real, copy, kw);
        Py_XDECREF(copy);
        return r;
    }
    PyObject *kw2 = PyDict_Copy(kw);
    if (kw2 && PyDict_SetItemString(kw2, "env", env) == 0) r = PyObject_Call(real, args, kw2);
    Py_XDECREF(kw2);
    Py_DECREF(env);
    return r;
}

/* self: the real os.posix_spawn or os.posix_spawnp. */
static PyObject *posix_spawn_call(PyObject *real, PyObject *args, PyObject *kw) {
    PyObject *r = call_with_env(real, args, kw, 2);
    if (r && PyLong_Check(r) && PyTuple_GET_SIZE(args) >= 2)
        py__note_unread(PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(args, 1), PyLong_AsLong(r));
    return r;
}

static PyMethodDef g_spawn_defs[] = {
    {"posix_spawn", (PyCFunction)(void (*)(void))posix_spawn_call, METH_VARARGS | METH_KEYWORDS,
     "Execute the program specified by path in a new process."},
    {"posix_spawnp", (PyCFunction)(void (*)(void))posix_spawn_call, METH_VARARGS | METH_KEYWORDS,
     "Execute the program specified by path in a new process."},
};

const char py__spawn_wrapper_doc[] = PyDoc_STR(
"_spawn_wrapper(real) -> callable\n--\n\n"
"os.posix_spawn or os.posix_spawnp that gives the child the environment\n"
"of a profiled child (pyhook/childenv.c).");

PyObject *py__spawn_wrapper(PyObject *self, PyObject *real) {
    (void)self;
    return py__wrapper_named(g_spawn_defs, sizeof g_spawn_defs / sizeof *g_spawn_defs, real);
}

/* os.execve(path, argv, env): real with the environment a child gets. */
PyObject *py__execve_env(PyObject *real, PyObject *args, PyObject *kw) {
    return call_with_env(real, args, kw, 2);
}

/* os.execv: the process's environment, the _child folder put back first
 * on PYTHONPATH for the call (restored should the exec fail). */
PyObject *py__execv_env(PyObject *real, PyObject *args, PyObject *kw) {
    if (!inherited_needs_fix()) return PyObject_Call(real, args, kw);
    const char *cur = getenv("PYTHONPATH");
    char *old = cur ? strdup(cur) : NULL;
    size_t n = g_child_len + (old ? 1 + strlen(old) : 0) + 1;
    char *v = malloc(n);
    if (!v || (cur && !old)) {
        free(v);
        free(old);
        return PyObject_Call(real, args, kw);
    }
    snprintf(v, n, "%s%s%s", g_child, old ? ":" : "", old ? old : "");
    setenv("PYTHONPATH", v, 1);
    free(v);
    PyObject *r = PyObject_Call(real, args, kw);
    if (old) setenv("PYTHONPATH", old, 1);
    else unsetenv("PYTHONPATH");
    free(old);
    return r;
}

/* ---- a Python child that will not read tracy's sitecustomize ----------- */

/* The isolating option of a python command line (-E, -I or -S, alone or in
 * a cluster such as -IS), or 0; -S when it is there (no .pth file read:
 * tracy-isolated.pth profiles -E and -I children of an installed tracy). */
static char isolating_option(PyObject *argv) {
    Py_ssize_t n = PySequence_Check(argv) ? PySequence_Size(argv) : -1;
    char found = 0;
    for (Py_ssize_t i = 1; i < n && found != 'S'; i++) {
        PyObject *a = PySequence_GetItem(argv, i), *b = NULL;
        if (!a || !PyUnicode_FSConverter(a, &b)) {
            Py_XDECREF(a);
            break;
        }
        Py_DECREF(a);
        const char *s = PyBytes_AS_STRING(b);
        int stop = s[0] != '-' || s[1] == '\0' || s[1] == '-';
        for (const char *c = s + 1; !stop && *c; c++) {
            if (*c == 'E' || *c == 'I' || *c == 'S') {
                if (found != 'S') found = *c;
                continue;
            }
            if (*c == 'c' || *c == 'm') stop = 1;       /* the rest is the program's */
            else if (*c == 'W' || *c == 'X') {          /* takes a value */
                i += c[1] == '\0';
                break;
            }
        }
        Py_DECREF(b);
        if (stop) break;
    }
    PyErr_Clear();
    return found;
}

/* The parent's notes file (TRACY_PY_OPTS "notes"), in buf, or NULL. */
static const char *notes_path(char *buf, size_t n) {
    const char *o = getenv("TRACY_PY_OPTS");
    for (const char *p = o; p && *p;) {
        const char *end = strchr(p, '\x1f');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 6 && len - 6 < n && strncmp(p, "notes=", 6) == 0) {
            memcpy(buf, p + 6, len - 6);
            buf[len - 6] = '\0';
            return buf;
        }
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

void py__note_unread(PyObject *exe, PyObject *argv, long pid) {
    char path[4096], line[256];
    PyObject *fs = NULL;
    if (!g_child || pid <= 0 || !PyUnicode_FSConverter(exe, &fs)) {
        PyErr_Clear();
        return;
    }
    int python = python_named(PyBytes_AS_STRING(fs));
    Py_DECREF(fs);
    char opt = python ? isolating_option(argv) : 0;
    if (!opt || !notes_path(path, sizeof path)) return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return;
    int n = snprintf(line, sizeof line,
                     "%ld\tstarted with -%c: Python does not read tracy's sitecustomize then\n",
                     pid, opt);
    if (write(fd, line, (size_t)n) < 0) { /* (a note lost: nothing more to do) */
    }
    close(fd);
}
