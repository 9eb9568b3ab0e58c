/* run.c -- python -m tracy in C (tracy._tracy._main): the command line, the
 * trace's path, the program prepared as the interpreter would run it, the
 * daemon found or started, the program run recorded, the finish (the
 * waits, the summary line). Its start-up is part of every profiled run: the
 * common path runs here without a module of Python; what only some runs
 * need is Python in tracy/_cli.py, imported then (usage and help, -m
 * modules, folders and zipapps, --listen, reports, jobs on several hosts,
 * filters), and in tracy/_capture.py (an interrupt), tracy/_hosts.py. */
#include "pypath.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace_client.h"

/* ---- the run ------------------------------------------------------------- */

/* The command line (as parsed) and where the run records. */
static struct {
    PyObject *opts;                   /* the runtime's options (a dict) */
    PyObject *output, *flight, *listen; /* -o, --flight, --listen, or NULL */
    PyObject *port;                   /* -t, or NULL */
    int report, verbose, asked_output, asked_report;
    PyObject *module, *script, *command; /* the target: one of them */
    PyObject *args;                   /* the program's arguments (a list) */
    char mode;  /* 0 (not recording), 'f' flight, 'e' a daemon found running,
                 * 'o' the daemon this process started, 'j' another's of the run */
    PyObject *addr;   /* the daemon's address (TRACY_ADDR), or NULL: this user's */
    long dport;       /* its port */
    PyObject *out;    /* the trace's path */
    long pid;         /* the daemon's pid ('o', 'j') */
    PyObject *rv;     /* the rendezvous file, or NULL */
    long size;        /* the processes the run expects */
    PyObject *spread; /* a job on several hosts: (job, world, rank), or NULL */
    PyObject *final;  /* ... and the merged trace's path */
} R;

/* The program's end: its exit status (an object sys.exit takes), or an
 * interrupt (an uncaught KeyboardInterrupt: the run ends by SIGINT). */
typedef struct {
    PyObject *code;
    int interrupted;
} status_t;

static PyObject *g_unix; /* "unix:" */

/* ---- refusals --------------------------------------------------------------- */

/* The run cannot start: an Exception marked with the exit status (refused:
 * 2 a usage error, an output path refused, a script that cannot be opened;
 * 1: -m NAME finds no module) and whether the usage's first lines follow
 * (usage), as tracy/_cli.py's refused() makes them. Sets it; returns -1. */
static int refuse(int status, int usage, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    PyObject *e = msg ? PyObject_CallFunctionObjArgs(PyExc_Exception, msg, NULL) : NULL;
    PyObject *st = PyLong_FromLong(status);
    if (e && st && PyObject_SetAttrString(e, "refused", st) == 0 &&
        PyObject_SetAttrString(e, "usage", usage ? Py_True : Py_False) == 0)
        PyErr_SetObject(PyExc_Exception, e);
    Py_XDECREF(st);
    Py_XDECREF(e);
    Py_XDECREF(msg);
    return -1;
}

#define usage_error(...) refuse(2, 1, __VA_ARGS__)

/* int(v) for an option's value name (a C string): a new int, or NULL with
 * the usage error. */
static PyObject *int_opt(const char *name, PyObject *v) {
    PyObject *n = PyLong_FromUnicodeObject(v, 10);
    if (!n) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError)) return NULL;
        PyErr_Clear();
        usage_error("%s expects a number, not %R", name, v);
        return NULL;
    }
    PyObject *zero = PyLong_FromLong(0);
    int neg = zero ? PyObject_RichCompareBool(n, zero, Py_LT) : -1;
    Py_XDECREF(zero);
    if (neg < 0) {
        Py_DECREF(n);
        return NULL;
    }
    if (neg) {
        Py_DECREF(n);
        usage_error("%s must not be negative", name);
        return NULL;
    }
    return n;
}

/* ---- the command line ------------------------------------------------------- */

static const char *const g_with_arg[][2] = {
    {"-o", "output"}, {"--output", "output"}, {"-t", "port"}, {"--port", "port"},
    {"-I", "I"}, {"--function-include", "I"}, {"-E", "E"}, {"--function-exclude", "E"},
    {"-R", "R"}, {"--function-restrict", "R"}, {"-MI", "MI"}, {"--module-include", "MI"},
    {"-ME", "ME"}, {"--module-exclude", "ME"}, {"-MR", "MR"}, {"--module-restrict", "MR"},
    {"--label", "label"}, {"--max-depth", "max_depth"}, {"--min-duration", "min_duration"},
    {"--flight", "flight"}, {"--listen", "listen"}, {"--mechanism", "mechanism"}};
static const char *const g_flags[][2] = {
    {"-p", "partial"}, {"--partial", "partial"}, {"-l", "lines"}, {"--lines", "lines"},
    {"-r", "report"}, {"--report", "report"}, {"-v", "verbose"}, {"--verbose", "verbose"},
    {"--trace-c", "trace_c"}};
#define N_WITH_ARG (sizeof g_with_arg / sizeof *g_with_arg)
#define N_FLAGS (sizeof g_flags / sizeof *g_flags)
/* Single-letter options that may be combined: -pl, -prv, -pvo out. */
static const char g_short_flags[] = "plrv", g_short_with_arg[] = "otIER";

static int is(PyObject *a, const char *s) {
    return PyUnicode_CompareWithASCIIString(a, s) == 0;
}

/* The key of option a in table t (n rows), or NULL. */
static const char *key_of(const char *const (*t)[2], size_t n, PyObject *a) {
    for (size_t i = 0; i < n; i++)
        if (is(a, t[i][0])) return t[i][1];
    return NULL;
}

/* -pl -> [-p, -l]; -pvo -> [-p, -v, -o] (the last may take a value): a new
 * list, or NULL (no exception) when a is not a group of single-letter
 * options. */
static PyObject *expand_short(PyObject *a) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    if (n < 3 || PyUnicode_READ_CHAR(a, 0) != '-' || PyUnicode_READ_CHAR(a, 1) == '-' ||
        key_of(g_with_arg, N_WITH_ARG, a))
        return NULL;
    for (Py_ssize_t i = 1; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ_CHAR(a, i);
        int flag = c < 128 && c && strchr(g_short_flags, (int)c);
        int last_ok = i == n - 1 && c < 128 && c && strchr(g_short_with_arg, (int)c);
        if (!flag && !last_ok) return NULL;
    }
    PyObject *l = PyList_New(n - 1);
    for (Py_ssize_t i = 1; l && i < n; i++) {
        PyObject *o = PyUnicode_FromFormat("-%c", (int)PyUnicode_READ_CHAR(a, i));
        if (!o) Py_CLEAR(l);
        else PyList_SET_ITEM(l, i - 1, o);
    }
    return l;
}

/* Stores `val` (a str) in the slot of option a (key: its key). */
static int set_value(PyObject *a, const char *key, PyObject *val) {
    const char *name = PyUnicode_AsUTF8(a);
    if (!name) return -1;
    if (!strcmp(key, "I") || !strcmp(key, "E") || !strcmp(key, "R") || !strcmp(key, "MI") ||
        !strcmp(key, "ME") || !strcmp(key, "MR"))
        return PyList_Append(PyDict_GetItemString(R.opts, key), val);
    if (!strcmp(key, "max_depth") || !strcmp(key, "min_duration")) {
        PyObject *n = int_opt(name, val);
        int r = n ? PyDict_SetItemString(R.opts, key, n) : -1;
        Py_XDECREF(n);
        return r;
    }
    if (!strcmp(key, "label")) {
        PyObject *comma = PyUnicode_FromString(",");
        PyObject *parts = comma ? PyUnicode_Split(val, comma, -1) : NULL;
        Py_XDECREF(comma);
        for (Py_ssize_t i = 0; parts && i < PyList_GET_SIZE(parts); i++) {
            PyObject *x = PyList_GET_ITEM(parts, i);
            if (!is(x, "args") && !is(x, "file") && !is(x, "line")) {
                usage_error("--label takes args,file,line, not %R", x);
                Py_DECREF(parts);
                return -1;
            }
        }
        Py_XDECREF(parts);
        return parts ? PyDict_SetItemString(R.opts, "label", val) : -1;
    }
    if (!strcmp(key, "mechanism")) return PyDict_SetItemString(R.opts, "mechanism", val);
    if (!strcmp(key, "port")) {
        PyObject *n = int_opt(name, val);
        if (!n) return -1;
        if (PyLong_AsLong(n) > 65535 || PyErr_Occurred()) {
            PyErr_Clear();
            Py_DECREF(n);
            return usage_error("port out of range: %U", val);
        }
        Py_XSETREF(R.port, n);
        return 0;
    }
    PyObject **slot = !strcmp(key, "output") ? &R.output
                      : !strcmp(key, "flight") ? &R.flight
                                               : &R.listen;
    Py_INCREF(val);
    Py_XSETREF(*slot, val);
    if (slot == &R.output) R.asked_output = 1;
    return 0;
}

