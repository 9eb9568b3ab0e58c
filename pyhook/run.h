/* run.h -- internal interface of what runs a profiled process and python
 * -m tracy in C: the process's runtime (runtime.c: options, enabling, the
 * signals, the os wrappers, the children's environment), the capture of a
 * run (rundaemon.c: the profiler's lines on stderr, the rendezvous, the
 * daemon's start and end) and python -m tracy's main (run.c). The tracy
 * package's Python modules call the same functions (Python-callable
 * wrappers, docs there) for what they share with it. Everything here runs
 * with the GIL held. */
#ifndef PYHOOK_RUN_H
#define PYHOOK_RUN_H

#include "hook.h"

/* f() (PyObject_CallNoArgs, 3.9+). */
static inline PyObject *py__call0(PyObject *f) {
    return PyObject_CallObject(f, NULL);
}

/* ---- helpers (rundaemon.c) ---------------------------------------------- */

/* name's value in os.environ, the program's view of the environment (not
 * the process's, which holds tracy's own variables), as a new str, or NULL
 * (no exception) when it has none: tracy._env_get. */
PyObject *py__env_view(const char *name);

/* One of the profiler's own lines on the interpreter's standard error
 * (sys.__stderr__), when it can still be written there: not once
 * descriptor 2 is another file than when the run began (py__keep_stderr).
 * Never raises. py__tellf formats as PyUnicode_FromFormat. */
void py__keep_stderr(void);
void py__tell(PyObject *text);
void py__tellf(const char *fmt, ...);

/* os.fsencode(s) as a new bytes object, or NULL with an exception. */
PyObject *py__fsenc(PyObject *s);

/* The module `name`, imported when it is not yet (py__module_named), or
 * only when it is (py__loaded: NULL without an exception otherwise): a new
 * reference, or NULL with an exception. */
PyObject *py__module_named(const char *name);
PyObject *py__loaded(const char *name);

/* An attribute of a module imported by name (a new reference, or NULL
 * with an exception). */
PyObject *py__mod_attr(const char *module, const char *name);

/* Calls module.name(*args) (args a new reference to a tuple, stolen; NULL
 * is ()), importing module when needed: the Python of the rare paths.
 * A new reference, or NULL with an exception. */
PyObject *py__call_py(const char *module, const char *name, PyObject *args);

/* An interned str for the C string s, a literal (borrowed: kept for the
 * process's life, keyed by the literal's address), or NULL with an
 * exception. */
PyObject *py__name(const char *s);

/* _tracy.<name>(*args, **kw) called in C, without making the function
 * object (args a tuple; kw a dict or NULL): a new reference, or NULL
 * with an exception. */
PyObject *py__call_def(const char *name, PyObject *args, PyObject *kw);

/* _tracy.<name>(*args), args built by Py_BuildValue's fmt (a tuple; NULL:
 * none): a new reference, or NULL with an exception. */
PyObject *py__call_fn(const char *name, const char *fmt, ...);

/* exit_code(status): a waitpid status as os.waitstatus_to_exitcode says it
 * (negative: the signal that ended the process). */
int py__exit_code(int status);

/* ---- the process's runtime (runtime.c) ---------------------------------- */

/* The tracy package's folder (tracy._PKG_DIR: frames there are the
 * profiler's) and its _child folder (children's sitecustomize): borrowed,
 * NULL with an exception when the package cannot say. */
PyObject *py__pkg_dir(void);
PyObject *py__child_dir(void);

/* _runtime.defaults(): a new options dict, the mechanism from
 * TRACY_MECHANISM (os.environ) or "auto". */
PyObject *py__rt_defaults(void);

/* The options applied (configure) and the recording of this process:
 * 0, or -1 with an exception set (as _runtime's functions raise). */
int py__rt_configure(PyObject *opts);
int py__rt_enable(void);
int py__rt_disable(void);

/* install_process_hooks(on_signal, at_exit): the wrappers of os._exit,
 * the execs and spawns, os.fork (3.12+), and the fatal signals' handler,
 * whose work ends by on_signal (a callable, or NULL: stopping the client)
 * in this process. 0, or -1 with an exception. */
int py__rt_install_process_hooks(PyObject *on_signal, int at_exit);

/* set_env / unset_env: the process's environment (what children inherit),
 * not the program's view of it. 0, or -1 with an exception. */
int py__rt_set_env(const char *name, PyObject *value);
void py__rt_unset_env(const char *name);

/* setup_children_env(opts, program): child Python processes are profiled
 * into this capture. 0, or -1 with an exception. */
int py__rt_setup_children_env(PyObject *opts, PyObject *program);

/* take_unprofiled(): the lines saying which children were not profiled
 * and why (a new list), from the notes file, which this removes. */
PyObject *py__rt_take_unprofiled(void);

/* The ends of python -m tracy's run: signals_done, signals_hurry(fn)
 * (fn borrowed; NULL: an interrupt raises KeyboardInterrupt), signals_quiet,
 * die_by(signum), stop_mp_helpers. */
