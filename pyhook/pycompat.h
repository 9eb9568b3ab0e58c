/* pycompat.h -- what hook.c needs from CPython, spelled once for every
 * version it supports (3.8 to 3.13). Included by hook.c only, after hook.h
 * (Python.h). Each private API used here is checked against that version's
 * headers; a call the compiler does not know fails the build
 * (-Werror=implicit-function-declaration), it never reaches import time.
 *
 * The frame-evaluation hook (PEP 523) receives:
 *   3.8        (PyFrameObject *, int)                   interp->eval_frame
 *   3.9, 3.10  (PyThreadState *, PyFrameObject *, int)  _PyInterpreterState_*EvalFrameFunc
 *   3.11-3.13  (PyThreadState *, _PyInterpreterFrame *, int)
 * and finds the code object in f_code, except 3.13: f_executable. */
#ifndef PYHOOK_PYCOMPAT_H
#define PYHOOK_PYCOMPAT_H

#if PY_VERSION_HEX < 0x03080000 || PY_VERSION_HEX >= 0x030E0000
#error "tracy supports CPython 3.8 to 3.13"
#endif

#include <frameobject.h>

#if PY_VERSION_HEX >= 0x030B0000
/* _PyInterpreterFrame and struct _frame's f_frame */
#define Py_BUILD_CORE 1
#include "internal/pycore_frame.h"
#if PY_VERSION_HEX >= 0x030D0000
#include "internal/pycore_interp.h" /* the interpreter's types state */
#endif
#undef Py_BUILD_CORE
typedef _PyInterpreterFrame py_frame;
#define PYF_LOCALS(f) ((f)->localsplus)
#define PYFO_LOCALS(fo) ((fo)->f_frame->localsplus)
#define PY_LOCAL_NAMES(co) ((co)->co_localsplusnames)
/* The call that creates a generator or coroutine object runs its frame up
 * to RETURN_GENERATOR, and a resumption runs the frame the object owns. */
#define PYF_IS_RESUME(f) ((f)->owner == FRAME_OWNED_BY_GENERATOR)
#else
/* 3.8-3.10: the creating call does not evaluate the frame */
typedef PyFrameObject py_frame;
#define PYF_LOCALS(f) ((f)->f_localsplus)
#define PYFO_LOCALS(fo) ((fo)->f_localsplus)
#define PY_LOCAL_NAMES(co) ((co)->co_varnames)
#define PYF_IS_RESUME(f) 1
#endif

#if PY_VERSION_HEX >= 0x030D0000
#define PYF_CODE(f) ((PyCodeObject *)(f)->f_executable)
#else
#define PYF_CODE(f) ((f)->f_code)
#endif

/* The hook's parameters, the call of the default evaluator with them, and
 * the arguments that pass them on. */
#if PY_VERSION_HEX >= 0x03090000
#define EVAL_PARAMS PyThreadState *ts, py_frame *f, int exc
#define EVAL_ARGS ts, f, exc
#else
#define EVAL_PARAMS py_frame *f, int exc
#define EVAL_ARGS f, exc
#endif
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000
/* Deep recursion through the hook. From 3.11 CPython evaluates a Python
 * call inline, on no C stack; through the hook every call is an entry into
 * _PyEval_EvalFrameDefault from C, which takes about 470 bytes of the
 * thread's stack (measured on 3.13) and units of a budget:
 * - 3.12 and 3.13 charge two units of c_recursion_remaining (1500 on 3.12,
 *   10000 on 3.13) per entry, where an inline call charges none: recursion
 *   would stop at a quarter to a half of the depth the program reaches
 *   plain (3.13's test_functools.TestLRUPy.test_lru_recursion). The hook
 *   gives an entry its two units back where plain Python would have made
 *   the call inline (py_inline_call: the caller's instruction), while the
 *   stack has room; an entry plain Python also makes from C (a C function
 *   calling Python) is charged as plain Python charges it.
 * - 3.11 charges one unit of recursion_remaining, as an inline call does,
 *   so the depth is plain's; but with sys.setrecursionlimit raised the
 *   stack can end first, and the program would die by SIGSEGV where plain
 *   Python runs.
 * Within PY_STACK_MARGIN of the stack's end (half a stack smaller than two
 * margins) the hook gives none back, and holds back for the length of the
 * call every unit beyond what the rest of the stack can take at
 * PY_ENTRY_BYTES an entry, so CPython raises RecursionError before the
 * stack overflows. On a stack it cannot place (bounds unknown, or code run
 * on a stack of its own) it changes nothing. 3.14 budgets by stack size. */
