"""The tracy package's runtime: what a profiled process needs around the
extension (tracy._tracy) for its whole life. The options and their encoding
for child processes, the recording state of this process (state), enabling
and disabling, thread names, the fatal signals (SIGTERM, SIGHUP), the
fork, exec and os._exit wrappers, multiprocessing's helpers, the flight
recorder's hooks and a child's start-up. The public API
(tracy/__init__.py), python -m tracy (__main__.py), trace windows
(_trace.py) and the child start-up (_child/sitecustomize.py) use it by
name. What only the process that runs the capture needs (the daemon's
start and wait, the rendezvous, the toolkit's programs) is in _capture.py:
every child process imports this module, none imports that one.

Imported by every `import tracy`: it imports nothing the interpreter does
not already hold; what a function needs it imports when called.
"""
import os
import sys

from . import _tracy

from . import _PKG_DIR as PKG_DIR, _env_get
_real_exit = os._exit
_real_fork = getattr(os, "fork", None)


# This process's recording, a plain record (types.SimpleNamespace: a class
# costs every process's start some 0.1M instructions on 3.12+): configured
# yet (setup), the options applied (opts), nested enable() calls (count),
# whether the hook is on for them (hooked: not while no daemon records),
# whether the first connection failed (start_failed: None before it),
# whether threading's per-thread hook is set (threads), python -m tracy's
# finish for a fatal signal (on_signal: (pid, function)), _signal's
# functions (sigfuncs) and whether forks hold the fatal signals
# (fork_guard).
state = type(sys.implementation)(setup=False, count=0, hooked=False, start_failed=None,
                                 threads=False, opts=None,
                                 on_signal=None, sigfuncs=None, fork_guard=False,
                                 hurry=None)


# ---- options ---------------------------------------------------------------

FILTER_KEYS = ("I", "E", "R", "MI", "ME", "MR")


def defaults():
    return {"partial": False, "lines": False, "trace_c": False, "label": "",
            "max_depth": 0, "min_duration": 0, "I": [], "E": [], "R": [],
            "MI": [], "ME": [], "MR": [],
            "mechanism": _env_get("TRACY_MECHANISM") or "auto"}


def encode_opts(o):
    """Options as one environment string (for child processes)."""
    parts = []
    for k, v in o.items():
        if k in FILTER_KEYS:
            parts.extend("%s=%s" % (k, x) for x in v)
        else:
            parts.append("%s=%s" % (k, int(v) if isinstance(v, bool) else v))
    return "\x1f".join(parts)


def decode_opts(s):
    o = defaults()
    for part in s.split("\x1f") if s else ():
        k, _, v = part.partition("=")
        if k in FILTER_KEYS:
            o[k].append(v)
        elif k in ("partial", "lines", "trace_c"):
            o[k] = v == "1"
        elif k in ("max_depth", "min_duration"):
            o[k] = int(v)
        elif k in ("label", "mechanism"):
            o[k] = v
    return o


def make_filter(o):
    """The decision function for -I/-E/-R/-MI/-ME/-MR, or None.

    A function is recorded when its qualified name matches a -R pattern (if
    any are given) and its module or file matches a -MR pattern (if any),
    and it is not excluded by -E (name) or -ME (module or file) -- unless it
    matches -I (name) or -MI (module or file), which override exclusion.
    """
    if not any(o[k] for k in FILTER_KEYS):
        return None
    import re
    c = {k: [re.compile(p) for p in o[k]] for k in FILTER_KEYS}

    def hit(pats, *texts):
        return any(p.search(t) for p in pats for t in texts if t)

    def decide(qualname, module, file):
        if c["R"] and not hit(c["R"], qualname):
            return False
        if c["MR"] and not hit(c["MR"], module, file):
            return False
        if hit(c["E"], qualname) or hit(c["ME"], module, file):
            return hit(c["I"], qualname) or hit(c["MI"], module, file)
        return True
    return decide


