/* readtrace.c -- tracy._tracy._read_trace(): a .tracy file as Python lists,
 * decoded by libtrace's reader. Meant for tests and small scripts; the
 * converters (tracy-csv, tracy-sql) are the tools for real traces. And
 * _function_stats(): per-function totals on the converters' own call-tree
 * model (convert/calltree.c), for tracy.top. */
#include "hook.h"

#include "convert/calltree.h"
#include "trace.h"

static PyObject *str_or_empty(const char *s, size_t n) {
    if (!s) return PyUnicode_FromString("");
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "replace");
}

static PyObject *cstr(const char *s) {
    return PyUnicode_DecodeUTF8(s ? s : "", s ? (Py_ssize_t)strlen(s) : 0, "replace");
}

/* ---- Named results -------------------------------------------------------- */

#define F(name, doc) {(char *)name, (char *)doc}
static PyStructSequence_Field zone_fields[] = {
    F("process", "process index (1-based)"), F("thread", "thread index in the process"),
    F("name", "zone name"), F("kind", "location kind (1 Python, 2 C, 3 line, 4 user)"),
    F("file", "source file"), F("line", "source line"), F("begin_ts", "begin, ns"),
    F("end_ts", "end, ns"), F("depth", "nesting depth (0 outermost)"),
    F("text", "attached text"), F("flags", "end flags (0 a normal end)"),
    F("child_ns", "time in child zones, ns"), {NULL, NULL}};
static PyStructSequence_Field message_fields[] = {
    F("process", NULL), F("thread", NULL), F("ts", "ns"), F("text", NULL), {NULL, NULL}};
static PyStructSequence_Field signpost_fields[] = {
    F("process", NULL), F("thread", NULL), F("ts", "ns"), F("header", NULL),
    F("body", NULL), {NULL, NULL}};
static PyStructSequence_Field plot_fields[] = {
    F("process", NULL), F("thread", NULL), F("ts", "ns"), F("name", NULL),
    F("value", NULL), {NULL, NULL}};
static PyStructSequence_Field frame_fields[] = {
    F("process", NULL), F("thread", NULL), F("ts", "ns"), F("name", "'' for the default"),
    {NULL, NULL}};
static PyStructSequence_Field lost_fields[] = {
    F("process", NULL), F("thread", NULL), F("ts", "ns"), F("count", "events lost"),
    {NULL, NULL}};
static PyStructSequence_Field thread_fields[] = {
    F("process", NULL), F("thread", NULL), F("tid", "OS thread id"), F("name", NULL),
    {NULL, NULL}};
#undef F

#define DESC(var, name, doc, fields) \
    static PyStructSequence_Desc var = {"tracy._tracy." name, doc, fields, \
                                        sizeof fields / sizeof *fields - 1}
DESC(zone_desc, "Zone", "A zone of _read_trace()['zones'].", zone_fields);
DESC(message_desc, "Message", "A log message of _read_trace().", message_fields);
DESC(signpost_desc, "Signpost", "A phase marker of _read_trace().", signpost_fields);
DESC(plot_desc, "PlotSample", "A counter sample of _read_trace().", plot_fields);
DESC(frame_desc, "FrameMark", "A frame mark of _read_trace().", frame_fields);
DESC(lost_desc, "Lost", "Events lost, from _read_trace().", lost_fields);
DESC(thread_desc, "Thread", "A thread of _read_trace().", thread_fields);
#undef DESC

static int add_type(PyObject *m, PyTypeObject **slot, PyStructSequence_Desc *d) {
    if (*slot) return 0; /* made by an earlier, failed call */
    *slot = PyStructSequence_NewType(d);
    if (!*slot) return -1;
    return py__module_add(m, strrchr(d->name, '.') + 1, (PyObject *)*slot);
}

/* Zone last: it stands for "all made". */
int py__trace_types_init(PyObject *m, py_trace_types *t) {
    return add_type(m, &t->message, &message_desc) < 0 ||
                   add_type(m, &t->signpost, &signpost_desc) < 0 ||
                   add_type(m, &t->plot, &plot_desc) < 0 ||
                   add_type(m, &t->frame, &frame_desc) < 0 ||
                   add_type(m, &t->lost, &lost_desc) < 0 ||
                   add_type(m, &t->thread, &thread_desc) < 0 ||
                   add_type(m, &t->zone, &zone_desc) < 0
               ? -1
               : 0;
}

/* The tuple `tup` (taken) as an instance of `type`, or NULL. */
static PyObject *named(PyTypeObject *type, PyObject *tup) {
    if (!tup) return NULL;
    PyObject *o = PyStructSequence_New(type);
    if (o) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tup); i++) {
            PyObject *v = PyTuple_GET_ITEM(tup, i);
            Py_INCREF(v);
            PyStructSequence_SET_ITEM(o, i, v);
        }
    }
    Py_DECREF(tup);
    return o;
}

