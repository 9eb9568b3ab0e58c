"""The capture of a run (python -m tracy, trace windows): the daemon started
and waited for, the toolkit's programs run, and how the processes of one
run share one capture.

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
import sys

# os.environ.get, cheaper for the many MPI and Slurm names a run looks for,
# most of them missing
from tracy import _env_get as _getenv


def _env_int(names):
    """The first of these environment variables that holds a number, or None
    (os.environ's bytes dict, _environ, fetched once for them all)."""
    env = _environ()
    raw = env is not os.environ
    for n in names:
        v = env.get(n.encode() if raw else n)
        if v and v.isdigit():
            return int(v)
    return None


def _job():
    """(job key, expected processes on this host or 0, rank or None)."""
    size = _env_int(("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_SIZE",
                     "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE")) or 0
    rank = _env_int(("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"))
    for n in ("PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"):
        v = _getenv(n)
        if v:
            return "%s=%s" % (n, v), size, rank
    slurm = _getenv("SLURM_JOB_ID")
    if slurm and size:
        return "slurm=%s.%s" % (slurm, _getenv("SLURM_STEP_ID") or ""), size, rank
    # Processes of one launcher (mpirun's daemon, a shell loop) share a parent.
    return "ppid=%d" % os.getppid(), size, rank


def _fnv(s):
    """The 64-bit FNV-1a hash of s's UTF-8 bytes, 16 hex digits (the
    extension's: a loop over the bytes here costs some 1.5K instructions
    each)."""
    from tracy import _tracy
    return _tracy._fnv(s)


_stderr_id = None  # (st_dev, st_ino) of descriptor 2 when the run began


def keep_stderr():
    """Notes what descriptor 2 is as the run begins: the run's lines go
    there only (tell)."""
    global _stderr_id
    try:
        st = os.fstat(2)
    except OSError:
        return
    _stderr_id = (st.st_dev, st.st_ino)


def _stderr_moved():
    if _stderr_id is None:
        return False
    try:
        st = os.fstat(2)
    except OSError:
        return True
    return (st.st_dev, st.st_ino) != _stderr_id


def tell(text):
    """Writes one of the profiler's own lines to the interpreter's standard
    error (sys.__stderr__: not a stream the program put in sys.stderr), when
    it can still be written: a program that closed or replaced its standard
    error ends as it would unprofiled, without tracy's lines. So does one
    that pointed descriptor 2 elsewhere (its log file, /dev/null) after the
    run began (keep_stderr): the lines are not written into its file."""
    f = sys.__stderr__
    if f is None or _stderr_moved():
        return
    try:
        f.write(text)
        f.flush()
    except Exception:
        pass


def _untrusted(msg):
    """The OSError for a rendezvous file that another user could have made
    or changed (marked `untrusted`; not a class of its own: each costs
    every run's start some 0.1M instructions on 3.12+)."""
    e = OSError(msg)
    e.untrusted = True
    return e


def rundir():
    """This user's private run folder (made 0700 if new; a candidate passed
    over is said once, in one line: it may have been planted)."""
    from tracy import _tracy
    path = _tracy._rundir()
    if path is None:
        raise OSError("no private run folder for the capture's socket")
    return path


class Rendezvous:
    """A small file, locked with lockf, naming the daemon that writes `out`:
    the first process of a run starts the daemon and writes where it listens
    there, the others join it. It lives in the user's private run folder,
    keyed by the trace path, and is removed by the owner when the trace is
    finished. It is trusted only as a regular file of this user that no
    one else may write, opened without following a link; one that is not
    (shared False) leaves this run a daemon of its own: no one to count."""

    def __init__(self, out):
        self.path = os.path.join(rundir(), "run-%s.run" % _fnv(out))
        self.fd = None
        self.shared = True

    def lock(self, create=False):
        """Takes the file's lock; only the owner's first call creates it
        (OSError when it is gone: the owner has finished; marked untrusted,
        see _untrusted, when it is not this user's private file)."""
        flags = (os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
                 | (os.O_CREAT if create else 0))
        try:
            self.fd = os.open(self.path, flags, 0o600)
        except OSError as e:
            if e.errno == 40:  # ELOOP: a symbolic link
                raise _untrusted("%s is a symbolic link" % self.path)
            if e.errno in (1, 13):  # EPERM, EACCES: not this user's
                try:
                    uid = os.lstat(self.path).st_uid
                except OSError:
                    raise e
                raise _untrusted("%s is owned by uid %d" % (self.path, uid))
            raise
        st = os.fstat(self.fd)
        why = None
        if (st.st_mode & 0o170000) != 0o100000:
            why = "is not a regular file"
        elif st.st_uid != os.geteuid():
            why = "is owned by uid %d" % st.st_uid
        elif st.st_mode & 0o022:
            why = "can be written by other users (mode %03o)" % (st.st_mode & 0o777)
        if why:
            self.unlock()
            raise _untrusted("%s %s" % (self.path, why))
        os.lockf(self.fd, os.F_LOCK, 0)  # (os has it: no module to import)

    def unlock(self):
        if self.fd is not None:
            os.close(self.fd)  # releases the lock
            self.fd = None

    def read(self):
        os.lseek(self.fd, 0, 0)
        data = b""
        while True:
            chunk = os.read(self.fd, 4096)
            if not chunk:
                break
            data += chunk
        rec = {}
        for line in data.decode("utf-8", "replace").splitlines():
            k, _, v = line.partition("=")
            rec[k] = v
        return rec

    def write(self, rec):
        data = "".join("%s=%s\n" % kv for kv in rec.items()).encode()
        os.ftruncate(self.fd, 0)
        os.lseek(self.fd, 0, 0)
        os.write(self.fd, data)

    def count_in(self, daemon_pid):
        """A joining process is connected: the owner may stop waiting for
        it (counted only once connected, so that the daemon cannot end
        between the count and the connection)."""
        if not self.shared:
            return
        try:
            self.lock()
        except OSError:
            return
        try:
            rec = self.read()
            if rec.get("pid") == str(daemon_pid):
                rec["joined"] = str(int(rec.get("joined", "1") or 1) + 1)
                self.write(rec)
        finally:
            self.unlock()

    def joined(self):
        if not self.shared:
            return 1
        try:
            self.lock()
        except OSError:
            return 0
        try:
            return int(self.read().get("joined", "0") or 0)
        finally:
            self.unlock()

    def remove(self, daemon_pid):
        if not self.shared:
            return
        try:
            self.lock()
        except OSError:
            return
        try:
            if self.read().get("pid") == str(daemon_pid):
                os.unlink(self.path)
        except OSError:
            pass
        finally:
            self.unlock()


def _alive(pid, out):
    """Whether `pid` is still a capture-release of this user writing `out`
    (a file left by a process that was killed may name a pid used again
    since). The user is what decides: anyone can name a process
    capture-release and give it any arguments."""
    try:
        if os.stat("/proc/%d" % pid).st_uid != os.geteuid():
            return False
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return False
    return (bool(argv) and os.path.basename(argv[0]).startswith(b"capture-release")
            and os.fsencode(out) in argv)


_STALE_AGE_S = 60


def _sweep_notes(d, names, now):
    """Removes the notes files (_runtime.take_unprofiled) of runs killed
    before they read them: this user's, older than a minute, whose process
    is gone."""
    for name in names:
        path = os.path.join(d, name)
        try:
            pid = int(name[len("unprofiled-"):-len(".txt")])
            st = os.lstat(path)
            if (st.st_mode & 0o170000) != 0o100000 or st.st_uid != os.geteuid() \
                    or now - st.st_mtime < _STALE_AGE_S or os.path.exists("/proc/%d" % pid):
                continue
            os.unlink(path)
        except (OSError, ValueError):
            pass


def sweep_stale(keep):
    """Removes the rendezvous files of the run folder that runs killed before
    they finished left behind: files of this user older than a minute,
    unlocked, whose daemon is gone (the lock is taken without waiting, so a
    live run is never held up); and their notes files."""
    import time
    d = os.path.dirname(keep)
    try:
        every = os.listdir(d)
    except OSError:
        return
    now = time.time()
    _sweep_notes(d, [n for n in every if n.startswith("unprofiled-") and n.endswith(".txt")],
                 now)
    names = [n for n in every if n.startswith("run-") and n.endswith(".run")]
    for name in names:
        path = os.path.join(d, name)
        if path == keep:
            continue
        try:
            st = os.lstat(path)
            if (st.st_mode & 0o170000) != 0o100000 or st.st_uid != os.geteuid() \
                    or now - st.st_mtime < _STALE_AGE_S:
                continue
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            os.lockf(fd, os.F_TLOCK, 0)
            rv = Rendezvous.__new__(Rendezvous)
            rv.path, rv.fd = path, fd
            rec = rv.read()
            if not _alive(int(rec.get("pid", "0") or 0), rec.get("out", "")):
                os.unlink(path)
        except (OSError, ValueError):
            pass
        finally:
            os.close(fd)


def own_or_join(out, start_daemon):
    """Returns ("own", pid, addr, rendezvous, size) when this process started
    the daemon (start_daemon() -> (pid, addr), addr as TRACY_ADDR takes it),
    or ("join", pid, addr, rendezvous, 0) when another process of the same
    run did (the joiner calls rendezvous.count_in(pid) once connected).
    Raises OSError (the daemon cannot start; another run writes `out`). A
    rendezvous file that fails its checks is reported in one line, and the
    run goes on with a daemon of its own."""
    job, size, _ = _job()
    rv = Rendezvous(out)
    try:
        rv.lock(create=True)
    except OSError as e:
        if not getattr(e, "untrusted", False):
            raise
        tell("tracy: not using the rendezvous file %s; this process "
                         "starts a daemon of its own\n" % e)
        pid, addr = start_daemon()
        rv.shared = False
        return "own", pid, addr, rv, 0
    try:
        rec = rv.read()
        pid = int(rec.get("pid", "0") or 0)
        if pid and _alive(pid, out) and rec.get("addr", "").startswith("unix:"):
            if rec.get("job") != job:
                raise OSError("%s is being written by another run (capture-release pid %d);"
                              " choose another -o" % (out, pid))
            return "join", pid, rec["addr"], rv, 0
        pid, addr = start_daemon()
        rv.write({"pid": pid, "addr": addr, "job": job, "size": size, "joined": 1,
                  "out": out})
        sweep_stale(rv.path)
        return "own", pid, addr, rv, size
    finally:
        rv.unlock()


def wait_for_ranks(rv, size, say, limit=60.0):
    """The daemon ends when its last client leaves: the process that owns it
    stays connected until every expected process of the run has joined (at
    most `limit` seconds without a new arrival)."""
    if size <= 1:
        return
    import time
    last, seen = time.monotonic(), rv.joined()
    while seen < size:
        time.sleep(0.05)
        n = rv.joined()
        if n != seen:
            seen, last = n, time.monotonic()
        elif time.monotonic() - last > limit:
            tell("tracy: %d of %d processes of this run never joined the "
                             "capture\n" % (size - seen, size))
            return
    say("all %d processes joined" % size)


# ---- a job on several hosts -------------------------------------------------------

def spread():
    """For an MPI or Slurm job whose ranks run on several hosts: (job key,
    world size, world rank), else None. Each host then has a daemon of its
    own (its ranks reach it on the loopback), writing a part of the trace
    that rank 0 merges (_hosts.gather_parts). A job key that only one host knows (a
    parent's pid) cannot name the parts: None, as for one host."""
    job, local, rank = _job()
    world = _env_int(("OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS")) or 0
    nodes = _env_int(("SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES", "SLURM_NNODES")) or 0
    several = (world and local and world > local) or nodes > 1
    if not several or not world or rank is None or job.startswith("ppid="):
        return None
    return job, world, rank


# ---- children of this process ---------------------------------------------------

def _has_children():
    """Whether this process has a child in its process group (the daemon has
    a group of its own), without reaping it: a cheap test before /proc."""
    try:
        os.waitid(os.P_PGID, os.getpgrp(), os.WEXITED | os.WNOHANG | os.WNOWAIT)
        return True
    except ChildProcessError:
        return False
    except (AttributeError, OSError):
        return True


def wait_for_children(say, limit=10.0):
    """A child started by the program connects to the daemon as it starts,
    maybe just after the program has ended: this process stays connected
    while the profiled descendants alive now are, at most `limit` seconds
    (tracy/_children.py, loaded only when this process has children)."""
    if not _has_children():
        return
    from tracy import _children
    _children.wait_for_children(say, limit)


def drain_daemon(pid):
    """This process has stopped its client: the daemon it owns accepts no
    new process (but children of those still connected) and finishes the
    file when the connected ones have left (SIGUSR1, see capture-release)."""
    import _signal  # (not signal: its import costs more than the rest)
    try:
        os.kill(pid, _signal.SIGUSR1)
    except OSError:
        pass


# ---- the toolkit's programs and the capture daemon ---------------------------------

_MAGIC = b"TRCYFILE"


def is_trace(path):
    """True for a .tracy file (or an empty file): those may be replaced."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return False
    return head == b"" or head[8:16] == _MAGIC or head[:8] == _MAGIC


def exit_code(status):
    """os.waitstatus_to_exitcode (Python 3.9+) for a status of waitpid."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _which(prog):
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d or ".", prog)
        if os.access(p, os.X_OK) and not os.path.isdir(p):
            return p
    return None