def configure(opts):
    """Applies options (a dict as from defaults()) to the extension."""
    if _tracy.mode():
        _tracy.disable()
    state.opts = opts
    _tracy.configure(trace_c=opts["trace_c"], lines=opts["lines"],
                     label=opts["label"], max_depth=opts["max_depth"],
                     min_duration=opts["min_duration"],
                     filter=make_filter(opts), skip_prefix=PKG_DIR,
                     on_thread=_tracy._on_thread, mechanism=opts["mechanism"])
    state.setup = True


def ensure_setup():
    if not state.setup:
        env = _tracy._getenv("TRACY_PY_OPTS")
        configure(decode_opts(env) if env is not None else defaults())
        install_process_hooks()


def lines_on():
    """True when configured to record lines (-l)."""
    return bool(state.opts and state.opts.get("lines"))


# ---- enabling ------------------------------------------------------------------

def enable():
    """Everything done in Python (importing threading, naming threads) comes
    before the hook is on, and the thread hook is set by assignment (no
    call): nothing of the profiler's own shows as the program's."""
    ensure_setup()
    state.count += 1
    if not state.hooked and _recording():
        if "threading" not in sys.modules and _tracy._next_mode() not in (
                _tracy.MODE_EVAL, _tracy.MODE_MONITOR):
            # a thread started later gets its profile or trace function from
            # threading; the frame-evaluation hook and sys.monitoring need
            # nothing per thread,
            # and a thread's name is taken when it first records (_on_thread,
            # from threading if it has been imported since)
            import threading  # noqa: F401
        th = _threading()
        _name_threads()
        mode = _tracy.enable()
        state.hooked = mode != 0
        if th is None:
            pass
        elif mode == _tracy.MODE_TRACE:
            th._trace_hook = _tracy._thread_hook
            state.threads = True
        elif mode == _tracy.MODE_PROFILE:
            th._profile_hook = _tracy._thread_hook
            state.threads = True


def _recording():
    """Whether a daemon records: the first enable connects, as the first
    recorded event would. With no daemon (said once: "running unprofiled"),
    or outside a capture when listening for one, no hook slows the program
    or changes what it sees, and enable() does not try again each time; a
    region open when a trace window starts is hooked by the window's
    enable()."""
    if state.start_failed is None:
        state.start_failed = not _tracy.start()
    return not state.start_failed or _tracy.active()


def disable():
    if state.count == 0:
        return
    state.count -= 1
    if state.count == 0 and state.hooked:
        state.hooked = False
        try:
            _tracy.disable()  # HookError: the hook failed while enabled
        finally:
            if state.threads:
                import threading
                threading._trace_hook = None
                threading._profile_hook = None
                state.threads = False


def end_regions():
    """Ends every enabled region at once (a trace window's end)."""
    state.count = 1
    disable()


# ---- threads, forks and exits ------------------------------------------------

# What runs while the program runs is C (pyhook/unseen.c), or Python run
# through _tracy._hidden: no frame of the profiler for the program's
# tracers, profilers and coverage tools. _OURS: the wrappers installed.
_OURS = set()
_threading = _tracy._threading


def _name_threads():
    th = _threading()
    if th is None:
        _tracy.thread_name("MainThread")
        return
    for t in th.enumerate():
        tid = getattr(t, "native_id", None)
        if t is th.current_thread() or tid is None:
            if t is th.current_thread():
                _tracy.thread_name(t.name)
        else:
            _tracy.thread_name(t.name, tid)


def _exit(code):
    """os._exit that first ships what was recorded (forked children)."""
    try:
        _ending()()
    finally:
        _real_exit(code)