/* ---- Decoding ------------------------------------------------------------- */

static int add_meta(lt_reader *r, const py_trace_types *ty, PyObject *out) {
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
            PyObject *tt = named(ty->thread,
                                 Py_BuildValue("(IIKN)", p, t, (unsigned long long)th->tid,
                                               cstr(th->name)));
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

static PyObject *event_values(lt_reader *r, const lt_event *ev) {
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

/* The event as an instance of its named type. */
static PyObject *event_tuple(lt_reader *r, const py_trace_types *ty, const lt_event *ev) {
    PyTypeObject *type = NULL;
    switch (ev->type) {
    case LT_EV_ZONE_END: type = ty->zone; break;
    case LT_EV_MESSAGE: type = ty->message; break;
    case LT_EV_SIGNPOST: type = ty->signpost; break;
    case LT_EV_PLOT: type = ty->plot; break;
    case LT_EV_FRAME: type = ty->frame; break;
    case LT_EV_LOST: type = ty->lost; break;
    }
    PyObject *t = event_values(r, ev);
    return type ? named(type, t) : t;
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

static int add_events(lt_reader *r, const py_trace_types *ty, PyObject *out) {
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
        PyObject *t = event_tuple(r, ty, &ev);
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

/* Opens the trace at `arg` (str or path-like); NULL with an exception set
 * that names the file once. */
static lt_reader *open_trace(PyObject *arg) {
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
        r = NULL;
    }
    Py_DECREF(path);
    return r;
}

PyObject *py__trace_summary(PyObject *module, PyObject *arg) {
    (void)module;
    lt_reader *r = open_trace(arg);
    if (!r) return NULL;
    uint64_t lost;
    PyObject *out = Py_None;
    if (lt_reader_info(r)->complete && lt_reader_total(r, "lost_events", &lost))
        out = Py_BuildValue("(KIK)", (unsigned long long)lt_reader_info(r)->n_events,
                            (unsigned)lt_reader_nprocesses(r), (unsigned long long)lost);
    else
        Py_INCREF(out);
    lt_reader_free(r);
    return out;
}

PyObject *py__read_trace(PyObject *module, PyObject *arg) {
    py_trace_types *ty = &py__mstate(module)->trace;
    if (!ty->zone && py__trace_types_init(module, ty) < 0) return NULL;
    lt_reader *r = open_trace(arg);
    if (!r) return NULL;
    PyObject *out = PyDict_New();
    const lt_file_info *fi = lt_reader_info(r);
    if (!out || PyDict_SetItemString(out, "complete", fi->complete ? Py_True : Py_False) < 0 ||
        add_meta(r, ty, out) < 0 || add_events(r, ty, out) < 0) {
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

/* ---- Per-function totals --------------------------------------------------- */

/* Feeds every event of r to a merged call tree; -1 with an exception set. */
static int build_tree(lt_reader *r, ct_tree *t) {
    lt_event ev;
    int rc, oom = 0;
    Py_BEGIN_ALLOW_THREADS
    while ((rc = lt_reader_next(r, &ev)) == 1)
        if (ct_tree_event(t, &ev) < 0) {
            oom = 1;
            break;
        }
    if (!oom) ct_tree_finish(t);
    Py_END_ALLOW_THREADS
    if (oom) {
        PyErr_NoMemory();
        return -1;
    }
    if (rc < 0) {
        PyErr_Format(PyExc_ValueError, "%s", lt_reader_error(r));
        return -1;
    }
    return 0;
}

/* [(name, kind, file, line, calls, self_ns, cum_ns)], one per function. */
static PyObject *totals_list(const ct_tree *t) {
    size_t n = ct_tree_nfuncs(t);
    ct_total *tot = calloc(n ? n : 1, sizeof *tot);
    if (!tot) return PyErr_NoMemory();
    ct_tree_totals(t, tot);
    PyObject *out = PyList_New(0);
    for (size_t i = 0; out && i < n; i++) {
        const ct_func *f = ct_tree_func(t, i);
        PyObject *row = Py_BuildValue("(NiNIKKK)", cstr(f->name), (int)f->kind, cstr(f->file),
                                      f->line, (unsigned long long)tot[i].calls,
                                      (unsigned long long)tot[i].self,
                                      (unsigned long long)tot[i].cum);
        if (!row || PyList_Append(out, row) < 0) Py_CLEAR(out);
        Py_XDECREF(row);
    }
    free(tot);
    return out;
}

PyObject *py__function_stats(PyObject *module, PyObject *arg) {
    (void)module;
    lt_reader *r = open_trace(arg);
    if (!r) return NULL;
    ct_tree *t = ct_tree_new(r, 1);
    PyObject *out = NULL;
    if (!t) PyErr_NoMemory();
    else if (build_tree(r, t) == 0) out = totals_list(t);
    ct_tree_free(t);
    lt_reader_free(r);
    return out;
}
