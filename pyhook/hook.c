/* hook.c -- turns Python execution into libtrace zones: a PEP 523
 * frame-evaluation hook for function zones (CPython 3.8 to 3.13, see
 * pycompat.h), and PyEval_SetProfile / PyEval_SetTrace callbacks for C
 * calls, line zones and an evaluator replaced by someone else.
 *
 * A generator or coroutine zone is one run of its body: from a resumption
 * (next, send, throw, await) to the following yield, return or exception,
 * in every mode -- as cProfile counts its calls. The call that only creates
 * the object runs none of its body and gets no zone.
 *
 * Hot path (frame hook): one load of the code object's extra slot gives the
 * location id, decided once per code object (filters included); the zone is
 * written inline into the thread's buffer (client_fast.h). The hook's exit is
 * structural -- the default evaluator returns through it -- so every zone
 * that began ends, whatever the frame does (exception, yield, sys.exit).
 */
#include "hook.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "client_fast.h"
#include "client_internal.h"
#include "trace_client.h"

#include "mech.h"
#include "pycompat.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

py_opts py__opts = {.max_depth = UINT32_MAX};

static Py_ssize_t g_extra_idx = -1;
/* Cached locations are (tag << 32 | loc), tag = the epoch, with PY_GEN_BIT
 * for the code of a generator or coroutine (whose frames are evaluated once
 * more, to create the object), PY_INIT_BIT for a simple __init__ whose
 * class is kept from being called inline (3.13, see init_watch); a new epoch
 * forgets them all. */
#define PY_GEN_BIT 0x80000000u
#define PY_INIT_BIT 0x40000000u
#define PY_TAG_BITS (PY_GEN_BIT | PY_INIT_BIT)
#define PY_GEN_FLAGS (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)
static uint32_t g_epoch = 1;
/* (g_epoch << 32) + 1: a cached value v minus this is below UINT32_MAX
 * exactly when v is of this epoch and its location is not 0 */
static uint64_t g_epoch_base = ((uint64_t)1 << 32) + 1;
static int g_enabled;    /* new zones may begin */
static int g_live = 1;   /* the client may be written to */
/* max_depth while live, 0 once the client stopped: one test for both */
static uint32_t g_depth_limit = UINT32_MAX;
static int g_mode;       /* enum py_mode while enabled */
static py_eval_fn g_prev_eval;

/* ---- Per-thread state of the slow modes ---------------------------------- */

enum { ENT_FRAME = 1, ENT_C = 2, ENT_MON = 3 };

typedef struct py_ent {
    const void *key; /* the PyFrameObject, or the called C function */
#if PY_VERSION_HEX < 0x030C0000
    PyObject *lent;  /* ENT_C: self, whose reference the bound method lent */
    const void *code; /* win_first's under the hook: its code (not owned) */
#endif
    uint8_t kind;
    uint8_t rec;     /* its zone began: an end is owed (2: by win_first) */
    uint8_t line;    /* a line zone of this frame is open */
} py_ent;

typedef struct py_pend {
    uint64_t ts;
    uint32_t loc;
} py_pend;

/* A zone tracy.zone opened (see "User zones"). */
typedef struct py_uz {
    uint64_t serial;  /* the token zone_begin returned */
    const void *key;  /* the frame that opened it (PY_FO_KEY), or NULL */
    uint32_t loc;
    uint32_t depth;   /* the buffer's depth just after its begin */
} py_uz;

typedef struct py_tstate {
    py_ent *st;
    uint32_t n, cap;
    py_uz *uz;        /* user zones open on this thread, outermost first */
    uint32_t nuz, cuz;
    py_pend *pend;   /* --min-duration: zones begun, maybe not written */
    uint32_t np, nw, pcap; /* entries below nw are written */
    uint32_t floor;  /* entries below it were begun before fork(), in the
                        parent: their ends are not the child's */
    int in_slow;     /* resolving a location: frames pass through */
    int registered;
} py_tstate;

static __thread py_tstate tls __attribute__((tls_model("initial-exec")));
static pthread_key_t g_tls_key;

/* Trace windows opened so far, and the one each thread has seen: a thread's
 * first event in a window records the calls it is already inside (see
 * "Calls running when a trace window opens"). */
static uint32_t g_win_gen;
static __thread uint32_t tls_win_gen __attribute__((tls_model("initial-exec")));
static void win_first(PyFrameObject *top, int given);
static __thread int tls_win_prof; /* profile_cb set by win_first (3.12+, no tool id) */
/* tracy itself sets a profile function or registers a sys.monitoring
 * callback under the hook (a window's watch): not another tool (3.12+,
 * leave_hook) */
static int g_own_setting;
#define OWN_SETTING(stmt) (g_own_setting++, (stmt), g_own_setting--)
/* Zones win_first began that are still open: the outermost ones. An end
 * the hook would write into them is that of a frame it began in an earlier
 * window (frame_exit or win_gone ends it): WIN_HOOK_END says no. Read on
 * the hook's hot path: initial-exec, one %fs-relative load. */
static __thread uint32_t tls_synth __attribute__((tls_model("initial-exec")));
#define WIN_HOOK_END(t) (tls_synth == 0 || (t)->depth > tls_synth)
static void win_end(void);
#if PY_VERSION_HEX < 0x030C0000
/* Before 3.12 the hook finds their returns itself (win_gone): at a begin
 * whose parent is one of them (depth tls_synth), at its own end of one. */
static void win_gone(int now);
#define WIN_TOP_HOT(t) ((t)->depth <= tls_synth)
#define WIN_TOP(t)                                                               \
    do {                                                                         \
        if (UNLIKELY(WIN_TOP_HOT(t)) && tls_synth) win_gone(0);                  \
    } while (0)
#else
#define WIN_TOP_HOT(t) 0
#define WIN_TOP(t) ((void)0)
#endif
static void win_prof_check(void);
#if PY_VERSION_HEX < 0x030C0000
#define WIN_RETURNED() win_gone(1)
#else
#define WIN_RETURNED() ((void)0)
#endif
#define WIN_CHECK()                                                              \
    do {                                                                         \
        if (UNLIKELY(tls_win_gen != g_win_gen)) win_first(NULL, 0);             \
    } while (0)

static void tstate_free(void *p) {
    py_tstate *s = p;
    free(s->st);
    free(s->pend);
    free(s->uz);
    memset(s, 0, sizeof *s);
}

static int grow(void **arr, uint32_t *cap, size_t elem) {
    uint32_t ncap = *cap ? *cap * 2 : 64;
    void *n = realloc(*arr, ncap * elem);
    if (!n) {
        py__hook_failed("out of memory for a thread's stack of zones (zones were lost)");
        return -1;
    }
    *arr = n;
    *cap = ncap;
    if (!tls.registered) {
        tls.registered = 1;
        pthread_setspecific(g_tls_key, &tls);
    }
    return 0;
}

/* ---- Failures inside hook work ---------------------------------------------- */

/* The hook never raises into the program: a failure (a callback that
 * raised, memory exhausted) is counted here with the first one's
 * description and exception, and py__hook_raise turns them into one
 * exception at the next disable() or stop(). */
static struct {
    unsigned long n;
    const char *first; /* what failed first (a literal) */
    PyObject *exc;     /* its exception, or NULL */
} g_fail;

void py__hook_failed(const char *what) {
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    if (g_fail.n++ == 0) {
        g_fail.first = what;
        if (type) {
            PyErr_NormalizeException(&type, &value, &tbk);
            if (value && tbk) PyException_SetTraceback(value, tbk);
            g_fail.exc = value;
            value = NULL;
        }
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tbk);
}

int py__hook_failures(void) { return g_fail.n != 0; }

int py__hook_raise(PyObject *err_type) {
    if (g_fail.n == 0) return 0;
    unsigned long n = g_fail.n;
    PyObject *cause = g_fail.exc;
    g_fail.n = 0;
    g_fail.exc = NULL;
    if (cause)
        PyErr_Format(err_type, "%lu failure%s in the profiler's hook; the first: %s: %R",
                     n, n == 1 ? "" : "s", g_fail.first, cause);
    else
        PyErr_Format(err_type, "%lu failure%s in the profiler's hook; the first: %s",
                     n, n == 1 ? "" : "s", g_fail.first);
    if (cause) {
        PyObject *type, *value, *tbk;
        PyErr_Fetch(&type, &value, &tbk);
        PyErr_NormalizeException(&type, &value, &tbk);
        if (value) PyException_SetCause(value, cause); /* steals cause */
        else Py_DECREF(cause);
        PyErr_Restore(type, value, tbk);
    }
    return -1;
}

int py__main_interpreter(void) {
    return PyInterpreterState_Get() == PyInterpreterState_Main();
}

/* ---- Recording primitives -------------------------------------------------- */

void py__thread_first(void) {
    PyObject *cb = py__opts.on_thread;
    if (!cb) return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *r = PyObject_CallNoArgs(cb);
    if (!r) py__hook_failed("the on_thread callback raised (the thread keeps its name)");
    Py_XDECREF(r);
    PyErr_Restore(type, value, tb);
}

static __attribute__((noinline)) lt__tbuf *tb_first(void) {
    lt__tbuf *t = lt__tbuf_create();
    if (t) py__thread_first();
    return t;
}

static inline lt__tbuf *tb(void) {
    lt__tbuf *t = lt__tls;
    if (UNLIKELY(t == NULL)) t = tb_first();
    return t;
}

/* The frame the frame-evaluation hook is entering while it makes the
 * thread's buffer (not the thread's current frame yet), for
 * py__frame_arg0; NULL otherwise. */
static __thread py_frame *tls_entering;

/* tb() for a record of the frame f, which the hook is entering. */
static inline lt__tbuf *tb_entering(py_frame *f) {
    lt__tbuf *t = lt__tls;
    if (UNLIKELY(t == NULL)) {
        tls_entering = f;
        t = tb_first();
        tls_entering = NULL;
    }
    return t;
}

static int code_in(PyObject *co, PyObject *const *codes, int n) {
    for (int i = 0; i < n; i++)
        if (co == codes[i]) return 1;
    return 0;
}

PyObject *py__frame_arg0(PyObject *const *codes, int n) {
    py_frame *e = tls_entering;
    if (e && code_in((PyObject *)PYF_CODE(e), codes, n) && PYF_CODE(e)->co_argcount > 0) {
        PyObject *a = PYF_LOCALS(e)[0];
        Py_XINCREF(a);
        return a;
    }
    PyFrameObject *fr = PyEval_GetFrame(); /* borrowed */
    Py_XINCREF(fr);
    while (fr) {
        PyCodeObject *co = PyFrame_GetCode(fr);
        int hit = code_in((PyObject *)co, codes, n) && co->co_argcount > 0;
        Py_DECREF(co);
        if (hit) {
            PyObject *a = PYFO_LOCALS(fr)[0];
            Py_XINCREF(a);
            Py_DECREF(fr);
            return a;
        }
        PyFrameObject *back = PyFrame_GetBack(fr);
        Py_DECREF(fr);
        fr = back;
    }
    return NULL;
}

void py__pending_flush(void) {
    py_tstate *s = &tls;
    lt__tbuf *t = lt__tls;
    if (!t || !g_live) return;
    for (uint32_t i = s->nw; i < s->np; i++)
        lt__put_begin(t, s->pend[i].loc, s->pend[i].ts);
    s->nw = s->np;
}

/* Begins a zone of `loc` on this thread, honouring --max-depth and
 * --min-duration. Returns 1 when the zone began (zend() must follow). */
static int zbegin(uint32_t loc) {
    if (!g_live) return 0;
    lt__tbuf *t = tb();
    if (!t) return 0;
    WIN_CHECK();
    if (g_mode == PY_MODE_EVAL) WIN_TOP(t);
    uint64_t now = lt__now();
    if (py__opts.min_duration) {
        py_tstate *s = &tls;
        if (t->depth + (s->np - s->nw) >= py__opts.max_depth) return 0;
        if (s->np == s->pcap &&
            grow((void **)&s->pend, &s->pcap, sizeof *s->pend) < 0)
            return 0;
        s->pend[s->np].loc = loc;
        s->pend[s->np].ts = now;
        s->np++;
        return 1;
    }
    if (t->depth >= py__opts.max_depth) return 0;
    lt__put_begin(t, loc, now);
    return 1;
}

static void zend(void) {
    lt__tbuf *t = lt__tls;
    if (!t || !g_live) return;
    uint64_t now = lt__now();
    if (py__opts.min_duration) {
        py_tstate *s = &tls;
        if (s->np == 0) return;
        if (s->np <= s->floor) { /* begun in the parent: no end here */
            s->np--;
            s->floor = s->nw = s->np;
            return;
        }
        py_pend p = s->pend[--s->np];
        if (s->np < s->nw) { /* it was written */
            s->nw = s->np;
            lt__put_end(t, now);
        } else if (now - p.ts >= py__opts.min_duration) {
            for (uint32_t i = s->nw; i < s->np; i++)
                lt__put_begin(t, s->pend[i].loc, s->pend[i].ts);
            s->nw = s->np;
            lt__put_begin(t, p.loc, p.ts);
            lt__put_end(t, now);
        }
        return;
    }
    lt__put_end(t, now);
}