# The signals whose default action ends the process and that Python leaves
# at the default: SIGTERM, SIGHUP, Ctrl-\'s SIGQUIT, alarms and timers, the
# user's. (SIGINT is Python's KeyboardInterrupt; SIGPIPE and SIGXFSZ are
# ignored by Python; the crash signals are the client's, client_crash.c;
# SIGTRAP and SIGSYS come from the instruction that raised them.)
_FATAL = ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM",
          "SIGPROF", "SIGXCPU", "SIGIO", "SIGPWR", "SIGSTKFLT")


def fatal_names():
    """_FATAL, but SIGUSR1 under the flight recorder (--flight), which
    dumps the recording on it (libtrace/client/client_flight.c)."""
    if (_tracy._getenv("TRACY_FLIGHT") or "0") != "0":
        return tuple(n for n in _FATAL if n != "SIGUSR1")
    return _FATAL


def _on_fatal(signum, frame):
    """A signal of _FATAL where the program left the default action (end
    the process): ship what was recorded, then end by the same signal, so
    that the program's parent sees what it would have seen unprofiled."""
    if _tracy._fatal_begin(signum) <= 0:
        # under way (here, or in the extension's watchdog: fatal.c), or no
        # signal at all: _thread.interrupt_main(signum) does nothing in plain
        # Python when the action is the default one
        return
    sig()[0](signum, sig()[2])
    try:
        ondemand = sys.modules.get("tracy._ondemand")
        if ondemand is not None:
            ondemand.end_capture()  # a capture under way is sent first
        _ending()()
    except BaseException:
        pass
    os.kill(os.getpid(), signum)


_ON_FATAL = _tracy._hidden(_on_fatal)


def _ending():
    """What ends recording in this process: python -m tracy's own finish in
    its process (not in a forked child of it), else stopping the client."""
    pid, fn = state.on_signal or (0, None)
    return fn if fn is not None and pid == os.getpid() else _tracy.stop


def _on_late_signal(signum, frame):
    """An interrupt while python -m tracy finishes: it stops the wait for
    children (KeyboardInterrupt), later it asks the daemon to finish at
    once (signals_hurry)."""
    if state.hurry is None:
        raise KeyboardInterrupt
    state.hurry()


def sig():
    """(_signal.signal, _signal.getsignal, _signal.SIG_DFL) as the
    interpreter defines them, for the profiler's own use (SIG_DFL: the int
    _signal.signal takes, not signal's enum): the program sees them through
    _hide_ours."""
    f = state.sigfuncs
    if f is None:
        import _signal
        f = state.sigfuncs = (_signal.signal, _signal.getsignal, _signal.SIG_DFL)
    return f


def _install_ours(signum):
    """Installs _on_fatal (and the extension's relay) for signum; returns
    the handler it replaces."""
    return _tracy._fatal_install(sig()[0], signum, _ON_FATAL)


def install_signals(on_signal):
    """Handlers only where the action is the default one: a signal the
    program ignores stays ignored, and a handler the program installs later
    replaces this one (its handler then decides; exit paths flush)."""
    import _signal as signal
    state.on_signal = (os.getpid(), on_signal)
    set_, get, dfl = sig()
    try:
        _tracy._fatal_take(set_, get, dfl, [getattr(signal, n) for n in fatal_names()
                                            if hasattr(signal, n)], _ON_FATAL)
    except (ValueError, OSError):  # not the main thread
        pass
    _hide_ours(signal)
    _guard_forks()


def _hide_ours(signal):
    """_on_fatal is the default action as the program knows it (the process
    ends by the signal; it only ships the recording first): getsignal says
    SIG_DFL for it, signal() returns SIG_DFL for it, and setting SIG_DFL
    back on SIGTERM/SIGHUP installs it again. A program (or a test suite
    such as CPython's test_signal) sees what it would see unprofiled. The
    functions replaced are _signal's, which signal.signal and
    signal.getsignal call: C for C, named the same (unseen.c)."""
    import _signal
    if _signal.getsignal in _OURS:
        return
    real_set, real_get, _ = sig()
    fatal = {int(getattr(signal, n)) for n in fatal_names() if hasattr(signal, n)}
    get, set_ = _tracy._signal_wrappers(real_set, real_get, _ON_FATAL, _signal.SIG_DFL,
                                        fatal)
    _OURS.update((get, set_))
    _signal.getsignal, _signal.signal = get, set_


