/* rundaemon.c -- the capture of a run in C (what tracy/_capture.py did on
 * every run): the profiler's lines on stderr, the job a process belongs
 * to, the rendezvous file in which the processes started together (MPI
 * ranks, several launches by one parent) meet, the daemon started for the
 * run (capture-release), the waits of its end. tracy/_capture.py keeps
 * the rest (the toolkit's programs, the daemon's wait after its first half
 * second) and its names for these.
 *
 * The rendezvous: a small file, locked with lockf, in the user's private
 * run folder, keyed by the trace path, naming the daemon that writes the
 * trace; the first process of a run starts the daemon and writes where it
 * listens there, the others join it; another run that would write the same
 * trace is refused. It is trusted only as a regular file of this user that
 * no one else may write, opened without following a link; one that is not
 * leaves the run a daemon of its own, with no one to count. */
#include "pypath.h"
#include "procs.h" /* (after Python.h, which sets the features) */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- the environment as the program sees it ------------------------------- */

/* The environment as the program sees it (os.environ), for a few look-ups
 * in a row: os.environ (a new reference) and its bytes dict (_data,
 * borrowed from it), or NULL when it has none. Nothing is kept from one
 * use to the next: a reference held past the program's end would keep
 * os's module alive into the interpreter's finish, which then costs more. */
typedef struct {
    PyObject *env, *data;
} env_view;

/* 0, or -1 with an exception. */
static int view_open(env_view *v) {
    v->data = NULL;
    v->env = py__mod_attr("os", "environ");
    if (!v->env) return -1;
    PyObject *data = PyObject_GetAttr(v->env, py__name("_data"));
    if (!data) PyErr_Clear();
    Py_XDECREF(data); /* (os.environ holds it) */
    v->data = data && PyDict_CheckExact(data) ? data : NULL;
    return 0;
}

static void view_close(env_view *v) {
    Py_CLEAR(v->env);
}

/* name's value (a new str), or NULL: none (or an exception). */
static PyObject *view_get(env_view *v, const char *name) {
    if (!v->data) {
        PyObject *r = PyObject_CallMethod(v->env, "get", "s", name);
        if (r == Py_None) Py_CLEAR(r);
        return r;
    }
    PyObject *key = PyBytes_FromString(name);
    PyObject *b = key ? PyDict_GetItemWithError(v->data, key) : NULL;
    Py_XDECREF(key);
    if (b && PyBytes_Check(b))
        return PyUnicode_DecodeFSDefaultAndSize(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b));
    if (b && PyUnicode_Check(b)) {
        Py_INCREF(b);
        return b;
    }
    return NULL;
}

PyObject *py__env_view(const char *name) {
    env_view v;
    if (view_open(&v) < 0) return NULL;
    PyObject *r = view_get(&v, name);
    view_close(&v);
    return r;
}

/* ---- the profiler's lines ------------------------------------------------- */

static struct {
    int known;
    dev_t dev;
    ino_t ino;
} g_stderr;

void py__keep_stderr(void) {
    struct stat st;
    if (fstat(2, &st) < 0) return;
    g_stderr.known = 1;
    g_stderr.dev = st.st_dev;
    g_stderr.ino = st.st_ino;
}

static int stderr_moved(void) {
    struct stat st;
    if (!g_stderr.known) return 0;
    if (fstat(2, &st) < 0) return 1;
    return st.st_dev != g_stderr.dev || st.st_ino != g_stderr.ino;
}

void py__tell(PyObject *text) {
    if (!text) {
        PyErr_Clear();
        return;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *f = PySys_GetObject("__stderr__");
    if (f && f != Py_None && !stderr_moved()) {
        /* In stderr's encoding, straight to descriptor 2 after what the
         * stream holds: a KeyboardInterrupt raised inside the stream's
         * flush (Ctrl-C pressed again) can leave the text in its buffer,
         * written once more by the next message. */
        PyObject *enc = PyObject_GetAttrString(f, "encoding");
        const char *e = enc && PyUnicode_Check(enc) ? PyUnicode_AsUTF8(enc) : NULL;
        PyObject *b = PyUnicode_AsEncodedString(text, e ? e : "utf-8", "backslashreplace");
        PyObject *r = PyObject_CallMethod(f, "flush", NULL);
        Py_XDECREF(r);
        PyErr_Clear();
        for (Py_ssize_t at = 0, n = b ? PyBytes_GET_SIZE(b) : 0; at < n;) {
            ssize_t w = write(2, PyBytes_AS_STRING(b) + at, (size_t)(n - at));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) break;
            at += w;
        }
        Py_XDECREF(b);
        Py_XDECREF(enc);
        PyErr_Clear();
    }
    PyErr_Restore(type, value, tb);
}

void py__tellf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PyObject *text = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    py__tell(text);
    Py_XDECREF(text);
}

/* "tracy: MSG\n" when verbose. */
static void say(int verbose, const char *fmt, ...) {
    if (!verbose) return;
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg) py__tellf("tracy: %U\n", msg);
    Py_XDECREF(msg);
    PyErr_Clear();
}

PyObject *py__name(const char *s) {
    static struct {
        const char *s;
        PyObject *o;
    } cache[96];
    static int n;
    for (int i = 0; i < n; i++)
        if (cache[i].s == s) return cache[i].o;
    PyObject *o = PyUnicode_InternFromString(s); /* (kept: a str refers to nothing) */
    if (o && n < (int)(sizeof cache / sizeof *cache)) {
        cache[n].s = s;
        cache[n++].o = o;
    }
    return o;
}

PyObject *py__call_fn(const char *name, const char *fmt, ...) {
    PyObject *args;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        args = Py_VaBuildValue(fmt, ap);
        va_end(ap);
        if (args && !PyTuple_Check(args)) {
            PyObject *t = PyTuple_Pack(1, args);
            Py_DECREF(args);
            args = t;
        }
    } else {
        args = PyTuple_New(0);
    }
    PyObject *r = args ? py__call_def(name, args, NULL) : NULL;
    Py_XDECREF(args);
    return r;
}

int py__exit_code(int status) {
    return WIFSIGNALED(status) ? -WTERMSIG(status) : WEXITSTATUS(status);
}

/* ---- waits that hold the GIL ------------------------------------------------ */

/* Sleeps `s` seconds without letting the program's threads run (as they do
 * not once plain Python has ended its program); a signal's Python handler
 * runs meanwhile. 0, or -1 with the exception a handler raised. */
static int nap(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        if (PyErr_CheckSignals() < 0) return -1;
    return PyErr_CheckSignals();
}