/* ---- User zones --------------------------------------------------------------- */

/* tracy.zone opens a zone in the stream of its thread, where zones nest. A
 * generator or coroutine suspends inside `with tracy.zone(...)` (a yield,
 * an await): its frame's end must not end the user zone in its place, and
 * the caller's calls must not nest in it. So a frame that ends while a
 * user zone is the innermost zone closes it first (t->uz_top == t->depth,
 * one compare on the hook's path); when the frame is a generator's or a
 * coroutine's that suspends, the zone is kept in g_susp under the frame
 * and begins again, as a zone of its own, when that frame resumes: the
 * zone is recorded as each step of the frame that runs inside it, as the
 * frame's own zone is. zone_end(token) closes its own zone only: one that
 * was closed so (or by a window's end) ends nothing else. Under -l, a user
 * zone is not nested in the line zone that opens it: the lines inside it
 * nest in it. */

/* frame (PyFrameObject *) -> its user zones while it is suspended: a list
 * of (loc, serial), outermost first; g_nsusp: how many (the hook's resume
 * path looks only when there are some) */
static PyObject *g_susp;
static Py_ssize_t g_nsusp;
static uint64_t g_uz_serial;

#if PY_VERSION_HEX >= 0x030B0000
#define PY_FO_KEY(fo) ((const void *)((PyFrameObject *)(fo))->f_frame)
#else
#define PY_FO_KEY(fo) ((const void *)(fo))
#endif

/* The key of the thread's current frame (a sys.monitoring callback's). */
static const void *uz_current_key(void) {
#if PY_VERSION_HEX >= 0x030D0000
    return PyThreadState_Get()->current_frame;
#elif PY_VERSION_HEX >= 0x030B0000
    return PyThreadState_Get()->cframe->current_frame;
#else
    return PyThreadState_Get()->frame;
#endif
}

static void uz_settop(lt__tbuf *t) {
    py_tstate *s = &tls;
    t->uz_top = s->nuz ? s->uz[s->nuz - 1].depth : 0;
}

/* User zone u is the buffer's innermost open zone. */
static int uz_innermost_was(lt__tbuf *t, const py_uz *u) {
    return u->depth == t->depth && t->depth > 0 && lt__stk(t)[t->depth - 1] == u->loc;
}

/* The innermost user zone is the buffer's innermost open zone. */
static int uz_innermost(lt__tbuf *t) {
    py_tstate *s = &tls;
    return s->nuz && uz_innermost_was(t, &s->uz[s->nuz - 1]);
}

/* Notes the user zone `serial` of loc, just begun on t, as the innermost
 * one. Returns 0 when out of memory (it is then not followed). */
static int uz_push(lt__tbuf *t, uint64_t serial, uint32_t loc, const void *key) {
    py_tstate *s = &tls;
    if (s->nuz == s->cuz && grow((void **)&s->uz, &s->cuz, sizeof *s->uz) < 0) return 0;
    s->uz[s->nuz++] = (py_uz){.serial = serial, .key = key, .loc = loc, .depth = t->depth};
    t->uz_top = t->depth;
    return 1;
}

/* tracy.zone's begin of loc, just written on t, from the frame `key`. */
uint64_t py__uz_begun(lt__tbuf *t, uint32_t loc, const void *key) {
    uint64_t serial = ++g_uz_serial;
    return uz_push(t, serial, loc, key) ? serial : 0;
}

/* Closes the line zone open in the innermost frame that has one (-l): a
 * user zone begins or ends outside it. */
static void uz_line_out(lt__tbuf *t, uint32_t depth) {
    py_tstate *s = &tls;
    for (uint32_t i = s->n; i > 0; i--) {
        py_ent *e = &s->st[i - 1];
        if (!e->line) continue;
        if (t->depth == depth + 1) {
            e->line = 0;
            lt__put_end(t, lt__now());
        }
        return;
    }
}

void py__uz_before_begin(lt__tbuf *t) {
    if (py__opts.lines && tls.n) uz_line_out(t, t->depth - 1);
}

/* tracy.zone's end of the zone `serial`: only its own, when it is the
 * innermost zone (under -l, past the line zone of the with statement's
 * line); else nothing (closed at a suspension, or by a window's end). */
void py__uz_end(lt__tbuf *t, uint64_t serial) {
    py_tstate *s = &tls;
    /* not the innermost user zone (one opened in it is still open), or
     * closed already: its frame's end closes it, or nothing does */
    if (!s->nuz || s->uz[s->nuz - 1].serial != serial) return;
    py_uz u = s->uz[s->nuz - 1];
    if (py__opts.lines && s->n) uz_line_out(t, u.depth);
    if (t->depth > u.depth) return; /* zones opened in it are open: left to their frames' ends */
    s->nuz--;
    uz_settop(t);
    if (uz_innermost_was(t, &u)) lt__put_end(t, lt__now());
}

const void *py__uz_frame_key(PyObject *frame) {
    return frame && PyFrame_Check(frame) ? PY_FO_KEY(frame) : NULL;
}

/* zone_end() without a token: the innermost zone, whatever it is. */
void py__uz_end_innermost(lt__tbuf *t) {
    py_tstate *s = &tls;
    if (uz_innermost(t)) {
        s->nuz--;
        uz_settop(t);
    }
    lt__put_end(t, lt__now());
}

/* A frame (key; gen: a generator's or coroutine's) ends while user zones
 * are innermost: they end here, and those it opened are kept for its
 * resumption when it is a generator's. rec: the frame's own zone is under
 * them (every innermost user zone is closed); else only the frame's own
 * (a frame not recorded). */
static __attribute__((noinline)) void uz_frame_end(lt__tbuf *t, const void *key, int gen, int rec) {
    py_tstate *s = &tls;
    PyObject *kept = NULL;
    PyObject *type, *value, *tbk; /* the frame's own exception, when it raised */
    PyErr_Fetch(&type, &value, &tbk);
    while (uz_innermost(t)) {
        if (!rec && s->uz[s->nuz - 1].key != key) break;
        py_uz u = s->uz[--s->nuz];
        lt__put_end(t, lt__now());
        if (!(u.key == key && key && gen)) continue;
        if (!kept && !(kept = PyList_New(0))) break;
        PyObject *item = Py_BuildValue("(IK)", u.loc, (unsigned long long)u.serial);
        if (!item || PyList_Insert(kept, 0, item) < 0) {
            Py_XDECREF(item);
            break;
        }
        Py_DECREF(item);
    }
    /* stale entries (closed otherwise) above the frame's zone go too */
    while (rec && s->nuz && s->uz[s->nuz - 1].depth >= t->depth) s->nuz--;
    uz_settop(t);
    if (kept) {
        PyObject *k = PyLong_FromVoidPtr((void *)key);
        if (!g_susp) g_susp = PyDict_New();
        if (k && g_susp && PyDict_SetItem(g_susp, k, kept) == 0) g_nsusp = PyDict_GET_SIZE(g_susp);
        Py_XDECREF(k);
        Py_DECREF(kept);
    }
    PyErr_Clear();
    PyErr_Restore(type, value, tbk);
}

/* The zone zbegin began last and zend has not ended is in the stream:
 * under --min-duration it may still wait (then user zones above it are
 * not above it in the stream). */
static int zone_written(void) {
    return !py__opts.min_duration || (tls.np > 0 && tls.np - 1 < tls.nw);
}

/* A user zone is the innermost zone of t: a frame ending now closes it
 * first (eval_hook_after tests the first half alone: a frame's zone is
 * open there). */
static inline int uz_due(const lt__tbuf *t) {
    return t->uz_top == t->depth && t->uz_top;
}

/* At a frame's end: the user zones above its zone first. */
#define UZ_FRAME_END(t, key, gen, rec) \
    do { if (UNLIKELY(uz_due(t))) uz_frame_end(t, key, gen, rec); } while (0)

/* A frame (key) resumes: the user zones it was suspended in begin again. */
static __attribute__((noinline)) void uz_resume(lt__tbuf *t, const void *key) {
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    PyObject *k = PyLong_FromVoidPtr((void *)key);
    PyObject *kept = k ? PyDict_GetItemWithError(g_susp, k) : NULL;
    if (kept) {
        Py_INCREF(kept);
        PyDict_DelItem(g_susp, k);
        g_nsusp = PyDict_GET_SIZE(g_susp);
        py__pending_flush(); /* --min-duration: the frame's begin comes first */
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(kept); i++) {
            unsigned int loc;
            unsigned long long serial;
            if (!PyArg_ParseTuple(PyList_GET_ITEM(kept, i), "IK", &loc, &serial)) break;
            lt__put_begin(t, loc, lt__now());
            if (!uz_push(t, serial, loc, key)) break;
        }
        uz_settop(t);
        Py_DECREF(kept);
    }
    Py_XDECREF(k);
    PyErr_Clear();
    PyErr_Restore(type, value, tbk);
}

#define UZ_RESUME(t, key) \
    do { if (UNLIKELY(g_nsusp) && (t) && g_live) uz_resume(t, key); } while (0)

/* ---- Locations --------------------------------------------------------------- */

PyObject *py__utf8_escaped(PyObject *s) {
    PyObject *b = PyUnicode_EncodeFSDefault(s), *e = NULL;
    if (b) { /* the bytes the surrogates stand for, then those as \xNN */
        e = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), "backslashreplace");
        Py_DECREF(b);
    }
    b = e ? PyUnicode_AsUTF8String(e) : NULL;
    Py_XDECREF(e);
    if (!b) { /* other lone surrogates */
        PyErr_Clear();
        b = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace");
    }
    return b;
}

#define PY_UTF8_KEPT 8
static PyObject *g_escaped[PY_UTF8_KEPT];
static unsigned g_escaped_next;

const char *py__utf8(PyObject *s, const char *dflt, Py_ssize_t *len) {
    const char *u = NULL;
    Py_ssize_t n = 0;
    if (s && PyUnicode_Check(s)) {
        u = PyUnicode_AsUTF8AndSize(s, &n);
        if (UNLIKELY(!u)) {
            PyErr_Clear();
            PyObject *b = py__utf8_escaped(s);
            if (b) {
                Py_XSETREF(g_escaped[g_escaped_next++ % PY_UTF8_KEPT], b);
                u = PyBytes_AS_STRING(b);
                n = PyBytes_GET_SIZE(b);
            } else {
                PyErr_Clear();
            }
        }
    }
    if (!u) {
        u = dflt;
        n = dflt ? (Py_ssize_t)strlen(dflt) : 0;
    }
    if (len) *len = n;
    return u;
}

static const char *utf8_or(PyObject *s, const char *dflt) {
    return py__utf8(s, dflt, NULL);
}

static const char *base_name(const char *path) {
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* Registers a location, with the file and/or line appended to the name
 * under --label file,line. Returns its id or 0. */
static uint32_t loc_register(uint8_t kind, const char *name, const char *file,
                             uint32_t line) {
    if (kind == LT_LOC_LINE || (!py__opts.label_file && !py__opts.label_line))
        return lt_loc_register(kind, name, file, line);
    char buf[1024];
    if (py__opts.label_file && py__opts.label_line && line)
        snprintf(buf, sizeof buf, "%s [%s:%u]", name, base_name(file), line);
    else if (py__opts.label_file)
        snprintf(buf, sizeof buf, "%s [%s]", name, base_name(file));
    else if (line)
        snprintf(buf, sizeof buf, "%s [%u]", name, line);
    else
        snprintf(buf, sizeof buf, "%s", name);
    return lt_loc_register(kind, buf, file, line);
}

/* Asks the filters whether (qualname, module, file) is recorded. */
static int filter_ok(PyObject *qualname, PyObject *module, PyObject *file) {
    PyObject *f = py__opts.filter;
    if (!f) return 1;
    PyObject *r = PyObject_CallFunctionObjArgs(f, qualname, module ? module : Py_None,
                                               file ? file : Py_None, NULL);
    if (!r) {
        py__hook_failed("the filter callback raised (the function is recorded)");
        return 1;
    }
    int ok = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (ok < 0) {
        py__hook_failed("the filter callback's result has no truth value "
                        "(the function is recorded)");
        ok = 1;
    }
    return ok;
}

static int under_skip_prefix(PyObject *file) {
    PyObject *p = py__opts.skip_prefix;
    if (!p || !file || !PyUnicode_Check(file)) return 0;
    Py_ssize_t r = PyUnicode_Tailmatch(file, p, 0, PY_SSIZE_T_MAX, -1);
    if (r < 0) PyErr_Clear();
    return r > 0;
}

static PyObject *g_unrec[PY_UNREC_MAX]; /* (_unrecorded) */
static int g_n_unrec;

PyObject *py__unrecorded(PyObject *self, PyObject *args) {
    (void)self;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
        PyObject *co = PyTuple_GET_ITEM(args, i);
        if (!PyCode_Check(co)) {
            PyErr_SetString(PyExc_TypeError, "_unrecorded takes code objects");
            return NULL;
        }
        int known = 0;
        for (int k = 0; k < g_n_unrec; k++) known |= g_unrec[k] == co;
        if (known) continue;
        if (g_n_unrec == PY_UNREC_MAX) {
            PyErr_SetString(PyExc_ValueError, "_unrecorded: no room for more code objects");
            return NULL;
        }
        Py_INCREF(co);
        g_unrec[g_n_unrec++] = co;
    }
    Py_RETURN_NONE;
}

