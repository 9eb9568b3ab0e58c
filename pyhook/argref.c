/* argref.c -- the caller's references to a call's arguments, given up for
 * the call (3.11 to 3.13).
 *
 * Plain CPython (3.11+) makes a Python-to-Python call inline: CALL moves the
 * arguments from the caller's value stack into the callee's frame, so an
 * argument's reference count inside the callee is the callee's reference
 * and the others. Under a frame-evaluation function CALL calls through C
 * instead, and the caller's stack keeps a reference to each argument until
 * the call returns: sys.getrefcount is one more, and NumPy's resize()
 * refuses an array passed as an argument.
 *
 * So at the entry of a frame the hook evaluates, py__args_give_up finds the
 * CALL its caller is at and, for each argument the callee's frame holds
 * too, puts None in the caller's slot (the caller only decrefs it after the
 * call) and drops the caller's reference: the counts are plain's, and an
 * object the callee lets go of is freed when plain Python frees it.
 *
 * The caller's stack pointer is not saved during the call, so the depth of
 * its stack at each CALL is computed once per code object, by the flow of
 * its bytecode with the compiler's own stack effects
 * (PyCompile_OpcodeStackEffectWithJump) and the handlers' depths from the
 * exception table; a code object whose flow disagrees with itself or whose
 * deepest point is not its co_stacksize is left alone. A slot is changed
 * only when the call's block at that depth holds the callee's own function
 * (a plain function, called by vectorcall) and the argument is an object
 * the callee holds a reference to (a parameter, its *args or **kwargs):
 * any other entry (a call from C, a resumption, an instrumented CALL,
 * f(*args), a class's __init__) changes nothing. */
#include "hook.h"

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000
#include <opcode.h>
#include <stdlib.h>
#include <string.h>

#define Py_BUILD_CORE 1
#include "internal/pycore_frame.h"
#undef Py_BUILD_CORE

#if PY_VERSION_HEX >= 0x030C0000
#define ARGREF_SET_EXTRA PyUnstable_Code_SetExtra
#define ARGREF_REQUEST PyUnstable_Eval_RequestCodeExtraIndex
#define ARGREF_FUNC(f) ((f)->f_funcobj)
#else
#define ARGREF_SET_EXTRA _PyCode_SetExtra
#define ARGREF_REQUEST _PyEval_RequestCodeExtraIndex
#define ARGREF_FUNC(f) ((PyObject *)(f)->f_func)
#endif
#if PY_VERSION_HEX < 0x030C0000
#define ARGREF_OP(ip) _Py_OPCODE(*(ip))
#else
#define ARGREF_OP(ip) ((ip)->op.code)
#endif
#if PY_VERSION_HEX >= 0x030D0000
#define ARGREF_CODE(f) ((PyCodeObject *)(f)->f_executable)
#define ARGREF_IP(f) ((f)->instr_ptr)
#define ARGREF_CURRENT(ts) ((ts)->current_frame)
#else
#define ARGREF_CODE(f) ((f)->f_code)
#define ARGREF_IP(f) ((f)->prev_instr)
#define ARGREF_CURRENT(ts) ((ts)->cframe->current_frame)
#endif

/* A code object's table: for each code unit that is a CALL, where its
 * block starts (note) << 16 | oparg, else -1; n is 0 where the flow is not
 * to be used. */
typedef struct argref_tab {
    Py_ssize_t n;
    int32_t at[];
} argref_tab;

static Py_ssize_t g_idx = -1;
static vectorcallfunc g_plain_call; /* a plain function's vectorcall */
static argref_tab g_none_tab;       /* (n 0) a code object whose flow is not used */

static void tab_free(void *p) {
    if (p != &g_none_tab) free(p);
}

/* ---- the depth of the stack at each instruction --------------------------- */