static double monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* waitpid(pid, &st, flags) retried when a signal interrupts it (its
 * handler run first): the pid, 0, or -1 with errno (ECHILD) and no
 * exception, or -2 with the exception a handler raised. */
static int wait_for(long pid, int *st, int flags) {
    for (;;) {
        pid_t r = waitpid((pid_t)pid, st, flags);
        if (r >= 0 || errno != EINTR) return (int)r;
        if (PyErr_CheckSignals() < 0) return -2;
    }
}

/* ---- the job ---------------------------------------------------------------- */

/* The first of these environment variables (os.environ) that holds a
 * number (ASCII digits), in *v: 1, 0 when none does, -1 with an exception. */
static int env_int(env_view *view, const char *const *names, long *v) {
    for (; *names; names++) {
        PyObject *s = view_get(view, *names);
        if (!s) {
            if (PyErr_Occurred()) return -1;
            continue;
        }
        Py_ssize_t n = PyUnicode_GET_LENGTH(s);
        int digits = n > 0;
        for (Py_ssize_t i = 0; digits && i < n; i++) {
            Py_UCS4 c = PyUnicode_READ_CHAR(s, i);
            digits = c >= '0' && c <= '9';
        }
        if (digits) {
            PyObject *i = PyLong_FromUnicodeObject(s, 10);
            Py_DECREF(s);
            if (!i) return -1;
            *v = PyLong_AsLong(i);
            Py_DECREF(i);
            return PyErr_Occurred() ? -1 : 1;
        }
        Py_DECREF(s);
    }
    return 0;
}

static const char *const g_size_vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                          "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", NULL};
static const char *const g_rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                          "SLURM_PROCID", NULL};

/* (job key, processes expected on this host or 0, rank or None): a new
 * tuple, or NULL with an exception. Processes of one launcher (mpirun's
 * daemon, a shell loop) share a parent. */
static PyObject *job_in(env_view *v) {
    long size = 0, rank = 0;
    int has_size = env_int(v, g_size_vars, &size), has_rank = env_int(v, g_rank_vars, &rank);
    if (has_size < 0 || has_rank < 0) return NULL;
    PyObject *r = has_rank ? PyLong_FromLong(rank) : (Py_INCREF(Py_None), Py_None);
    if (!r) return NULL;
    PyObject *key = NULL;
    static const char *const ns[] = {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"};
    for (int i = 0; i < 2 && !key && !PyErr_Occurred(); i++) {
        PyObject *val = view_get(v, ns[i]);
        if (val && PyUnicode_GET_LENGTH(val)) key = PyUnicode_FromFormat("%s=%U", ns[i], val);
        Py_XDECREF(val);
    }
    PyObject *slurm = key || PyErr_Occurred() ? NULL : view_get(v, "SLURM_JOB_ID");
    if (slurm && PyUnicode_GET_LENGTH(slurm) && size) {
        PyObject *step = view_get(v, "SLURM_STEP_ID");
        if (!step && !PyErr_Occurred()) step = PyUnicode_FromString(""); /* (`or ""`) */
        if (step) key = PyUnicode_FromFormat("slurm=%U.%U", slurm, step);
        Py_XDECREF(step);
    }
    Py_XDECREF(slurm);
    if (!key && !PyErr_Occurred()) key = PyUnicode_FromFormat("ppid=%ld", (long)getppid());
    PyObject *out = key ? Py_BuildValue("(OlO)", key, size, r) : NULL;
    Py_XDECREF(key);
    Py_DECREF(r);
    return out;
}

static PyObject *job(void) {
    env_view v;
    if (view_open(&v) < 0) return NULL;
    PyObject *r = job_in(&v);
    view_close(&v);
    return r;
}

PyObject *py__spread(void) {
    static const char *const world_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE",
                                             "SLURM_NTASKS", NULL};
    static const char *const node_vars[] = {"SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES",
                                            "SLURM_NNODES", NULL};
    env_view v;
    if (view_open(&v) < 0) return NULL;
    PyObject *j = job_in(&v);
    long world = 0, nodes = 0, local = j ? PyLong_AsLong(PyTuple_GET_ITEM(j, 1)) : 0;
    int bad = !j || env_int(&v, world_vars, &world) < 0 || env_int(&v, node_vars, &nodes) < 0;
    view_close(&v);
    if (bad) {
        Py_XDECREF(j);
        return NULL;
    }
    int several = (world && local && world > local) || nodes > 1;
    PyObject *key = PyTuple_GET_ITEM(j, 0), *rank = PyTuple_GET_ITEM(j, 2);
    PyObject *ppid = PyUnicode_FromString("ppid=");
    int by_parent = ppid ? PyUnicode_Tailmatch(key, ppid, 0, PY_SSIZE_T_MAX, -1) == 1 : 1;
    Py_XDECREF(ppid);
    PyObject *out = !several || !world || rank == Py_None || by_parent
                        ? (Py_INCREF(Py_None), Py_None)
                        : Py_BuildValue("(OlO)", key, world, rank);
    Py_DECREF(j);
    return out;
}

/* ---- the run folder and the rendezvous file -------------------------------- */

/* This user's private run folder (a new str), or NULL with OSError. */
static PyObject *rundir(void) {
    PyObject *d = py__call_fn("_rundir", NULL);
    if (d == Py_None) {
        Py_DECREF(d);
        PyErr_SetString(PyExc_OSError, "no private run folder for the capture's socket");
        return NULL;
    }
    return d;
}

PyObject *py__daemon_socket(long port) {
    PyObject *d = rundir();
    PyObject *name = d ? PyUnicode_FromFormat("daemon-%ld.sock", port) : NULL;
    PyObject *p = name ? py__path_join(d, name) : NULL;
    Py_XDECREF(name);
    Py_XDECREF(d);
    return p;
}

/* An OSError marked `untrusted` (a rendezvous file another user could have
 * made or changed), set; returns -1. */
static int untrusted(PyObject *msg) {
    PyObject *e = msg ? PyObject_CallFunctionObjArgs(PyExc_OSError, msg, NULL) : NULL;
    Py_XDECREF(msg);
    if (!e) return -1;
    if (PyObject_SetAttrString(e, "untrusted", Py_True) == 0)
        PyErr_SetObject((PyObject *)Py_TYPE(e), e);
    Py_DECREF(e);
    return -1;
}

static int is_untrusted(void) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *u = value ? PyObject_GetAttrString(value, "untrusted") : NULL;
    int r = u && PyObject_IsTrue(u) > 0;
    Py_XDECREF(u);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return r;
}