/* sys.stdout.write(text), then SystemExit(0) set: -h and --version. */
static int print_and_exit(PyObject *text) {
    PyObject *out = PySys_GetObject("stdout");
    PyObject *r = text && out ? PyObject_CallMethod(out, "write", "O", text) : NULL;
    Py_XDECREF(text);
    if (!r) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "lost sys.stdout");
        return -1;
    }
    Py_DECREF(r);
    PyObject *zero = PyLong_FromLong(0);
    PyErr_SetObject(PyExc_SystemExit, zero);
    Py_XDECREF(zero);
    return -1;
}

/* The target at argv[i] (script) or argv[i+1] (-m, -c), its arguments
 * after it. */
static int take_target(PyObject *argv, Py_ssize_t i, PyObject **slot) {
    Py_INCREF(PyList_GET_ITEM(argv, i));
    Py_XSETREF(*slot, PyList_GET_ITEM(argv, i));
    Py_XSETREF(R.args, PyList_GetSlice(argv, i + 1, PyList_GET_SIZE(argv)));
    return R.args ? 1 : -1;
}

/* One option at argv[*i]: 0 to go on after it, 2 to look at argv[*i] again
 * (a group expanded, -- before -m or -c), 1 when the target was found, -1
 * with an exception (a usage error, SystemExit for -h and --version). */
static int parse_one(PyObject *argv, Py_ssize_t *i) {
    Py_ssize_t n = PyList_GET_SIZE(argv);
    PyObject *a = PyList_GET_ITEM(argv, *i);
    if (is(a, "-h") || is(a, "--help")) return print_and_exit(py__mod_attr("tracy._cli", "USAGE"));
    if (is(a, "--version")) {
        PyObject *v = py__mod_attr("tracy", "__version__");
        int r = print_and_exit(v ? PyUnicode_FromFormat("tracy %S\n", v) : NULL);
        Py_XDECREF(v);
        return r;
    }
    if (is(a, "--")) {
        if (*i + 1 >= n) return usage_error("no script or -m module given");
        PyObject *next = PyList_GET_ITEM(argv, *i + 1);
        if (is(next, "-m") || is(next, "-c")) {
            (*i)++;
            return 2; /* (-m or -c, next) */
        }
        return take_target(argv, *i + 1, &R.script);
    }
    if (is(a, "-m") || is(a, "-c")) {
        int m = is(a, "-m");
        if (*i + 1 >= n) return usage_error(m ? "-m needs a module name" : "-c needs a command");
        return take_target(argv, *i + 1, m ? &R.module : &R.command);
    }
    PyObject *group = expand_short(a);
    if (group) {
        int r = PyList_SetSlice(argv, *i, *i + 1, group);
        Py_DECREF(group);
        return r < 0 ? -1 : 2; /* (the same position again) */
    }
    if (PyErr_Occurred()) return -1;
    PyObject *parts = PyObject_CallMethod(a, "partition", "s", "=");
    if (!parts) return -1;
    PyObject *name = PyTuple_GET_ITEM(parts, 0), *val = NULL;
    const char *key = NULL;
    if (PyUnicode_GET_LENGTH(a) > 2 && PyUnicode_READ_CHAR(a, 0) == '-' &&
        PyUnicode_READ_CHAR(a, 1) == '-' && PyUnicode_GET_LENGTH(PyTuple_GET_ITEM(parts, 1)) &&
        (key = key_of(g_with_arg, N_WITH_ARG, name))) {
        a = name;
        val = PyTuple_GET_ITEM(parts, 2);
    }
    const char *flag = key_of(g_flags, N_FLAGS, a);
    int r = 0;
    if (flag) {
        if (!strcmp(flag, "report")) R.report = R.asked_report = 1;
        else if (!strcmp(flag, "verbose")) R.verbose = 1;
        else r = PyDict_SetItemString(R.opts, flag, Py_True);
    } else if ((key = key_of(g_with_arg, N_WITH_ARG, a))) {
        if (!val && *i + 1 >= n) r = usage_error("%U needs a value", a);
        else r = set_value(a, key, val ? val : PyList_GET_ITEM(argv, ++*i));
    } else if (PyUnicode_GET_LENGTH(a) && PyUnicode_READ_CHAR(a, 0) == '-' && !is(a, "-")) {
        r = usage_error("unknown option %U", a);
    } else {
        r = take_target(argv, *i, &R.script);
    }
    Py_DECREF(parts);
    return r;
}

/* parse_args(argv): the options into R. 0, or -1 with an exception. */
static int parse_args(PyObject *given) {
    R.opts = py__rt_defaults();
    PyObject *argv = R.opts ? PyList_GetSlice(given, 0, PyList_GET_SIZE(given)) : NULL;
    R.args = PyList_New(0);
    if (!argv || !R.args) {
        Py_XDECREF(argv);
        return -1;
    }
    int r = 0;
    for (Py_ssize_t i = 0; r != 1 && i < PyList_GET_SIZE(argv);) {
        r = parse_one(argv, &i);
        if (r < 0) break;
        if (r == 0) i++;
    }
    Py_DECREF(argv);
    if (r < 0) return -1;
    if (!R.module && !R.script && !R.command) return usage_error("no script or -m module given");
    PyObject *mech = PyDict_GetItemString(R.opts, "mechanism");
    if (!is(mech, "auto") && !is(mech, "hook") && !is(mech, "exact"))
        return usage_error("--mechanism (or TRACY_MECHANISM) takes auto, hook or exact, not %R",
                           mech);
    static const char *const filters[] = {"I", "E", "R", "MI", "ME", "MR"};
    for (int k = 0; k < 6; k++) {
        if (PyList_GET_SIZE(PyDict_GetItemString(R.opts, filters[k])) == 0) continue;
        PyObject *res = py__call_py("tracy._cli", "check_filters", PyTuple_Pack(1, R.opts));
        Py_XDECREF(res);
        return res ? 0 : -1;
    }
    return 0;
}

/* Appends the items of the list more to the list l: 0, or -1. */
static int append_all(PyObject *l, PyObject *more) {
    return PyList_SetSlice(l, PyList_GET_SIZE(l), PyList_GET_SIZE(l), more);
}

/* [first] + rest (a list): a new list, or NULL. */
static PyObject *list_with(PyObject *first, PyObject *rest) {
    PyObject *l = Py_BuildValue("[O]", first);
    if (l && append_all(l, rest) < 0) Py_CLEAR(l);
    return l;
}

/* sys.orig_argv (3.10+) as python gives it to the program run plain: the
 * interpreter's options, then the program's command line, without `-m
 * tracy` (or the tracy command) and tracy's options. A new list, or NULL
 * (no exception) when the command line is not one of those. */