void py__rt_signals_done(void);
void py__rt_signals_hurry(PyObject *fn);
void py__rt_signals_quiet(void);
int py__rt_die_by(int signum);
void py__rt_stop_mp_helpers(void);

/* os's function that a wrapper replaced (borrowed), or NULL. */
PyObject *py__rt_real(const char *name);

/* Notes os.fork as it is now: the one wrapped later (when the program has
 * not replaced it meanwhile). */
void py__rt_init(void);

/* The Python-callable functions of runtime.c and rundaemon.c, for the
 * module's method table. */
extern PyMethodDef py__runtime_methods[], py__rundaemon_methods[], py__run_methods[];

/* ---- module.c, for C callers --------------------------------------------- */

/* _tracy.disable() / stop(): recording stopped, then the hook's failures
 * since the last check raised as one HookError: 0, or -1 with it set. */
int py__disable_checked(void);
int py__stop_checked(void);
/* _tracy.enable(): the mode, 0 once the client was stopped, -1 with an
 * exception (mode: as py__enable_as takes it). */
int py__enable_checked(int mode);
/* _tracy.start() (the GIL released while connecting): 1 when connected;
 * active(): connected and recording. */
int py__client_start(void);
int py__client_active(void);
/* The tracy._tracy module (borrowed), and its function `name` (a new
 * reference, made when first asked for; NULL with an exception). */
PyObject *py__module(void);
PyObject *py__fn(const char *name);

/* ---- fatal.c / unseen.c, for C callers --------------------------------- */

/* Once the client first started in the process, with the GIL: a
 * faulthandler that the interpreter's start enabled (-X faulthandler,
 * PYTHONFAULTHANDLER) kept the actions that the client's crash handler then
 * replaced, and puts them back over it when disabled, as CPython's fatal
 * error does before abort(): the crash would ship nothing. It is enabled
 * again over the crash handler (disable, the handler taken again, enable:
 * to the same stream), as a program that enables it after the start has
 * it: it prints first, as unprofiled, then passes the signal on. (One the
 * program enabled, maybe to a file of its own, is left alone.) */
void py__fatal_after_start(void);
/* _fatal_begin(signum) (fatal.c). */
int py__fatal_begin_c(int sig);
/* The calling thread's tracing suspended / resumed (unseen.c): no trace,
 * profile or sys.monitoring event meanwhile. */
void py__tracing_enter(void);
void py__tracing_leave(void);

/* ---- python -m tracy (run.c, rundaemon.c) ----------------------------- */

/* A run's capture (rundaemon.c). own_or_join: the daemon this run records
 * into, started now (mode 'o', *size the processes expected) or another
 * process's of the same run (mode 'j'); *pid, *addr (a new str,
 * "unix:PATH") and the rendezvous file's path *rv (a new str, or NULL when
 * this run shares none). -1 with an exception (OSError: the daemon cannot
 * start, another run writes out). verbose: say what is done. */
int py__own_or_join(PyObject *out, int verbose, char *mode, long *pid, PyObject **addr,
                    PyObject **rv, long *size);
/* The rendezvous file `rv` (a str, or NULL) after the run: count_in (a
 * joining process is connected), joined (how many are), remove (the
 * owner's finish). */
void py__rv_count_in(PyObject *rv, long daemon_pid);
long py__rv_joined(PyObject *rv);
void py__rv_remove(PyObject *rv, long daemon_pid);
/* spread(): (job key, world size, world rank) for a job on several hosts
 * (a new tuple), else None; NULL with an exception. */
PyObject *py__spread(void);
/* This user's daemon socket for port (daemon-PORT.sock), a new str, or NULL
 * with an exception (OSError: no private run folder). */
PyObject *py__daemon_socket(long port);
/* wait_for_ranks(rv, size): the owner stays connected until every expected
 * process joined (at most 60 s without one more). -1 with an exception
 * (KeyboardInterrupt). */
int py__wait_for_ranks(PyObject *rv, long size, int verbose);
/* wait_for_children(): while profiled children alive now are, at most
 * 10 s (their /proc scans: procs.h), the GIL held. -1 with an exception. */
int py__wait_for_children(int verbose);
/* drain_daemon(pid): SIGUSR1, the daemon takes no new process. */
void py__drain_daemon(long pid);
/* wait_daemon(pid, interrupted, addr): the daemon's exit status once it
 * has finished the file, the GIL held; with addr (a run of one process),
 * services the program left recording get 2 s, then are recorded as
 * stopped.
 * *status set, or -1 with an exception. */
int py__wait_daemon(long pid, int interrupted, PyObject *addr, int *status);
/* hurry_daemon(pid): the daemon asked to finish now (_capture.hurry_daemon). */
void py__hurry_daemon(long pid);
/* is_trace(path): a .tracy file or an empty file (those may be replaced). */
int py__is_trace(const char *path);

#endif /* PYHOOK_RUN_H */