/* lockf(fd, cmd) retried on EINTR (a handler run first): 0, or -1 with
 * errno (no exception), or -2 with the handler's exception. */
static int lock_fd(int fd, int cmd) {
    for (;;) {
        if (lockf(fd, cmd, 0) == 0) return 0;
        if (errno != EINTR) return -1;
        if (PyErr_CheckSignals() < 0) return -2;
    }
}

/* Opens and locks the rendezvous file `path` (only the owner's first call
 * creates it): the descriptor, or -1 with an exception (OSError: gone, the
 * owner has finished; marked untrusted when it is not this user's
 * private file). */
static int rv_lock(PyObject *path, int create) {
    PyObject *b = py__fsenc(path);
    if (!b) return -1;
    const char *p = PyBytes_AS_STRING(b);
    int fd = open(p, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (create ? O_CREAT : 0), 0600);
    if (fd < 0) {
        int e = errno;
        struct stat st;
        int owned = (e == EPERM || e == EACCES) && lstat(p, &st) == 0;
        Py_DECREF(b);
        if (e == ELOOP) return untrusted(PyUnicode_FromFormat("%U is a symbolic link", path));
        if (owned)
            return untrusted(PyUnicode_FromFormat("%U is owned by uid %ld", path, (long)st.st_uid));
        errno = e;
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
        return -1;
    }
    Py_DECREF(b);
    struct stat st;
    if (fstat(fd, &st) < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        close(fd);
        return -1;
    }
    char mode[64]; /* (PyUnicode_FromFormat has no %o) */
    snprintf(mode, sizeof mode, "can be written by other users (mode %03o)",
             (unsigned)(st.st_mode & 0777));
    PyObject *why = !S_ISREG(st.st_mode) ? PyUnicode_FromString("is not a regular file")
                    : st.st_uid != geteuid()
                        ? PyUnicode_FromFormat("is owned by uid %ld", (long)st.st_uid)
                    : (st.st_mode & 022) ? PyUnicode_FromString(mode)
                                         : NULL;
    if (why) {
        close(fd);
        int r = untrusted(PyUnicode_FromFormat("%U %U", path, why));
        Py_DECREF(why);
        return r;
    }
    int r = lock_fd(fd, F_LOCK);
    if (r < 0) {
        if (r == -1) PyErr_SetFromErrno(PyExc_OSError);
        close(fd);
        return -1;
    }
    return fd;
}

/* The file's records (a new dict of str), or NULL with an exception. */
static PyObject *rv_read(int fd) {
    if (lseek(fd, 0, SEEK_SET) < 0) return PyErr_SetFromErrno(PyExc_OSError);
    PyObject *data = PyBytes_FromStringAndSize(NULL, 0);
    char buf[4096];
    while (data) {
        ssize_t k = read(fd, buf, sizeof buf);
        if (k < 0 && errno == EINTR) {
            if (PyErr_CheckSignals() < 0) Py_CLEAR(data);
            continue;
        }
        if (k < 0) {
            PyErr_SetFromErrno(PyExc_OSError);
            Py_CLEAR(data);
        }
        if (k <= 0) break;
        PyBytes_ConcatAndDel(&data, PyBytes_FromStringAndSize(buf, k));
    }
    if (!data) return NULL;
    PyObject *text = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data),
                                          "replace");
    Py_DECREF(data);
    PyObject *lines = text ? PyUnicode_Splitlines(text, 0) : NULL;
    Py_XDECREF(text);
    PyObject *rec = lines ? PyDict_New() : NULL;
    for (Py_ssize_t i = 0; rec && i < PyList_GET_SIZE(lines); i++) {
        PyObject *line = PyList_GET_ITEM(lines, i); /* line.partition("=") */
        Py_ssize_t n = PyUnicode_GET_LENGTH(line), eq = PyUnicode_FindChar(line, '=', 0, n, 1);
        PyObject *k = eq >= 0 ? PyUnicode_Substring(line, 0, eq) : (Py_INCREF(line), line);
        PyObject *v = eq >= 0 ? PyUnicode_Substring(line, eq + 1, n) : PyUnicode_FromString("");
        if (!k || !v || PyDict_SetItem(rec, k, v) < 0) Py_CLEAR(rec);
        Py_XDECREF(k);
        Py_XDECREF(v);
    }
    Py_XDECREF(lines);
    return rec;
}

/* Replaces the file's records by rec's ("k=v" lines). 0, or -1 with an
 * exception. */
