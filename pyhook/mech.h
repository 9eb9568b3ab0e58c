/* mech.h -- the `exact` recording mechanism: none that changes how CPython
 * runs the program. A PEP 523 frame-evaluation function (the hook, the
 * default) makes CPython 3.11+ call every Python function through C instead
 * of inline, which a program can see (sys.getrefcount of an argument is one
 * more, sys.settrace and pdb see other events; tests/python/others/). The
 * exact mechanism sets no such function:
 *   3.12+     sys.monitoring (PEP 669) events PY_START, PY_RESUME, PY_THROW
 *             (a zone begins), PY_RETURN, PY_YIELD, PY_UNWIND (it ends);
 *             CALL, C_RETURN, C_RAISE under --trace-c; LINE under -l. Tool
 *             id 3 or 4 (reserved for nobody); when both are taken it says
 *             so on stderr and records through PyEval_SetProfile/SetTrace.
 *   3.8-3.11  PyEval_SetProfile (PyEval_SetTrace under -l): hook.c's
 *             profile mode, which keeps CPython's inline calls.
 * The zones are those of the hook: a generator or coroutine zone is one run
 * of its body, the call that creates it gets none.
 * Everything here runs with the GIL held. */
#ifndef PYHOOK_MECH_H
#define PYHOOK_MECH_H

#include "hook.h"

/* ---- mech_monitor.c ---- */

/* 1 when recording should use sys.monitoring now: CPython 3.12+ and
 * opts.mechanism is exact, or auto while another tool is active: a
 * sys.monitoring tool holds an id 0-5, or (3.12 only) a trace or profile
 * function is set. */
int py__mon_wanted(void);

/* Takes a tool id (once), registers the callbacks and turns the events on.
 * 0, or -1 when no tool id is free (said once on stderr; no exception). */
int py__mon_enable(void);

/* 1 when py__mon_enable can take a tool id (3 or 4 is free, or ours). */
int py__mon_id_free(void);

/* Turns the events that begin zones off. Those that end them stay on until
 * every zone begun has ended (then all are off). */
void py__mon_disable(void);

/* ---- hook.c, for mech_monitor.c ---- */

/* 1 when the thread's profile and trace functions are unset or tracy's own
 * (an earlier window's, --trace-c's): not another tool for auto. */
int py__legacy_is_ours(PyThreadState *ts);
/* A run of a frame of co begins (PY_START, PY_RESUME, PY_THROW): its zone
 * begins when co is recorded and recording is on. Returns 1 when an entry
 * was pushed (py__rec_exit will pop it). */
int py__rec_enter(PyCodeObject *co);
/* The run of the innermost frame ends (PY_RETURN, PY_YIELD, PY_UNWIND):
 * closes the zones of co's topmost entry and of every entry above it.
 * Returns the number of entries popped. */
int py__rec_exit(PyCodeObject *co);
/* CALL of `callable` (a C function or method descriptor; self is its
 * first argument or NULL) from code `caller`: a C zone under --trace-c.
 * Returns 1 when an entry was pushed. */
int py__rec_ccall(PyCodeObject *caller, PyObject *callable, PyObject *self);
/* C_RETURN or C_RAISE of `callable`: 1 when it closed an entry. */
int py__rec_creturn(PyObject *callable);
/* LINE `line` of the innermost frame, of code co: ends its previous line
 * zone and begins this one (-l). Returns 1 when an entry was pushed (a
 * frame entered before recording began). */
int py__rec_line(PyCodeObject *co, int line);
/* Recording is on (new zones may begin). */
int py__rec_enabled(void);

#endif /* PYHOOK_MECH_H */