static int jumps_back(int op) {
    switch (op) {
    case JUMP_BACKWARD:
    case JUMP_BACKWARD_NO_INTERRUPT:
#if PY_VERSION_HEX < 0x030C0000
    case POP_JUMP_BACKWARD_IF_FALSE:
    case POP_JUMP_BACKWARD_IF_TRUE:
    case POP_JUMP_BACKWARD_IF_NONE:
    case POP_JUMP_BACKWARD_IF_NOT_NONE:
#endif
        return 1;
    }
    return 0;
}

static int jumps_forward(int op) {
    switch (op) {
    case JUMP_FORWARD:
    case FOR_ITER:
    case SEND:
#if PY_VERSION_HEX < 0x030C0000
    case POP_JUMP_FORWARD_IF_FALSE:
    case POP_JUMP_FORWARD_IF_TRUE:
    case POP_JUMP_FORWARD_IF_NONE:
    case POP_JUMP_FORWARD_IF_NOT_NONE:
    case JUMP_IF_FALSE_OR_POP:
    case JUMP_IF_TRUE_OR_POP:
#else
    case POP_JUMP_IF_FALSE:
    case POP_JUMP_IF_TRUE:
    case POP_JUMP_IF_NONE:
    case POP_JUMP_IF_NOT_NONE:
#endif
        return 1;
    }
    return 0;
}

/* No way on to the next instruction. */
static int ends_flow(int op) {
    switch (op) {
    case RETURN_VALUE:
    case RAISE_VARARGS:
    case RERAISE:
    case JUMP_FORWARD:
    case JUMP_BACKWARD:
    case JUMP_BACKWARD_NO_INTERRUPT:
#if PY_VERSION_HEX >= 0x030C0000
    case RETURN_CONST:
    case INTERPRETER_EXIT:
#endif
        return 1;
    }
    return 0;
}

typedef struct flow {
    int32_t *depth; /* per code unit, -1: not reached */
    int32_t *todo;
    Py_ssize_t n, ntodo;
    int max, bad;
} flow;

static void reach(flow *w, Py_ssize_t at, long d) {
    if (at < 0 || at >= w->n || d < 0 || d > 0x7fff) {
        w->bad = 1;
        return;
    }
    if (w->depth[at] < 0) {
        w->depth[at] = (int32_t)d;
        w->todo[w->ntodo++] = (int32_t)at;
        if (d > w->max) w->max = (int)d;
    } else if (w->depth[at] != d) {
        w->bad = 1;
    }
}

/* The handlers of the exception table (3.11+: entries of start, length,
 * target and depth << 1 | lasti, in 6-bit varints, the first byte of each
 * marked by bit 7): each entered with its depth, lasti and the exception. */
static int read_varint(const uint8_t **p, const uint8_t *end, long *v) {
    if (*p >= end) return -1;
    long x = **p & 63;
    while (**p & 64) {
        if (++*p >= end || x > (1L << 24)) return -1;
        x = (x << 6) | (**p & 63);
    }
    ++*p;
    *v = x;
    return 0;
}

static void reach_handlers(flow *w, PyObject *table) {
    const uint8_t *p = (const uint8_t *)PyBytes_AS_STRING(table);
    const uint8_t *end = p + PyBytes_GET_SIZE(table);
    while (p < end && !w->bad) {
        long start, len, target, dl;
        if (read_varint(&p, end, &start) || read_varint(&p, end, &len) ||
            read_varint(&p, end, &target) || read_varint(&p, end, &dl)) {
            w->bad = 1;
            return;
        }
        reach(w, target, (dl >> 1) + (dl & 1) + 1);
    }
}

/* A call's entry at the unit of its CALL: the index in the frame's
 * localsplus of its block's first slot (the callable or NULL; the depth
 * before it, less the arguments, the two slots below them and 3.13's
 * CALL_KW's names on top) << 16 | oparg. 3.11's compiler counts the
 * arguments popped by PRECALL, the instruction before CALL, which pops
 * nothing: the depth is PRECALL's. */
static void note(argref_tab *tab, Py_ssize_t at, PyCodeObject *co, int d, int a, int kw) {
    long b = (long)co->co_nlocalsplus + d - kw - a - 2;
    if (a <= 0xffff && b >= co->co_nlocalsplus && b + 2 + a + kw <= co->co_nlocalsplus + co->co_stacksize &&
        b < 0x7fff)
        tab->at[at] = (int32_t)(b << 16 | a);
}

