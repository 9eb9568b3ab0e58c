/* readtrace.c -- tracy._tracy._read_trace(): a .tracy file as Python lists,
 * decoded by libtrace's reader. Meant for tests and small scripts; the
 * converters (tracy-csv, tracy-sql) are the tools for real traces. */
#include "hook.h"

#include "trace.h"

static PyObject *str_or_empty(const char *s, size_t n) {
    if (!s) return PyUnicode_FromString("");
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "replace");
}

static PyObject *cstr(const char *s) {
    return PyUnicode_DecodeUTF8(s ? s : "", s ? (Py_ssize_t)strlen(s) : 0, "replace");
}

static int add_meta(lt_reader *r, PyObject *out) {
    PyObject *procs = PyList_New(0), *threads = PyList_New(0);
    if (!procs || !threads) goto err;
    for (uint32_t p = 1; p <= lt_reader_nprocesses(r); p++) {
        const lt_process *pr = lt_reader_process(r, p);
        if (!pr) continue;
        PyObject *argv = PyList_New(0);
        if (!argv) goto err;
        for (uint32_t i = 0; i < pr->argc; i++) {
            PyObject *a = cstr(pr->argv[i]);
            if (!a || PyList_Append(argv, a) < 0) {
                Py_XDECREF(a);
                Py_DECREF(argv);
                goto err;
            }
            Py_DECREF(a);
        }
        PyObject *d = Py_BuildValue(
            "{s:I,s:K,s:L,s:N,s:N,s:N,s:i,s:N,s:K,s:K,s:K}", "index", pr->index,
            "pid", (unsigned long long)pr->pid, "rank", (long long)pr->rank, "program",
            cstr(pr->program), "hostname", cstr(pr->hostname), "argv", argv, "status",
            pr->status, "end_reason", cstr(pr->end_reason), "events_received",
            (unsigned long long)pr->events_received, "events_sent",
            (unsigned long long)pr->events_sent, "events_lost",
            (unsigned long long)pr->events_lost);
        if (!d || PyList_Append(procs, d) < 0) {
            Py_XDECREF(d);
            goto err;
        }
        Py_DECREF(d);
        for (uint32_t t = 1; t <= lt_reader_nthreads(r, p); t++) {
            const lt_thread *th = lt_reader_thread(r, p, t);
            if (!th) continue;
            PyObject *tt = Py_BuildValue("(IIKN)", p, t, (unsigned long long)th->tid,
                                         cstr(th->name));
            if (!tt || PyList_Append(threads, tt) < 0) {
                Py_XDECREF(tt);
                goto err;
            }
            Py_DECREF(tt);
        }
    }
    if (PyDict_SetItemString(out, "processes", procs) < 0 ||
        PyDict_SetItemString(out, "threads", threads) < 0)
        goto err;
    Py_DECREF(procs);
    Py_DECREF(threads);
    return 0;
err:
    Py_XDECREF(procs);
    Py_XDECREF(threads);
    return -1;
}

static PyObject *event_tuple(lt_reader *r, const lt_event *ev) {
    switch (ev->type) {
    case LT_EV_ZONE_END: {
        const lt_loc *l = lt_reader_loc(r, ev->process, ev->loc);
        PyObject *name = ev->name ? str_or_empty(ev->name, ev->name_len)
                                  : cstr(l ? l->name : "?");
        return Py_BuildValue("(IINiNIKKINiK)", ev->process, ev->thread, name,
                             l ? (int)l->kind : 0, cstr(l ? l->file : ""),
                             l ? l->line : 0, (unsigned long long)ev->begin_ts,
                             (unsigned long long)ev->ts, ev->depth,
                             str_or_empty(ev->text, ev->text_len), (int)ev->flags,
                             (unsigned long long)ev->child_ns);
    }
    case LT_EV_MESSAGE:
        return Py_BuildValue("(IIKN)", ev->process, ev->thread, (unsigned long long)ev->ts,
                             str_or_empty(ev->text, ev->text_len));
    case LT_EV_SIGNPOST:
        return Py_BuildValue("(IIKNN)", ev->process, ev->thread,
                             (unsigned long long)ev->ts, str_or_empty(ev->text, ev->text_len),
                             str_or_empty(ev->text2, ev->text2_len));
    case LT_EV_PLOT:
        return Py_BuildValue("(IIKNd)", ev->process, ev->thread, (unsigned long long)ev->ts,
                             cstr(lt_reader_plot_name(r, ev->process, ev->id)), ev->value);
    case LT_EV_FRAME:
        return Py_BuildValue("(IIKN)", ev->process, ev->thread, (unsigned long long)ev->ts,
                             cstr(ev->id ? lt_reader_frame_name(r, ev->process, ev->id) : ""));
    case LT_EV_LOST:
        return Py_BuildValue("(IIKK)", ev->process, ev->thread, (unsigned long long)ev->ts,
                             (unsigned long long)ev->count);
    }
    Py_RETURN_NONE;
}