/* Code of the profiler's own: under skip_prefix, or given to _unrecorded. */
static int code_is_ours(PyCodeObject *co) {
    for (int k = 0; k < g_n_unrec; k++)
        if (g_unrec[k] == (PyObject *)co) return 1;
    return under_skip_prefix(co->co_filename);
}

#if PY_VERSION_HEX >= 0x030B0000
static PyObject *code_qualname(PyCodeObject *co) {
    return co->co_qualname;
}

static void qual_learn(PyCodeObject *co, PyObject *globals) {
}

static void qual_heap_due(void) {
}
#else
/* 3.8-3.10: code objects have no co_qualname. A code object's qualified
 * name is set (in a code-extra slot of its own) when the code that defines
 * it -- module, class body or function, whose co_consts hold it -- is first
 * seen, or from the functions alive when such a code object is first seen
 * (qual_walk_heap); else co_name. */
static Py_ssize_t g_qual_idx = -1;

static void qual_free(void *p) {
    Py_XDECREF((PyObject *)p);
}

static PyObject *qual_get(PyCodeObject *co) {
    void *p = NULL;
    if (g_qual_idx < 0 || _PyCode_GetExtra((PyObject *)co, g_qual_idx, &p) < 0) {
        PyErr_Clear();
        return NULL;
    }
    return p;
}

/* Takes the reference to q. */
static void qual_set(PyCodeObject *co, PyObject *q) {
    if (!q) {
        PyErr_Clear();
    } else if (_PyCode_SetExtra((PyObject *)co, g_qual_idx, q) < 0) {
        PyErr_Clear();
        Py_DECREF(q);
    }
}

/* Every function alive now names its code: those defined before recording
 * began, whose defining code ran unseen. The collector is held off meanwhile:
 * a finalizer run from here would be a frame the hook cannot record. */
static void qual_walk_heap(void) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *on = gc ? PyObject_CallMethod(gc, "isenabled", NULL) : NULL;
    int was = on && PyObject_IsTrue(on) == 1;
    Py_XDECREF(on);
    PyObject *off = was ? PyObject_CallMethod(gc, "disable", NULL) : NULL;
    Py_XDECREF(off);
    PyObject *all = gc ? PyObject_CallMethod(gc, "get_objects", NULL) : NULL;
    for (Py_ssize_t i = 0; all && PyList_Check(all) && i < PyList_GET_SIZE(all); i++) {
        PyObject *f = PyList_GET_ITEM(all, i);
        if (!PyFunction_Check(f)) continue;
        PyObject *co = PyFunction_GET_CODE(f), *q = ((PyFunctionObject *)f)->func_qualname;
        if (!PyCode_Check(co) || !q || qual_get((PyCodeObject *)co)) continue;
        Py_INCREF(q);
        qual_set((PyCodeObject *)co, q);
    }
    Py_XDECREF(all);
    PyObject *back = was ? PyObject_CallMethod(gc, "enable", NULL) : NULL;
    Py_XDECREF(back);
    Py_XDECREF(gc);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

/* The heap is walked once per enable, when first needed: when a code object
 * other than a module's is seen whose name no seen code has set. Most runs
 * of a short script never need it (about 0.8M instructions at start-up). */
static int g_qual_heap_due;

/* At enable: the functions made meanwhile may name code not seen yet. */
static void qual_heap_due(void) {
    g_qual_heap_due = g_qual_idx >= 0;
}

static PyObject *code_qualname(PyCodeObject *co) {
    PyObject *q = qual_get(co);
    if (!q && g_qual_heap_due && PyUnicode_Check(co->co_name) &&
        PyUnicode_CompareWithASCIIString(co->co_name, "<module>") != 0) {
        g_qual_heap_due = 0;
        qual_walk_heap();
        q = qual_get(co);
    }
    return q ? q : co->co_name;
}

/* First sight of co: its own name if still unknown, then its children's. */
static void qual_learn(PyCodeObject *co, PyObject *globals) {
    if (g_qual_idx < 0) return;
    PyObject *q = NULL; /* co's own, once a child needs it */
    int top = PyUnicode_Check(co->co_name) &&
              PyUnicode_CompareWithASCIIString(co->co_name, "<module>") == 0;
    const char *sep = (co->co_flags & CO_OPTIMIZED) ? ".<locals>." : ".";
    PyObject *consts = co->co_consts;
    for (Py_ssize_t i = 0; consts && i < PyTuple_GET_SIZE(consts); i++) {
        PyObject *c = PyTuple_GET_ITEM(consts, i);
        if (!PyCode_Check(c) || qual_get((PyCodeObject *)c)) continue;
        PyObject *name = ((PyCodeObject *)c)->co_name;
        if (top) {
            Py_INCREF(name);
            qual_set((PyCodeObject *)c, name);
        } else {
            if (!q) q = code_qualname(co);
            qual_set((PyCodeObject *)c, PyUnicode_FromFormat("%U%s%U", q, sep, name));
        }
    }
}
#endif

static int init_watch(PyCodeObject *co);

/* First sight of a code object in this epoch: decides whether it is
 * recorded and registers its location. globals: those of the frame, NULL
 * when it is the thread's current frame (callbacks). Never raises. */
static __attribute__((noinline)) uint32_t code_loc_slow(PyCodeObject *co,
                                                        PyObject *globals) {
    py_tstate *s = &tls;
    if (s->in_slow || g_extra_idx < 0) return 0; /* the filter's own frames */
    s->in_slow = 1;
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    uint32_t loc = 0;
    PyObject *file = co->co_filename;
    if (!globals) globals = PyEval_GetGlobals(); /* the callers' frame is co's */
    if (!code_is_ours(co)) {
        py__fork_exec_seen(co);
        qual_learn(co, globals); /* (the profiler's own code is not named) */
        PyObject *module = NULL;
        if (globals && PyDict_Check(globals)) {
            module = PyDict_GetItemString(globals, "__name__");
        }
        Py_XINCREF(module);
        if (filter_ok(code_qualname(co), module, file))
            loc = loc_register(LT_LOC_PYTHON, utf8_or(code_qualname(co), "?"),
                               utf8_or(file, ""), (uint32_t)co->co_firstlineno);
        Py_XDECREF(module);
    }
    uint32_t tag = g_epoch | ((co->co_flags & PY_GEN_FLAGS) ? PY_GEN_BIT : 0);
    if (loc && init_watch(co)) tag |= PY_INIT_BIT;
    uintptr_t v = ((uintptr_t)tag << 32) | loc;
    if (py_code_set_extra((PyObject *)co, g_extra_idx, (void *)v) < 0)
        py__hook_failed("a code object's location could not be kept");
    PyErr_Restore(type, value, tbk);
    s->in_slow = 0;
    return loc;
}

static inline uint32_t code_loc(PyCodeObject *co, PyObject *globals) {
    py_code_extra *ex = (py_code_extra *)co->co_extra;
    if (LIKELY(ex != NULL && g_extra_idx < ex->ce_size)) {
        uintptr_t v = (uintptr_t)ex->ce_extras[g_extra_idx];
        if (LIKELY(((uint32_t)(v >> 32) & ~PY_TAG_BITS) == g_epoch)) return (uint32_t)v;
    }
    return code_loc_slow(co, globals);
}

static int init_units(PyThreadState *ts, py_frame *f);

/* Code of this epoch (after code_loc) that is a simple __init__ (3.13:
 * init_watch); its frames go through init_units. */
static int code_is_init(PyCodeObject *co) {
    py_code_extra *ex = (py_code_extra *)co->co_extra;
    if (ex == NULL || g_extra_idx >= ex->ce_size) return 0;
    uint32_t tag = (uint32_t)((uintptr_t)ex->ce_extras[g_extra_idx] >> 32);
    return (tag & PY_INIT_BIT) && (tag & ~PY_TAG_BITS) == g_epoch;
}

/* EVAL_DEFAULT with `units` of the C budget given back (3.13: init_units). */
static PyObject *init_eval(EVAL_PARAMS, int units) {
#if PY_VERSION_HEX >= 0x030D0000
    PY_BUDGET(ts) += units;
    PyObject *r = EVAL_DEFAULT();
    PY_BUDGET(ts) -= units;
    return r;
#else
    (void)units;
    return EVAL_DEFAULT();
#endif
}

/* A small open-addressing map (k1, k2) -> location, for C functions and
 * lines. Entries of an old epoch count as free. */
typedef struct py_lmap_ent {
    const void *k1;
    uintptr_t k2;
    uint32_t loc;
    uint32_t epoch;
} py_lmap_ent;

typedef struct py_lmap {
    py_lmap_ent *e;
    size_t cap, n;
    uint32_t epoch;
} py_lmap;

static py_lmap g_cmap, g_linemap, g_srcmap;

static size_t lmap_hash(const void *k1, uintptr_t k2) {
    uint64_t h = (uint64_t)(uintptr_t)k1 * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)k2 * 0xC2B2AE3D27D4EB4Full;
    return (size_t)(h ^ (h >> 29));
}

/* Returns the slot of (k1, k2): found (loc valid) or free. NULL on OOM. */
static py_lmap_ent *lmap_slot(py_lmap *m, const void *k1, uintptr_t k2) {
    if (m->epoch != g_epoch) { /* forget everything */
        if (m->e) memset(m->e, 0, m->cap * sizeof *m->e);
        m->n = 0;
        m->epoch = g_epoch;
    }
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 256;
        py_lmap_ent *ne = calloc(ncap, sizeof *ne);
        if (!ne) {
            py__hook_failed("out of memory for the locations of C functions or lines "
                            "(zones were lost)");
            return NULL;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->e[i].epoch) continue;
            size_t j = lmap_hash(m->e[i].k1, m->e[i].k2) & (ncap - 1);
            while (ne[j].epoch) j = (j + 1) & (ncap - 1);
            ne[j] = m->e[i];
        }
        free(m->e);
        m->e = ne;
        m->cap = ncap;
    }
    size_t j = lmap_hash(k1, k2) & (m->cap - 1);
    while (m->e[j].epoch && (m->e[j].k1 != k1 || m->e[j].k2 != k2))
        j = (j + 1) & (m->cap - 1);
    return &m->e[j];
}

static void lmap_set(py_lmap *m, py_lmap_ent *e, const void *k1, uintptr_t k2,
                     uint32_t loc) {
    e->k1 = k1;
    e->k2 = k2;
    e->loc = loc;
    e->epoch = g_epoch;
    m->n++;
}

/* Location of a called C function: `len`, `list.append`. */
static uint32_t cfunc_loc(PyObject *func) {
    const void *k1;
    uintptr_t k2 = 0;
    const char *name = NULL, *owner = NULL;
    PyObject *module = NULL;
    if (PyCFunction_Check(func)) {
        PyCFunctionObject *f = (PyCFunctionObject *)func;
        k1 = f->m_ml;
        name = f->m_ml->ml_name;
        if (f->m_self && !PyModule_Check(f->m_self)) {
            k2 = (uintptr_t)Py_TYPE(f->m_self);
            owner = Py_TYPE(f->m_self)->tp_name;
        }
        module = f->m_module;
    } else if (PyObject_TypeCheck(func, &PyMethodDescr_Type)) {
        PyMethodDescrObject *d = (PyMethodDescrObject *)func;
        k1 = d->d_method;
        k2 = (uintptr_t)d->d_common.d_type;
        name = d->d_method->ml_name;
        owner = d->d_common.d_type->tp_name;
    } else {
        k1 = Py_TYPE(func);
        name = Py_TYPE(func)->tp_name;
    }
    py_lmap_ent *e = lmap_slot(&g_cmap, k1, k2);
    if (!e) return 0;
    if (e->epoch) return e->loc;
    py_tstate *s = &tls;
    if (s->in_slow) return 0;
    s->in_slow = 1;
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    char buf[512];
    if (owner) {
        const char *dot = strrchr(owner, '.');
        snprintf(buf, sizeof buf, "%s.%s", dot ? dot + 1 : owner, name);
    } else {
        snprintf(buf, sizeof buf, "%s", name);
    }
    PyObject *qn = PyUnicode_FromString(buf);
    PyObject *mod = module && PyUnicode_Check(module) ? module : NULL;
    uint32_t loc = 0;
    if (qn && filter_ok(qn, mod, NULL))
        loc = loc_register(LT_LOC_C, buf, mod ? utf8_or(mod, "") : "", 0);
    Py_XDECREF(qn);
    PyErr_Clear();
    PyErr_Restore(type, value, tbk);
    s->in_slow = 0;
    /* the map may have grown during the Python calls above */
    e = lmap_slot(&g_cmap, k1, k2);
    if (e && !e->epoch) lmap_set(&g_cmap, e, k1, k2, loc);
    return loc;
}