def find_tool(prog, env_var=None):
    """A toolkit program: $env_var, a bin/ next to the package (build tree,
    virtual environment, install prefix: up to <prefix>/lib/pythonX.Y/
    site-packages/tracy), PATH."""
    given = _getenv(env_var) if env_var else None
    if given:
        return given
    d = os.path.dirname(os.path.abspath(__file__))
    for _ in range(4):
        d = os.path.dirname(d)
        p = os.path.join(d, "bin", prog)
        if os.access(p, os.X_OK) and not os.path.isdir(p):
            return p
    return _which(prog)


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
    rt = sys.modules.get("tracy._runtime")
    real = rt.REAL.get("posix_spawn") if rt is not None else None
    return (real or os.posix_spawn)(*args, **kw)


def run_tool(argv):
    """Runs a toolkit program; returns its exit status (as exit_code), or 0
    when the program's SIGCHLD setting took the child first (still in
    force when a fatal signal ends the run: finish(urgent=True) does not
    go through signals_done)."""
    pid = _spawn(argv[0], argv, _environ())
    try:
        return exit_code(os.waitpid(pid, 0)[1])
    except ChildProcessError:
        return 0


def file_summary(out):
    """(events, processes, lost) as the finished file holds them (its
    trailer, tracy-info's figures), or None."""
    from tracy import _tracy
    try:
        return _tracy._trace_summary(out)
    except ValueError:
        return None