static PyObject *plain_orig_argv(PyObject *argv) {
    PyObject *orig = PySys_GetObject("orig_argv");
    Py_ssize_t n = PyList_GET_SIZE(argv);
    if (!orig || !PyList_Check(orig) || PyList_GET_SIZE(orig) < n + 2) return NULL;
    Py_ssize_t h = PyList_GET_SIZE(orig) - n; /* head: orig[:h] */
    PyObject *last = PyList_GET_ITEM(orig, h - 1), *argv0 = NULL;
    PyObject *sys_argv = PySys_GetObject("argv");
    if (sys_argv && PyList_Check(sys_argv) && PyList_GET_SIZE(sys_argv))
        argv0 = PyList_GET_ITEM(sys_argv, 0);
    if (PyUnicode_Check(last) && is(last, "tracy") && PyUnicode_Check(PyList_GET_ITEM(orig, h - 2)) &&
        is(PyList_GET_ITEM(orig, h - 2), "-m")) {
        h -= 2;
    } else if (PyUnicode_Check(last) && is(last, "-mtracy")) {
        h -= 1;
    } else {
        PyObject *base = argv0 && PyUnicode_Check(last) &&
                                 PyObject_RichCompareBool(last, argv0, Py_EQ) == 1
                             ? py__path_basename(last)
                             : NULL;
        int cmd = base && is(base, "tracy");
        Py_XDECREF(base);
        PyErr_Clear();
        if (!cmd) return NULL;
        h -= 1;
    }
    PyObject *out = PyList_GetSlice(orig, 0, h);
    PyObject *tail = R.module ? Py_BuildValue("[sO]", "-m", R.module)
                     : R.command ? Py_BuildValue("[sO]", "-c", R.command)
                                 : Py_BuildValue("[O]", R.script);
    int ok = out && tail && append_all(out, tail) == 0 && append_all(out, R.args) == 0;
    Py_XDECREF(tail);
    if (!ok) {
        Py_XDECREF(out);
        PyErr_Clear();
        return NULL;
    }
    return out;
}

/* ---- the trace's path ---------------------------------------------------------- */

/* The trace path for -o and the program name (a new str). -o PATH is a file
 * when it ends in .tracy, else a folder (tt-metal's `-o profile_out`). */
static PyObject *output_path(void) {
    PyObject *stem;
    if (R.module) {
        stem = (Py_INCREF(R.module), R.module);
    } else if (R.command || is(R.script, "-")) {
        stem = PyUnicode_FromString(R.command ? "command" : "stdin");
    } else {
        PyObject *norm = py__path_normpath(R.script);
        stem = norm ? py__path_basename(norm) : NULL;
        Py_XDECREF(norm);
        static const char *const exts[] = {".py", ".pyz"};
        for (int k = 0; stem && k < 2; k++)
            if (py__path_endswith(stem, exts[k]))
                Py_SETREF(stem, PyUnicode_Substring(stem, 0, PyUnicode_GET_LENGTH(stem) -
                                                                 (Py_ssize_t)strlen(exts[k])));
    }
    PyObject *name = stem ? PyUnicode_FromFormat("%U.tracy", stem) : NULL;
    Py_XDECREF(stem);
    if (!name) return NULL;
    PyObject *out = R.output, *r = NULL;
    if (!out || PyUnicode_GET_LENGTH(out) == 0) {
        r = py__path_abspath(name);
    } else if (py__path_endswith(out, ".tracy") && !py__path_isdir(out)) {
        r = py__path_abspath(out);
    } else if (py__path_exists(out) && !py__path_isdir(out)) {
        int same = R.script && !is(R.script, "-") ? py__path_samefile(out, R.script) : 0;
        if (same > 0) refuse(2, 0, "refusing to write the trace over the script %U", out);
        else if (same == 0)
            refuse(2, 0, "refusing to overwrite %U: not a trace (name the trace *.tracy or "
                         "give a folder)", out);
    } else {
        PyObject *j = py__path_join(out, name);
        r = j ? py__path_abspath(j) : NULL;
        Py_XDECREF(j);
    }
    Py_DECREF(name);
    return r;
}

/* posixpath.split(p): its head (trailing slashes taken off unless it is
 * all slashes) and tail, into buffers of cap bytes. */
static void psplit(const char *p, char *head, char *tail, size_t cap) {
    const char *s = strrchr(p, '/');
    size_t i = s ? (size_t)(s - p) + 1 : 0, h = i, k = 0;
    snprintf(tail, cap, "%s", p + i);
    while (k < h && p[k] == '/') k++;
    if (h && k != h)
        while (h > 0 && p[h - 1] == '/') h--;
    snprintf(head, cap, "%.*s", (int)h, p);
}

/* os.makedirs(name, exist_ok=True) for the bytes path name: 0, or -1 with
 * errno as the OSError it raises would have it. */