/* Under -l, the first time a source file is met in the epoch: its size and
 * mtime as an internal location "tracy: source SIZE MTIME_NS" with the
 * file's path, so that a line report can tell a source edited since the
 * run (FORMAT.md, "Source stamps"). Nothing when the file cannot be
 * stat'ed (no source to show either). */
static void stamp_source(PyObject *file) {
    py_lmap_ent *e = lmap_slot(&g_srcmap, file, 0);
    if (!e || e->epoch) return;
    const char *path = utf8_or(file, "");
    struct stat st;
    if (*path && stat(path, &st) == 0) {
        char buf[96];
        snprintf(buf, sizeof buf, "tracy: source %llu %llu", (unsigned long long)st.st_size,
                 (unsigned long long)st.st_mtim.tv_sec * 1000000000ull +
                     (unsigned long long)st.st_mtim.tv_nsec);
        lt_loc_register(LT_LOC_INTERNAL, buf, path, 0);
    }
    PyErr_Clear();
    Py_INCREF(file); /* keeps the key's address from being reused */
    e = lmap_slot(&g_srcmap, file, 0);
    if (e && !e->epoch) lmap_set(&g_srcmap, e, file, 0, 1);
}

/* Location of line `line` of a code object: "fib:3". */
static uint32_t line_loc(PyCodeObject *co, int line) {
    py_lmap_ent *e = lmap_slot(&g_linemap, co, (uintptr_t)line);
    if (!e) return 0;
    if (e->epoch) return e->loc;
    /* the function's own decision (filters, package code) applies */
    uint32_t floc = code_loc(co, NULL);
    uint32_t loc = 0;
    if (floc) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s:%d", utf8_or(code_qualname(co), "?"), line);
        loc = lt_loc_register(LT_LOC_LINE, buf, utf8_or(co->co_filename, ""),
                              (uint32_t)line);
        Py_INCREF(co); /* keeps the key's address from being reused */
        stamp_source(co->co_filename);
    }
    e = lmap_slot(&g_linemap, co, (uintptr_t)line);
    if (e && !e->epoch) lmap_set(&g_linemap, e, co, (uintptr_t)line, loc);
    return loc;
}

/* ---- --label args -------------------------------------------------------- */

/* Attaches "a=1, b='x'" (reprs truncated) to the zone just begun. */
static void zone_args_text(PyCodeObject *co, PyObject **locals) {
    int n = co->co_argcount + co->co_kwonlyargcount;
    if (co->co_flags & CO_VARARGS) n++;
    if (co->co_flags & CO_VARKEYWORDS) n++;
    if (n == 0 || !locals) return;
    py_tstate *s = &tls;
    if (s->in_slow) return;
    s->in_slow = 1;
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    char buf[512];
    size_t len = 0;
    for (int i = 0; i < n && len < sizeof buf - 8; i++) {
        PyObject *v = locals[i];
        if (v && PyCell_Check(v)) v = PyCell_GET(v);
        const char *nm = utf8_or(PyTuple_GET_ITEM(PY_LOCAL_NAMES(co), i), "?");
        PyObject *r = v ? PyObject_Repr(v) : NULL;
        const char *rs = r ? utf8_or(r, "?") : "?";
        if (!r) PyErr_Clear();
        int w = snprintf(buf + len, sizeof buf - len, "%s%s=%.64s",
                         i ? ", " : "", nm, rs);
        Py_XDECREF(r);
        if (w < 0) break;
        len += (size_t)w;
        if (len >= sizeof buf) len = sizeof buf - 1;
    }
    PyErr_Restore(type, value, tbk);
    s->in_slow = 0;
    if (py__opts.min_duration == 0 && lt__tls && g_live) lt_zone_text(buf, len);
}

/* ---- The frame-evaluation hook ------------------------------------------------- */

/* The call that creates a generator or coroutine: not one of its runs. */
static inline int creates_generator(py_frame *f) {
    return (PYF_CODE(f)->co_flags & PY_GEN_FLAGS) && !PYF_IS_RESUME(f);
}

/* A generator's or coroutine's frame with no zone of its own (filtered
 * out, past --max-depth): the user zones it suspends in end there and
 * begin again when it resumes all the same. */
static __attribute__((noinline)) PyObject *eval_hook_gen_unrec(EVAL_PARAMS) {
    lt__tbuf *t = lt__tls;
    if (t && g_live) UZ_RESUME(t, f);
    PyObject *r = EVAL_DEFAULT();
    t = lt__tls;
    if (t && g_live) UZ_FRAME_END(t, f, r != NULL, 0);
    return r;
}

/* The end of a recorded frame whose begin went into t, outside the inline
 * path: the user zones above it first (those of a generator that suspends,
 * `kept`, begin again at its resume), then its own end. A forked child
 * has a buffer of its own, without the begin: nothing. */
static inline void rec_frame_end(lt__tbuf *t, const void *key, int kept) {
    if (lt__tls == t && g_live) {
        UZ_FRAME_END(t, key, kept, 1);
        if (WIN_HOOK_END(t)) lt__put_end(t, lt__now());
        else WIN_RETURNED();
    }
}

/* A recorded frame (location loc), outside the inline path. */
static PyObject *eval_hook_loc(EVAL_PARAMS, uint32_t loc) {
    lt__tbuf *t = loc ? tb_entering(f) : NULL;
    if (t) WIN_CHECK();
    if (t == NULL || t->depth >= g_depth_limit) {
        /* (a user zone may begin in it: it is watched whatever the state) */
        if ((PYF_CODE(f)->co_flags & PY_GEN_FLAGS) && PYF_IS_RESUME(f))
            return eval_hook_gen_unrec(EVAL_ARGS);
        return EVAL_DEFAULT();
    }
    WIN_TOP(t);
    lt__put_begin(t, loc, lt__now());
    int gen = (PYF_CODE(f)->co_flags & PY_GEN_FLAGS) != 0;
    if (gen) UZ_RESUME(t, f);
    PyObject *r = EVAL_DEFAULT();
    rec_frame_end(t, f, gen && r); /* (kept only at a suspension, not a raise) */
    return r;
}

/* A simple __init__ of this epoch, recorded at loc (3.13: init_units; a
 * function of its own, so that eval_hook_other keeps a short prologue). */
static __attribute__((noinline)) PyObject *eval_hook_init(EVAL_PARAMS, uint32_t loc) {
#if PY_VERSION_HEX >= 0x030D0000
    int units = init_units(ts, f);
    PY_BUDGET(ts) += units;
    PyObject *r = eval_hook_loc(EVAL_ARGS, loc);
    PY_BUDGET(ts) -= units;
    return r;
#else
    return eval_hook_loc(EVAL_ARGS, loc);
#endif
}

/* Frames whose code is new in this epoch, or threads without a buffer. */
static __attribute__((noinline)) PyObject *eval_hook_cold(EVAL_PARAMS) {
    uint32_t loc = code_loc(PYF_CODE(f), f->f_globals);
    if (creates_generator(f)) return EVAL_DEFAULT();
    if (loc && code_is_init(PYF_CODE(f))) return eval_hook_init(EVAL_ARGS, loc);
    return eval_hook_loc(EVAL_ARGS, loc);
}

/* The end of a recorded frame, when it is not written inline. Returns r. */
static __attribute__((noinline)) PyObject *eval_hook_end(lt__tbuf *t, PyObject *r) {
    /* reloaded: a forked child has a buffer of its own, without the begin,
     * and gets no end (a buffer is never at the address of one its process
     * had before fork: client_buf.c keeps those) */
    if (lt__tls == t && g_live) {
        UZ_FRAME_END(t, NULL, 0, 1); /* (a generator's frame goes through eval_hook_loc) */
        if (WIN_HOOK_END(t)) lt__put_end_matched(t, lt__now());
        else WIN_RETURNED();
    }
    return r;
}

/* A recorded frame whose begin cannot be written inline: the chunk is full,
 * or there is no TSC map (clock_gettime). */
static __attribute__((noinline)) PyObject *eval_hook_rec(EVAL_PARAMS, lt__tbuf *t,
                                                         uint32_t loc) {
    WIN_CHECK();
    WIN_TOP(t);
    lt__put_begin(t, loc, lt__now());
    return eval_hook_end(t, EVAL_DEFAULT());
}

#if defined(__x86_64__)
/* The end of a frame whose begin was written inline. Reached by a tail call,
 * so that the hook keeps nothing but the buffer across the frame. */
static __attribute__((noinline)) PyObject *eval_hook_after(lt__tbuf *t, PyObject *r) {
    /* a forked child has a buffer of its own, and the buffer it had before
     * fork has no room (lt__buf_atfork_child); the map, once published,
     * stays */
    if (UNLIKELY(!g_live || t->wp > t->limit || t->depth <= tls_synth || t->uz_top == t->depth))
        return eval_hook_end(t, r);
    lt__write_end(t, lt__tsc_ns(lt__clock()));
    return r;
}

#if PY_VERSION_HEX < 0x030C0000
/* A begin at the depth of the calls running when a window opened (their
 * callee, or a thread's outermost call): win_gone, then the inline path. */
static __attribute__((noinline)) PyObject *eval_hook_top(EVAL_PARAMS, lt__tbuf *t, uint32_t loc,
                                                         const lt__clock_map *c) {
    if (tls_synth) win_gone(0);
    if (t->wp > t->limit) return eval_hook_rec(EVAL_ARGS, t, loc); /* ends written */
    lt__write_begin(t, loc, lt__tsc_ns(c));
    return eval_hook_after(t, EVAL_DEFAULT());
}
#endif
#endif

#if defined(__x86_64__)
/* The end of a generator's or coroutine's run whose begin was written
 * inline, as eval_hook_after; the user zones it suspends in are kept by
 * its frame (f: a key, not read). */
static __attribute__((noinline)) PyObject *eval_hook_gen_after(lt__tbuf *t, py_frame *f,
                                                               PyObject *r) {
    if (UNLIKELY(!g_live || t->wp > t->limit || t->depth <= tls_synth || t->uz_top == t->depth)) {
        rec_frame_end(t, f, r != NULL);
        return r;
    }
    lt__write_end(t, lt__tsc_ns(lt__clock()));
    return r;
}
#endif

/* A generator's or coroutine's run (a resume) recorded at loc: its two
 * records written inline, as the hot path does, where eval_hook_loc would
 * write them the same way (a thread's first event in a window has no
 * buffer yet: eval_hook_loc). */
static __attribute__((noinline)) PyObject *eval_hook_gen(EVAL_PARAMS, uint32_t loc) {
#if defined(__x86_64__)
    lt__tbuf *t = lt__tls;
    const lt__clock_map *c = lt__clock();
    if (UNLIKELY(t == NULL || c == NULL || t->wp > t->limit || t->depth >= g_depth_limit ||
                 WIN_TOP_HOT(t)))
        return eval_hook_loc(EVAL_ARGS, loc);
    lt__write_begin(t, loc, lt__tsc_ns(c));
    UZ_RESUME(t, f);
    return eval_hook_gen_after(t, f, EVAL_DEFAULT());
#else
    return eval_hook_loc(EVAL_ARGS, loc);
#endif
}

/* Code of this epoch that is not recorded, generators and coroutines, or
 * code new in this epoch. */
static __attribute__((noinline)) PyObject *eval_hook_other(EVAL_PARAMS, uintptr_t v) {
    uint32_t tag = (uint32_t)(v >> 32);
    if (tag == g_epoch) return EVAL_DEFAULT();
    if (tag == (g_epoch | PY_GEN_BIT)) {
        if (!PYF_IS_RESUME(f)) return EVAL_DEFAULT();
        if ((uint32_t)v == 0) return eval_hook_gen_unrec(EVAL_ARGS);
        return eval_hook_gen(EVAL_ARGS, (uint32_t)v);
    }
    if (tag == (g_epoch | PY_INIT_BIT)) return eval_hook_init(EVAL_ARGS, (uint32_t)v);
    return eval_hook_cold(EVAL_ARGS);
}

/* The hot path: the cached location and two records written inline. Every
 * call out of it but the frame's own evaluation is a tail call, so that only
 * the buffer is kept across that one (a short prologue). `depth_check`:
 * honour g_depth_limit (--max-depth, or 0 once the client stopped). */