#include <pthread.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#if PY_VERSION_HEX >= 0x030C0000
#define PY_BUDGET(ts) ((ts)->c_recursion_remaining)
#define PY_ENTRY_UNITS 2
#define PY_GIVEN_BACK 2 /* an entry's units, while the stack has room */
#else
#define PY_BUDGET(ts) ((ts)->recursion_remaining)
#define PY_ENTRY_UNITS 1
#define PY_GIVEN_BACK 0 /* charged as an inline call is */
#endif
#define PY_STACK_MARGIN ((uintptr_t)512 << 10)
#define PY_ENTRY_BYTES 1024u
/* This thread's stack: [lo, lo + size). Units are given back in [floor,
 * floor + span), above a margin of PY_STACK_MARGIN (at most half the stack).
 * lo is 0 until read, 1 when the bounds are unknown (span 0). One struct, so
 * that the hot path finds its thread-local offset once. */
typedef struct py_stack_bounds {
    uintptr_t floor, span, lo;
} py_stack_bounds;
static __thread py_stack_bounds py_stack __attribute__((tls_model("initial-exec")));

static inline uintptr_t py_stack_pointer(void) {
#if defined(__x86_64__)
    uintptr_t sp;
    __asm__("mov %%rsp, %0" : "=r"(sp)); /* no frame pointer forced */
    return sp;
#else
    return (uintptr_t)__builtin_frame_address(0);
#endif
}

static void py_stack_set(uintptr_t lo, size_t size) {
    uintptr_t margin = size / 2 < PY_STACK_MARGIN ? size / 2 : PY_STACK_MARGIN;
    py_stack.lo = lo;
    py_stack.floor = lo + margin;
    py_stack.span = size - margin;
}

#if defined(__GLIBC__)
extern void *__libc_stack_end; /* the loader's: where main's frames begin */

/* The main thread's stack as glibc's pthread_getattr_np gives it, without
 * its read of /proc/self/maps (some 180K instructions, once a process): from
 * the page above __libc_stack_end down to RLIMIT_STACK below the stack
 * mapping's end. That end is the page after the executable's name, which
 * the kernel copies to the very top of the stack (AT_EXECFN). Returns 0
 * where this does not apply (another thread, no limit, a stack the numbers
 * do not place): then pthread_getattr_np. */
static int py_stack_main(void) {
    struct rlimit rl;
    const char *fn = (const char *)getauxval(AT_EXECFN);
    if (!fn || (pid_t)syscall(SYS_gettid) != getpid() || getrlimit(RLIMIT_STACK, &rl) != 0 ||
        rl.rlim_cur == RLIM_INFINITY)
        return 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t end = ((uintptr_t)fn + strlen(fn) + 1 + sizeof(void *) + page - 1) & ~(page - 1);
    uintptr_t hi = ((uintptr_t)__libc_stack_end + page - 1) & ~(page - 1);
    uintptr_t sp = py_stack_pointer();
    if (end < hi || end - hi > (uintptr_t)rl.rlim_cur / 2 || end < (uintptr_t)rl.rlim_cur ||
        sp >= hi || sp < end - (uintptr_t)rl.rlim_cur)
        return 0;
    py_stack_set(end - (uintptr_t)rl.rlim_cur, hi - (end - (uintptr_t)rl.rlim_cur));
    return 1;
}
#else
static int py_stack_main(void) {
    return 0;
}
#endif