def _fatal_ours():
    """The fatal signals whose handler is _on_fatal in this process."""
    import _signal as signal
    sigs = []
    for name in fatal_names():
        signum = getattr(signal, name, None)
        try:
            if signum is not None and sig()[1](signum) is _ON_FATAL:
                sigs.append(signum)
        except (ValueError, OSError):
            pass
    return sigs


def _guard_forks():
    """A forked child forgets a signal that arrives before the interpreter
    has finished its own after-fork work (CPython clears pending Python
    handlers then). With the default action, SIGTERM would have ended the
    child anyway; with _on_fatal it was lost, and a Pool worker terminated
    that early waited for a task forever. So _on_fatal's signals are held
    blocked across os.fork: the kernel keeps one that arrives meanwhile
    pending, and it is handled once the child unblocks it. (A signal that
    arrives just before a blocking call is delivered again by the
    extension: see pyhook/fatal.c.)"""
    if state.fork_guard or not hasattr(os, "register_at_fork"):
        return
    import _signal as signal
    if not hasattr(signal, "pthread_sigmask"):
        return
    state.fork_guard = True
    held = []

    def before():
        sigs = _fatal_ours()
        if sigs:
            held.append(signal.pthread_sigmask(signal.SIG_BLOCK, sigs))

    def after():
        if held:
            signal.pthread_sigmask(signal.SIG_SETMASK, held.pop())

    def after_in_child():
        _tracy._fatal_after_fork()
        after()
    os.register_at_fork(before=_tracy._hidden(before), after_in_parent=_tracy._hidden(after),
                        after_in_child=_tracy._hidden(after_in_child))


def signals_done():
    """The program has ended (python -m tracy is finishing the trace): its
    handlers no longer run. SIGINT and the signals of _FATAL, unless
    ignored or left at the default action, now interrupt that finish
    (_on_late_signal); SIGCHLD takes its default action again, so that
    tracy's own children (the daemon, the report's tools) are not reaped or
    ignored away by what the program set."""
    import _signal as signal
    set_, get, dfl = sig()
    for signum in [signal.SIGINT] + [getattr(signal, n, None) for n in fatal_names()]:
        try:
            if signum is not None and get(signum) not in (signal.SIG_IGN, dfl, None):
                set_(signum, _on_late_signal)
        except (ValueError, OSError):
            pass
    if hasattr(signal, "SIGCHLD"):
        try:
            set_(signal.SIGCHLD, dfl)
        except (ValueError, OSError):
            pass


def signals_hurry(fn):
    """The last part of the finish: an interrupt calls fn (ask the daemon to
    finish at once) instead of raising, so that nothing of the finish is
    cut and the program's exit status stands."""
    state.hurry = fn


def signals_quiet():
    """Everything is written: the process only exits, with the program's
    status. A Ctrl-C now (pressed again) is ignored: the interpreter's exit
    would restore the default action and end the process by SIGINT."""
    import _signal as signal
    state.hurry = lambda: None
    try:
        if sig()[1](signal.SIGINT) is _on_late_signal:
            sig()[0](signal.SIGINT, signal.SIG_IGN)
    except (ValueError, OSError):
        pass


def die_by(signum):
    """Ends this process by signum with its default action."""
    sig()[0](signum, sig()[2])
    os.kill(os.getpid(), signum)


def stop_mp_helpers():
    """multiprocessing's resource tracker and fork server live until their
    parent exits; a parent that waits for the capture to end (which waits
    for them) stops them first, as its exit would."""
    for mod, attr in (("multiprocessing.forkserver", "_forkserver"),
                      ("multiprocessing.resource_tracker", "_resource_tracker")):
        m = sys.modules.get(mod)
        helper = getattr(m, attr, None) if m is not None else None
        stop = getattr(helper, "_stop", None)
        if stop is not None:
            try:
                stop()
            except Exception:
                pass