static inline __attribute__((always_inline)) PyObject *
eval_hook_body(EVAL_PARAMS, int depth_check) {
    py_code_extra *ex = (py_code_extra *)PYF_CODE(f)->co_extra;
    lt__tbuf *t = lt__tls;
    if (UNLIKELY(ex == NULL || g_extra_idx >= ex->ce_size || t == NULL))
        return eval_hook_cold(EVAL_ARGS);
    /* One test for "this epoch" and "recorded" (loc != 0): see g_epoch_base. */
    uintptr_t v = (uintptr_t)ex->ce_extras[g_extra_idx];
    uint64_t x = (uint64_t)v - g_epoch_base;
    if (UNLIKELY(x >= UINT32_MAX)) return eval_hook_other(EVAL_ARGS, v);
    if (depth_check && t->depth >= g_depth_limit) return EVAL_DEFAULT();
    uint32_t loc = (uint32_t)x + 1;
#if defined(__x86_64__)
    const lt__clock_map *c = lt__clock();
    if (UNLIKELY(c == NULL || t->wp > t->limit)) return eval_hook_rec(EVAL_ARGS, t, loc);
#if PY_VERSION_HEX < 0x030C0000
    if (UNLIKELY(WIN_TOP_HOT(t))) return eval_hook_top(EVAL_ARGS, t, loc, c);
#endif
    uint64_t now = lt__tsc_ns(c);
    /* the buffer is read after the clock: GCC would otherwise load it
     * first, and keep more values than there are scratch registers */
    __asm__ volatile("" ::: "memory");
    lt__write_begin(t, loc, now);
    return eval_hook_after(t, EVAL_DEFAULT());
#else
    return eval_hook_rec(EVAL_ARGS, t, loc);
#endif
}

/* The hook while there is no depth limit and the client records. */
static PyObject *eval_hook(EVAL_PARAMS) {
    return eval_hook_body(EVAL_ARGS, 0);
}

/* The hook under --max-depth, or once the client stopped. */
static PyObject *eval_hook_depth(EVAL_PARAMS) {
    return eval_hook_body(EVAL_ARGS, 1);
}

/* The same with --min-duration or --label args. */
static PyObject *eval_hook_slow(EVAL_PARAMS) {
    uint32_t loc = code_loc(PYF_CODE(f), f->f_globals);
    int units = loc != 0 && !creates_generator(f) && code_is_init(PYF_CODE(f))
                    ? init_units(PyThreadState_GET(), f) : 0;
    if (loc != 0 && !creates_generator(f) && zbegin(loc)) {
        if (py__opts.label_args) zone_args_text(PYF_CODE(f), PYF_LOCALS(f));
        int gen = (PYF_CODE(f)->co_flags & PY_GEN_FLAGS) != 0;
        if (gen) UZ_RESUME(lt__tls, f);
        PyObject *r = init_eval(EVAL_ARGS, units);
        if (lt__tls && g_live) UZ_FRAME_END(lt__tls, f, gen && r, zone_written());
        if (!lt__tls || WIN_HOOK_END(lt__tls)) zend();
        else if (g_live) WIN_RETURNED();
        return r;
    }
    if ((PYF_CODE(f)->co_flags & PY_GEN_FLAGS) && PYF_IS_RESUME(f))
        return eval_hook_gen_unrec(EVAL_ARGS);
    return init_eval(EVAL_ARGS, units);
}

/* ---- Profile and trace callbacks ------------------------------------------------- */

static py_ent *push(const void *key, uint8_t kind, uint8_t rec) {
    py_tstate *s = &tls;
    if (s->n == s->cap && grow((void **)&s->st, &s->cap, sizeof *s->st) < 0)
        return NULL;
    py_ent *e = &s->st[s->n++];
    e->key = key;
#if PY_VERSION_HEX < 0x030C0000
    e->lent = NULL;
#endif
    e->kind = kind;
    e->rec = rec;
    e->line = 0;
    return e;
}

/* A frame entry's key and whether its code is a generator's (uz_frame_end). */
static void uz_ent(py_ent *e, const void **key, int *gen) {
    if (e->kind == ENT_MON) { /* key: the code; the frame is the current one */
        *key = uz_current_key();
        *gen = (((PyCodeObject *)e->key)->co_flags & PY_GEN_FLAGS) != 0;
    } else {
        *key = PY_FO_KEY(e->key);
        PyCodeObject *co = PyFrame_GetCode((PyFrameObject *)e->key);
        *gen = (co->co_flags & PY_GEN_FLAGS) != 0;
        Py_DECREF(co);
    }
}

static void pop_ends(py_ent *e) {
    if (e->line) zend();
    lt__tbuf *t = lt__tls;
    if (t && g_live && e->kind != ENT_C && UNLIKELY(uz_due(t))) {
        const void *key;
        int gen;
        uz_ent(e, &key, &gen);
        uz_frame_end(t, key, gen, e->rec == 2 || (e->rec && zone_written()));
    }
    if (e->rec == 2) win_end();
    else if (e->rec) zend();
}

static void frame_enter(PyFrameObject *frame) {
    uint8_t rec = 0;
    if (UNLIKELY(tls_win_gen != g_win_gen)) {
        PyFrameObject *back = PyFrame_GetBack(frame);
        win_first(back, 1);
        Py_XDECREF(back);
    }
    if (g_enabled) {
        PyCodeObject *co = PyFrame_GetCode(frame);
        PyObject *globals = PyFrame_GetGlobals(frame);
        uint32_t loc = code_loc(co, globals);
        if (loc && zbegin(loc)) {
            rec = 1;
            if (py__opts.label_args) zone_args_text(co, PYFO_LOCALS(frame));
        }
        Py_XDECREF(globals);
        Py_DECREF(co);
    }
    if (!push(frame, ENT_FRAME, rec) && rec) zend();
    if (UNLIKELY(g_nsusp)) {
        PyCodeObject *co = PyFrame_GetCode(frame);
        if (co->co_flags & PY_GEN_FLAGS) UZ_RESUME(lt__tls, PY_FO_KEY(frame));
        Py_DECREF(co);
    }
}

/* A frame returns (or yields): closes what it opened. Entries above it
 * (C calls that did not report their end) close too. */
static void frame_exit(PyFrameObject *frame) {
    py_tstate *s = &tls;
    uint32_t i = s->n;
    while (i > 0 && !(s->st[i - 1].kind == ENT_FRAME && s->st[i - 1].key == frame))
        i--;
    if (i == 0) return; /* entered before recording started */
    while (s->n >= i) pop_ends(&s->st[--s->n]);
}

static void uninstall_current(void);

/* ---- Simple __init__ calls (3.13) ------------------------------------------- */

#if PY_VERSION_HEX >= 0x030D0000
/* CPython 3.13 specializes the call of a class whose __init__ is a simple
 * Python function (CALL_ALLOC_AND_ENTER_INIT): the __init__ frame is pushed
 * inline, past the frame-evaluation hook, which the other inline calls
 * respect. The specializer leaves alone a class whose tp_alloc is not
 * PyType_GenericAlloc: the first time the hook sees such an __init__ run
 * for a class, the class gets init_alloc, which is PyType_GenericAlloc
 * under another address, and PyType_Modified sends the calls already
 * specialized for it back to the generic CALL. Nothing else changes for
 * the program, and no sys.monitoring tool id is taken. */
/* what init_alloc made last (initial-exec: read at every such allocation) */
static __thread PyObject *tls_init_new __attribute__((tls_model("initial-exec")));

static PyObject *init_alloc(PyTypeObject *tp, Py_ssize_t n) {
    PyObject *o = PyType_GenericAlloc(tp, n);
    tls_init_new = o;
    return o;
}

/* Keeps the class of the __init__ frame f from inline calls, and returns
 * the units of the C recursion budget to give back to the frame beyond
 * py_inline_call's: plain Python would have called it inline (no unit)
 * where a CALL of the class, with the arguments __init__ takes, made it
 * (the call of the class takes one unit, then the frame's entry two, which
 * py_inline_call gives back for a CALL but not for the CALL_NON_PY_GENERAL
 * the specializer turns it into). */
static int init_units(PyThreadState *ts, py_frame *f) {
    PyCodeObject *co = PYF_CODE(f);
    PyObject *self = co->co_argcount > 0 ? PYF_LOCALS(f)[0] : NULL;
    if (!self) return 0;
    PyTypeObject *tp = Py_TYPE(self);
    if (tp->tp_alloc == PyType_GenericAlloc && (tp->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
        tp->tp_alloc = init_alloc;
        PyType_Modified(tp);
    }
    if (self != tls_init_new) return 0; /* not made by a call of its class */
    tls_init_new = NULL;
    _PyInterpreterFrame *caller = ts->current_frame;
    if (!caller || caller->instr_ptr->op.arg + 1 != co->co_argcount) return 0;
    switch (caller->instr_ptr->op.code) {
    case CALL: return 1;
    case CALL_NON_PY_GENERAL: return 1 + PY_GIVEN_BACK;
    default: return 0;
    }
}

/* Code the specializer may push inline as an __init__: no *args, **kwargs
 * or keyword-only parameters. */
static int simple_code(PyCodeObject *co) {
    return (co->co_flags & CO_OPTIMIZED) && !(co->co_flags & (CO_VARARGS | CO_VARKEYWORDS | PY_GEN_FLAGS)) &&
           co->co_kwonlyargcount == 0;
}

/* An __init__ the specializer may push inline. */
static int simple_init(PyCodeObject *co) {
    return simple_code(co) && PyUnicode_Check(co->co_name) &&
           PyUnicode_CompareWithASCIIString(co->co_name, "__init__") == 0;
}

/* Gives class tp init_alloc (keep) when its __init__ is one the specializer
 * may push inline, or takes it back (!keep). */
static void init_alloc_set(PyTypeObject *tp, PyObject *name, int keep) {
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE)) return;
    if (keep) {
        if (tp->tp_alloc != PyType_GenericAlloc) return;
        PyObject *init = _PyType_Lookup(tp, name); /* borrowed; the MRO's dicts only */
        if (!init || !PyFunction_Check(init) || !simple_code((PyCodeObject *)PyFunction_GET_CODE(init)))
            return;
        tp->tp_alloc = init_alloc;
    } else {
        if (tp->tp_alloc != init_alloc) return;
        tp->tp_alloc = PyType_GenericAlloc;
    }
    PyType_Modified(tp);
}

/* init_alloc_set for tp and the classes whose primary base (tp_base) it is,
 * and theirs: every class once, the diamonds of multiple inheritance
 * included. The subclasses of a class of the program are its
 * tp_subclasses, a dict of weak references (none: a leaf); a builtin
 * class's are asked of type.__subclasses__, the C function itself (a
 * metaclass's own would be the program's code). */
static void init_alloc_tree(PyTypeObject *tp, PyObject *name, PyObject *subclasses, int keep,
                            int depth) {
    init_alloc_set(tp, name, keep);
    PyObject *subs;
    int refs = 0;
    if (tp->tp_flags & Py_TPFLAGS_HEAPTYPE) {
        if (!tp->tp_subclasses) return;
        subs = PyDict_Values((PyObject *)tp->tp_subclasses);
        refs = 1;
    } else {
        subs = PyObject_CallOneArg(subclasses, (PyObject *)tp);
    }
    if (!subs || !PyList_Check(subs) || depth > 10000) {
        Py_XDECREF(subs);
        PyErr_Clear();
        return;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(subs); i++) {
        PyObject *sub = PyList_GET_ITEM(subs, i);
        if (refs) {
            if (!PyWeakref_Check(sub) || PyWeakref_GetRef(sub, &sub) <= 0) {
                PyErr_Clear();
                continue;
            }
        } else {
            Py_INCREF(sub);
        }
        if (PyType_Check(sub) && ((PyTypeObject *)sub)->tp_base == tp)
            init_alloc_tree((PyTypeObject *)sub, name, subclasses, keep, depth + 1);
        Py_DECREF(sub);
    }
    Py_DECREF(subs);
}

/* Sets (keep) or takes back (!keep) init_alloc on every class of the
 * interpreter whose __init__ may be pushed inline. When recording starts, a
 * call site specialized before would otherwise call such an __init__ past
 * the hook for the whole recording (a class called only from there would
 * never be seen); after a trace window, the program's classes are called
 * inline again, as unprofiled (a call site specialized meanwhile stays a
 * generic call, CALL_NON_PY_GENERAL: speed only). Nothing of the program
 * runs. Never raises. */