static __attribute__((noinline)) void py_stack_init(void) {
    pthread_attr_t a;
    void *lo = NULL;
    size_t size = 0;
    py_stack.lo = 1;
    if (py_stack_main()) return;
    if (pthread_getattr_np(pthread_self(), &a) != 0) return;
    if (pthread_attr_getstack(&a, &lo, &size) == 0 && lo && size)
        py_stack_set((uintptr_t)lo, size);
    pthread_attr_destroy(&a);
}

static inline PyObject *py_eval_default(PyThreadState *ts, py_frame *f, int exc);

/* In a stack's last margin (sp above lo): every unit beyond what the rest
 * of the stack can take at PY_ENTRY_BYTES an entry, held back (negative),
 * or 0. */
static int py_margin_adjust(PyThreadState *ts, uintptr_t sp, uintptr_t lo) {
    int room = (int)((sp - lo) / PY_ENTRY_BYTES) * PY_ENTRY_UNITS;
    return PY_BUDGET(ts) > room ? room - PY_BUDGET(ts) : 0;
}

/* The default evaluator with `adjust` units given back (or held back) for
 * the length of the call. */
static PyObject *py_eval_adjusted(PyThreadState *ts, py_frame *f, int exc, int adjust) {
    PY_BUDGET(ts) += adjust;
    PyObject *r = _PyEval_EvalFrameDefault(ts, f, exc);
    PY_BUDGET(ts) -= adjust;
    return r;
}

#if PY_GIVEN_BACK
#include <opcode.h>
/* Whether plain Python would have made this call inline, taking no units:
 * the instruction its caller is at calls or resumes Python code itself
 * (CALL and its Python specializations, FOR_ITER and SEND of a generator,
 * a property or __getitem__ or __getattribute__ run inline; a CALL,
 * LOAD_ATTR or BINARY_SUBSCR not specialized is taken to be one). A call
 * from a C function (CALL of a builtin, a slot such as __eq__ or __repr__)
 * is charged as plain Python charges its entry, so that a recursion
 * through C still ends in RecursionError there. */
#define PY_INLINE_OP(op) [op] = PY_GIVEN_BACK
static const uint8_t py_inline_ops[256] = {
    PY_INLINE_OP(CALL), PY_INLINE_OP(CALL_FUNCTION_EX), PY_INLINE_OP(INSTRUMENTED_CALL),
    PY_INLINE_OP(INSTRUMENTED_CALL_FUNCTION_EX), PY_INLINE_OP(CALL_PY_EXACT_ARGS),
    PY_INLINE_OP(CALL_BOUND_METHOD_EXACT_ARGS), PY_INLINE_OP(FOR_ITER),
    PY_INLINE_OP(FOR_ITER_GEN), PY_INLINE_OP(SEND), PY_INLINE_OP(SEND_GEN),
    PY_INLINE_OP(INSTRUMENTED_FOR_ITER), PY_INLINE_OP(LOAD_ATTR_PROPERTY),
    PY_INLINE_OP(LOAD_ATTR_GETATTRIBUTE_OVERRIDDEN), PY_INLINE_OP(BINARY_SUBSCR_GETITEM),
    /* the hook keeps these from being specialized into the two above; a
     * property or __getitem__ is what they call most */
    PY_INLINE_OP(LOAD_ATTR), PY_INLINE_OP(BINARY_SUBSCR),
#if PY_VERSION_HEX >= 0x030D0000
    PY_INLINE_OP(CALL_KW), PY_INLINE_OP(INSTRUMENTED_CALL_KW), PY_INLINE_OP(CALL_PY_GENERAL),
    PY_INLINE_OP(CALL_BOUND_METHOD_GENERAL), PY_INLINE_OP(CALL_ALLOC_AND_ENTER_INIT),
#else
    PY_INLINE_OP(CALL_PY_WITH_DEFAULTS),
#endif
};
#undef PY_INLINE_OP

/* The units to give back to this entry: PY_GIVEN_BACK where plain Python
 * would have made the call inline, else 0. The caller's instruction is read
 * without looking at its owner: a C stack's entry frame points at CPython's
 * trampoline, none of whose instructions calls. */