static void note_call(PyCodeObject *co, const uint8_t *c, const int32_t *arg, Py_ssize_t n,
                      argref_tab *tab, Py_ssize_t i, Py_ssize_t next, int op, int d, int a) {
#if PY_VERSION_HEX < 0x030C0000
    (void)i;
    if (op != PRECALL) return;
    while (next < n && c[2 * next] == EXTENDED_ARG) next++;
    if (next < n && c[2 * next] == CALL && arg[next] == a) note(tab, next, co, d, a, 0);
#else
    (void)c, (void)arg, (void)n, (void)next;
    if (op == CALL) note(tab, i, co, d, a, 0);
#if PY_VERSION_HEX >= 0x030D0000
    if (op == CALL_KW) note(tab, i, co, d, a, 1);
#endif
#endif
}

/* The table of co, or NULL (a flow not to be used, or no memory). */
static argref_tab *analyse(PyCodeObject *co) {
    PyObject *bytes = PyCode_GetCode(co); /* (deoptimized, caches zeroed) */
    if (!bytes) return NULL;
    const uint8_t *c = (const uint8_t *)PyBytes_AS_STRING(bytes);
    Py_ssize_t n = PyBytes_GET_SIZE(bytes) / 2;
    flow w = {.n = n};
    argref_tab *tab = malloc(sizeof *tab + (size_t)n * sizeof(int32_t));
    int32_t *arg = malloc((size_t)n * sizeof(int32_t));
    w.depth = malloc((size_t)n * sizeof(int32_t));
    w.todo = malloc((size_t)(n + 1) * sizeof(int32_t));
    if (!tab || !arg || !w.depth || !w.todo || n == 0) goto fail;
    tab->n = n;
    /* each unit's full oparg (EXTENDED_ARG prefixes folded in) */
    uint32_t ext = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int op = c[2 * i];
        uint32_t a = c[2 * i + 1] | ext;
        arg[i] = (int32_t)(a & 0x7fffffff);
        ext = op == EXTENDED_ARG ? a << 8 : 0;
        tab->at[i] = -1;
        w.depth[i] = -1;
    }
    reach(&w, 0, 0);
    reach_handlers(&w, co->co_exceptiontable);
    while (w.ntodo && !w.bad) {
        Py_ssize_t i = w.todo[--w.ntodo];
        int d = w.depth[i];
        int op = c[2 * i];
        if (op == CACHE) {
            w.bad = 1; /* a jump into an instruction's caches */
            break;
        }
        Py_ssize_t next = i + 1;
        while (next < n && c[2 * next] == CACHE) next++;
        if (op == EXTENDED_ARG) {
            reach(&w, next, d);
            continue;
        }
        int a = arg[i];
        int fall = PyCompile_OpcodeStackEffectWithJump(op, a, 0);
        int jump = PyCompile_OpcodeStackEffectWithJump(op, a, 1);
        if (fall == PY_INVALID_STACK_EFFECT || jump == PY_INVALID_STACK_EFFECT) {
            PyErr_Clear();
            w.bad = 1;
            break;
        }
#if PY_VERSION_HEX < 0x030D0000
        /* the prologue the compiler adds after counting: resumed, the
         * generator's frame has the value sent on its stack (POP_TOP) */
        if (op == RETURN_GENERATOR) fall = 1;
#endif
        note_call(co, c, arg, n, tab, i, next, op, d, a);
        if (jumps_forward(op)) reach(&w, next + a, (long)d + jump);
        else if (jumps_back(op)) reach(&w, next - a, (long)d + jump);
        if (!ends_flow(op)) {
            if (next < n) reach(&w, next, (long)d + fall);
            else w.bad = 1; /* the code runs off its end */
        }
    }
    if (w.bad || w.max != co->co_stacksize) goto fail;
    free(arg);
    free(w.depth);
    free(w.todo);
    Py_DECREF(bytes);
    return tab;