def _supports_as(real, ours):
    """ours is in os.supports_fd (os.execve: fexecve) and the other
    os.supports_* sets where real is, as a program checks before it calls
    (`os.execve in os.supports_fd`)."""
    for name in ("supports_fd", "supports_dir_fd", "supports_follow_symlinks",
                 "supports_effective_ids"):
        s = getattr(os, name, None)
        if isinstance(s, set) and real in s:
            s.add(ours)


REAL = {}  # name: os's function that _replace replaced (tracy's own use)


def _replace(name, ours):
    """os.<name> and posix.<name> (the same function: test_posix calls
    posix.execve) become ours."""
    import posix  # (built in, loaded at every start)
    real = getattr(os, name)
    REAL.setdefault(name, real)
    for m in (os, posix):
        if getattr(m, name, None) is real:
            setattr(m, name, ours)
    _OURS.add(ours)
    _supports_as(real, ours)


def install_process_hooks(on_signal=None, at_exit=True):
    """at_exit: stop at interpreter exit (python -m tracy stops by itself,
    after the program's exit functions and the processes it started)."""
    if os._exit not in _OURS:
        _replace("_exit", _tracy._hidden(_exit, "_exit"))
    for name in ("execv", "execve", "posix_spawn", "posix_spawnp"):
        real = getattr(os, name, None)
        if real is not None and real not in _OURS:
            wrap = _tracy._exec_wrapper if name.startswith("exec") else _tracy._spawn_wrapper
            _replace(name, wrap(real))
    if _real_fork is not None and sys.version_info >= (3, 12) and os.fork is _real_fork:
        _replace("fork", _tracy._fork_wrapper(_real_fork))
    if at_exit:
        import atexit
        atexit.register(_tracy.stop)
    install_signals(on_signal)
    if (_tracy._getenv("TRACY_FLIGHT") or "0") != "0":
        _flight_hooks()


def _flight_hooks():
    """Flight recorder: an exception that escapes (the program or a thread)
    dumps the recording, then goes on to the previous hook."""
    import threading
    prev_sys, prev_thread = sys.excepthook, threading.excepthook

    def on_exc(*a):
        _dump_quietly()
        prev_sys(*a)

    def on_thread_exc(args):
        _dump_quietly()
        prev_thread(args)
    sys.excepthook, threading.excepthook = on_exc, on_thread_exc


def _dump_quietly():
    try:
        _tracy.dump()
    except RuntimeError:
        pass


# ---- child processes -----------------------------------------------------------

def _cmdline_arg(flag):
    """The argument after `flag` (-c, -m) on this interpreter's command line."""
    argv = getattr(sys, "orig_argv", None)
    if argv is None:
        try:
            with open("/proc/self/cmdline", "rb") as f:
                argv = [a.decode("utf-8", "surrogateescape")
                        for a in f.read().split(b"\0")]
        except OSError:
            return None
    for i, a in enumerate(argv[1:], 1):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
    return None


def child_name():
    """The name a child process is shown under: its script (`python3 x.py`
    is x.py), its module (-m), its package or folder (a __main__.py), and
    for multiprocessing's spawned processes (-c ... multiprocessing ...)
    the program that started them."""
    argv = getattr(sys, "argv", None) or [""]
    a0 = argv[0]
    if a0 == "-c":
        code = _cmdline_arg("-c") or ""
        if "multiprocessing" in code:
            return _tracy._getenv("TRACY_PY_PROGRAM") or None
        return None
    if a0 == "-m":
        return _cmdline_arg("-m")
    base = os.path.basename(a0)
    if base == "__main__.py":  # python -m PACKAGE, python FOLDER: its name
        base = os.path.basename(os.path.dirname(os.path.abspath(a0))) or base
    return base or None