static void init_alloc_all(int keep) {
    if (Py_IsFinalizing()) return; /* (the end of the run: nothing to call) */
    /* A class is specialized for only with a version tag, which it gets
     * from this counter: while it has not moved, the classes that may be
     * called inline are those of the last walk, and they kept init_alloc
     * (enabling again is cheap, as a decorated function's calls do) */
    PyInterpreterState *interp = PyInterpreterState_Get();
    static unsigned int walked;
    if (keep && walked && interp->types.next_version_tag == walked) return;
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    PyObject *subclasses = PyObject_GetAttrString((PyObject *)&PyType_Type, "__subclasses__");
    PyObject *name = PyUnicode_InternFromString("__init__");
    if (subclasses && name) init_alloc_tree(&PyBaseObject_Type, name, subclasses, keep, 0);
    walked = keep ? interp->types.next_version_tag : 0;
    Py_XDECREF(name);
    Py_XDECREF(subclasses);
    PyErr_Clear();
    PyErr_Restore(type, value, tbk);
}

/* Under the hook: 1 when the frames of co need init_units. */
static int init_watch(PyCodeObject *co) {
    return g_mode == PY_MODE_EVAL && simple_init(co);
}
#else
static int init_units(PyThreadState *ts, py_frame *f) {
    (void)ts, (void)f;
    return 0;
}

static int init_watch(PyCodeObject *co) {
    (void)co;
    return 0;
}

static void init_alloc_all(int keep) {
    (void)keep;
}
#endif

/* C calls made by the profiler's own package are not the program's. */
static int caller_is_ours(PyFrameObject *frame) {
    if (!py__opts.skip_prefix && g_n_unrec == 0) return 0;
    PyCodeObject *co = PyFrame_GetCode(frame);
    int ours = code_is_ours(co);
    Py_DECREF(co);
    return ours;
}

#if PY_VERSION_HEX < 0x030C0000
/* Before 3.12, while any profile function is set, CPython calls a method
 * descriptor (arr.resize(5), lst.append(x)) through a temporary bound method
 * that holds `self` for the whole call: one reference more than the
 * unprofiled call, which NumPy's resize() and sys.getrefcount see. The
 * profile function takes that reference back for the call: at C_CALL it
 * keeps the bound method alive itself, out of the collector's sight, and
 * drops the reference to self the bound method owns; at the matching
 * C_RETURN or C_EXCEPTION it gives both back. self stays alive meanwhile
 * through the caller's evaluation stack, which holds it as the call's first
 * argument (checked: the descriptor and self side by side there). Should
 * that return never come (the profile function was replaced during the
 * call), the bound method is kept for good and never touched again, and
 * self's count stays that of its real owners. */

#if PY_VERSION_HEX >= 0x03090000
#define py_gc_tracked(o) PyObject_GC_IsTracked(o)
#else
#define py_gc_tracked(o) (PyObject_IS_GC(o) && _PyObject_GC_IS_TRACKED(o))
#endif

/* The slot below the first one of the calling frame's stack that holds
 * self, or NULL. Pointers are compared, never followed (a slot above the
 * stack's top may be stale). */
static PyObject **below_on_stack(PyFrameObject *frame, PyObject *self) {
#if PY_VERSION_HEX >= 0x030B0000
    _PyInterpreterFrame *f = frame->f_frame;
    PyCodeObject *co = f->f_code;
    PyObject **base = f->localsplus + co->co_nlocalsplus;
#else
    PyCodeObject *co = frame->f_code;
    PyObject **base = frame->f_valuestack;
#endif
    if (!base) return NULL;
    for (int i = 1; i < co->co_stacksize; i++)
        if (base[i] == self) return &base[i - 1];
    return NULL;
}

static PyObject *lend_self(PyFrameObject *frame, PyObject *func) {
    if (Py_REFCNT(func) != 1 || !PyCFunction_Check(func)) return NULL;
    PyCFunctionObject *m = (PyCFunctionObject *)func;
    PyObject *self = m->m_self;
    if (!self || PyModule_Check(self) || Py_REFCNT(self) < 2 || m->m_module ||
        !py_gc_tracked(func))
        return NULL;
    PyObject **below = below_on_stack(frame, self);
    if (!below) return NULL;
    /* the descriptor this bound method came from lies just below self */
    PyObject *name = PyUnicode_InternFromString(m->m_ml->ml_name);
    if (!name) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *descr = _PyType_Lookup(Py_TYPE(self), name); /* borrowed */
    Py_DECREF(name);
    if (!descr || *below != descr || Py_TYPE(descr) != &PyMethodDescr_Type ||
        ((PyMethodDescrObject *)descr)->d_method != m->m_ml)
        return NULL;
    Py_INCREF(func);
    PyObject_GC_UnTrack(func);
    Py_DECREF(self);
    return self;
}

/* The matching C_RETURN or C_EXCEPTION of a call whose self was lent. */
static void lend_back(py_ent *e) {
    PyObject *func = (PyObject *)e->key;
    Py_INCREF(e->lent);
    e->lent = NULL;
    PyObject_GC_Track(func);
    Py_DECREF(func);
}
#endif

static int profile_cb(PyObject *obj, PyFrameObject *frame, int what,
                      PyObject *arg) {
    py_tstate *s = &tls;
    switch (what) {
    case PyTrace_CALL:
        /* under the frame-evaluation hook: only for win_first's frames */
        if (!py__opts.lines && g_mode != PY_MODE_EVAL) frame_enter(frame);
        break;
    case PyTrace_RETURN:
        if (!py__opts.lines) frame_exit(frame);
        break;
    case PyTrace_C_CALL: {
        uint8_t rec = 0;
        int want = 0;
        if (g_enabled && py__opts.trace_c && !caller_is_ours(frame)) {
            uint32_t loc = cfunc_loc(arg);
            rec = loc && zbegin(loc);
            want = 1;
        }
#if PY_VERSION_HEX < 0x030C0000
        PyObject *lent = lend_self(frame, arg);
        if (lent) {
            py_ent *e = push(arg, ENT_C, rec);
            if (e) e->lent = lent;
            else if (rec) zend();
            break;
        }
#endif
        if (want && !push(arg, ENT_C, rec) && rec) zend();
        break;
    }
    case PyTrace_C_RETURN:
    case PyTrace_C_EXCEPTION:
        if (s->n && s->st[s->n - 1].kind == ENT_C && s->st[s->n - 1].key == arg) {
            py_ent *e = &s->st[--s->n];
#if PY_VERSION_HEX < 0x030C0000
            if (e->lent) lend_back(e);
#endif
            pop_ends(e);
        }
        break;
    }
    if (!g_enabled && s->n == 0) uninstall_current();
    if (UNLIKELY(tls_win_prof)) win_prof_check();
    return 0;
}

static int trace_cb(PyObject *obj, PyFrameObject *frame, int what,
                    PyObject *arg) {
    py_tstate *s = &tls;
    switch (what) {
    case PyTrace_CALL:
        frame_enter(frame);
        break;
    case PyTrace_RETURN:
        frame_exit(frame);
        break;
    case PyTrace_LINE: {
        if (UNLIKELY(tls_win_gen != g_win_gen)) win_first(frame, 1);
        py_ent *e = s->n ? &s->st[s->n - 1] : NULL;
        if (!e || e->kind != ENT_FRAME || e->key != frame) {
            if (!g_enabled) break;
            e = push(frame, ENT_FRAME, 0); /* a frame older than enable() */
            if (!e) break;
        }
        if (e->line) {
            e->line = 0;
            zend();
        }
        if (g_enabled) {
            PyCodeObject *co = PyFrame_GetCode(frame);
            uint32_t loc = line_loc(co, PyFrame_GetLineNumber(frame));
            Py_DECREF(co);
            e = &s->st[s->n - 1];
            if (loc && zbegin(loc)) e->line = 1;
        }
        break;
    }
    }
    if (!g_enabled && s->n == 0) uninstall_current();
    return 0;
}

static void uninstall_current(void) {
    if (g_mode == PY_MODE_MONITOR) return;
    if (g_mode == PY_MODE_PROFILE || py__opts.trace_c) PyEval_SetProfile(NULL, NULL);
    if (py__opts.lines) PyEval_SetTrace(NULL, NULL);
}

/* The callbacks of the mode in thread ts (see py_set_func). */
static void install_thread(PyThreadState *ts) {
    if (g_mode == PY_MODE_MONITOR) return;
    if (g_mode == PY_MODE_PROFILE || py__opts.trace_c) py_set_func(ts, profile_cb, 0);
    if (g_mode == PY_MODE_TRACE) py_set_func(ts, trace_cb, 1);
}

/* The callbacks in every thread of the interpreter; threads started later
 * install them through py__thread_hook. */
static void install_all(void) {
#if PY_VERSION_HEX >= 0x030C0000
    if (g_mode == PY_MODE_PROFILE || py__opts.trace_c)
        PyEval_SetProfileAllThreads(profile_cb, NULL);
    if (g_mode == PY_MODE_TRACE) PyEval_SetTraceAllThreads(trace_cb, NULL);
#else
    PyInterpreterState *interp = PyInterpreterState_Get();
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts;
         ts = PyThreadState_Next(ts))
        install_thread(ts);
#endif
}

/* threading.setprofile/settrace target: in a new thread, replaces itself by
 * the C callbacks and handles the event that called it. */
PyObject *py__call_detached(PyObject *self, PyObject *args) {
    (void)self;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n < 1) {
        PyErr_SetString(PyExc_TypeError, "_call_detached needs a callable");
        return NULL;
    }
    PyObject *rest = PyTuple_GetSlice(args, 1, n);
    if (!rest) return NULL;
    PyThreadState *ts = PyThreadState_Get();
#if PY_VERSION_HEX >= 0x030D0000
    _PyInterpreterFrame *saved = ts->current_frame;
    ts->current_frame = NULL;
#elif PY_VERSION_HEX >= 0x030B0000
    _PyInterpreterFrame *saved = ts->cframe->current_frame;
    ts->cframe->current_frame = NULL;
#else
    PyFrameObject *saved = ts->frame;
    ts->frame = NULL;
#endif
    PyObject *r = PyObject_Call(PyTuple_GET_ITEM(args, 0), rest, NULL);
#if PY_VERSION_HEX >= 0x030D0000
    ts->current_frame = saved;
#elif PY_VERSION_HEX >= 0x030B0000
    ts->cframe->current_frame = saved;
#else
    ts->frame = saved;
#endif
    Py_DECREF(rest);
    return r;
}

PyObject *py__thread_hook(PyObject *self, PyObject *args) {
    PyObject *frame, *arg;
    const char *event;
    if (!PyArg_ParseTuple(args, "OsO", &frame, &event, &arg)) return NULL;
    if (!g_enabled || !PyFrame_Check(frame)) Py_RETURN_NONE;
    install_thread(PyThreadState_Get());
    if (strcmp(event, "call") == 0) frame_enter((PyFrameObject *)frame);
    Py_RETURN_NONE;
}

/* ---- For the exact mechanism's sys.monitoring events (mech.h) --------------- */

int py__legacy_is_ours(PyThreadState *ts) {
    return (!ts->c_profilefunc || ts->c_profilefunc == profile_cb) &&
           (!ts->c_tracefunc || ts->c_tracefunc == trace_cb);
}

int py__rec_enabled(void) {
    return g_enabled;
}

int py__rec_enter(PyCodeObject *co) {
    uint8_t rec = 0;
    if (UNLIKELY(tls_win_gen != g_win_gen) && g_enabled) {
        /* a window opened: the calls running here are co's callers */
        PyFrameObject *fr = PyEval_GetFrame(); /* borrowed: co's own */
        PyFrameObject *back = fr ? PyFrame_GetBack(fr) : NULL;
        win_first(back, 1);
        Py_XDECREF(back);
    }
    if (g_enabled) {
        uint32_t loc = code_loc(co, NULL);
        rec = loc && zbegin(loc);
        if (rec && py__opts.label_args) {
            PyFrameObject *fr = PyEval_GetFrame(); /* borrowed: the frame of co */
            if (fr) zone_args_text(co, PYFO_LOCALS(fr));
        }
    }
    /* every run has its entry, recorded or not: its end pops its own */
    if (push(co, ENT_MON, rec)) {
        if (UNLIKELY(g_nsusp) && (co->co_flags & PY_GEN_FLAGS)) UZ_RESUME(lt__tls, uz_current_key());
        return 1;
    }
    if (rec) zend();
    return 0;
}

/* Frames nest: when the frame of co ends, the entries above co's topmost
 * one are of frames that ended without an event (a tracer's exception in
 * a callback) and close too. No entry of co: a frame older than enable(). */
int py__rec_exit(PyCodeObject *co) {
    py_tstate *s = &tls;
    uint32_t i = s->n;
    while (i > 0 && !(s->st[i - 1].kind == ENT_MON && s->st[i - 1].key == co)) i--;
    if (i == 0) return 0;
    int popped = (int)(s->n - i + 1);
    while (s->n >= i) pop_ends(&s->st[--s->n]);
    return popped;
}