static const char *list_key(uint8_t type) {
    switch (type) {
    case LT_EV_ZONE_END: return "zones";
    case LT_EV_MESSAGE: return "messages";
    case LT_EV_SIGNPOST: return "signposts";
    case LT_EV_PLOT: return "plots";
    case LT_EV_FRAME: return "frames";
    case LT_EV_LOST: return "lost";
    }
    return NULL;
}

static int add_events(lt_reader *r, PyObject *out) {
    static const char *keys[] = {"zones", "messages", "signposts", "plots", "frames", "lost"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        PyObject *l = PyList_New(0);
        if (!l || PyDict_SetItemString(out, keys[i], l) < 0) {
            Py_XDECREF(l);
            return -1;
        }
        Py_DECREF(l);
    }
    lt_event ev;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) == 1) {
        const char *k = list_key(ev.type);
        if (!k) continue;
        PyObject *t = event_tuple(r, &ev);
        if (!t) return -1;
        int arc = PyList_Append(PyDict_GetItemString(out, k), t);
        Py_DECREF(t);
        if (arc < 0) return -1;
    }
    if (rc < 0) {
        PyErr_Format(PyExc_ValueError, "%s", lt_reader_error(r));
        return -1;
    }
    return 0;
}

PyObject *py__read_trace(PyObject *self, PyObject *arg) {
    PyObject *path = NULL;
    if (!PyUnicode_FSConverter(arg, &path)) return NULL;
    lt_reader *r = NULL;
    char detail[256] = "";
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = lt_reader_open(&r, PyBytes_AS_STRING(path), detail, sizeof detail);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        /* Some details name the file already ("PATH: No such file..."). */
        const char *p = PyBytes_AS_STRING(path);
        size_t n = strlen(p);
        int named = strncmp(detail, p, n) == 0 && detail[n] == ':';
        PyErr_Format(PyExc_ValueError, "%s%s%s", named ? "" : p, named ? "" : ": ",
                     detail[0] ? detail : lt_strerror(rc));
        Py_DECREF(path);
        return NULL;
    }
    Py_DECREF(path);
    PyObject *out = PyDict_New();
    const lt_file_info *fi = lt_reader_info(r);
    if (!out || PyDict_SetItemString(out, "complete", fi->complete ? Py_True : Py_False) < 0 ||
        add_meta(r, out) < 0 || add_events(r, out) < 0) {
        Py_XDECREF(out);
        lt_reader_free(r);
        return NULL;
    }
    PyObject *stats = PyDict_New();
    if (stats) {
        for (size_t i = 0; i < lt_reader_nstats(r); i++) {
            const lt_stat *st = lt_reader_stat(r, i);
            PyObject *v = PyLong_FromUnsignedLongLong(st->value);
            if (v) PyDict_SetItemString(stats, st->name, v);
            Py_XDECREF(v);
        }
        PyDict_SetItemString(out, "stats", stats);
        Py_DECREF(stats);
    }
    lt_reader_free(r);
    if (PyErr_Occurred()) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}