def daemon_socket(port):
    """This user's local daemon's socket for a port (daemon-PORT.sock)."""
    return os.path.join(rundir(), "daemon-%d.sock" % port)


def start_daemon(out, say):
    """Spawns capture-release on a socket of its own in the user's run
    folder. Returns (pid, "unix:PATH"); OSError when it cannot."""
    exe = find_tool("capture-release", "TRACY_CAPTURE")
    if exe is None:
        raise OSError("capture-release not found next to the tracy package or on PATH "
                      "(install the toolkit, or set TRACY_CAPTURE)")
    rfd, wfd = os.pipe()
    argv = [exe, "-o", out, "-f", "-p", "0", "-q"]
    try:
        pid = _spawn(exe, argv, _environ(),
                     file_actions=[(os.POSIX_SPAWN_DUP2, wfd, 1), (os.POSIX_SPAWN_CLOSE, rfd)],
                     setpgroup=0)
    finally:
        os.close(wfd)
    buf = b""
    try:
        while b"\n" not in buf:
            chunk = os.read(rfd, 256)
            if not chunk:
                break
            buf += chunk
    finally:
        os.close(rfd)
    line = buf.split(b"\n", 1)[0].strip()
    if not line.isdigit():
        _, status = os.waitpid(pid, 0)
        raise OSError("capture-release did not start (exit status %d)"
                      % exit_code(status))
    # The children get the socket's path: one that changes TMPDIR still
    # finds it.
    sock = daemon_socket(int(line))
    say("started %s (pid %d) at %s" % (exe, pid, sock))
    return pid, "unix:" + sock