static int rv_write(int fd, PyObject *rec) {
    PyObject *parts = PyList_New(0), *k, *v;
    Py_ssize_t pos = 0;
    while (parts && PyDict_Next(rec, &pos, &k, &v)) {
        PyObject *line = PyUnicode_FromFormat("%S=%S\n", k, v);
        if (!line || PyList_Append(parts, line) < 0) Py_CLEAR(parts);
        Py_XDECREF(line);
    }
    PyObject *empty = parts ? PyUnicode_FromString("") : NULL;
    PyObject *text = empty ? PyUnicode_Join(empty, parts) : NULL;
    PyObject *data = text ? PyUnicode_AsUTF8String(text) : NULL;
    Py_XDECREF(text);
    Py_XDECREF(empty);
    Py_XDECREF(parts);
    if (!data) return -1;
    ssize_t w = -1;
    if (ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0)
        while ((w = write(fd, PyBytes_AS_STRING(data), (size_t)PyBytes_GET_SIZE(data))) < 0 &&
               errno == EINTR) {}
    Py_DECREF(data);
    if (w < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return 0;
}

/* rec[key] == str(n). */
static int rec_is(PyObject *rec, const char *key, long n) {
    PyObject *v = PyDict_GetItemString(rec, key);
    PyObject *s = v ? PyUnicode_FromFormat("%ld", n) : NULL;
    int r = s && PyUnicode_Compare(v, s) == 0;
    Py_XDECREF(s);
    PyErr_Clear();
    return r;
}

/* int(rec.get(key, dflt) or dflt): -1 with an exception (ValueError). */
static int rec_int(PyObject *rec, const char *key, const char *dflt, long *out) {
    PyObject *v = PyDict_GetItemString(rec, key);
    PyObject *s = v && PyUnicode_GET_LENGTH(v) ? (Py_INCREF(v), v) : PyUnicode_FromString(dflt);
    PyObject *i = s ? PyLong_FromUnicodeObject(s, 10) : NULL;
    Py_XDECREF(s);
    if (!i) return -1;
    *out = PyLong_AsLong(i);
    Py_DECREF(i);
    return PyErr_Occurred() ? -1 : 0;
}

void py__rv_count_in(PyObject *rv, long daemon_pid) {
    int fd = rv ? rv_lock(rv, 0) : -1;
    if (fd < 0) {
        PyErr_Clear();
        return;
    }
    PyObject *rec = rv_read(fd);
    long joined = 0;
    if (rec && rec_is(rec, "pid", daemon_pid) && rec_int(rec, "joined", "1", &joined) == 0) {
        PyObject *n = PyUnicode_FromFormat("%ld", joined + 1);
        if (n && PyDict_SetItemString(rec, "joined", n) == 0) (void)rv_write(fd, rec);
        Py_XDECREF(n);
    }
    Py_XDECREF(rec);
    close(fd);
    PyErr_Clear();
}

long py__rv_joined(PyObject *rv) {
    if (!rv) return 1;
    int fd = rv_lock(rv, 0);
    if (fd < 0) {
        PyErr_Clear();
        return 0;
    }
    PyObject *rec = rv_read(fd);
    long n = 0;
    if (!rec || rec_int(rec, "joined", "0", &n) < 0) n = 0;
    Py_XDECREF(rec);
    close(fd);
    PyErr_Clear();
    return n;
}

void py__rv_remove(PyObject *rv, long daemon_pid) {
    int fd = rv ? rv_lock(rv, 0) : -1;
    if (fd < 0) {
        PyErr_Clear();
        return;
    }
    PyObject *rec = rv_read(fd);
    PyObject *b = rec && rec_is(rec, "pid", daemon_pid) ? py__fsenc(rv) : NULL;
    if (b) unlink(PyBytes_AS_STRING(b));
    Py_XDECREF(b);
    Py_XDECREF(rec);
    close(fd);
    PyErr_Clear();
}

/* The whole file at path (a new bytes object), or NULL (no exception). */
static PyObject *slurp(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    PyObject *data = PyBytes_FromStringAndSize(NULL, 0);
    char buf[4096];
    ssize_t k = 0;
    while (data && ((k = read(fd, buf, sizeof buf)) > 0 || (k < 0 && errno == EINTR)))
        if (k > 0) PyBytes_ConcatAndDel(&data, PyBytes_FromStringAndSize(buf, k));
    if (k < 0) Py_CLEAR(data);
    close(fd);
    PyErr_Clear();
    return data;
}

/* Whether pid is still a capture-release of this user writing out (a file
 * left by a process that was killed may name a pid used again since). The
 * user is what decides: anyone can name a process capture-release and
 * give it any arguments. */
static int alive(long pid, PyObject *out) {
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%ld", pid);
    if (stat(path, &st) < 0 || st.st_uid != geteuid()) return 0;
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    PyObject *argv = slurp(path), *want = argv ? py__fsenc(out) : NULL;
    int ok = 0;
    if (want) {
        const char *p = PyBytes_AS_STRING(argv), *end = p + PyBytes_GET_SIZE(argv);
        const char *slash = memrchr(p, '/', strnlen(p, (size_t)(end - p)));
        ok = strncmp(slash ? slash + 1 : p, "capture-release", 15) == 0;
        int found = 0;
        for (const char *a = p; ok && !found && a <= end;) { /* argv: split on NUL */
            const char *z = memchr(a, 0, (size_t)(end - a));
            size_t n = z ? (size_t)(z - a) : (size_t)(end - a);
            found = n == (size_t)PyBytes_GET_SIZE(want) && memcmp(a, PyBytes_AS_STRING(want), n) == 0;
            a += n + 1;
        }
        ok = ok && found;
    }
    Py_XDECREF(want);
    Py_XDECREF(argv);
    PyErr_Clear();
    return ok;
}

#define STALE_AGE_S 60

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* An old, unlocked file of this user: lstat says so. */
static int stale(const char *path, double now) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
           now - ((double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9) >= STALE_AGE_S;
}

/* int(s[a:b]) as Python reads it: 1 with *v, 0 when it is not a number. */
static int int_of(const char *s, size_t n, long *v) {
    PyObject *t = PyUnicode_DecodeFSDefaultAndSize(s, (Py_ssize_t)n);
    PyObject *i = t ? PyLong_FromUnicodeObject(t, 10) : NULL;
    Py_XDECREF(t);
    if (i) *v = PyLong_AsLong(i);
    Py_XDECREF(i);
    int ok = i && !PyErr_Occurred();
    PyErr_Clear();
    return ok;
}

/* Removes the notes file `name` of d (_runtime.take_unprofiled) of a run
 * killed before it read it: this user's, older than a minute, whose
 * process is gone. */
static void sweep_note(const char *d, const char *name, double now) {
    size_t n = strlen(name);
    long pid;
    char path[PATH_MAX], proc[64];
    if (!int_of(name + 11, n - 15, &pid) ||
        (size_t)snprintf(path, sizeof path, "%s/%s", d, name) >= sizeof path)
        return;
    snprintf(proc, sizeof proc, "/proc/%ld", pid);
    if (stale(path, now) && access(proc, F_OK) != 0) unlink(path);
}

/* Removes the rendezvous file `path` of a run killed before it finished:
 * this user's, older than a minute, unlocked (the lock is taken without
 * waiting: a live run is never held up), whose daemon is gone. */
static void sweep_rv(const char *path, double now) {
    if (!stale(path, now)) return;
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return;
    long pid;
    PyObject *rec = lock_fd(fd, F_TLOCK) == 0 ? rv_read(fd) : NULL;
    PyObject *out = rec ? PyDict_GetItemString(rec, "out") : NULL;
    PyObject *empty = rec && !out ? PyUnicode_FromString("") : NULL;
    if (rec && rec_int(rec, "pid", "0", &pid) == 0 && (out || empty) &&
        !alive(pid, out ? out : empty))
        unlink(path);
    Py_XDECREF(empty);
    Py_XDECREF(rec);
    PyErr_Clear();
    close(fd);
}

static int has_affixes(const char *s, const char *pre, const char *suf) {
    size_t n = strlen(s), np = strlen(pre), ns = strlen(suf);
    return n >= np + ns && strncmp(s, pre, np) == 0 && strcmp(s + n - ns, suf) == 0;
}

/* The run folder's leftovers (the notes files first, then the rendezvous
 * files but `keep`, the owner's). */
static void sweep_stale(PyObject *keep) {
    PyObject *kb = py__fsenc(keep);
    if (!kb) {
        PyErr_Clear();
        return;
    }
    const char *k = PyBytes_AS_STRING(kb);
    const char *slash = strrchr(k, '/');
    char d[PATH_MAX];
    snprintf(d, sizeof d, "%.*s", slash ? (int)(slash - k) : 0, k);
    double now = now_s();
    for (int pass = 0; pass < 2; pass++) {
        DIR *dir = opendir(d);
        struct dirent *e;
        while (dir && (e = readdir(dir))) {
            char path[PATH_MAX];
            if (pass == 0 && has_affixes(e->d_name, "unprofiled-", ".txt"))
                sweep_note(d, e->d_name, now);
            else if (pass == 1 && has_affixes(e->d_name, "run-", ".run") &&
                     (size_t)snprintf(path, sizeof path, "%s/%s", d, e->d_name) < sizeof path &&
                     strcmp(path, k) != 0)
                sweep_rv(path, now);
        }
        if (dir) closedir(dir);
    }
    Py_DECREF(kb);
}

/* ---- the toolkit's programs --------------------------------------------------- */

static int executable_file(PyObject *p) {
    PyObject *b = py__fsenc(p);
    int ok = b && access(PyBytes_AS_STRING(b), X_OK) == 0 && !py__path_isdir(p);
    Py_XDECREF(b);
    PyErr_Clear();
    return ok;
}

/* join(a, b) then (when c) join(.., c): a new str, or NULL. */
static PyObject *join3(PyObject *a, const char *b, const char *c) {
    PyObject *sb = PyUnicode_DecodeFSDefault(b);
    PyObject *j = sb ? py__path_join(a, sb) : NULL;
    Py_XDECREF(sb);
    if (!j || !c) return j;
    PyObject *sc = PyUnicode_DecodeFSDefault(c);
    PyObject *k = sc ? py__path_join(j, sc) : NULL;
    Py_XDECREF(sc);
    Py_DECREF(j);
    return k;
}

/* find_tool(prog, env_var): a toolkit program: $env_var, a bin/ next to the
 * package (build tree, virtual environment, install prefix: up to
 * <prefix>/lib/pythonX.Y/site-packages/tracy), PATH. A new str, or NULL
 * (an exception set only on failure). */
static PyObject *find_tool(const char *prog, const char *env_var) {
    PyObject *given = env_var ? py__env_view(env_var) : NULL;
    if (given && PyUnicode_GET_LENGTH(given)) return given;
    Py_XDECREF(given);
    if (PyErr_Occurred()) return NULL;
    PyObject *d = py__pkg_dir();
    if (!d) return NULL;
    Py_INCREF(d);
    for (int i = 0; i < 4 && d; i++) {
        Py_SETREF(d, py__path_dirname(d));
        PyObject *p = d ? join3(d, "bin", prog) : NULL;
        if (p && executable_file(p)) {
            Py_DECREF(d);
            return p;
        }
        Py_XDECREF(p);
    }
    Py_XDECREF(d);
    if (PyErr_Occurred()) return NULL;
    PyObject *path = py__env_view("PATH"); /* os.environ.get("PATH", "") */
    if (!path && !PyErr_Occurred()) path = PyUnicode_FromString("");
    PyObject *colon = path ? PyUnicode_FromString(":") : NULL;
    PyObject *dirs = colon ? PyUnicode_Split(path, colon, -1) : NULL;
    Py_XDECREF(colon);
    Py_XDECREF(path);
    PyObject *dot = PyUnicode_FromString(".");
    for (Py_ssize_t i = 0; dirs && dot && i < PyList_GET_SIZE(dirs); i++) {
        PyObject *e = PyList_GET_ITEM(dirs, i);
        PyObject *p = join3(PyUnicode_GET_LENGTH(e) ? e : dot, prog, NULL);
        if (p && executable_file(p)) {
            Py_DECREF(dirs);
            Py_DECREF(dot);
            return p;
        }
        Py_XDECREF(p);
    }
    Py_XDECREF(dirs);
    Py_XDECREF(dot);
    return NULL;
}

/* The environment os.environ holds, as the "K=V" strings posix_spawn
 * takes (one allocation: free it), or NULL with an exception (ValueError
 * for a name os.posix_spawn refuses). */
static char **view_envp(void) {
    env_view v;
    if (view_open(&v) < 0) return NULL;
    if (!v.data) {
        view_close(&v);
        PyErr_SetString(PyExc_RuntimeError, "os.environ has no _data");
        return NULL;
    }
    Py_ssize_t n = PyDict_GET_SIZE(v.data), pos = 0, i = 0;
    size_t bytes = 0;
    PyObject *k, *val;
    while (PyDict_Next(v.data, &pos, &k, &val)) {
        if (!PyBytes_Check(k) || !PyBytes_Check(val) || PyBytes_GET_SIZE(k) == 0 ||
            memchr(PyBytes_AS_STRING(k), '=', (size_t)PyBytes_GET_SIZE(k))) {
            view_close(&v);
            PyErr_SetString(PyExc_ValueError, "illegal environment variable name");
            return NULL;
        }
        bytes += (size_t)PyBytes_GET_SIZE(k) + (size_t)PyBytes_GET_SIZE(val) + 2;
    }
    char **envp = PyMem_Malloc(((size_t)n + 1) * sizeof *envp + bytes);
    char *p = envp ? (char *)(envp + n + 1) : NULL;
    for (pos = 0; envp && PyDict_Next(v.data, &pos, &k, &val) && i < n; i++) {
        size_t kn = (size_t)PyBytes_GET_SIZE(k), vn = (size_t)PyBytes_GET_SIZE(val);
        envp[i] = p;
        memcpy(p, PyBytes_AS_STRING(k), kn);
        p[kn] = '=';
        memcpy(p + kn + 1, PyBytes_AS_STRING(val), vn + 1);
        p += kn + vn + 2;
    }
    if (envp) envp[i] = NULL;
    else PyErr_NoMemory();
    view_close(&v);
    return envp;
}

/* posix_spawn of capture-release writing `out`, its standard output the
 * pipe's end wfd (rfd closed), in a process group of its own: its pid,
 * or -1 with the OSError os.posix_spawn raises. */
static long spawn_daemon(PyObject *exe, PyObject *out, int rfd, int wfd) {
    PyObject *eb = py__fsenc(exe), *ob = eb ? py__fsenc(out) : NULL;
    char **envp = ob ? view_envp() : NULL;
    if (!envp) {
        Py_XDECREF(eb);
        Py_XDECREF(ob);
        return -1;
    }
    char *argv[] = {PyBytes_AS_STRING(eb), "-o", PyBytes_AS_STRING(ob), "-f", "-p", "0", "-q",
                    NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, wfd, 1);
    posix_spawn_file_actions_addclose(&fa, rfd);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    pid_t pid;
    int err = posix_spawn(&pid, argv[0], &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    PyMem_Free(envp);
    Py_DECREF(eb);
    Py_DECREF(ob);
    if (err) {
        errno = err;
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, exe);
        return -1;
    }
    return (long)pid;
}

/* The daemon's first line (its port) from rfd, until a newline or its end:
 * a new bytes object, or NULL with the exception a signal's handler
 * raised meanwhile. */
static PyObject *read_line(int rfd) {
    char buf[256];
    PyObject *got = PyBytes_FromStringAndSize(NULL, 0);
    while (got && !memchr(PyBytes_AS_STRING(got), '\n', (size_t)PyBytes_GET_SIZE(got))) {
        ssize_t k = read(rfd, buf, sizeof buf);
        if (k < 0 && errno == EINTR) {
            if (PyErr_CheckSignals() < 0) Py_CLEAR(got);
            continue;
        }
        if (k < 0) {
            PyErr_SetFromErrno(PyExc_OSError);
            Py_CLEAR(got);
        }
        if (k <= 0) break;
        PyBytes_ConcatAndDel(&got, PyBytes_FromStringAndSize(buf, k));
    }
    return got;
}

/* The port the daemon says (the first line, ASCII whitespace around
 * ASCII digits), or -1. */
static long port_of(PyObject *line) {
    const char *p = PyBytes_AS_STRING(line);
    const char *nl = memchr(p, '\n', (size_t)PyBytes_GET_SIZE(line));
    size_t n = nl ? (size_t)(nl - p) : (size_t)PyBytes_GET_SIZE(line);
    while (n && strchr(" \t\r\v\f", p[0]) && p[0]) p++, n--;
    while (n && strchr(" \t\r\v\f", p[n - 1]) && p[n - 1]) n--;
    long port = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9' || port > 100000000) return -1;
        port = port * 10 + (p[i] - '0');
    }
    return n ? port : -1;
}