int py__rec_ccall(PyCodeObject *caller, PyObject *callable, PyObject *self) {
    if (!g_enabled || code_is_ours(caller)) return 0;
    uint32_t loc;
    if (PyCFunction_Check(callable)) {
        loc = cfunc_loc(callable);
    } else {
        /* named as the bound method PyEval_SetProfile reports: type(self).name */
        PyTypeObject *owner = ((PyMethodDescrObject *)callable)->d_common.d_type;
        if (!self || !PyObject_TypeCheck(self, owner)) return 0;
        PyObject *m = Py_TYPE(callable)->tp_descr_get(callable, self, (PyObject *)Py_TYPE(self));
        if (!m) {
            PyErr_Clear();
            return 0;
        }
        loc = cfunc_loc(m);
        Py_DECREF(m);
    }
    if (!loc) return 0;
    uint8_t rec = zbegin(loc);
    if (push(callable, ENT_C, rec)) return 1;
    if (rec) zend();
    return 0;
}

int py__rec_creturn(PyObject *callable) {
    py_tstate *s = &tls;
    if (!s->n || s->st[s->n - 1].kind != ENT_C || s->st[s->n - 1].key != callable) return 0;
    pop_ends(&s->st[--s->n]);
    return 1;
}

int py__rec_line(PyCodeObject *co, int line) {
    py_tstate *s = &tls;
    int pushed = 0;
    py_ent *e = s->n ? &s->st[s->n - 1] : NULL;
    if (!e || e->kind != ENT_MON || e->key != co) {
        if (!g_enabled) return 0;
        e = push(co, ENT_MON, 0); /* a frame older than enable(), or not recorded */
        if (!e) return 0;
        pushed = 1;
    }
    if (e->line) {
        e->line = 0;
        zend();
    }
    if (g_enabled) {
        uint32_t loc = line_loc(co, line);
        e = &s->st[s->n - 1]; /* line_loc may have grown the stack */
        if (loc && zbegin(loc)) e->line = 1;
    }
    return pushed;
}

/* ---- Calls running when a trace window opens ------------------------------- */

/* A trace window (py__client_restarted) may open while threads are inside
 * calls: a server in serve_forever(), a long main(). Each thread -- the one
 * that opens the window when it enables the hook, any other at its first
 * event in the window -- writes the recorded calls on its stack as zone
 * begins 1 ns before the window's start (client_cut.c makes them cut zones,
 * FORMAT.md kind 17, when the file is finished) and keeps them on its stack
 * of entries, so that their returns end them: under the profile and trace
 * callbacks as any frame's; under the frame-evaluation hook, which did not
 * evaluate them, through local sys.monitoring events on their code objects
 * (3.12+, else through profile_cb set on this thread when no tool id is
 * free), and before 3.12 by win_gone, which looks for them on the thread's
 * chain of frames when the hook begins a call at their depth, ends one they
 * are inside, and at the window's stop: those ends come at the thread's
 * last recorded event, a lower bound. Not with --min-duration. A thread
 * with no event in the window is not in it. */
static uint64_t g_win_start; /* lt__now() when the latest window opened */

static void win_opened(void) {
    g_win_gen++;
    g_win_start = lt__now();
}

/* Forgets the thread's entries: their ends belong to an earlier window. */
static void win_reset(py_tstate *s) {
#if PY_VERSION_HEX < 0x030C0000
    for (uint32_t i = 0; i < s->n; i++)
        if (s->st[i].kind == ENT_C && s->st[i].lent) lend_back(&s->st[i]);
#endif
    s->n = 0;
    s->floor = s->nw = s->np;
}

#if PY_VERSION_HEX >= 0x030C0000
/* 3.12+: a profile function would instrument every code object of the
 * interpreter; local PY_RETURN and PY_YIELD events on the running calls'
 * code objects, and PY_UNWIND while a window watches, cost nothing
 * elsewhere. A tool id of its own, kept: 4, else 3, the ids sys.monitoring
 * reserves for nobody (0, 1, 2 and 5 are the debugger's, coverage's, the
 * profiler's and the optimizer's). */
static int g_wmon_tool = -1; /* -2: none could be had */
static long g_wmon_events, g_wmon_unwind;
static int g_wmon_unwinding; /* PY_UNWIND is set */
static PyObject *g_wmon_set_local, *g_wmon_set_events;

static void wmon_off(PyObject *code);

/* PY_RETURN, PY_YIELD of a watched code object, PY_UNWIND of any: the
 * returning frame is still the current one. */
static PyObject *wmon_return(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    if (!g_enabled) {
        wmon_off(n >= 1 ? a[0] : NULL);
    } else if (tls.n && tls_win_gen == g_win_gen) {
        PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
        if (f) frame_exit(f);
    }
    Py_RETURN_NONE;
}

static PyMethodDef g_wmon_def = {
    "_window_return", (PyCFunction)(void (*)(void))wmon_return, METH_FASTCALL,
    PyDoc_STR("_window_return(code, offset, value)\n--\n\nA running call returned.")};

static long wmon_event(PyObject *events, const char *name) {
    PyObject *v = PyObject_GetAttrString(events, name);
    long e = v ? PyLong_AsLong(v) : -1;
    Py_XDECREF(v);
    return e;
}

static int wmon_register(PyObject *mon) {
    PyObject *events = PyObject_GetAttrString(mon, "events");
    if (!events) return -1;
    long ret = wmon_event(events, "PY_RETURN"), yld = wmon_event(events, "PY_YIELD");
    g_wmon_unwind = wmon_event(events, "PY_UNWIND");
    Py_DECREF(events);
    if (ret < 0 || yld < 0 || g_wmon_unwind < 0) return -1;
    static const int ids[] = {4, 3};
    for (size_t i = 0; i < sizeof ids / sizeof *ids && g_wmon_tool < 0; i++) {
        PyObject *r = PyObject_CallMethod(mon, "use_tool_id", "is", ids[i], "tracy");
        if (r) g_wmon_tool = ids[i];
        else PyErr_Clear();
        Py_XDECREF(r);
    }
    if (g_wmon_tool < 0) return -1;
    PyObject *fn = PyCFunction_New(&g_wmon_def, NULL);
    int ok = fn != NULL;
    long evs[] = {ret, yld, g_wmon_unwind};
    for (size_t i = 0; ok && i < 3; i++) {
        PyObject *r = PyObject_CallMethod(mon, "register_callback", "ilO", g_wmon_tool, evs[i], fn);
        ok = r != NULL;
        Py_XDECREF(r);
    }
    Py_XDECREF(fn);
    g_wmon_events = ret | yld;
    g_wmon_set_local = PyObject_GetAttrString(mon, "set_local_events");
    g_wmon_set_events = PyObject_GetAttrString(mon, "set_events");
    return ok && g_wmon_set_local && g_wmon_set_events ? 0 : -1;
}

/* 0 when the running calls' returns can be watched this way. */
static int wmon_setup(void) {
    if (g_wmon_tool != -1) return g_wmon_tool >= 0 ? 0 : -1;
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    PyObject *mon = PySys_GetObject("monitoring"); /* borrowed */
    int failed = 0;
    if (mon) OWN_SETTING(failed = wmon_register(mon) < 0);
    if (!mon || failed) {
        if (g_wmon_tool >= 0) { /* half set up: give the id back */
            PyObject *r = PyObject_CallMethod(mon, "free_tool_id", "i", g_wmon_tool);
            Py_XDECREF(r);
        }
        g_wmon_tool = -2;
    }
    PyErr_Clear();
    PyErr_Restore(type, value, tbk);
    return g_wmon_tool >= 0 ? 0 : -1;
}

static void wmon_call(PyObject *fn, const char *fmt, PyObject *code, long events) {
    PyObject *r = code ? PyObject_CallFunction(fn, fmt, g_wmon_tool, code, events)
                       : PyObject_CallFunction(fn, fmt, g_wmon_tool, events);
    if (!r) PyErr_Clear();
    Py_XDECREF(r);
}

/* The window has ended: code (a watched code object, or NULL) and
 * PY_UNWIND are no longer watched. */
static void wmon_off(PyObject *code) {
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    if (code && PyCode_Check(code)) wmon_call(g_wmon_set_local, "iOl", code, 0);
    if (g_wmon_unwinding) {
        g_wmon_unwinding = 0;
        wmon_call(g_wmon_set_events, "il", NULL, 0);
    }
    PyErr_Restore(type, value, tbk);
}

/* Watches the returns of the frames on this thread's stack of entries. */
static int wmon_watch(py_tstate *s) {
    if (g_wmon_tool < 0) return -1;
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    for (uint32_t i = 0; i < s->n; i++) {
        if (s->st[i].kind != ENT_FRAME) continue;
        PyCodeObject *co = PyFrame_GetCode((PyFrameObject *)s->st[i].key);
        wmon_call(g_wmon_set_local, "iOl", (PyObject *)co, g_wmon_events);
        Py_DECREF(co);
    }
    if (!g_wmon_unwinding) {
        g_wmon_unwinding = 1;
        wmon_call(g_wmon_set_events, "il", NULL, g_wmon_unwind);
    }
    PyErr_Restore(type, value, tbk);
    return 0;
}
#else
static int wmon_setup(void) {
    return -1;
}

static int wmon_watch(py_tstate *s) {
    return -1;
}
#endif

/* Under the hook: the returns of the frames win_first pushed are seen by
 * sys.monitoring or by profile_cb, set on this thread (3.12+), or by
 * win_gone (before 3.12). */
static void win_watch(py_tstate *s) {
    if (PY_VERSION_HEX < 0x030C0000 || wmon_watch(s) == 0 || tls_win_prof) return;
    tls_win_prof = 1;
    OWN_SETTING(PyEval_SetProfile(profile_cb, NULL));
}

/* Whether the returns of frames the hook did not evaluate can be seen. */
static int win_can_track(void) {
    if (g_mode != PY_MODE_EVAL || PY_VERSION_HEX < 0x030C0000 || wmon_setup() == 0) return 1;
    Py_tracefunc f = PyThreadState_Get()->c_profilefunc;
    return f == NULL || f == profile_cb;
}

/* The frames from top outwards (new references), outermost last. */
static uint32_t win_frames(PyFrameObject *top, PyFrameObject ***out) {
    PyFrameObject **fr = NULL, *f = top;
    uint32_t n = 0, cap = 0;
    Py_XINCREF(f);
    while (f) {
        if (n == cap && grow((void **)&fr, &cap, sizeof *fr) < 0) {
            Py_DECREF(f);
            break;
        }
        fr[n++] = f;
        f = PyFrame_GetBack(f);
    }
    *out = fr;
    return n;
}

/* The thread's first event in a window: records the calls on its stack
 * (from `top`, or the current frame when not `given`). */
static __attribute__((noinline)) void win_first(PyFrameObject *top, int given) {
    py_tstate *s = &tls;
    if (!g_enabled || s->in_slow) return;
    tls_win_gen = g_win_gen;
    tls_synth = 0;
    win_reset(s);
    lt__tbuf *t = g_live && !py__opts.min_duration && win_can_track() ? tb() : NULL;
    if (!t) return;
    PyFrameObject **fr;
    uint32_t n = win_frames(given ? top : PyEval_GetFrame(), &fr);
    int eval = g_mode == PY_MODE_EVAL, any = 0;
    uint32_t depth = 0; /* t->depth is the earlier window's until a begin */
    for (uint32_t i = n; i-- > 0;) {
        PyCodeObject *co = PyFrame_GetCode(fr[i]);
        PyObject *globals = PyFrame_GetGlobals(fr[i]);
        uint32_t loc = code_loc(co, globals);
        Py_XDECREF(globals);
        Py_DECREF(co);
        uint8_t rec = loc && depth < g_depth_limit;
        if (eval && !rec) continue;
        /* under sys.monitoring (mech.h) an end is matched by its code */
        py_ent *e = g_mode == PY_MODE_MONITOR ? push(co, ENT_MON, rec ? 2 : 0)
                                              : push(fr[i], ENT_FRAME, rec ? 2 : 0);
        if (!e) break;
#if PY_VERSION_HEX < 0x030C0000
        e->code = co; /* compared only */
#endif
        if (rec) {
            lt__put_begin(t, loc, g_win_start - 1);
            depth++;
            any = 1;
        }
    }
    /* the first begin renewed the buffer (depth 0): what is open is theirs */
    tls_synth = any ? t->depth : 0;
    for (uint32_t i = 0; i < n; i++) Py_DECREF(fr[i]);
    free(fr);
    if (any) lt__trace_cut_at(g_win_start);
    if (eval && s->n) win_watch(s);
}

/* The end of a zone win_first began (its frame returned). */
static void win_end(void) {
    lt__tbuf *t = lt__tls;
    if (t && g_live && t->depth && tls_synth >= t->depth) tls_synth = t->depth - 1;
    zend();
}

#if PY_VERSION_HEX < 0x030C0000
/* Whether frame f of the chain is entry e (a frame object's address may be
 * reused, an interpreter frame's too: the code object is compared also). */
static int win_is(const py_ent *e, py_chain_frame *f) {
    return e->key == (const void *)PY_CHAIN_OBJ(f) && e->code == (const void *)PY_CHAIN_CODE(f);
}