def _signal_daemon(pid):
    try:
        os.kill(pid, 2)  # SIGINT: the daemon ends its clients and the file
    except OSError:
        pass


_hurried = []  # the daemons asked to finish at once


def hurry_daemon(pid):
    """Asks the daemon to finish the file now (once said, each time done)."""
    if not _hurried:
        tell("tracy: interrupted; finishing the trace\n")
    _hurried.append(pid)
    _signal_daemon(pid)


def wait_daemon(pid, interrupted=False, addr=None, limit=2.0):
    """Waits for the daemon to finish the file: once every process still
    connected has ended. An interrupt (Ctrl-C, SIGTERM) while waiting asks
    it to finish now; the wait then goes on. With addr (a run of one
    process, not MPI ranks), the processes left recording are looked at
    twice a second: when they all left the program (a session of their
    own: a service; nothing of the program is left in its session), which
    unprofiled would not wait for them, they are waited for `limit`
    seconds more, then recorded as stopped."""
    import time
    if interrupted:
        hurry_daemon(pid)
    nap, alone_since, sid = 0.002, None, os.getsid(0)
    scan = time.monotonic() + 0.5  # (the usual wait: a few milliseconds)
    while True:
        try:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                return exit_code(st)
            time.sleep(nap)
            nap = min(nap * 2, 0.1)
            now = time.monotonic()
            if addr is None or now < scan or pid in _hurried:
                continue
            scan = now + 0.5
            from tracy import _children  # (after half a second)
            if not _children.detached_only(pid, addr, sid):
                alone_since = None
            elif alone_since is None:
                alone_since = now
            elif now - alone_since > limit:
                tell("tracy: the processes still recording left the program (a "
                     "session of their own, a service); the trace ends here\n")
                _hurried.append(pid)
                _signal_daemon(pid)
        except KeyboardInterrupt:
            hurry_daemon(pid)
        except ChildProcessError:
            return 0
