/* hook.h -- internal interface between the tracy._tracy module (module.c),
 * the function/line/C-call recorders (hook.c) and the trace decoder
 * (readtrace.c). Everything here runs with the GIL held. */
#ifndef PYHOOK_HOOK_H
#define PYHOOK_HOOK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* How function zones are recorded. */
enum py_mode {
    PY_MODE_OFF = 0,
    PY_MODE_EVAL = 1,    /* PEP 523 frame-evaluation hook */
    PY_MODE_PROFILE = 2, /* PyEval_SetProfile (fallback, --trace-c) */
    PY_MODE_TRACE = 3,   /* PyEval_SetTrace (-l); plus profile for --trace-c */
    PY_MODE_MONITOR = 4  /* sys.monitoring events, no evaluator (3.12+; mech.h) */
};

/* Which mechanism records (python -m tracy --mechanism): the frame hook,
 * fast; `exact`, none that changes how CPython runs the program (mech.h);
 * auto, the hook unless another tool is active when recording starts
 * (3.12+; mech.h, py__mon_wanted), and until one begins (hook.c,
 * leave_hook). */
enum py_mech { PY_MECH_AUTO = 0, PY_MECH_HOOK = 1, PY_MECH_EXACT = 2 };

/* Options, set by configure() before the first enable. */
typedef struct py_opts {
    int trace_c;          /* record calls of C functions */
    int lines;            /* every executed line is a zone */
    int label_args;       /* zone text = repr of the arguments */
    int label_file;       /* location name carries the file */
    int label_line;       /* location name carries the line */
    int force_profile;    /* do not use the frame-evaluation hook */
    int mechanism;        /* enum py_mech */
    uint32_t max_depth;   /* record zones only below this nesting depth */
    uint64_t min_duration; /* ns; 0 = keep every zone */
    PyObject *filter;     /* callable(qualname, module, file) -> bool, or NULL */
    PyObject *skip_prefix; /* str: code under it is never recorded, or NULL */
    PyObject *on_thread;  /* callable() run when a new thread starts recording */
} py_opts;

extern py_opts py__opts;

/* Sets up the code-extra slot and the at-fork handler. 0 or -1 with an
 * exception set. */
/* s (a str) as UTF-8 text for a record (a location's name or file, a
 * message), never failing on what UTF-8 cannot hold: the surrogates that
 * stand for the undecodable bytes of a file name or an argument
 * (os.fsdecode) become \xNN, other lone surrogates \uNNNN. dflt when s is
 * not a str; *len (when len is given) is the text's length. An escaped text
 * stays valid until 8 more have been made (the GIL held). */
const char *py__utf8(PyObject *s, const char *dflt, Py_ssize_t *len);
/* The escaped text of py__utf8 as a new bytes object (NULL with an
 * exception), for a caller that needs more than 8 at once. */
PyObject *py__utf8_escaped(PyObject *s);

int py__hook_init(void);

/* Layout of a code object's co_extra (CPython 3.6 to 3.13). */
typedef struct py_code_extra {
    Py_ssize_t ce_size;
    void *ce_extras[1];
} py_code_extra;

#if PY_VERSION_HEX >= 0x030B0000
/* argref.c (3.11+): at the entry of a frame the hook evaluates, for a call
 * by its caller's CALL, the caller's references to the arguments the callee
 * holds are given up, as plain CPython's inline call moves them
 * (sys.getrefcount, NumPy's resize; pycompat.h, py_eval_unheld). */
#if PY_VERSION_HEX >= 0x030C0000
#define PY_IMMORTAL(o) _Py_IsImmortal(o)
#else
/* 3.11: the address range of CPython's small ints (one static array), or
 * span 0: their counts are shared by every user and nobody can rely on
 * them, so the hook leaves them as 3.12 leaves its immortal objects */
typedef struct py_range {
    uintptr_t lo, span;
} py_range;
extern py_range py__small_ints;
#define PY_IMMORTAL(o) ((uintptr_t)(o) - py__small_ints.lo < py__small_ints.span)
#endif
/* Takes a code-extra slot for argref.c's tables; without one (-1),
 * py__args_give_up does nothing. */
