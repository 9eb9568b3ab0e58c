/* procs.h -- the processes around a run as /proc shows them: the profiled
 * children `python -m tracy` waits for once the program has ended, and
 * the processes still recording into its capture (rundaemon.c's waits).
 *
 * No Python here: the waits call these with the GIL held, so that the
 * program's threads stay still while the run finishes, as they do once
 * plain Python has ended its program. Every function reads /proc afresh;
 * a process that ends meanwhile is simply not found. */
#ifndef PYHOOK_PROCS_H
#define PYHOOK_PROCS_H

#include <stddef.h>
#include <sys/types.h>

/* A set of pids, sorted, owned by the caller (procs_set_free). */
typedef struct {
    pid_t *pid;
    size_t n, cap;
} procs_set;

void procs_set_free(procs_set *s);

/* The live descendants of this process that run a Python interpreter (the
 * executable me_exe, a real path, or one named python*), are profiled
 * (TRACY_PY_OPTS in their environment) or may be (an environment not
 * readable yet: a process in exec shows none for a moment), and are not
 * multiprocessing's resource tracker or fork server (those live until
 * their parent exits). With keep non-NULL, only those also in keep. The
 * set in *out (emptied first); 0, or -1 (out of memory). */
int procs_profiled_children(const char *me_exe, const procs_set *keep, procs_set *out);

/* Whether the processes recording into the capture at addr (those the
 * draining daemon lists in daemon-N.pids beside its socket daemon-N.sock,
 * and those whose environment names addr as TRACY_ADDR), less this process
 * and the daemon, are some and all in sessions other than sid, and no
 * descendant of this process but the daemon is left in session sid: a
 * service the program started (a daemon's double fork, start_new_session),
 * which plain Python would not wait for. 1, 0, or -1 (out of memory). */
int procs_detached_only(pid_t daemon, const char *addr, size_t addr_len, pid_t sid);

#endif /* PYHOOK_PROCS_H */