/* start_daemon(out): spawns capture-release on a socket of its own in the
 * user's run folder; *pid and *addr ("unix:PATH", new). 0, or -1 with
 * OSError (it cannot). */
static int start_daemon(PyObject *out, int verbose, long *pid, PyObject **addr) {
    PyObject *exe = find_tool("capture-release", "TRACY_CAPTURE");
    if (!exe) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_OSError,
                            "capture-release not found next to the tracy package or on PATH "
                            "(install the toolkit, or set TRACY_CAPTURE)");
        return -1;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        Py_DECREF(exe);
        return -1;
    }
    *pid = spawn_daemon(exe, out, fds[0], fds[1]);
    close(fds[1]);
    PyObject *line = *pid > 0 ? read_line(fds[0]) : NULL;
    close(fds[0]);
    long port = line ? port_of(line) : -1;
    Py_XDECREF(line);
    if (*pid > 0 && !PyErr_Occurred() && port < 0) {
        int st = 0;
        int r = wait_for(*pid, &st, 0);
        if (r == -1)
            PyErr_SetFromErrno(PyExc_OSError);
        else if (r != -2)
            PyErr_Format(PyExc_OSError, "capture-release did not start (exit status %d)",
                         py__exit_code(st));
    }
    /* The children get the socket's path: one that changes TMPDIR still
     * finds it. */
    PyObject *sock = PyErr_Occurred() ? NULL : py__daemon_socket(port);
    if (sock) {
        say(verbose, "started %U (pid %ld) at %U", exe, *pid, sock);
        *addr = PyUnicode_FromFormat("unix:%U", sock);
        Py_DECREF(sock);
    }
    Py_DECREF(exe);
    return sock && *addr ? 0 : -1;
}