int py__args_unheld_init(void);
/* Gives up the caller's references to the arguments of f, a new frame,
 * where its caller's CALL made it and f holds them. */
void py__args_give_up(PyThreadState *ts, struct _PyInterpreterFrame *f);
#endif

/* Starts or stops recording in every thread. py__enable returns the mode
 * used (enum py_mode), or -1 with an exception set. Enabling twice is a
 * no-op; frames entered before enabling get no zone, frames whose zone
 * began always get its end. */
int py__enable(void);
void py__disable(void);
/* py__enable with the mode py__next_mode() just gave (nothing changed
 * since), not chosen again; -1: chosen now. */
int py__enable_as(int mode);

/* After a trace window: the classes the hook kept from being called
 * inline while it was on (3.13, a simple __init__) are called inline again,
 * as unprofiled. Not at every disable: a decorated function's calls enable
 * and disable, and enabling again then needs no walk of the classes. */
void py__release_classes(void);

/* tracy.zone's zones (hook.c, "User zones"): py__uz_before_begin before
 * the begin is written on t, py__uz_begun after it (the frame that opens
 * it: PY_FO_KEY of its frame object, or NULL), which returns the zone's
 * token (0: not kept); py__uz_end closes that zone only, when it is still
 * the innermost. py__uz_frame_key: the key of a frame object. */
struct lt__tbuf;
void py__uz_before_begin(struct lt__tbuf *t);
uint64_t py__uz_begun(struct lt__tbuf *t, uint32_t loc, const void *key);
void py__uz_end(struct lt__tbuf *t, uint64_t serial);
void py__uz_end_innermost(struct lt__tbuf *t);
const void *py__uz_frame_key(PyObject *frame);
int py__mode(void);
/* The mode py__enable would choose now (what the options and the
 * interpreter's frame evaluator allow); nothing is changed. */
int py__next_mode(void);

/* Forgets every cached location (after options change, or in a forked
 * child whose connection is new). */
void py__new_epoch(void);
uint32_t py__epoch(void);

/* The client was stopped: no event may be written any more. */
/* A new connection (a trace window) after py__client_stopped: zones may
 * be written again. */
void py__client_restarted(void);
void py__client_stopped(void);

/* Writes the pending ancestors kept back by --min-duration, so that an
 * event written now nests correctly. */
void py__pending_flush(void);

/* Called for each thread's first event: names it through opts.on_thread. */
void py__thread_first(void);

/* The first argument (a new reference, or NULL) of the innermost frame of
 * this thread whose code is one of codes[0..n): the frame the hook is
 * entering when it makes the thread's buffer, then the thread's frames
 * outwards. */
PyObject *py__frame_arg0(PyObject *const *codes, int n);

/* Records a failure inside hook work instead of raising it: the exception
 * set, if any, is taken (the first one is kept). `what` is a literal saying
 * what failed and what it cost. The hook itself never raises. */
void py__hook_failed(const char *what);

/* Turns the failures recorded since the last call into one exception of
 * err_type (its __cause__ the first failure's exception) and forgets them.
 * Returns -1 with the exception set, or 0 when there were none. */
int py__hook_raise(PyObject *err_type);

/* 1 when failures wait for py__hook_raise. */
int py__hook_failures(void);

/* 1 when running in the main interpreter. */
int py__main_interpreter(void);

/* fatal.c. _fatal_install(set, sig, handler), py__fatal_set in C:
 * set(sig, handler) (signal.signal, in the main thread), then wraps
 * Python's C-level handler of sig so that a signal the main thread misses
 * (it arrived just before a blocking call) is sent to it again until
 * _fatal_begin(sig) says the Python handler has begun; sig is blocked in
 * this thread in between (one that came then, before the wrap, would be
 * taken for interrupt_main). Returns what set returned.
 * _end_signal(sig): the goodbye names sig as the process's end.
 * _fatal_begin(sig): 1 the first time in this process, 0 when the handler
 * is already running, -1 when no signal came through the relay
 * (_thread.interrupt_main). _fatal_after_fork(): in a forked child, before
 * the signals held across fork are unblocked. */