static inline int py_inline_call(PyThreadState *ts) {
#if PY_VERSION_HEX >= 0x030D0000
    _PyInterpreterFrame *caller = ts->current_frame;
#else
    _PyInterpreterFrame *caller = ts->cframe->current_frame;
#endif
    if (__builtin_expect(caller == NULL, 0)) return 0;
#if PY_VERSION_HEX >= 0x030D0000
    return py_inline_ops[caller->instr_ptr->op.code];
#else
    return py_inline_ops[caller->prev_instr->op.code];
#endif
}
#else
static inline int py_inline_call(PyThreadState *ts) {
    (void)ts;
    return 0;
}
#endif

#if defined(__x86_64__) && defined(__linux__)
/* Deeper than the stack. A frame entered in the last margin of a stack runs
 * on a segment of its own: PY_SEG_BYTES mapped for the thread (committed as
 * it is touched, a guard page at its end), switched to by py_on_stack and
 * given back (unmapped) once the thread is back on its own stack. So a
 * recursion plain Python runs inline, on no C stack, runs here too, as deep
 * as the recursion limit lets it (3.13's test_call.test_super_deep:
 * 90,000 calls with the limit at 100,000). Not where greenlet is loaded (it
 * copies slices of one contiguous stack when it switches), nor past
 * PY_SEG_MAX segments: there the margin's rule above applies. */
#include <stdlib.h>
#include <sys/mman.h>
#define PY_SEG_BYTES ((size_t)16 << 20)
#define PY_SEG_MAX 64
typedef struct py_segs {
    void *map[PY_SEG_MAX]; /* this thread's segments, by nesting */
    int in;                /* segments the thread is on */
    uintptr_t lo, floor, hi; /* the current one's: its margin ends at floor */
} py_segs;
/* Allocated at a thread's first segment (static TLS of a loaded module is
 * scarce), freed when it is back on its own stack. */
static __thread py_segs *py_seg __attribute__((tls_model("initial-exec")));

/* Calls fn(arg) with the stack pointer at top (16-byte aligned), then
 * returns on the caller's stack. The frame pointer holds the caller's stack
 * pointer, and the CFI says so: debuggers and unwinders walk across. */
__asm__(".text\n"
        ".p2align 4\n"
        ".type py_on_stack, @function\n"
        "py_on_stack:\n"
        ".cfi_startproc\n"
        "    pushq %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -16\n"
        "    movq %rsp, %rbp\n"
        ".cfi_def_cfa_register %rbp\n"
        "    movq %rdi, %rsp\n"
        "    movq %rdx, %rdi\n"
        "    callq *%rsi\n"
        "    movq %rbp, %rsp\n"
        "    popq %rbp\n"
        ".cfi_def_cfa %rsp, 8\n"
        "    ret\n"
        ".cfi_endproc\n"
        ".size py_on_stack, .-py_on_stack\n");
__attribute__((visibility("hidden"))) void *py_on_stack(void *top, void *(*fn)(void *),
                                                        void *arg);

typedef struct py_seg_call {
    PyThreadState *ts;
    py_frame *f;
    int exc;
    PyObject *r;
} py_seg_call;

static void *py_seg_run(void *arg) {
    py_seg_call *c = (py_seg_call *)arg;
    c->r = py_eval_default(c->ts, c->f, c->exc);
    return NULL;
}

/* Segment n of this thread, mapped when first needed; NULL when it cannot
 * be had (then the margin's rule). */
