"""The capture of a run (python -m tracy, trace windows): the toolkit's
programs, and the daemon's end. Most of what a run does with its capture is
C (pyhook/rundaemon.c: the profiler's lines on stderr, the job a process
belongs to, the rendezvous file in which the processes of one run meet, the
daemon's start, the waits of its end, with the /proc scans of pyhook/procs.c),
which python -m tracy's common path runs without this module; here are its
names for the package's Python, and what only some runs need: the reports'
programs, an interrupt while finishing.

Processes started together without a daemon (MPI ranks, several launches by
one parent) meet in a small locked file in the user's private run folder
(tracy._tracy._rundir()): the first starts capture-release and writes where
it listens there, the others join it; another run that would write the same
trace is refused. The process that owns the daemon stays connected
until every expected rank has joined, and each python -m tracy process stays
connected while profiled children it started are alive, so that the daemon
(which ends when its last client leaves) cannot end before they connect.
"""
import os

from tracy import _tracy

# os.environ.get, cheaper for the names a run looks for, most of them
# missing (no KeyError raised and caught inside)
_getenv = _tracy._env_get


def _job():
    """(job key, expected processes on this host or 0, rank or None)."""
    return _tracy._job()


def _fnv(s):
    """The 64-bit FNV-1a hash of s's UTF-8 bytes, 16 hex digits (the
    rendezvous file's key)."""
    return _tracy._fnv(s)


# keep_stderr(): notes what descriptor 2 is as the run begins; tell(text):
# one of the profiler's own lines on the interpreter's standard error
# (sys.__stderr__, not a stream the program put in sys.stderr), when it can
# still be written: a program that closed or replaced its standard error
# ends as it would unprofiled, without tracy's lines; so does one that
# pointed descriptor 2 elsewhere (its log file, /dev/null) after the run
# began: the lines are not written into its file.
keep_stderr = _tracy._keep_stderr
tell = _tracy._tell


def rundir():
    """This user's private run folder (made 0700 if new; a candidate passed
    over is said once, in one line: it may have been planted)."""
    path = _tracy._rundir()
    if path is None:
        raise OSError("no private run folder for the capture's socket")
    return path


class Rendezvous:
    """The rendezvous file naming the daemon that writes `out` (see the
    module's doc), in the user's private run folder, keyed by the trace
    path. It is trusted only as a regular file of this user that no one
    else may write, opened without following a link (lock: OSError marked
    `untrusted` when it is not). The run's own use of it is C
    (pyhook/rundaemon.c)."""

    def __init__(self, out):
        self.path = os.path.join(rundir(), "run-%s.run" % _fnv(out))
        self.fd = None

    def lock(self, create=False):
        """Takes the file's lock; only the owner's first call creates it."""
        self.fd = _tracy._rv_lock(self.path, create)

    def unlock(self):
        if self.fd is not None:
            os.close(self.fd)  # releases the lock
            self.fd = None

    def read(self):
        return _tracy._rv_read(self.fd)

    def write(self, rec):
        _tracy._rv_write(self.fd, {k: str(v) for k, v in rec.items()})

    def count_in(self, daemon_pid):
        _tracy._rv_count_in(self.path, daemon_pid)

    def joined(self):
        return _tracy._rv_joined(self.path)

    def remove(self, daemon_pid):
        _tracy._rv_remove(self.path, daemon_pid)


def spread():
    """For an MPI or Slurm job whose ranks run on several hosts: (job key,
    world size, world rank), else None (tracy/_hosts.py)."""
    return _tracy._spread()


# ---- the toolkit's programs and the capture daemon ---------------------------------

# True for a .tracy file (or an empty file): those may be replaced.
is_trace = _tracy._is_trace


def exit_code(status):
    """os.waitstatus_to_exitcode (Python 3.9+) for a status of waitpid."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def find_tool(prog, env_var=None):
    """A toolkit program: $env_var, a bin/ next to the package (build tree,
    virtual environment, install prefix: up to <prefix>/lib/pythonX.Y/
    site-packages/tracy), PATH."""
    return _tracy._find_tool(prog, env_var)


def _environ():
    """The environment as posix_spawn reads it fastest: os.environ's bytes,
    kept in step with it (its str mapping makes posix_spawn call Python
    code twice per variable: some 20K instructions each)."""
    data = getattr(os.environ, "_data", None)
    return data if isinstance(data, dict) else os.environ


def _spawn(*args, **kw):
    """os.posix_spawn as the interpreter has it: tracy's own programs need
    nothing of what the program's children are given (pyhook/childenv.c),
    whose wrapper costs some 0.25M instructions a call."""
    return (_tracy._rt_real("posix_spawn") or os.posix_spawn)(*args, **kw)


def run_tool(argv):
    """Runs a toolkit program; returns its exit status (as exit_code), or 0
    when the program's SIGCHLD setting took the child first (still in
    force when a fatal signal ends the run: the finish then does not go
    through signals_done)."""
    pid = _spawn(argv[0], argv, _environ())
    try:
        return exit_code(os.waitpid(pid, 0)[1])
    except ChildProcessError:
        return 0


def file_summary(out):
    """(events, processes, lost) as the finished file holds them (its
    trailer, tracy-info's figures), or None."""
    try:
        return _tracy._trace_summary(out)
    except ValueError:
        return None


def daemon_socket(port):
    """This user's local daemon's socket for a port (daemon-PORT.sock)."""
    return os.path.join(rundir(), "daemon-%d.sock" % port)


def _signal_daemon(pid):
    try:
        os.kill(pid, 2)  # SIGINT: the daemon ends its clients and the file
    except OSError:
        pass


_hurried = []  # the daemons asked to finish at once
_unsaid = [True]  # popped by the first interrupt: one C call, so a signal's
# handler run between two bytecodes of another cannot say it twice


def hurry_daemon(pid):
    """Asks the daemon to finish the file now (once said, each time done)."""
    try:
        _unsaid.pop()
    except IndexError:
        pass
    else:
        tell("tracy: interrupted; finishing the trace\n")
    _hurried.append(pid)
    _signal_daemon(pid)