fail:
    free(tab);
    free(arg);
    free(w.depth);
    free(w.todo);
    Py_DECREF(bytes);
    return NULL;
}

/* The table stored in co's slot, or NULL (none yet, or no slot). */
static inline argref_tab *tab_in(PyCodeObject *co) {
    py_code_extra *ex = (py_code_extra *)co->co_extra;
    return g_idx >= 0 && ex && g_idx < ex->ce_size ? (argref_tab *)ex->ce_extras[g_idx] : NULL;
}

/* co's table, computed at its first call and kept in its slot. */
static __attribute__((noinline)) argref_tab *tab_new(PyCodeObject *co) {
    void *p;
    PyObject *type, *value, *tbk;
    PyErr_Fetch(&type, &value, &tbk);
    p = analyse(co);
    PyErr_Clear();
    if (!p) p = &g_none_tab;
    if (ARGREF_SET_EXTRA((PyObject *)co, g_idx, p) < 0) {
        PyErr_Clear();
        tab_free(p);
        p = &g_none_tab;
    }
    PyErr_Restore(type, value, tbk);
    return p;
}


/* ---- the caller's slots ---------------------------------------------------- */

/* The vectorcall of a function made by PyFunction_New (3.13 does not
 * export its name). */
static vectorcallfunc plain_call(void) {
    PyObject *code = Py_CompileString("0", "<tracy>", Py_eval_input);
    PyObject *globals = code ? PyDict_New() : NULL;
    PyObject *fn = globals ? PyFunction_New(code, globals) : NULL;
    vectorcallfunc v = fn ? ((PyFunctionObject *)fn)->vectorcall : NULL;
    Py_XDECREF(fn);
    Py_XDECREF(globals);
    Py_XDECREF(code);
    PyErr_Clear();
    return v;
}

#if PY_VERSION_HEX < 0x030C0000
py_range py__small_ints;

/* -5 to 256, where they are one array (as in 3.11's runtime state). */
static void small_ints_find(void) {
    PyObject *lo = PyLong_FromLong(-5), *hi = PyLong_FromLong(256);
    if (lo && hi && (uintptr_t)hi - (uintptr_t)lo == 261 * sizeof(PyLongObject)) {
        py__small_ints.lo = (uintptr_t)lo;
        py__small_ints.span = 262 * sizeof(PyLongObject);
    }
    Py_XDECREF(lo);
    Py_XDECREF(hi);
    PyErr_Clear();
}
#else
static void small_ints_find(void) {
}
#endif

int py__args_unheld_init(void) {
    if (g_idx >= 0) return 0;
    small_ints_find();
    if (!(g_plain_call = plain_call())) return -1;
    Py_ssize_t idx = ARGREF_REQUEST(tab_free);
    if (idx < 0) {
        PyErr_Clear();
        return -1;
    }
    g_idx = idx;
    return 0;
}

/* The references the callee's frame holds to what it was passed: its
 * parameters, the items of its *args tuple and the values of its **kwargs
 * dict; each argument in the caller's slots is matched to one of them (by
 * identity; each used once, so that every reference given up is one the
 * callee holds). Plain Python moves each slot's reference to one of these. */
#define ARGREF_MAX 64
static __attribute__((noinline)) void give_up_rest(PyObject **args, int total, PyCodeObject *co,
                                                   PyObject **loc, int first) {
    PyObject *held[ARGREF_MAX];
    int named = co->co_argcount + co->co_kwonlyargcount, nh = 0;
    for (int i = 0; i < named && nh < ARGREF_MAX; i++) held[nh++] = i < first ? NULL : loc[i];
    int at = named;
    if (co->co_flags & CO_VARARGS) {
        PyObject *rest = loc[at++];
        if (rest && PyTuple_Check(rest))
            for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(rest) && nh < ARGREF_MAX; k++)
                held[nh++] = PyTuple_GET_ITEM(rest, k);
    }
    if (co->co_flags & CO_VARKEYWORDS) {
        PyObject *kw = loc[at], *key, *value;
        Py_ssize_t pos = 0;
        while (kw && PyDict_CheckExact(kw) && nh < ARGREF_MAX && PyDict_Next(kw, &pos, &key, &value))
            held[nh++] = value;
    }
    for (int j = first; j < total; j++) {
        PyObject *o = args[j];
        if (!o || PY_IMMORTAL(o)) continue;
        int h = -1;
        for (int k = 0; h < 0 && k < nh; k++)
            if (held[k] == o) h = k;
        if (h < 0) continue;
        held[h] = NULL;
        args[j] = Py_NewRef(Py_None);
        Py_DECREF(o); /* (the callee's frame holds it) */
    }
}