/* symtab.c: the address of a function that the object holding the
 * exported function `anchor` has in its full symbol table but does not
 * export. In two steps, so that start-up reads no file:
 * py__symtab_where (at start-up: the loader's answer, no file read) notes
 * the object's file and load address in *w, 0 when it has them;
 * py__symtab_find (later, from a crash handler too: open, mmap and a scan,
 * no allocation, lock or loader call) returns the function `name`, NULL
 * when the file was stripped, replaced since it was loaded (`anchor_name`
 * is not where the anchor is), or has no such function. */
typedef struct {
    const void *anchor;
    uintptr_t base;
    char path[4096];
} py_symtab_where;
int py__symtab_where(const void *anchor, py_symtab_where *w);
void *py__symtab_find(const py_symtab_where *w, const char *anchor_name, const char *name);

/* The crash handler of the client notes the Python stack (fatal.c). */
void py__fatal_init(void);
extern const char py__fatal_install_doc[], py__fatal_begin_doc[], py__fatal_after_fork_doc[],
    py__fatal_take_doc[], py__end_signal_doc[];
extern const char py__fork_wrapper_doc[];
PyObject *py__fork_wrapper(PyObject *self, PyObject *real);
PyObject *py__fatal_set(PyObject *set, PyObject *sig, PyObject *handler);
PyObject *py__fatal_install(PyObject *self, PyObject *args);
PyObject *py__fatal_take(PyObject *self, PyObject *args);
PyObject *py__fatal_begin(PyObject *self, PyObject *arg);
PyObject *py__fatal_after_fork(PyObject *self, PyObject *unused);
PyObject *py__end_signal(PyObject *self, PyObject *arg);

/* module.c, for C callers. py__exec_prepare: before an exec, ship what was
 * recorded and say EXEC (PROTOCOL.md, exec); py__exec_failed: it failed,
 * recording goes on. py__stop: what tracy._tracy.stop() does, without
 * raising. py__name_thread: names the calling thread. */
void py__exec_prepare(void);
void py__exec_failed(void);
void py__stop(void);
void py__name_thread(const char *name);

/* unseen.c: the profiler's own work inside the program's window as C
 * callables, without a Python frame a tracer, profiler or coverage tool
 * could see (Python-callable; docs there). */
extern const char py__hidden_doc[], py__exec_wrapper_doc[],
    py__threading_doc[], py__on_thread_doc[], py__signal_wrappers_doc[];
PyObject *py__hidden(PyObject *self, PyObject *args);
PyObject *py__exec_wrapper(PyObject *self, PyObject *real);
PyObject *py__threading(PyObject *self, PyObject *unused);
PyObject *py__on_thread(PyObject *self, PyObject *unused);
PyObject *py__signal_wrappers(PyObject *self, PyObject *args);
/* unseen.c: registers fn (the child's end of recording) with atexit,
 * hidden from the program's introspection of atexit (docs there). 0, or -1
 * with an exception. */
int py__atexit_own(PyObject *fn);
/* unseen.c: a C callable of def with self, its __module__ module, the doc
 * and signature of `like` (the builtin it stands for) when named the same. */
PyObject *py__c_callable(PyMethodDef *def, PyObject *self, const char *module, PyObject *like);
/* Replaces the builtin of mod named as def (module: its __module__) by
 * py__c_callable(def, mod, ...), whose __self__ is then mod as the
 * builtin's. Returns the builtin (a new reference, kept by the caller), or
 * NULL when it was left in place (not a C function, or not settable).
 * Keeps any exception set. */
PyObject *py__replace_builtin(PyObject *mod, const char *module, PyMethodDef *def);
/* The same for the real function real of module posix, with the def of
 * defs[0..n) named as real (its __name__), else defs[0]. */
PyObject *py__wrapper_named(PyMethodDef *defs, size_t n, PyObject *real);
/* childenv.c: the environment of a child process while children are
 * profiled (docs there). py__child_env_list: fork_exec's environment list
 * (None: inherited) for the executables exe_list, or NULL with no
 * exception when unchanged; py__execve_env, py__execv_env: the real exec
 * called with the child's environment; py__tuple_with: args with item at
 * replaced by v (stolen), NULL with an exception. */