/* ---- the run's daemon ----------------------------------------------------------- */

/* A daemon of this process's own, the rendezvous file not to be trusted
 * (said in one line): *rv NULL, no one to count. */
static int own_alone(PyObject *out, int verbose, char *mode, long *pid, PyObject **addr,
                     PyObject **rv, long *size) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value)
        py__tellf("tracy: not using the rendezvous file %S; this process starts a daemon of "
                  "its own\n", value);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    *mode = 'o';
    *rv = NULL;
    *size = 0;
    return start_daemon(out, verbose, pid, addr);
}

/* own_or_join's work with the rendezvous file locked (fd). */
static int own_or_join_locked(int fd, PyObject *path, PyObject *out, PyObject *j, int verbose,
                              char *mode, long *pid, PyObject **addr, long *size) {
    PyObject *rec = rv_read(fd);
    if (!rec || rec_int(rec, "pid", "0", pid) < 0) {
        Py_XDECREF(rec);
        return -1;
    }
    PyObject *a = PyDict_GetItemString(rec, "addr");
    PyObject *unix_ = PyUnicode_FromString("unix:");
    int unix_addr = a && unix_ && PyUnicode_Tailmatch(a, unix_, 0, PY_SSIZE_T_MAX, -1) == 1;
    Py_XDECREF(unix_);
    if (*pid && alive(*pid, out) && unix_addr) {
        PyObject *rj = PyDict_GetItemString(rec, "job");
        int same = rj && PyUnicode_Compare(rj, PyTuple_GET_ITEM(j, 0)) == 0;
        PyErr_Clear();
        if (!same)
            PyErr_Format(PyExc_OSError,
                         "%U is being written by another run (capture-release pid %ld); "
                         "choose another -o", out, *pid);
        else {
            *mode = 'j';
            *size = 0;
            Py_INCREF(a);
            *addr = a;
        }
        Py_DECREF(rec);
        return same ? 0 : -1;
    }
    Py_DECREF(rec);
    if (start_daemon(out, verbose, pid, addr) < 0) return -1;
    *mode = 'o';
    *size = PyLong_AsLong(PyTuple_GET_ITEM(j, 1));
    PyObject *w = Py_BuildValue("{slsOsOsOsisO}", "pid", *pid, "addr", *addr, "job",
                                PyTuple_GET_ITEM(j, 0), "size", PyTuple_GET_ITEM(j, 1),
                                "joined", 1, "out", out);
    int r = w ? rv_write(fd, w) : -1;
    Py_XDECREF(w);
    if (r == 0) sweep_stale(path);
    return r;
}