static int makedirs(const char *name) {
    char head[4096], tail[4096], again[4096];
    struct stat st;
    psplit(name, head, tail, sizeof head);
    if (!*tail) {
        snprintf(again, sizeof again, "%s", head);
        psplit(again, head, tail, sizeof head);
    }
    if (*head && *tail && stat(head, &st) != 0) {
        if (makedirs(head) < 0 && errno != EEXIST) return -1;
        if (!strcmp(tail, ".")) return 0; /* xxx/newdir/. exists if xxx/newdir does */
    }
    if (mkdir(name, 0777) == 0) return 0;
    int e = errno;
    if (stat(name, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
    errno = e;
    return -1;
}

/* Refuses to write over the program itself or over a file that is not a
 * trace; creates the folder. -1 with the refusal (or an OSError). */
static int check_output(PyObject *out) {
    PyObject *target = R.script;
    if (target && !is(target, "-") && py__path_exists(out)) {
        int same = py__path_samefile(out, target);
        if (same < 0) return -1;
        if (same) return refuse(2, 0, "refusing to write the trace over the script %U", target);
    }
    if (py__path_isdir(out)) return refuse(2, 0, "%U is a folder", out);
    PyObject *b = py__fsenc(out);
    if (!b) return -1;
    int bad = py__path_exists(out) && !py__is_trace(PyBytes_AS_STRING(b));
    Py_DECREF(b);
    if (bad) return refuse(2, 0, "refusing to overwrite %U: not a trace", out);
    PyObject *d = py__path_dirname(out), *db = d ? py__fsenc(d) : NULL;
    int r = db ? makedirs(PyBytes_AS_STRING(db)) : -2;
    int e = errno;
    Py_XDECREF(db);
    if (r == 0 || r == -2) {
        Py_XDECREF(d);
        return r == 0 ? 0 : -1;
    }
    PyObject *f = (Py_INCREF(d), d);
    while (f && PyUnicode_GET_LENGTH(f) && !py__path_exists(f)) Py_SETREF(f, py__path_dirname(f));
    if (f && PyUnicode_GET_LENGTH(f) && !py__path_isdir(f))
        r = refuse(2, 0, "cannot create %U: %U is not a folder", d, f);
    else if (f)
        r = refuse(2, 0, "cannot create %U: %s", d, strerror(e));
    Py_XDECREF(f);
    Py_DECREF(d);
    return -1;
}

/* ---- the program, as the interpreter would run it ---------------------------------- */

/* The script's code object, compiled as the interpreter compiles `python
 * script.py` (the extension's _compile_exec; the builtin raises its own
 * error for a NUL byte). A new reference, or NULL with an exception. */
static PyObject *compile_script(PyObject *src, PyObject *path) {
    if (memchr(PyBytes_AS_STRING(src), 0, (size_t)PyBytes_GET_SIZE(src))) {
        PyObject *compile = py__mod_attr("builtins", "compile");
        PyObject *r = compile ? PyObject_CallFunction(compile, "OOs", src, path, "exec") : NULL;
        Py_XDECREF(compile);
        return r;
    }
    return py__call_fn("_compile_exec", "(OO)", src, path);
}

/* sys.path[0] as python sets it for the program: it replaces the entry
 * python put there to run tracy (runpy's working folder, the tracy
 * command's folder). Under -P or PYTHONSAFEPATH (3.11+) python puts none
 * there, and none is added but a folder or zipapp holding the program
 * (needed). 0, or -1 with an exception. */
static int set_path0(PyObject *entry, int needed) {
    PyObject *flags = PySys_GetObject("flags");
    PyObject *safe = flags ? PyObject_GetAttrString(flags, "safe_path") : NULL;
    int is_safe = safe && PyObject_IsTrue(safe) > 0;
    Py_XDECREF(safe);
    PyErr_Clear();
    PyObject *path = PySys_GetObject("path");
    if (!path) {
        PyErr_SetString(PyExc_RuntimeError, "lost sys.path");
        return -1;
    }
    if (is_safe) return needed ? PyList_Insert(path, 0, entry) : 0;
    return PySequence_SetItem(path, 0, entry);
}

/* sys.argv[:] = [argv0] + args. */
static int set_argv(PyObject *argv0) {
    PyObject *argv = PySys_GetObject("argv");
    PyObject *l = list_with(argv0, R.args);
    int ok = argv && l && PyList_SetSlice(argv, 0, PyList_GET_SIZE(argv), l) == 0;
    if (!argv && !PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "lost sys.argv");
    Py_XDECREF(l);
    return ok ? 0 : -1;
}

/* A new __main__ module with the names the interpreter's own has, in its
 * order (what globals() and vars() show): loader, spec and package, then
 * the names of `more` (a dict, or NULL). Its dict (borrowed from
 * sys.modules["__main__"]), or NULL with an exception. */
static PyObject *new_main(PyObject *loader, PyObject *spec, PyObject *package, PyObject *more) {
    PyObject *m = PyModule_New("__main__");
    if (!m) return NULL;
    PyObject *d = PyModule_GetDict(m), *ann = PyDict_New();
    PyObject *builtins = PyImport_AddModule("builtins"); /* borrowed */
    PyObject *modules = PyImport_GetModuleDict();
    int ok = ann && builtins && PyDict_SetItemString(d, "__package__", package) == 0 &&
             PyDict_SetItemString(d, "__loader__", loader) == 0 &&
             PyDict_SetItemString(d, "__spec__", spec) == 0 &&
             PyDict_SetItemString(d, "__annotations__", ann) == 0 &&
             PyDict_SetItemString(d, "__builtins__", builtins) == 0 &&
             (!more || PyDict_Update(d, more) == 0) &&
             PyDict_SetItemString(modules, "__main__", m) == 0;
    Py_XDECREF(ann);
    Py_DECREF(m);
    return ok ? d : NULL;
}

static PyObject *builtin_importer(void) {
    return py__mod_attr("_frozen_importlib", "BuiltinImporter");
}

/* As `python -c CODE` (filename <string>) and `python -` (<stdin>): the
 * code runs in a __main__ whose loader is BuiltinImporter, with '' (the
 * working folder) first on sys.path. more: names of __main__ besides. */
static int prepare_source(PyObject *src, const char *filename, const char *argv0,
                          PyObject *more, PyObject **code, PyObject **glb) {
    PyObject *fn = PyUnicode_FromString(filename), *a0 = PyUnicode_FromString(argv0);
    PyObject *empty = PyUnicode_FromString(""), *loader = NULL;
    *code = fn && a0 && empty ? compile_script(src, fn) : NULL;
    if (*code && set_argv(a0) == 0 && set_path0(empty, 0) == 0 && (loader = builtin_importer()))
        *glb = new_main(loader, Py_None, Py_None, more);
    Py_XDECREF(loader);
    Py_XDECREF(empty);
    Py_XDECREF(a0);
    Py_XDECREF(fn);
    return *code && *glb ? 0 : -1;
}

/* Whether python runs path as a folder or zip archive (a zipapp, .pyz)
 * holding a __main__ module, not as a script: 1, 0, -1 with an exception. */
static int is_path_entry(PyObject *path) {
    if (py__path_isdir(path)) return 1;
    if (py__path_endswith(path, ".py") || py__path_endswith(path, ".pyw")) return 0;
    PyObject *zi = py__mod_attr("zipimport", "zipimporter"); /* (loaded at every start) */
    PyObject *z = zi ? PyObject_CallFunctionObjArgs(zi, path, NULL) : NULL;
    Py_XDECREF(zi);
    if (z) {
        Py_DECREF(z);
        return 1;
    }
    if (!PyErr_ExceptionMatches(PyExc_Exception)) return -1;
    PyErr_Clear();
    return 0;
}

/* The file's bytes (open(path, "rb").read()): a new bytes object, or NULL
 * with the OSError open() or read() raises. */
static PyObject *read_file(PyObject *path) {
    PyObject *io_open = py__mod_attr("io", "open");
    PyObject *f = io_open ? PyObject_CallFunction(io_open, "Os", path, "rb") : NULL;
    Py_XDECREF(io_open);
    PyObject *src = f ? PyObject_CallMethod(f, "read", NULL) : NULL;
    if (f) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *r = PyObject_CallMethod(f, "close", NULL);
        Py_XDECREF(r);
        if (type) {
            PyErr_Clear();
            PyErr_Restore(type, value, tb);
        } else if (!r) {
            Py_CLEAR(src);
        }
        Py_DECREF(f);
    }
    return src;
}

/* Reads and compiles the script, sets up __main__. The script's name
 * (__file__, the code's, its frames' in tracebacks) is the interpreter's:
 * on 3.9+ the path joined to the working folder as it is (./x.py is
 * /cwd/./x.py), on 3.8 the path as given. A folder or zip archive runs its
 * __main__ module, as python runs it (tracy/_cli.py). */
static int prepare_script(PyObject *path, PyObject **code, PyObject **glb) {
    int entry = is_path_entry(path);
    if (entry < 0) return -1;
    if (entry) {
        PyObject *r = py__call_py("tracy._cli", "prepare_path_entry",
                                  PyTuple_Pack(2, path, R.args));
        if (!r) return -1;
        int ok = PyArg_ParseTuple(r, "OO", code, glb);
        Py_XINCREF(*code);
        Py_DECREF(r);
        return ok ? 0 : -1; /* (glb: sys.modules["__main__"]'s dict holds it) */
    }
    PyObject *src = read_file(path);
    if (!src) return -1;
    PyObject *full = NULL;
#if PY_VERSION_HEX >= 0x03090000
    PyObject *cwd = py__getcwd();
    full = cwd ? py__path_join(cwd, path) : NULL;
    Py_XDECREF(cwd);
#else
    full = (Py_INCREF(path), path);
#endif
    *code = full ? compile_script(src, full) : NULL;
    Py_DECREF(src);
    PyObject *real = *code && set_argv(path) == 0 ? py__path_realpath(path) : NULL;
    PyObject *dir = real ? py__path_dirname(real) : NULL;
    PyObject *sfl = dir && set_path0(dir, 0) == 0
                        ? py__mod_attr("_frozen_importlib_external", "SourceFileLoader")
                        : NULL;
    PyObject *loader = sfl ? PyObject_CallFunction(sfl, "sO", "__main__", full) : NULL;
    PyObject *more = loader ? Py_BuildValue("{sOsO}", "__file__", full, "__cached__", Py_None)
                            : NULL;
    if (more) *glb = new_main(loader, Py_None, Py_None, more);
    Py_XDECREF(more);
    Py_XDECREF(loader);
    Py_XDECREF(sfl);
    Py_XDECREF(dir);
    Py_XDECREF(real);
    Py_XDECREF(full);
    return *code && *glb ? 0 : -1;
}

/* The program's code (None for -m: runpy finds it) and its __main__'s
 * dict; *program: its name in the trace. 0, or -1 with an exception. */
static int prepare(PyObject **code, PyObject **glb, PyObject **program) {
    if (R.module) {
        PyObject *r = py__call_py("tracy._cli", "prepare_module",
                                  PyTuple_Pack(2, R.module, R.args));
        if (!r || !PyArg_ParseTuple(r, "OO", code, glb)) {
            Py_XDECREF(r);
            return -1;
        }
        Py_INCREF(*code);
        Py_DECREF(r);
        *program = (Py_INCREF(R.module), R.module);
        return 0;
    }
    if (R.command) {
        PyObject *src = py__fsenc(R.command);
        int r = src ? prepare_source(src, "<string>", "-c", NULL, code, glb) : -1;
        Py_XDECREF(src);
        *program = PyUnicode_FromString("-c");
        return r;
    }
    if (is(R.script, "-")) {
        PyObject *in = PySys_GetObject("stdin");
        PyObject *buf = in ? PyObject_GetAttrString(in, "buffer") : NULL;
        PyObject *src = buf ? PyObject_CallMethod(buf, "read", NULL) : NULL;
        PyObject *more = src ? Py_BuildValue("{sssO}", "__file__", "<stdin>", "__cached__",
                                             Py_None)
                             : NULL;
        int r = more ? prepare_source(src, "<stdin>", "-", more, code, glb) : -1;
        Py_XDECREF(more);
        Py_XDECREF(src);
        Py_XDECREF(buf);
        if (!in && !PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "lost sys.stdin");
        *program = PyUnicode_FromString("-");
        return r;
    }
    PyObject *norm = py__path_normpath(R.script);
    *program = norm ? py__path_basename(norm) : NULL;
    Py_XDECREF(norm);
    return *program ? prepare_script(R.script, code, glb) : -1;
}

/* ---- the daemon ----------------------------------------------------------------- */

/* A daemon's name for messages: its socket (this user's daemon-PORT.sock
 * when addr is NULL), or host:port. A new str, or NULL with an exception. */
static PyObject *where(PyObject *addr, long port) {
    if (!addr) return py__daemon_socket(port);
    int u = PyUnicode_Tailmatch(addr, g_unix, 0, PY_SSIZE_T_MAX, -1) == 1;
    return u ? PyUnicode_Substring(addr, 5, PyUnicode_GET_LENGTH(addr))
             : PyUnicode_FromFormat("%U:%ld", addr, port);
}

static void say(const char *fmt, ...) {
    if (!R.verbose) return;
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg) py__tellf("tracy: %U\n", msg);
    Py_XDECREF(msg);
    PyErr_Clear();
}