/* The positional parameters in place (the usual case), the rest matched.
 * Called by a tail call, as the others below: py__args_give_up keeps no
 * register of its own. */
static __attribute__((noinline)) void give_up(PyObject **args, int total,
                                              _PyInterpreterFrame *f) {
    PyObject **loc = f->localsplus;
    PyCodeObject *co = ARGREF_CODE(f);
    int na = co->co_argcount;
    for (int j = 0; j < total; j++) {
        PyObject *o = args[j];
        if (j >= na || o != loc[j]) {
            give_up_rest(args, total, co, loc, j);
            return;
        }
        if (PY_IMMORTAL(o)) continue;
#if PY_VERSION_HEX >= 0x030C0000
        args[j] = Py_None; /* (immortal: the caller's decref does nothing) */
#else
        args[j] = Py_NewRef(Py_None);
#endif
        /* the callee's frame holds it: never the last reference (and no
         * call here, so that this keeps no register of its own) */
        Py_SET_REFCNT(o, Py_REFCNT(o) - 1);
    }
}

/* The caller's code has no table yet: one made (once: a code object whose
 * slot cannot be set is left alone), then the call's. */
static __attribute__((noinline)) void give_up_new(PyThreadState *ts, _PyInterpreterFrame *f,
                                                  PyCodeObject *cc) {
    tab_new(cc);
    if (tab_in(cc)) py__args_give_up(ts, f);
}

void py__args_give_up(PyThreadState *ts, _PyInterpreterFrame *f) {
    _PyInterpreterFrame *caller = ARGREF_CURRENT(ts);
    if (caller == NULL) return;
#if PY_VERSION_HEX >= 0x030C0000
    /* a C stack's entry frame (its executable is None on 3.13) is current
     * while a frame it ran is cleared: a __del__ run then */
    if (caller->owner == FRAME_OWNED_BY_CSTACK) return;
#endif
    _Py_CODEUNIT *ip = ARGREF_IP(caller);
#ifdef MIN_INSTRUMENTED_OPCODE
    /* an instrumented CALL passes argument 0 to C_RETURN callbacks after
     * the call (one under a LINE event too) */
    if (ARGREF_OP(ip) >= MIN_INSTRUMENTED_OPCODE) return;
#endif
    PyCodeObject *cc = ARGREF_CODE(caller);
    if (!PyCode_Check(cc)) return;
    argref_tab *tab = tab_in(cc);
    if (!tab) {
        if (g_idx >= 0) give_up_new(ts, f, cc);
        return;
    }
    size_t i = (size_t)(ip - _PyCode_CODE(cc));
    if (i >= (size_t)tab->n) return;
    int32_t e = tab->at[i];
    if (e < 0) return;
    PyObject **blk = caller->localsplus + (e >> 16), *fn;
    int oparg = e & 0xffff, total;
#if PY_VERSION_HEX >= 0x030D0000
    fn = blk[0]; /* [callable, self or NULL, args...] */
    total = oparg + (blk[1] != NULL);
#else
    int meth = blk[0] != NULL; /* [method or NULL, self or callable, args...] */
    fn = blk[!meth];
    total = oparg + meth;
#endif
    if (fn != ARGREF_FUNC(f) || ((PyFunctionObject *)fn)->vectorcall != g_plain_call) return;
    give_up(blk + 2 + oparg - total, total, f);
}
#endif