int py__own_or_join(PyObject *out, int verbose, char *mode, long *pid, PyObject **addr,
                    PyObject **rv, long *size) {
    *addr = *rv = NULL;
    PyObject *j = job();
    PyObject *d = j ? rundir() : NULL;
    PyObject *key = d ? py__call_fn("_fnv", "(O)", out) : NULL;
    PyObject *name = key ? PyUnicode_FromFormat("run-%U.run", key) : NULL;
    PyObject *path = name ? py__path_join(d, name) : NULL;
    Py_XDECREF(name);
    Py_XDECREF(key);
    Py_XDECREF(d);
    int fd = path ? rv_lock(path, 1) : -1, r = -1;
    if (fd < 0 && path && is_untrusted()) {
        r = own_alone(out, verbose, mode, pid, addr, rv, size);
    } else if (fd >= 0) {
        r = own_or_join_locked(fd, path, out, j, verbose, mode, pid, addr, size);
        close(fd); /* (the lock with it) */
        if (r == 0) {
            *rv = path;
            path = NULL;
        }
    }
    Py_XDECREF(path);
    Py_XDECREF(j);
    if (r < 0) Py_CLEAR(*addr);
    return r;
}

/* ---- the end of a run ------------------------------------------------------------- */

int py__wait_for_ranks(PyObject *rv, long size, int verbose) {
    if (size <= 1) return 0;
    double last = monotonic();
    long seen = py__rv_joined(rv);
    while (seen < size) {
        if (nap(0.05) < 0) return -1;
        long n = py__rv_joined(rv);
        if (n != seen) {
            seen = n;
            last = monotonic();
        } else if (monotonic() - last > 60.0) {
            py__tellf("tracy: %ld of %ld processes of this run never joined the capture\n",
                      size - seen, size);
            return 0;
        }
    }
    say(verbose, "all %ld processes joined", size);
    return 0;
}

/* Whether this process has a child in its process group (the daemon has a
 * group of its own), without reaping it: a cheap test before /proc. -1
 * with the exception a signal's handler raised. */
static int has_children(void) {
    siginfo_t si;
    for (;;) {
        if (waitid(P_PGID, (id_t)getpgrp(), &si, WEXITED | WNOHANG | WNOWAIT) == 0) return 1;
        if (errno == ECHILD) return 0;
        if (errno != EINTR) return 1;
        if (PyErr_CheckSignals() < 0) return -1;
    }
}

/* This interpreter's executable, a real path, into buf ("" when unknown). */
static void me_exe(char *buf, size_t cap) {
    PyObject *exe = PySys_GetObject("executable"); /* (borrowed) */
    PyObject *b = exe && PyUnicode_Check(exe) ? PyUnicode_EncodeFSDefault(exe) : NULL;
    buf[0] = 0;
    if (b && PyBytes_GET_SIZE(b) > 0) {
        char real[PATH_MAX];
        const char *r = realpath(PyBytes_AS_STRING(b), real) ? real : PyBytes_AS_STRING(b);
        snprintf(buf, cap, "%s", r);
    }
    Py_XDECREF(b);
    PyErr_Clear();
}

/* The pids of s, at most ten, as "1 2 3" in buf. */
static void pid_list(const procs_set *s, char *buf, size_t cap) {
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < s->n && i < 10 && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%d", i ? " " : "", (int)s->pid[i]);
}

#define CHILDREN_WAIT_S 10.0

/* A child started by the program connects to the daemon as it starts,
 * maybe just after the program has ended: this process stays connected
 * (so that the daemon does not end) while the profiled descendants alive
 * now are, at most CHILDREN_WAIT_S (a child connected by then keeps the
 * daemon open itself). Those started later (by a daemon thread of the
 * program) are not waited for: the capture drains once this process has
 * stopped. The GIL is held throughout, a signal's handler aside. */
int py__wait_for_children(int verbose) {
    int r = has_children();
    if (r <= 0) return r;
    r = 0;
    char exe[PATH_MAX], pids[160];
    me_exe(exe, sizeof exe);
    procs_set kids = {0}, now = {0};
    if (procs_profiled_children(exe, NULL, &kids) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    if (kids.n) {
        pid_list(&kids, pids, sizeof pids);
        say(verbose, "waiting for %zu profiled child process(es): %s", kids.n, pids);
    }
    double end = monotonic() + CHILDREN_WAIT_S;
    while (r == 0 && kids.n && monotonic() < end) {
        if (nap(0.05) < 0) r = -1;
        else if (procs_profiled_children(exe, &kids, &now) < 0) r = -1, PyErr_NoMemory();
        else {
            procs_set t = kids;
            kids = now;
            now = t;
        }
    }
    procs_set_free(&kids);
    procs_set_free(&now);
    return r;
}

void py__drain_daemon(long pid) {
    kill((pid_t)pid, SIGUSR1);
}

void py__hurry_daemon(long pid) {
    PyObject *r = py__call_py("tracy._capture", "hurry_daemon", Py_BuildValue("(l)", pid));
    Py_XDECREF(r);
    PyErr_Clear();
}

/* Whether _capture was asked to hurry pid (its wait looks no further). */
static int hurried(long pid) {
    PyObject *m = py__loaded("tracy._capture");
    PyObject *l = m ? PyObject_GetAttrString(m, "_hurried") : NULL;
    PyObject *p = l ? PyLong_FromLong(pid) : NULL;
    int r = p ? PySequence_Contains(l, p) == 1 : 0;
    Py_XDECREF(p);
    Py_XDECREF(l);
    Py_XDECREF(m);
    PyErr_Clear();
    return r;
}

#define SERVICE_WAIT_S 2.0

/* Whether the processes left recording into the capture at addr are all
 * services the program started (procs.h): -1 with an exception. */
static int detached_only(long pid, PyObject *addr, pid_t sid) {
    PyObject *b = py__fsenc(addr);
    if (!b) return -1;
    int r = procs_detached_only((pid_t)pid, PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b), sid);
    Py_DECREF(b);
    if (r < 0) PyErr_NoMemory();
    return r;
}

/* The daemon's wait: once every process still connected has ended, it
 * exits. With addr (a run of one process, not MPI ranks), the processes
 * left recording are looked at twice a second after the first half
 * second: when they all left the program (services; nothing of the
 * program is left in its session), which unprofiled would not wait for
 * them, they get SERVICE_WAIT_S more, then are recorded as stopped. The
 * GIL is held throughout, a signal's handler aside. */