/* Connects to a daemon already listening, without a word when none is.
 * Nothing is sent to a daemon unless it is one: no probe connection. */
static int connect_existing(long port) {
    const char *q = getenv("TRACY_QUIET");
    char *old = q ? strdup(q) : NULL;
    setenv("TRACY_QUIET", "1", 1);
    PyObject *p = PyUnicode_FromFormat("%ld", port);
    int r = p ? py__rt_set_env("TRACY_PORT", p) : -1; /* (for the children too) */
    Py_XDECREF(p);
    int ok = r == 0 && py__client_start();
    if (old) setenv("TRACY_QUIET", old, 1);
    else unsetenv("TRACY_QUIET");
    free(old);
    return r < 0 ? -1 : ok;
}

/* --flight: the client keeps the events in memory; no daemon. */
static int connect_flight(void) {
    R.mode = 'f';
    if (py__rt_set_env("TRACY_FLIGHT", R.flight) < 0 ||
        py__rt_set_env("TRACY_FLIGHT_OUT", R.out) < 0)
        return -1;
    if (!py__client_start()) return refuse(2, 0, "not recording (invalid --flight %U)", R.flight);
    return 0;
}

/* A daemon found running: recorded there. */
static int connected_external(void) {
    R.mode = 'e';
    PyObject *w = where(R.addr, R.dport);
    if (!w) return -1;
    say("recording to the daemon at %U", w);
    if (R.asked_output || R.asked_report)
        py__tellf("tracy: %s not applied: the capture daemon already running at %U writes the "
                  "trace (use -t 0 for a daemon of this run)\n",
                  R.asked_output && R.asked_report ? "-o and -r" : R.asked_output ? "-o" : "-r",
                  w);
    Py_DECREF(w);
    return 0;
}

/* Finds or starts the daemon and connects. 0, or -1 with an exception. */
static int connect_run(void) {
    R.addr = py__env_view("TRACY_ADDR"); /* NULL: this user's local daemon */
    if (R.addr && PyUnicode_GET_LENGTH(R.addr) == 0) Py_CLEAR(R.addr);
    if (PyErr_Occurred()) return -1;
    PyObject *port = R.port ? (Py_INCREF(R.port), R.port) : NULL;
    if (!port) {
        PyObject *env = py__env_view("TRACY_PORT");
        if (env && PyUnicode_GET_LENGTH(env) == 0) Py_CLEAR(env);
        if (!env && !PyErr_Occurred()) env = PyUnicode_FromString("8086");
        port = env ? int_opt("TRACY_PORT", env) : NULL;
        Py_XDECREF(env);
    }
    if (!port) return -1;
    R.dport = PyLong_AsLong(port);
    Py_DECREF(port);
    if (PyErr_Occurred()) return -1;
    if (R.flight && PyUnicode_GET_LENGTH(R.flight)) return connect_flight();
    int ext = R.dport != 0 ? connect_existing(R.dport) : 0;
    if (ext) return ext < 0 ? -1 : connected_external();
    if (check_output(R.out) < 0) return -1;
    PyObject *spread = py__spread();
    if (!spread) return -1;
    if (spread != Py_None) { /* ranks on several hosts: a daemon and a part per host */
        R.spread = spread;
        R.final = R.out;
        R.out = py__call_py("tracy._hosts", "part_path",
                            PyTuple_Pack(2, R.final, PyTuple_GET_ITEM(spread, 0)));
        if (!R.out) return -1;
    } else {
        Py_DECREF(spread);
    }
    PyObject *addr;
    if (py__own_or_join(R.out, R.verbose, &R.mode, &R.pid, &addr, &R.rv, &R.size) < 0)
        return -1;
    Py_XSETREF(R.addr, addr);
    if (py__rt_set_env("TRACY_ADDR", addr) < 0) return -1;
    if (PyUnicode_Tailmatch(addr, g_unix, 0, PY_SSIZE_T_MAX, -1) != 1)
        py__rt_unset_env("TRACY_PORT"); /* (TRACY_PORT=0 would be refused) */
    if (R.mode == 'j') say("joining the capture of %U (capture-release pid %ld)", R.out, R.pid);
    if (!py__client_start()) {
        PyObject *w = where(R.addr, R.dport);
        if (!w) return -1;
        py__tellf("tracy: not recording (no capture daemon at %U)\n", w);
        Py_DECREF(w);
    } else if (R.mode == 'j') {
        py__rv_count_in(R.rv, R.pid);
    }
    return 0;
}

/* ---- running the program ------------------------------------------------------------- */

/* What the interpreter writes for sys.exit(non-int): str(code) to
 * sys.stderr (to descriptor 2 when sys.stderr is None; dropped when it
 * cannot be written), then a newline, on descriptor 2 when sys.stderr
 * cannot take it. */
static void exit_message(PyObject *code) {
    PyObject *err = PySys_GetObject("stderr");
    PyObject *msg = PyObject_Str(code);
    if (!msg) {
        PyErr_Clear(); /* (a __str__ that raises: nothing but the newline) */
        msg = PyUnicode_FromString("");
    }
    PyObject *texts[2] = {msg, PyUnicode_FromString("\n")};
    for (int i = 0; i < 2; i++) {
        PyObject *r = err && err != Py_None && texts[i]
                          ? PyObject_CallMethod(err, "write", "O", texts[i])
                          : NULL;
        if (r) {
            Py_DECREF(r);
            continue;
        }
        PyErr_Clear();
        if ((!err || err == Py_None || i == 1) && texts[i]) {
            PyObject *b = PyUnicode_AsEncodedString(texts[i], "utf-8", "backslashreplace");
            if (b && write(2, PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b)) < 0) {
            }
            Py_XDECREF(b);
            PyErr_Clear();
        }
    }
    Py_XDECREF(texts[0]);
    Py_XDECREF(texts[1]);
}