def start_child(env_opts):
    """Profiles a child process started by a profiled program."""
    opts = decode_opts(env_opts)
    name = child_name()
    if name:
        argv = getattr(sys, "argv", None) or []
        _tracy.set_info(name, [name] + [str(a) for a in argv[1:]])
    configure(opts)
    _tracy._children(CHILD_DIR)
    install_process_hooks()
    # Connect now, not at the first recorded event: the capture stays open
    # for a process that is connected, even one started as its parent ends.
    _tracy.start()
    if not opts["partial"]:
        enable()


CHILD_DIR = os.path.join(PKG_DIR, "_child")  # children's sitecustomize


def set_env(name, value):
    """Sets name in the process's environment (what its children inherit;
    the client reads it there), not in the program's view of it
    (os.environ): the program sees the environment it was given. A name
    the view lacks is named in TRACY_PY_HIDE, which a child's sitecustomize
    reads to take it off the child's view (pyhook/childenv.c)."""
    os.putenv(name, value)
    if _env_get(name) is not None:
        return
    hidden = (_tracy._getenv("TRACY_PY_HIDE") or "").split(",")
    if name not in hidden:
        os.putenv("TRACY_PY_HIDE", ",".join([h for h in hidden if h] + [name]))


def unset_env(name):
    """Takes name off the process's environment, not off the program's view."""
    os.unsetenv(name)


def setup_children_env(opts, program):
    """Child Python processes are profiled into the same capture (connect()
    has set TRACY_ADDR, or TRACY_PORT for a daemon found running). One that
    cannot be (another interpreter) writes why to this process's notes file
    (take_unprofiled). The _child folder goes first on the PYTHONPATH of
    the process's environment (what children inherit), not on the
    program's view of it, os.environ: the program sees the PYTHONPATH it
    was given. Children given an environment of their own get it there too
    (pyhook/childenv.c)."""
    notes = _notes_path()
    if notes:
        opts = dict(opts, notes=notes)
    set_env("TRACY_PY_OPTS", encode_opts(opts))
    set_env("TRACY_PY_PROGRAM", program)
    old = _env_get("PYTHONPATH")
    os.putenv("PYTHONPATH", CHILD_DIR if old is None else CHILD_DIR + os.pathsep + old)
    _tracy._children(CHILD_DIR)


def end_children_env():
    """Children are no longer profiled: PYTHONPATH is os.environ's again."""
    _tracy._children(None)
    old = _env_get("PYTHONPATH")
    if old is None:
        os.unsetenv("PYTHONPATH")
    else:
        os.putenv("PYTHONPATH", old)


def _notes_path():
    """This process's notes file in the user's private run folder, or None."""
    d = _tracy._rundir()
    return os.path.join(d, "unprofiled-%d.txt" % os.getpid()) if d else None


def take_unprofiled():
    """Lines that say which child processes could not be profiled and why
    (one per reason, the processes counted), from the notes file the
    children wrote (_child/sitecustomize.py), which this removes."""
    path = _notes_path()
    if not path:
        return []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return []
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            return []
        with open(fd, "rb", closefd=False) as f:
            data = f.read()
        os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(fd)
    by_why = {}
    for line in data.decode("utf-8", "replace").splitlines():
        pid, _, why = line.partition("\t")
        by_why.setdefault(why, []).append(pid)
    out = []
    for why, pids in by_why.items():
        n = len(pids)
        out.append("%s not profiled (%s%s): %s" % (
            "a child process" if n == 1 else "%d child processes" % n,
            "pid " if n == 1 else "pids ", " ".join(pids[:10]) + (" ..." if n > 10 else ""),
            why))
    return out


def stored():
    """Events the daemon confirmed storing at the end of the connection, or
    None (not known: an older daemon, or the connection was cut)."""
    f = getattr(_tracy, "stored", None)
    return f() if f is not None else None