extern const char py__children_doc[], py__spawn_wrapper_doc[], py__getenv_doc[];
PyObject *py__children(PyObject *self, PyObject *folder);
PyObject *py__getenv(PyObject *self, PyObject *name);
PyObject *py__spawn_wrapper(PyObject *self, PyObject *real);
PyObject *py__child_env_list(PyObject *env, PyObject *exe_list);
PyObject *py__execve_env(PyObject *real, PyObject *args, PyObject *kw);
PyObject *py__execv_env(PyObject *real, PyObject *args, PyObject *kw);
PyObject *py__tuple_with(PyObject *args, Py_ssize_t at, PyObject *v);
/* A Python child started (pid) by exe with argv that will not read tracy's
 * sitecustomize (-E, -I, -S): one line in the parent's notes file, which
 * python -m tracy reports (children not profiled). */
void py__note_unread(PyObject *exe, PyObject *argv, long pid);
/* The first sight of a code object (hook.c): at subprocess's
 * Popen._execute_child, _posixsubprocess.fork_exec is wrapped so that a
 * preexec_fn child ships what it records before its exec (PROTOCOL.md). */
void py__fork_exec_seen(PyCodeObject *co);

/* threading.setprofile/settrace target (METH_VARARGS). */
PyObject *py__thread_hook(PyObject *self, PyObject *args);

/* _call_detached(fn, *args): fn(*args) with the thread's chain of Python
 * frames cut below the frames it runs, restored when it returns or
 * raises: the outermost of them has no caller (f_back None), as the
 * frames the interpreter runs from C (a script's, atexit callbacks'), so
 * that inspect.stack(), warnings' stacklevel and traceback.print_stack()
 * do not reach the profiler's frames. */
PyObject *py__call_detached(PyObject *self, PyObject *args);

/* _unrecorded(*codes): these code objects are the profiler's from now on,
 * as the code under skip_prefix: their frames and the C calls they make
 * are never recorded (runpy's two functions that run a -m module, which
 * the program sees below its frames as under plain python). At most
 * PY_UNREC_MAX, kept for the process's life. */
#define PY_UNREC_MAX 4
PyObject *py__unrecorded(PyObject *self, PyObject *args);

/* The named tuples of _read_trace's lists (PyStructSequence heap types),
 * made by its first call: a traced program does not pay for them. */
typedef struct py_trace_types {
    PyTypeObject *zone, *message, *signpost, *plot, *frame, *lost, *thread;
} py_trace_types;

/* State of a tracy._tracy module object. What the hook uses is process-wide
 * (one frame-evaluation hook, one client per process): the module refuses
 * sub-interpreters instead. */
typedef struct py_mstate {
    PyObject *user_locs;     /* dict: (name, file, line) -> epoch << 32 | id */
    PyObject *plots;         /* dict: name -> epoch << 32 | id */
    PyObject *hook_error;    /* tracy._tracy.HookError */
    PyTypeObject *counts;    /* counts() result */
    py_trace_types trace;
} py_mstate;

/* The state of module m (a tracy._tracy module object). */
py_mstate *py__mstate(PyObject *m);

/* Adds o to module m as `name`, with a reference of its own (the caller
 * keeps its own). 0, or -1 with an exception set. */
int py__module_add(PyObject *m, const char *name, PyObject *o);

/* Creates the types of `t` and adds them to module m. 0, or -1 with an
 * exception set (the types made so far are then in t, which the module's
 * clear function frees, and t->zone is NULL so that a later call retries). */
int py__trace_types_init(PyObject *m, py_trace_types *t);

/* tracy._tracy._read_trace(path) -> dict (readtrace.c); `module` is the
 * tracy._tracy module. */
PyObject *py__read_trace(PyObject *module, PyObject *arg);
PyObject *py__trace_summary(PyObject *module, PyObject *arg);
/* tracy._tracy._function_stats(path) -> [(name, kind, file, line, calls,
 * self_ns, cum_ns)]: one row per function (kind, name, file and line), its
 * zones of every thread and process summed on the converters' call-tree
 * model: cum_ns counts outermost activations only, as cProfile's cumtime
 * and tracy-sql's function_stats.total do (readtrace.c). */
PyObject *py__function_stats(PyObject *module, PyObject *arg);

#endif /* PYHOOK_HOOK_H */