/* The traceback as the interpreter prints it (the exception fetched: t, v,
 * tb, stolen): sys.excepthook, with the exception as sys.exc_info() says
 * it meanwhile (as inside an except clause). */
static void report(PyObject *t, PyObject *v, PyObject *tb) {
    PyObject *hook = PySys_GetObject("excepthook");
    PyObject *ot, *ov, *otb;
    PyErr_GetExcInfo(&ot, &ov, &otb);
    Py_XINCREF(t);
    Py_XINCREF(v);
    Py_XINCREF(tb);
    PyErr_SetExcInfo(t, v, tb);
    PyObject *r = hook ? PyObject_CallFunctionObjArgs(hook, t ? t : Py_None, v ? v : Py_None,
                                                      tb ? tb : Py_None, NULL)
                       : NULL;
    if (!r) PyErr_Clear(); /* (as the interpreter: a failing hook prints nothing of ours) */
    Py_XDECREF(r);
    PyErr_SetExcInfo(ot, ov, otb);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
}

/* fn(*args) with no Python caller seen from the frames it runs (args: a
 * tuple, stolen, or NULL: none). */
static PyObject *detached(PyObject *fn, PyObject *args) {
    Py_ssize_t n = args ? PyTuple_GET_SIZE(args) : 0;
    PyObject *all = PyTuple_New(n + 1);
    if (all) {
        Py_INCREF(fn);
        PyTuple_SET_ITEM(all, 0, fn);
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_INCREF(PyTuple_GET_ITEM(args, i));
            PyTuple_SET_ITEM(all, i + 1, PyTuple_GET_ITEM(args, i));
        }
    }
    Py_XDECREF(args);
    PyObject *r = all ? py__call_detached(NULL, all) : NULL;
    Py_XDECREF(all);
    return r;
}

/* Runs the program: its code in glb from no Python caller, as the
 * interpreter runs a script; a module (-m, runpy_name its name; code None)
 * or a folder or zipapp (runpy_name "__main__") as python runs them,
 * through runpy's _run_module_as_main, which finds the module and runs it
 * in sys.modules["__main__"] (glb). The program sees runpy's frames below
 * its own (stack, tracebacks), as under python; runpy's functions are not
 * recorded, what they call is. */
static PyObject *run_code(PyObject *code, PyObject *glb, PyObject *runpy_name) {
    if (!runpy_name) {
        PyObject *ex = py__mod_attr("builtins", "exec");
        PyObject *r = ex ? detached(ex, Py_BuildValue("(OO)", code, glb)) : NULL;
        Py_XDECREF(ex);
        return r;
    }
    PyObject *runpy = PyImport_ImportModule("runpy");
    if (!runpy) return NULL;
    static const char *const fns[] = {"_run_module_as_main", "_run_code", "_get_module_details",
                                      "_get_main_module_details"};
    PyObject *codes = PyTuple_New(4), *main_fn = NULL;
    for (int i = 0; codes && i < 4; i++) {
        PyObject *f = PyObject_GetAttrString(runpy, fns[i]);
        PyObject *c = f ? PyObject_GetAttrString(f, "__code__") : NULL;
        if (!c) Py_CLEAR(codes);
        else PyTuple_SET_ITEM(codes, i, c);
        if (i == 0) main_fn = f;
        else Py_XDECREF(f);
    }
    PyObject *u = codes ? py__unrecorded(NULL, codes) : NULL;
    Py_XDECREF(codes);
    int alter = !is(runpy_name, "__main__");
    PyObject *r = u ? detached(main_fn, Py_BuildValue("(OO)", runpy_name, alter ? Py_True : Py_False))
                    : NULL;
    Py_XDECREF(u);
    Py_XDECREF(main_fn);
    Py_DECREF(runpy);
    return r;
}

/* Runs the target, recording started just before (unless `start` is 0 or
 * -p), and returns its end: what sys.exit was given, as the interpreter
 * takes it, or an interrupt (exceptions are reported as the interpreter
 * would). */
static status_t run_program(PyObject *code, PyObject *glb, PyObject *runpy_name, int start) {
    status_t s = {NULL, 0};
    PyObject *partial = PyDict_GetItemString(R.opts, "partial");
    PyObject *r = NULL;
    if (!start || (partial && PyObject_IsTrue(partial) > 0) || py__rt_enable() == 0)
        r = run_code(code, glb, runpy_name);
    if (r) {
        Py_DECREF(r);
        s.code = PyLong_FromLong(0);
        return s;
    }
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb && v) PyException_SetTraceback(v, tb);
    if (t && PyErr_GivenExceptionMatches(t, PyExc_SystemExit)) {
        PyObject *c = v ? PyObject_GetAttrString(v, "code") : NULL;
        PyErr_Clear();
        if (!c || c == Py_None) {
            Py_XDECREF(c);
            s.code = PyLong_FromLong(0);
        } else if (PyLong_Check(c)) {
            s.code = c;
        } else {
            exit_message(c);
            Py_DECREF(c);
            s.code = PyLong_FromLong(1);
        }
        Py_XDECREF(t);
        Py_XDECREF(v);
        Py_XDECREF(tb);
        return s;
    }
    s.interrupted = t && PyErr_GivenExceptionMatches(t, PyExc_KeyboardInterrupt);
    report(t, v, tb);
    if (!s.interrupted) s.code = PyLong_FromLong(1);
    return s;
}

/* What the interpreter does at exit, while still recording: wait for
 * non-daemon threads, run atexit callbacks. In a frame older than any
 * tracer the program set, not in a function of the profiler's, whose
 * call a tracer (coverage stopping at exit) would see. */
static void run_exit_work(status_t *s) {
    PyObject *th = py__loaded("threading");
    int interrupted = 0;
    if (th) {
        PyObject *fn = PyObject_GetAttrString(th, "_shutdown");
        PyObject *r = fn ? detached(fn, NULL) : NULL;
        Py_XDECREF(r);
        Py_XDECREF(fn);
        PyErr_Clear(); /* (anything, a KeyboardInterrupt too) */
        Py_DECREF(th);
    }
    PyObject *fn = py__mod_attr("atexit", "_run_exitfuncs");
    PyObject *r = fn ? detached(fn, NULL) : NULL;
    Py_XDECREF(fn);
    if (r) {
        Py_DECREF(r);
    } else if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
        interrupted = 1;
    }
    /* (3.8/3.9 raise the last callback's exception again once all have
     * run, each printed; the interpreter ignores it at exit) */
    PyErr_Clear();
    if (interrupted) {
        Py_CLEAR(s->code);
        s->interrupted = 1;
    }
}

/* A failure of the hook during the run (raised once by disable or stop) is
 * reported in one line and the run goes on. */
static void checked(int r) {
    if (r == 0) return;
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (v) py__tellf("tracy: %S\n", v);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    PyErr_Clear();
}

/* ---- the finish ---------------------------------------------------------------------- */