static void *py_seg_get(int n) {
    if (n >= PY_SEG_MAX) return NULL;
    if (py_seg->map[n]) return py_seg->map[n];
    PyObject *key = PyUnicode_FromString("greenlet");
    PyObject *g = key ? PyImport_GetModule(key) : NULL;
    Py_XDECREF(key);
    if (g || PyErr_Occurred()) {
        Py_XDECREF(g);
        PyErr_Clear();
        return NULL;
    }
    void *m = mmap(NULL, PY_SEG_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (m == MAP_FAILED) return NULL;
    size_t guard = (size_t)sysconf(_SC_PAGESIZE);
    if (mprotect(m, guard, PROT_NONE) != 0) {
        munmap(m, PY_SEG_BYTES);
        return NULL;
    }
    return py_seg->map[n] = m;
}

/* Evaluates the frame on the thread's next segment; 0 when there is none
 * to be had. */
static int py_seg_eval(PyThreadState *ts, py_frame *f, int exc, PyObject **r) {
    if (!py_seg && !(py_seg = (py_segs *)calloc(1, sizeof *py_seg))) return 0;
    void *m = py_seg_get(py_seg->in);
    if (!m) {
        if (py_seg->in == 0) {
            free(py_seg);
            py_seg = NULL;
        }
        return 0;
    }
    size_t guard = (size_t)sysconf(_SC_PAGESIZE);
    py_stack_bounds outer = py_stack;
    uintptr_t o_lo = py_seg->lo, o_floor = py_seg->floor, o_hi = py_seg->hi;
    py_seg->lo = (uintptr_t)m + guard;
    py_seg->floor = py_seg->lo + PY_STACK_MARGIN;
    py_seg->hi = (uintptr_t)m + PY_SEG_BYTES;
    /* every entry on a segment takes the slow path (py_seg_entry) */
    py_stack.lo = py_seg->lo;
    py_stack.floor = py_seg->hi;
    py_stack.span = 0;
    py_seg_call c = {ts, f, exc, NULL};
    py_seg->in++;
    py_on_stack((uint8_t *)m + PY_SEG_BYTES, py_seg_run, &c);
    py_seg->in--;
    py_stack = outer;
    py_seg->lo = o_lo, py_seg->floor = o_floor, py_seg->hi = o_hi;
    if (py_seg->in == 0) { /* back on the thread's own stack: give them back */
        for (int i = 0; i < PY_SEG_MAX && py_seg->map[i]; i++) munmap(py_seg->map[i], PY_SEG_BYTES);
        free(py_seg);
        py_seg = NULL;
    }
    *r = c.r;
    return 1;
}

/* An entry on a segment: a further segment in its margin (else the
 * margin's rule), and plain Python's charge of units (py_inline_call).
 * Returns 0 when sp is on no segment of this thread. */
static int py_seg_entry(PyThreadState *ts, py_frame *f, int exc, uintptr_t sp, PyObject **r) {
    if (!py_seg || !py_seg->in || sp < py_seg->lo || sp >= py_seg->hi) return 0;
    int adjust = 0;
    if (sp < py_seg->floor) {
        if (py_seg_eval(ts, f, exc, r)) return 1;
        adjust = py_margin_adjust(ts, sp, py_seg->lo);
    } else {
        adjust = py_inline_call(ts);
    }
    *r = py_eval_adjusted(ts, f, exc, adjust);
    return 1;
}
#else
static int py_seg_eval(PyThreadState *ts, py_frame *f, int exc, PyObject **r) {
    (void)ts, (void)f, (void)exc, (void)r;
    return 0;
}

static int py_seg_entry(PyThreadState *ts, py_frame *f, int exc, uintptr_t sp, PyObject **r) {
    (void)ts, (void)f, (void)exc, (void)sp, (void)r;
    return 0;
}
#endif

/* Outside [floor, floor + span): the thread's first call, its stack's last
 * margin (a segment, or units held back), or a stack of the program's own
 * (unchanged). */
static __attribute__((noinline)) PyObject *py_eval_slow(PyThreadState *ts, py_frame *f, int exc,
                                                        uintptr_t sp) {
    PyObject *r;
    if (py_seg_entry(ts, f, exc, sp, &r)) return r;
    if (py_stack.lo == 0) py_stack_init();
    int adjust = 0;
    if (sp - py_stack.floor < py_stack.span) {
        adjust = py_inline_call(ts);
    } else if (sp >= py_stack.lo && sp < py_stack.floor) {
        if (py_seg_eval(ts, f, exc, &r)) return r;
        adjust = py_margin_adjust(ts, sp, py_stack.lo);
    }
    return py_eval_adjusted(ts, f, exc, adjust);
}

/* PY_IMMORTAL (3.11: a small int) of a parameter, which is NULL in code
 * run by exec() (outside 3.11's range, so no test of its own there). */
#if PY_VERSION_HEX >= 0x030C0000
#define PY_ARG_IMMORTAL(o) ((o) && PY_IMMORTAL(o))
#else
#define PY_ARG_IMMORTAL(o) PY_IMMORTAL(o)
#endif

/* Whether a new frame's arguments may be held by its caller too: not for
 * a resumption, no arguments, or one or two immortal ones. */
static inline int py_args_held(py_frame *f) {
    if (PYF_IS_RESUME(f)) return 0;
    PyCodeObject *co = PYF_CODE(f);
    int n = co->co_argcount;
    if (__builtin_expect(n <= 2 && co->co_kwonlyargcount == 0 &&
                         !(co->co_flags & (CO_VARARGS | CO_VARKEYWORDS)), 1)) {
        PyObject **loc = f->localsplus;
        if (n == 0 || (PY_ARG_IMMORTAL(loc[0]) && (n == 1 || PY_ARG_IMMORTAL(loc[1]))))
            return 0;
    }
    return 1;
}

static inline PyObject *py_eval_plain(PyThreadState *ts, py_frame *f, int exc) {
    uintptr_t sp = py_stack_pointer();
    if (__builtin_expect(sp - py_stack.floor >= py_stack.span, 0))
        return py_eval_slow(ts, f, exc, sp);
#if PY_GIVEN_BACK
    int adjust = py_inline_call(ts);
    PY_BUDGET(ts) += adjust;
    PyObject *r = _PyEval_EvalFrameDefault(ts, f, exc);
    PY_BUDGET(ts) -= adjust;
    return r;
#else
    return _PyEval_EvalFrameDefault(ts, f, exc);
#endif
}

/* A new frame whose arguments its caller may hold: the caller's references
 * given up where plain Python's inline call would have moved them, then the
 * evaluation. Out of line, so that the hook keeps nothing more across the
 * frame. */
static __attribute__((noinline)) PyObject *py_eval_unheld(PyThreadState *ts, py_frame *f,
                                                         int exc) {
    py__args_give_up(ts, f);
    return py_eval_plain(ts, f, exc);
}

static inline PyObject *py_eval_default(PyThreadState *ts, py_frame *f, int exc) {
    if (py_args_held(f)) return py_eval_unheld(ts, f, exc);
    return py_eval_plain(ts, f, exc);
}
#define EVAL_DEFAULT() py_eval_default(EVAL_ARGS)
#else
#define EVAL_DEFAULT() _PyEval_EvalFrameDefault(EVAL_ARGS)
#endif

#if PY_VERSION_HEX >= 0x03090000
typedef _PyFrameEvalFunction py_eval_fn;
static inline py_eval_fn py_get_eval(PyInterpreterState *i) {
    return _PyInterpreterState_GetEvalFrameFunc(i);
}
static inline void py_set_eval(PyInterpreterState *i, py_eval_fn fn) {
    _PyInterpreterState_SetEvalFrameFunc(i, fn);
}
#else
/* 3.8 keeps the function in the interpreter state, an internal struct. */
#define Py_BUILD_CORE 1
#include "internal/pycore_pystate.h"
#undef Py_BUILD_CORE
typedef PyObject *(*py_eval_fn)(PyFrameObject *, int);
static inline py_eval_fn py_get_eval(PyInterpreterState *i) {
    return i->eval_frame;
}
static inline void py_set_eval(PyInterpreterState *i, py_eval_fn fn) {
    i->eval_frame = fn;
}
#endif

/* The code-extra slot: PyUnstable_* from 3.12 (the old names warn). */
#if PY_VERSION_HEX >= 0x030C0000
#define py_request_extra_index PyUnstable_Eval_RequestCodeExtraIndex
#define py_code_set_extra PyUnstable_Code_SetExtra
#else
#define py_request_extra_index _PyEval_RequestCodeExtraIndex
#define py_code_set_extra _PyCode_SetExtra
#endif

/* The thread's chain of frames before 3.12, from its current frame outwards
 * (under the frame-evaluation hook, that is the caller of the frame the
 * hook is given, and after the frame's evaluation, again that caller):
 * each frame's frame object (NULL when none was made) and code object. */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
typedef _PyInterpreterFrame py_chain_frame;
static inline py_chain_frame *py_chain_top(void) {
    return PyThreadState_Get()->cframe->current_frame;
}
#define PY_CHAIN_BACK(f) ((f)->previous)
#define PY_CHAIN_OBJ(f) ((f)->frame_obj)
#define PY_CHAIN_CODE(f) ((f)->f_code)
#elif PY_VERSION_HEX < 0x030B0000
typedef PyFrameObject py_chain_frame;
static inline py_chain_frame *py_chain_top(void) {
    return PyThreadState_Get()->frame;
}
#define PY_CHAIN_BACK(f) ((f)->f_back)
#define PY_CHAIN_OBJ(f) (f)
#define PY_CHAIN_CODE(f) ((f)->f_code)
#endif

/* Public calls that came after 3.8. */
#if PY_VERSION_HEX < 0x03090000
static inline PyObject *PyObject_CallNoArgs(PyObject *f) {
    return PyObject_CallObject(f, NULL);
}
static inline PyInterpreterState *PyInterpreterState_Get(void) {
    return PyThreadState_Get()->interp;
}
static inline PyCodeObject *PyFrame_GetCode(PyFrameObject *fo) {
    Py_INCREF(fo->f_code);
    return fo->f_code;
}
static inline PyFrameObject *PyFrame_GetBack(PyFrameObject *fo) {
    Py_XINCREF(fo->f_back);
    return fo->f_back;
}
#endif
#if PY_VERSION_HEX < 0x030B0000
static inline PyObject *PyFrame_GetGlobals(PyFrameObject *fo) {
    Py_XINCREF(fo->f_globals);
    return fo->f_globals;
}
#endif

/* py_set_func: the profile or trace function of any thread of the interpreter:
 * 3.9-3.12 _PyEval_SetProfile/_PyEval_SetTrace; 3.8 sets the thread's fields
 * as PyEval_SetProfile/SetTrace do. 3.13 exports neither: hook.c uses
 * PyEval_Set*AllThreads (3.12+) there, and this only sets the calling
 * thread. Returns 0 when the thread could not be set. */
#if PY_VERSION_HEX < 0x03090000
static inline void py38_set(PyThreadState *ts, Py_tracefunc fn, int trace) {
    Py_tracefunc *slot = trace ? &ts->c_tracefunc : &ts->c_profilefunc;
    PyObject **obj = trace ? &ts->c_traceobj : &ts->c_profileobj;
    if (trace) _PyRuntime.ceval.tracing_possible += (fn != NULL) - (*slot != NULL);
    PyObject *old = *obj;
    *slot = fn;
    *obj = NULL;
    Py_XDECREF(old);
    ts->use_tracing = ts->c_tracefunc != NULL || ts->c_profilefunc != NULL;
}
#endif

/* trace: the trace function, else the profile function. */
static inline int py_set_func(PyThreadState *ts, Py_tracefunc fn, int trace) {
#if PY_VERSION_HEX < 0x03090000
    py38_set(ts, fn, trace);
    return 1;
#else
    if (ts == PyThreadState_Get()) {
        if (trace) PyEval_SetTrace(fn, NULL);
        else PyEval_SetProfile(fn, NULL);
        return 1;
    }
#if PY_VERSION_HEX < 0x030D0000
    return (trace ? _PyEval_SetTrace(ts, fn, NULL) : _PyEval_SetProfile(ts, fn, NULL)) == 0;
#else
    return 0;
#endif
#endif
}

#endif /* PYHOOK_PYCOMPAT_H */