/* The hook's frames are evaluated by CPython itself before 3.12, and the
 * returns of win_first's are not seen: here the entries whose frames are no
 * longer on the thread's chain (from the current frame outwards) end, the
 * innermost first, at the thread's last recorded event (`now`: at this
 * time, where the hook has just seen one of them return). That event is no
 * earlier than the end of anything the call recorded, and every entry ends
 * at the same time: the nesting stays valid. */
static __attribute__((noinline)) void win_gone(int now) {
    py_tstate *s = &tls;
    lt__tbuf *t = lt__tls;
    if (!t || !g_live || g_mode != PY_MODE_EVAL || tls_win_gen != g_win_gen) return;
    uint32_t live = 0; /* the innermost entry on the chain, + 1 */
    for (py_chain_frame *f = py_chain_top(); f && live == 0; f = PY_CHAIN_BACK(f))
        for (uint32_t i = s->n; i-- > 0;)
            if (win_is(&s->st[i], f)) {
                live = i + 1;
                break;
            }
    uint64_t ts = now ? lt__now() : t->last_ts;
    while (s->n > live) {
        py_ent *e = &s->st[--s->n];
        if (e->rec != 2 || !t->depth) continue;
        if (tls_synth >= t->depth) tls_synth = t->depth - 1;
        lt__put_end(t, ts);
    }
}
#endif

/* After a profile event under the hook: profile_cb goes once the frames it
 * was set for have returned or the window has ended. */
static void win_prof_check(void) {
    if (g_mode != PY_MODE_EVAL) {
        tls_win_prof = 0; /* profile_cb is the mode's own */
    } else if (!g_enabled || tls.n == 0) {
        tls_win_prof = 0;
        OWN_SETTING(PyEval_SetProfile(NULL, NULL));
    }
}

/* ---- Enable / disable ------------------------------------------------------ */

static void set_epoch(uint32_t e) {
    e &= ~PY_TAG_BITS;
    g_epoch = e ? e : 1;
    g_epoch_base = ((uint64_t)g_epoch << 32) + 1;
}

/* In the child of fork(), on the thread that forked: the zones this thread
 * had open were begun in the parent, whose buffers the child never sends
 * (client_buf.c). Their frames return in the child too; they get no end
 * there: the child's records start with what it begins itself. */
static void child_after_fork(void) {
    set_epoch(g_epoch + 1);
    py_tstate *s = &tls;
    for (uint32_t i = 0; i < s->n; i++) s->st[i].rec = s->st[i].line = 0;
    s->floor = s->nw = s->np;
    tls_synth = 0; /* the child's buffer holds none of win_first's zones */
    tls_win_gen = g_win_gen; /* nor the calls it inherited */
}

int py__hook_init(void) {
    if (g_extra_idx >= 0) return 0;
    g_extra_idx = py_request_extra_index(NULL);
    if (g_extra_idx < 0) {
        PyErr_SetString(PyExc_RuntimeError, "no code-extra slot left");
        return -1;
    }
#if PY_VERSION_HEX >= 0x030B0000
    (void)py__args_unheld_init(); /* (without a slot, counts stay one more) */
#endif
#if PY_VERSION_HEX < 0x030B0000
    g_qual_idx = py_request_extra_index(qual_free);
#endif
    pthread_key_create(&g_tls_key, tstate_free);
    pthread_atfork(NULL, NULL, child_after_fork);
    /* SIGTERM, SIGHUP and the other signals that end a process by default
     * are the tracy package's (Python handlers, fatal.c); SIGINT is
     * Python's KeyboardInterrupt */
    lt_client_catch_signals(0);
    py__fatal_init();
    return 0;
}

void py__new_epoch(void) {
    set_epoch(g_epoch + 1);
}

/* ---- auto: leaving the hook when another tool begins (3.12+) ---------------- */

#if PY_VERSION_HEX >= 0x030C0000
/* Under auto, the hook (a frame-evaluation function) records while no other
 * tool is active; one that begins later would see what it never sees
 * unprofiled: under the hook CPython calls Python functions through C, so a
 * sys.monitoring tool gets a C_RETURN or C_RAISE for each, no STOP_ITERATION
 * where a generator ends a for loop (test_monitoring), and on 3.12 a
 * tracer gets two 'exception' events per `async for` step. So recording
 * goes on through the mechanism auto would have chosen had the tool been
 * there at the start: sys.monitoring callbacks (mech.h), or, for a tracer,
 * the profile function when tool ids 3 and 4 are taken. A sys.monitoring
 * tool that begins while the program holds 3 and 4 itself (test_monitoring
 * takes 2, 3 and 4, and requires that no other tool, the profile
 * function's included, has an event set) leaves the hook in place. The
 * calls running meanwhile keep their zones and end through the hook, whose
 * records are not entries of the new mechanism (it sees no entry of theirs
 * and ignores their ends). The rest of the run stays there. */
static void leave_hook(int monitoring_tool) {
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    if (monitoring_tool && !py__mon_id_free()) {
        /* the program holds ids 3 and 4 too: the profile function would show
         * in sys.monitoring._all_events(), which such a program checks */
        PyErr_Restore(type, value, tbk);
        return;
    }
    PyInterpreterState *interp = PyInterpreterState_Get();
    py_set_eval(interp, g_prev_eval);
    init_alloc_all(0);
    g_mode = PY_MODE_MONITOR;
    if (py__mon_enable() != 0) {
        g_mode = PY_MODE_PROFILE;
        install_all();
    }
    PyErr_Clear();
    PyErr_Restore(type, value, tbk);
}

/* The functions through which another tool begins: sys.monitoring's
 * register_callback (3.12+) of a callable, and on 3.12, where auto also
 * leaves the hook for them at the start, sys.settrace and sys.setprofile
 * (threading's settrace and setprofile call them in each new thread) and
 * their _all_threads forms, of anything but None. Each is replaced in its
 * module by a C function of the same name, doc and signature, whose
 * __self__ is that module as the builtin's is, that leaves the hook first
 * and then calls the builtin. (An audit hook would see PyEval_SetTrace
 * from C too, but costs every audited call, id() and each ctypes call
 * among them, about 50 ns.) A C extension that calls PyEval_SetTrace or
 * PyEval_SetProfile itself keeps the hook. */
enum { W_REGISTER, W_SETTRACE, W_SETPROFILE, W_SETTRACE_ALL, W_SETPROFILE_ALL, W_N };
static const struct {
    const char *module; /* (the name: g_wrapper_defs) */
    int arg;            /* the position of the callable */
} k_wrapped[W_N] = {
    {"sys.monitoring", 2}, {"sys", 0}, {"sys", 0}, {"sys", 0}, {"sys", 0},
};
static PyObject *g_builtin[W_N]; /* the builtins replaced */

/* The builtin i, after leaving the hook when its call begins a tool. */
static PyObject *tool_call(int i, PyObject *args, PyObject *kw) {
    int at = k_wrapped[i].arg;
    PyObject *fn = PyTuple_Check(args) && PyTuple_GET_SIZE(args) > at ? PyTuple_GET_ITEM(args, at)
                                                                       : NULL;
    if (!fn && kw && i == W_REGISTER) fn = PyDict_GetItemString(kw, "func"); /* borrowed */
    if (fn && fn != Py_None && g_mode == PY_MODE_EVAL && g_enabled && !g_own_setting &&
        py__main_interpreter())
        leave_hook(i == W_REGISTER);
    return PyObject_Call(g_builtin[i], args, kw);
}

#define TOOL_WRAPPER(i, f)                                                \
    static PyObject *f(PyObject *mod, PyObject *args, PyObject *kw) {     \
        (void)mod;                                                        \
        return tool_call(i, args, kw);                                    \
    }
TOOL_WRAPPER(W_REGISTER, w_register)
TOOL_WRAPPER(W_SETTRACE, w_settrace)
TOOL_WRAPPER(W_SETPROFILE, w_setprofile)
TOOL_WRAPPER(W_SETTRACE_ALL, w_settrace_all)
TOOL_WRAPPER(W_SETPROFILE_ALL, w_setprofile_all)
#undef TOOL_WRAPPER

#define W_DEF(f) (PyCFunction)(void (*)(void))f, METH_VARARGS | METH_KEYWORDS
static PyMethodDef g_wrapper_defs[W_N] = {
    {"register_callback", W_DEF(w_register), NULL},
    {"settrace", W_DEF(w_settrace), NULL},
    {"setprofile", W_DEF(w_setprofile), NULL},
    {"_settraceallthreads", W_DEF(w_settrace_all), NULL},
    {"_setprofileallthreads", W_DEF(w_setprofile_all), NULL},
};
#undef W_DEF

/* Replaces builtin i in its module (a module of sys's: never imported). */
static void wrap_builtin(int i) {
    PyObject *mod = PySys_GetObject("monitoring"); /* borrowed */
    if (strcmp(k_wrapped[i].module, "sys") == 0) mod = PyImport_AddModule("sys"); /* borrowed */
    if (mod) g_builtin[i] = py__replace_builtin(mod, k_wrapped[i].module, &g_wrapper_defs[i]);
    PyErr_Clear();
}

/* Once, when the hook first records under auto. The wrappers stay, and only
 * call the builtins once the hook is left. */
static void watch_other_tools(void) {
    static int done;
    if (done || py__opts.mechanism != PY_MECH_AUTO || !py__main_interpreter()) return;
    done = 1;
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    for (int i = 0; i < W_N; i++)
        if (i == W_REGISTER || PY_VERSION_HEX < 0x030D0000) wrap_builtin(i);
    PyErr_Restore(type, value, tbk);
}
#else
static void watch_other_tools(void) {
}
#endif

static int choose_mode(void) {
    if (py__mon_wanted()) return PY_MODE_MONITOR;
    if (py__opts.lines) return PY_MODE_TRACE;
    if (py__opts.trace_c || py__opts.force_profile || py__opts.mechanism == PY_MECH_EXACT)
        return PY_MODE_PROFILE;
    PyInterpreterState *interp = PyInterpreterState_Get();
    py_eval_fn cur = py_get_eval(interp);
    if (cur == _PyEval_EvalFrameDefault) return PY_MODE_EVAL;
    return PY_MODE_PROFILE;
}

static py_eval_fn eval_func(void) {
    if (py__opts.min_duration || py__opts.label_args) return eval_hook_slow;
    return g_depth_limit == UINT32_MAX ? eval_hook : eval_hook_depth;
}

int py__enable(void) {
    return py__enable_as(-1);
}

int py__enable_as(int mode) {
    if (py__hook_init() < 0) return -1;
    if (g_live) g_depth_limit = py__opts.max_depth;
    if (g_enabled) return g_mode;
    g_mode = mode > 0 ? mode : choose_mode();
    g_enabled = 1;
    qual_heap_due();
    if (g_mode == PY_MODE_MONITOR) {
        if (py__mon_enable() == 0) return g_mode;
        g_mode = py__opts.lines ? PY_MODE_TRACE : PY_MODE_PROFILE; /* no tool id free */
    }
    if (g_mode == PY_MODE_EVAL) {
        PyInterpreterState *interp = PyInterpreterState_Get();
        g_prev_eval = py_get_eval(interp);
        py_set_eval(interp, eval_func());
        init_alloc_all(1);
        watch_other_tools();
    } else {
        install_all();
    }
    WIN_CHECK(); /* a window opened here: this thread's running calls now */
    return g_mode;
}

void py__disable(void) {
    if (!g_enabled) return;
    g_enabled = 0;
    if (g_mode == PY_MODE_MONITOR) {
        py__mon_disable();
        return;
    }
    if (g_mode == PY_MODE_EVAL) {
#if PY_VERSION_HEX < 0x030C0000
        if (tls_synth) win_gone(0); /* this thread's; others stay open */
#endif
        PyInterpreterState *interp = PyInterpreterState_Get();
        py_set_eval(interp, g_prev_eval);
        return;
    }
    /* Callbacks stay while this thread owes ends; they remove themselves
     * (in every thread) once its stack is empty. */
    if (tls.n == 0) uninstall_current();
}

void py__release_classes(void) {
    if (!g_enabled) init_alloc_all(0);
}

uint32_t py__epoch(void) {
    return g_epoch;
}

int py__next_mode(void) {
    return g_enabled ? g_mode : choose_mode();
}

int py__mode(void) {
    return g_enabled ? g_mode : PY_MODE_OFF;
}

void py__client_restarted(void) {
    win_opened();
    g_live = 1;
    g_depth_limit = py__opts.max_depth;
}

void py__client_stopped(void) {
    g_live = 0;
    g_depth_limit = 0;
    /* eval_hook itself does not look at the limit */
    if (g_enabled && g_mode == PY_MODE_EVAL) {
        PyInterpreterState *interp = PyInterpreterState_Get();
        if (py_get_eval(interp) == eval_hook)
            py_set_eval(interp, eval_func());
    }
}