/* The last line: what the file (or the daemon) holds. */
static void summarize(unsigned long long sent, unsigned long long lost) {
    if (R.mode == 'f') return; /* the dumps say where they went */
    if (R.mode == 'o') {
        PyObject *s = py__call_fn("_trace_summary", "(O)", R.out);
        if (!s) PyErr_Clear();
        unsigned long long events, flost;
        unsigned procs;
        if (s && s != Py_None && PyArg_ParseTuple(s, "KIK", &events, &procs, &flost)) {
            char extra[96] = "";
            int k = procs == 1 ? 0 : snprintf(extra, sizeof extra, " from %u processes", procs);
            if (flost) snprintf(extra + k, sizeof extra - (size_t)k, ", %llu lost", flost);
            py__tellf("tracy: trace written to %U (%llu events%s)\n", R.out, events, extra);
        } else {
            char extra[48] = "";
            if (lost) snprintf(extra, sizeof extra, ", %llu lost", lost);
            py__tellf("tracy: trace written to %U (%llu events sent%s)\n", R.out, sent, extra);
        }
        Py_XDECREF(s);
        PyErr_Clear();
        return;
    }
    PyObject *stored = py__call_fn("stored", NULL);
    PyObject *w = stored ? where(R.addr, R.dport) : NULL;
    PyObject *daemon = !w ? NULL
                       : R.mode == 'j' ? PyUnicode_FromFormat(
                                             "the capture of %U (capture-release pid %ld)",
                                             R.out, R.pid)
                                       : PyUnicode_FromFormat("the daemon at %U", w);
    if (daemon && stored == Py_None) {
        py__tellf("tracy: %U did not confirm storing any of the %llu events sent (it may have "
                  "rejected them: see its log)\n", daemon, sent);
    } else if (daemon) {
        unsigned long long n = PyLong_AsUnsignedLongLong(stored);
        char extra[48] = "";
        if (lost) snprintf(extra, sizeof extra, ", %llu lost", lost);
        if (n < sent)
            py__tellf("tracy: %llu of %llu events stored by %U (%llu rejected or lost)\n", n,
                      sent, daemon, sent - n);
        else
            py__tellf("tracy: %llu events stored by %U%s\n", n, daemon, extra);
    }
    Py_XDECREF(daemon);
    Py_XDECREF(w);
    Py_XDECREF(stored);
}

/* hurry: an interrupt during the finish's last part asks the daemon to
 * finish at once. */
static PyObject *hurry_call(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    py__hurry_daemon(R.pid);
    Py_RETURN_NONE;
}

static PyMethodDef g_hurry_def = {"hurry", hurry_call, METH_NOARGS,
                                  "Asks the run's daemon to finish now."};

/* The events handed to the sender and those dropped (the client's). */
static void counts(unsigned long long *sent, unsigned long long *lost) {
    uint64_t s = 0, l = 0;
    lt_client_counts(&s, &l);
    *sent = (unsigned long long)s;
    *lost = (unsigned long long)l;
}

/* The daemon this process owns ends: drained (unless interrupted), then
 * waited for; the rendezvous file removed. -1 with an exception. */
static int end_own_daemon(int interrupted) {
    if (!interrupted) {
        py__drain_daemon(R.pid);
        /* A thread still running may have started multiprocessing's
         * helpers again: connected, they would hold the capture open. */
        py__rt_stop_mp_helpers();
        if (PyErr_Occurred()) return -1;
    }
    int code = 0;
    if (py__wait_daemon(R.pid, interrupted, R.size <= 1 && !R.spread ? R.addr : NULL, &code) < 0)
        return -1;
    py__rv_remove(R.rv, R.pid);
    if (code != 0) py__tellf("tracy: capture-release exited with status %d\n", code);
    return 0;
}

/* The finish's waits: for the run's ranks, the program's children. 1 when
 * interrupted, 0, or -1 with another exception. */
static int finish_waits(void) {
    int r = R.mode == 'o' ? py__wait_for_ranks(R.rv, R.size, R.verbose) : 0;
    if (r == 0) r = py__wait_for_children(R.verbose);
    if (r == 0) return 0;
    if (!PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) return -1;
    PyErr_Clear();
    return 1;
}

/* After the program: stop recording, let the daemon finish, report. An
 * interrupt (Ctrl-C, SIGTERM) while waiting asks the daemon to finish the
 * file now: processes still connected are recorded as stopped. urgent: the
 * program is being ended by a signal; nothing is waited for but the
 * daemon, asked to finish at once (see finish_quietly). 0, or -1 with an
 * exception. */
static int finish(int urgent) {
    checked(py__disable_checked());
    int interrupted = urgent;
    if (!urgent) {
        int w = finish_waits();
        if (w < 0) return -1;
        interrupted = w;
    }
    if (!urgent && R.mode == 'o') {
        PyObject *h = py__c_callable(&g_hurry_def, NULL, "tracy", NULL);
        if (!h) return -1;
        py__rt_signals_hurry(h);
        Py_DECREF(h);
    }
    PyObject *unprofiled = py__rt_take_unprofiled();
    if (!unprofiled) return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(unprofiled); i++) { /* in the trace too */
        PyObject *r = py__call_fn("message", "(N)",
                                          PyUnicode_FromFormat("tracy: %U",
                                                               PyList_GET_ITEM(unprofiled, i)));
        Py_XDECREF(r);
        PyErr_Clear();
    }
    checked(py__stop_checked());
    unsigned long long sent, lost;
    counts(&sent, &lost);
    if (R.mode == 'o' && end_own_daemon(interrupted) < 0) {
        Py_DECREF(unprofiled);
        return -1;
    }
    summarize(sent, lost);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(unprofiled); i++)
        py__tellf("tracy: %U\n", PyList_GET_ITEM(unprofiled, i));
    Py_DECREF(unprofiled);
    PyObject *final = R.mode == 'o' ? R.out : NULL, *gathered = NULL;
    if (R.spread) {
        gathered = urgent ? NULL
                          : py__call_py("tracy._cli", "gather",
                                        Py_BuildValue("(OOO)", R.final, R.spread,
                                                      R.verbose ? Py_True : Py_False));
        if (!gathered && PyErr_Occurred()) return -1;
        final = gathered == Py_None ? NULL : gathered;
    }
    int r = 0;
    if (final && R.report) {
        PyObject *res = py__call_py("tracy._cli", "reports", PyTuple_Pack(1, final));
        r = res ? 0 : -1;
        Py_XDECREF(res);
    }
    Py_XDECREF(gathered);
    return r;
}

/* A fatal signal (SIGTERM, SIGHUP) reached the program: ship what was
 * recorded, have the daemon finish the file now, and die of the signal.
 * Nothing else is waited for: unprofiled, the program would end at once,
 * and its children (pool workers, multiprocessing's resource tracker) may
 * be waiting for it. Those still connected are recorded as stopped. */
static PyObject *finish_quietly(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (finish(1) < 0) PyErr_Clear();
    Py_RETURN_NONE;
}

static PyMethodDef g_finish_def = {"finish_quietly", finish_quietly, METH_NOARGS,
                                   "python -m tracy's finish at a fatal signal."};

/* The program's exit status for sys.exit (a new reference), or, when it
 * ended by an interrupt, the signal raised again so that the parent sees
 * the same end (128 + SIGINT should the process survive it). NULL with an
 * exception. */
static PyObject *die_like(status_t *s) {
    if (!s->interrupted) {
        PyObject *c = s->code;
        s->code = NULL;
        return c;
    }
    static const char *const streams[] = {"stdout", "stderr"};
    for (int i = 0; i < 2; i++) {
        PyObject *f = PySys_GetObject(streams[i]);
        PyObject *r = f ? PyObject_CallMethod(f, "flush", NULL) : NULL;
        if (!r) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_AttributeError, "'NoneType' object has no attribute 'flush'");
            return NULL;
        }
        Py_DECREF(r);
    }
    if (py__rt_die_by(SIGINT) < 0) return NULL;
    return PyLong_FromLong(128 + SIGINT);
}

/* ---- main -------------------------------------------------------------------------- */

/* The run cannot start (the exception set): its line on stderr and the
 * exit status, or -1 to raise it (not an error of the run's own). */
static int start_failed(void) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    int status = -1;
    PyObject *refused = NULL;
    if (t && PyErr_GivenExceptionMatches(t, PyExc_OSError)) {
        py__tellf("tracy: %S\n", v);
        status = 1;
    } else if (t && PyErr_GivenExceptionMatches(t, PyExc_SyntaxError)) {
        /* as the interpreter: the error alone, no frames */
        if (v) PyException_SetTraceback(v, Py_None);
        Py_CLEAR(tb);
        report(t, v, NULL);
        t = v = NULL; /* (report's) */
        status = 1;
    } else if (t && PyErr_GivenExceptionMatches(t, PyExc_Exception) && v &&
               (refused = PyObject_GetAttrString(v, "refused"))) {
        PyObject *usage = PyObject_GetAttrString(v, "usage");
        PyObject *text = usage && PyObject_IsTrue(usage) > 0
                             ? py__call_py("tracy._cli", "usage_head", NULL)
                             : PyUnicode_FromString("");
        if (text) py__tellf("tracy: %S\n%U", v, text);
        Py_XDECREF(text);
        Py_XDECREF(usage);
        status = (int)PyLong_AsLong(refused);
        Py_DECREF(refused);
        PyErr_Clear();
    }
    if (status < 0) {
        PyErr_Clear();
        PyErr_Restore(t, v, tb);
        return -1;
    }
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    return status;
}