int py__wait_daemon(long pid, int interrupted, PyObject *addr, int *status) {
    if (interrupted) py__hurry_daemon(pid);
    double pause = 0.002, scan = monotonic() + 0.5; /* (the usual wait: a few ms) */
    double alone_since = -1;
    pid_t sid = getsid(0);
    int ended = 0;
    for (;;) {
        int st = 0, done = wait_for(pid, &st, WNOHANG);
        if (done == -2 || (done == 0 && nap(pause) < 0)) {
            if (!PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) return -1;
            PyErr_Clear();
            py__hurry_daemon(pid);
            continue;
        }
        if (done != 0) {
            *status = done > 0 ? py__exit_code(st) : 0;
            return 0;
        }
        pause = pause * 2 < 0.1 ? pause * 2 : 0.1;
        double now = monotonic();
        if (!addr || ended || now < scan || hurried(pid)) continue;
        scan = now + 0.5;
        int alone = detached_only(pid, addr, sid);
        if (alone < 0) return -1;
        if (!alone) alone_since = -1;
        else if (alone_since < 0) alone_since = now;
        else if (now - alone_since > SERVICE_WAIT_S) {
            py__tellf("tracy: the processes still recording left the program (a "
                      "session of their own, a service); the trace ends here\n");
            kill((pid_t)pid, SIGINT); /* the daemon ends its clients and the file */
            ended = 1;
        }
    }
}

int py__is_trace(const char *path) {
    static const char magic[8] = {'T', 'R', 'C', 'Y', 'F', 'I', 'L', 'E'};
    unsigned char head[16];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    size_t n = 0;
    ssize_t k;
    while (n < sizeof head && ((k = read(fd, head + n, sizeof head - n)) > 0 ||
                               (k < 0 && errno == EINTR)))
        if (k > 0) n += (size_t)k;
    close(fd);
    if (k < 0) return 0;
    return n == 0 || (n >= 16 && memcmp(head + 8, magic, 8) == 0) ||
           (n >= 8 && memcmp(head, magic, 8) == 0);
}

/* ---- Python-callable ----------------------------------------------------------- */

static PyObject *m_tell(PyObject *self, PyObject *text) {
    (void)self;
    py__tell(text);
    Py_RETURN_NONE;
}

static PyObject *m_keep_stderr(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    py__keep_stderr();
    Py_RETURN_NONE;
}

static PyObject *m_job(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return job();
}

static PyObject *m_spread(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return py__spread();
}

static PyObject *m_has_children(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    int r = has_children();
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *m_is_trace(PyObject *self, PyObject *path) {
    (void)self;
    PyObject *b = py__fsenc(path);
    if (!b) return NULL;
    int r = py__is_trace(PyBytes_AS_STRING(b));
    Py_DECREF(b);
    return PyBool_FromLong(r);
}

static PyObject *m_find_tool(PyObject *self, PyObject *args) {
    (void)self;
    const char *prog, *env_var = NULL;
    if (!PyArg_ParseTuple(args, "s|z", &prog, &env_var)) return NULL;
    PyObject *p = find_tool(prog, env_var);
    if (!p && !PyErr_Occurred()) Py_RETURN_NONE;
    return p;
}

static PyObject *m_rv_lock(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *path;
    int create = 0;
    if (!PyArg_ParseTuple(args, "U|p", &path, &create)) return NULL;
    int fd = rv_lock(path, create);
    return fd < 0 ? NULL : PyLong_FromLong(fd);
}

static PyObject *m_rv_read(PyObject *self, PyObject *arg) {
    (void)self;
    int fd = (int)PyLong_AsLong(arg);
    return fd == -1 && PyErr_Occurred() ? NULL : rv_read(fd);
}

static PyObject *m_rv_write(PyObject *self, PyObject *args) {
    (void)self;
    int fd;
    PyObject *rec;
    if (!PyArg_ParseTuple(args, "iO!", &fd, &PyDict_Type, &rec)) return NULL;
    if (rv_write(fd, rec) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *m_rv_count_in(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *path;
    long pid;
    if (!PyArg_ParseTuple(args, "Ol", &path, &pid)) return NULL;
    py__rv_count_in(path == Py_None ? NULL : path, pid);
    Py_RETURN_NONE;
}

static PyObject *m_rv_joined(PyObject *self, PyObject *path) {
    (void)self;
    return PyLong_FromLong(py__rv_joined(path == Py_None ? NULL : path));
}

static PyObject *m_rv_remove(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *path;
    long pid;
    if (!PyArg_ParseTuple(args, "Ol", &path, &pid)) return NULL;
    py__rv_remove(path == Py_None ? NULL : path, pid);
    Py_RETURN_NONE;
}

#define RD_FN(name, fn, flags, doc) {name, (PyCFunction)(void (*)(void))fn, flags, PyDoc_STR(doc)}
PyMethodDef py__rundaemon_methods[] = {
    RD_FN("_tell", m_tell, METH_O,
          "_tell(text)\n--\n\nOne of the profiler's lines on sys.__stderr__, unless moved."),
    RD_FN("_keep_stderr", m_keep_stderr, METH_NOARGS,
          "_keep_stderr()\n--\n\nNotes what descriptor 2 is as the run begins."),
    RD_FN("_job", m_job, METH_NOARGS,
          "_job() -> (key, size, rank)\n--\n\nThe job this process is part of."),
    RD_FN("_spread", m_spread, METH_NOARGS,
          "_spread() -> (key, world, rank) or None\n--\n\nA job on several hosts."),
    RD_FN("_has_children", m_has_children, METH_NOARGS,
          "_has_children() -> bool\n--\n\nA child in this process group (none reaped)."),
    RD_FN("_is_trace", m_is_trace, METH_O,
          "_is_trace(path) -> bool\n--\n\nA .tracy file or an empty file."),
    RD_FN("_find_tool", m_find_tool, METH_VARARGS,
          "_find_tool(prog, env_var=None) -> path or None\n--\n\nA toolkit program."),
    RD_FN("_rv_lock", m_rv_lock, METH_VARARGS,
          "_rv_lock(path, create=False) -> fd\n--\n\nThe rendezvous file, checked, locked."),
    RD_FN("_rv_read", m_rv_read, METH_O,
          "_rv_read(fd) -> dict\n--\n\nThe rendezvous file's records."),
    RD_FN("_rv_write", m_rv_write, METH_VARARGS,
          "_rv_write(fd, rec)\n--\n\nReplaces the rendezvous file's records."),
    RD_FN("_rv_count_in", m_rv_count_in, METH_VARARGS,
          "_rv_count_in(path, daemon_pid)\n--\n\nA joining process is connected."),
    RD_FN("_rv_joined", m_rv_joined, METH_O,
          "_rv_joined(path) -> int\n--\n\nHow many processes joined the run."),
    RD_FN("_rv_remove", m_rv_remove, METH_VARARGS,
          "_rv_remove(path, daemon_pid)\n--\n\nThe owner's finish."),
    {NULL, NULL, 0, NULL}};