/* The start: the command line, the program, the daemon. 0, or -1 with an
 * exception (start_failed says what to do with it); *listened: the run
 * was --listen's, its status in *status. */
static int start(PyObject *argv, PyObject **code, PyObject **glb, PyObject **program,
                 PyObject **runpy_name, PyObject **orig, PyObject **status) {
    if (parse_args(argv) < 0) return -1;
    *orig = plain_orig_argv(argv);
    if (R.script && PyUnicode_GET_LENGTH(R.script) && !is(R.script, "-") &&
        !py__path_isfile(R.script) && !py__path_isdir(R.script))
        return refuse(2, 0, "cannot open %U", R.script);
    if (!(R.out = output_path()) || prepare(code, glb, program) < 0) return -1;
    PyObject *info = list_with(*program, R.args);
    PyObject *r = info ? py__call_fn("set_info", "(OO)", *program, info)
                       : NULL;
    Py_XDECREF(info);
    if (!r) return -1;
    Py_DECREF(r);
    /* a module, folder or zipapp runs through runpy (run_code) */
    PyObject *spec = PyDict_GetItemString(*glb, "__spec__");
    *runpy_name = R.module ? (Py_INCREF(R.module), R.module)
                  : spec && spec != Py_None ? PyUnicode_FromString("__main__")
                                            : NULL;
    PyObject *listen = R.listen && PyUnicode_GET_LENGTH(R.listen)
                           ? (Py_INCREF(R.listen), R.listen)
                           : py__env_view("TRACY_LISTEN");
    if (listen && PyUnicode_GET_LENGTH(listen)) {
        *status = py__call_py("tracy._cli", "run_listening",
                              Py_BuildValue("(OOOO)", listen, *code, *glb,
                                            *runpy_name ? *runpy_name : Py_None));
        Py_DECREF(listen);
        return *status ? 0 : -1;
    }
    Py_XDECREF(listen);
    return PyErr_Occurred() ? -1 : connect_run();
}

/* The run after its start: the program recorded, then the finish. */
static PyObject *run_and_finish(PyObject *code, PyObject *glb, PyObject *program,
                                PyObject *runpy_name, PyObject *orig) {
    PyObject *fq = py__c_callable(&g_finish_def, NULL, "tracy", NULL);
    int ok = fq && py__rt_setup_children_env(R.opts, program) == 0 &&
             py__rt_configure(R.opts) == 0 && py__rt_install_process_hooks(fq, 0) == 0 &&
             (!orig || PySys_SetObject("orig_argv", orig) == 0);
    Py_XDECREF(fq);
    if (!ok) return NULL;
    long me = (long)getpid();
    status_t s = run_program(code, glb, runpy_name, 1);
    run_exit_work(&s);
    if (s.interrupted) { /* (the goodbye names it) */
        PyObject *r = py__call_fn("_end_signal", "(i)", SIGINT);
        if (!r) return NULL;
        Py_DECREF(r);
    }
    if ((long)getpid() != me) {
        /* a child forked by the program (os.fork, not multiprocessing, which
         * ends its children itself) ended by sys.exit or by returning: it
         * ships what it recorded and exits as the interpreter would; the
         * trace is the parent's to finish */
        checked(py__stop_checked());
        return die_like(&s);
    }
    /* From here on the work is the profiler's own: not recorded. Stop
     * multiprocessing's helper processes (resource tracker, fork server),
     * which live until this process exits: they are clients of the capture. */
    checked(py__disable_checked());
    py__rt_stop_mp_helpers();
    py__rt_signals_done();
    if (PyErr_Occurred() || finish(0) < 0) {
        Py_XDECREF(s.code);
        return NULL;
    }
    if (!s.interrupted) py__rt_signals_quiet();
    return die_like(&s);
}

static PyObject *m_main(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    py__keep_stderr();
    py__rt_init();
    if (!g_unix && !(g_unix = PyUnicode_InternFromString("unix:"))) return NULL;
    PyObject *atexit_mod = PyImport_ImportModule("atexit");
    PyObject *sys_argv = PySys_GetObject("argv");
    if (!atexit_mod || !sys_argv || !PyList_Check(sys_argv)) {
        Py_XDECREF(atexit_mod);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "sys.argv is not a list");
        return NULL;
    }
    Py_DECREF(atexit_mod);
    PyObject *argv = PyList_GetSlice(sys_argv, 1, PyList_GET_SIZE(sys_argv));
    PyObject *code = NULL, *glb = NULL, *program = NULL, *runpy_name = NULL, *orig = NULL;
    PyObject *status = NULL;
    int r = argv ? start(argv, &code, &glb, &program, &runpy_name, &orig, &status) : -1;
    if (r < 0 && (r = start_failed()) >= 0) status = PyLong_FromLong(r);
    else if (r == 0 && !status) status = run_and_finish(code, glb, program, runpy_name, orig);
    Py_XDECREF(code);
    Py_XDECREF(program);
    Py_XDECREF(runpy_name);
    Py_XDECREF(orig);
    Py_XDECREF(argv);
    if (!status) return NULL;
    PyErr_SetObject(PyExc_SystemExit, status);
    Py_DECREF(status);
    return NULL;
}

/* ---- Python-callable, for tracy/_cli.py ----------------------------------------- */

static PyObject *m_set_path0(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *entry;
    int needed = 0;
    if (!PyArg_ParseTuple(args, "U|p", &entry, &needed)) return NULL;
    if (set_path0(entry, needed) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *m_new_main(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    PyObject *loader, *spec = Py_None, *package = Py_None;
    if (!PyArg_ParseTuple(args, "O|OO", &loader, &spec, &package)) return NULL;
    PyObject *d = new_main(loader, spec, package, kw);
    Py_XINCREF(d);
    return d;
}

static PyObject *m_run_unprofiled(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *code, *glb, *runpy_name;
    if (!PyArg_ParseTuple(args, "OO!O", &code, &PyDict_Type, &glb, &runpy_name)) return NULL;
    if (!R.opts && !(R.opts = py__rt_defaults())) return NULL;
    status_t s = run_program(code, glb, runpy_name == Py_None ? NULL : runpy_name, 0);
    return die_like(&s);
}

#define RUN_FN(name, fn, flags, doc) {name, (PyCFunction)(void (*)(void))fn, flags, PyDoc_STR(doc)}
PyMethodDef py__run_methods[] = {
    RUN_FN("_main", m_main, METH_NOARGS,
           "_main()\n--\n\n"
           "python -m tracy with sys.argv[1:] (tracy(1)): raises SystemExit with the\n"
           "program's exit status, or ends the process by the signal that ended it."),
    RUN_FN("_set_path0", m_set_path0, METH_VARARGS,
           "_set_path0(entry, needed=False)\n--\n\n"
           "sys.path[0] as python sets it for the program (-P: inserted when needed)."),
    RUN_FN("_new_main", m_new_main, METH_VARARGS | METH_KEYWORDS,
           "_new_main(loader, spec=None, package=None, **names) -> dict\n--\n\n"
           "A new sys.modules['__main__'] with the interpreter's names, then names."),
    RUN_FN("_run_unprofiled", m_run_unprofiled, METH_VARARGS,
           "_run_unprofiled(code, globals, runpy_name) -> status\n--\n\n"
           "Runs the program as python -m tracy does, not recorded (--listen)."),
    {NULL, NULL, 0, NULL}};
