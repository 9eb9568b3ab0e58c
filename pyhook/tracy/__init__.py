"""tracy: record a Python program's timeline into a .tracy capture.

    import tracy
    with tracy.Profiler():          # function zones of this block (all threads)
        run()
    with tracy.zone("load"):        # a named zone of your own
        load()
    tracy.signpost("warmup done")   # a phase marker (a row in the op report)
    tracy.plot("queue", 3)
    tracy.message("hello")
    with tracy.trace("out/"):       # no daemon needed: the block's trace
        run()                       # in out/<program>.<time>.tracy

Events go to this user's capture daemon (capture-release), on a Unix socket
in the user's private run folder or at TRACY_ADDR; `python -m tracy
script.py` starts one for the run. See tracy(1).
"""
import os
import sys

try:
    from . import _tracy
except ImportError:
    from ._compat import extension_missing
    extension_missing()
    raise

__all__ = ["Profiler", "profile", "zone", "signpost", "message", "plot",
           "frame_mark", "thread_name", "flush", "enabled", "dump",
           "start_trace", "stop_trace", "trace", "Options", "start_server",
           "stop_server"]
__version__ = _tracy.VERSION

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_state = {"setup": False, "count": 0, "threads": False, "opts": None}
_real_exit = os._exit
_real_fork = getattr(os, "fork", None)


# ---- options ---------------------------------------------------------------

# How calls are recorded (tracy(1), --mechanism): "hook", a PEP 523
# frame-evaluation function (fast); "exact", none that changes how CPython
# runs the program (sys.monitoring on 3.12+, a profile function before);
# "auto", exact on 3.12+ when another tool is active at start, else hook.
MECHANISMS = ("auto", "hook", "exact")


def _defaults():
    return {"partial": False, "lines": False, "trace_c": False, "label": "",
            "max_depth": 0, "min_duration": 0, "I": [], "E": [], "R": [],
            "MI": [], "ME": [], "MR": [],
            "mechanism": os.environ.get("TRACY_MECHANISM") or "auto"}


_FILTER_KEYS = ("I", "E", "R", "MI", "ME", "MR")


def _encode_opts(o):
    """Options as one environment string (for child processes)."""
    parts = []
    for k, v in o.items():
        if k in _FILTER_KEYS:
            parts.extend("%s=%s" % (k, x) for x in v)
        else:
            parts.append("%s=%s" % (k, int(v) if isinstance(v, bool) else v))
    return "\x1f".join(parts)


def _decode_opts(s):
    o = _defaults()
    for part in s.split("\x1f") if s else ():
        k, _, v = part.partition("=")
        if k in _FILTER_KEYS:
            o[k].append(v)
        elif k in ("partial", "lines", "trace_c"):
            o[k] = v == "1"
        elif k in ("max_depth", "min_duration"):
            o[k] = int(v)
        elif k in ("label", "mechanism"):
            o[k] = v
    return o


def _make_filter(o):
    """The decision function for -I/-E/-R/-MI/-ME/-MR, or None.

    A function is recorded when its qualified name matches a -R pattern (if
    any are given) and its module or file matches a -MR pattern (if any),
    and it is not excluded by -E (name) or -ME (module or file) -- unless it
    matches -I (name) or -MI (module or file), which override exclusion.
    """
    if not any(o[k] for k in _FILTER_KEYS):
        return None
    import re
    c = {k: [re.compile(p) for p in o[k]] for k in _FILTER_KEYS}

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


def _configure(opts):
    """Applies options (a dict as from _defaults) to the extension."""
    if _tracy.mode():
        _tracy.disable()
    _state["opts"] = opts
    _tracy.configure(trace_c=opts["trace_c"], lines=opts["lines"],
                     label=opts["label"], max_depth=opts["max_depth"],
                     min_duration=opts["min_duration"],
                     filter=_make_filter(opts), skip_prefix=_PKG_DIR,
                     on_thread=_tracy._on_thread, mechanism=opts["mechanism"])
    _state["setup"] = True


def _ensure_setup():
    if not _state["setup"]:
        env = os.environ.get("TRACY_PY_OPTS")
        _configure(_decode_opts(env) if env is not None else _defaults())
        _install_process_hooks()


# ---- threads, forks and exits ------------------------------------------------

# What runs while the program runs is C (pyhook/unseen.c), or Python run
# through _tracy._hidden: no frame of the profiler for the program's
# tracers, profilers and coverage tools. _OURS: the wrappers installed.
_OURS = set()
_patch_threading = _tracy._patch_threading


def _name_threads():
    th = _patch_threading()
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


_FATAL = ("SIGTERM", "SIGHUP")


def _on_fatal(signum, frame):
    """SIGTERM/SIGHUP where the program left the default action (end the
    process): ship what was recorded, then end by the same signal, so that
    the program's parent sees what it would have seen unprofiled."""
    if _tracy._fatal_begin(signum) <= 0:
        # under way (here, or in the extension's watchdog: fatal.c), or no
        # signal at all: _thread.interrupt_main(signum) does nothing in plain
        # Python when the action is the default one
        return
    _sig()[0](signum, _sig()[2])
    try:
        _ending()()
    except BaseException:
        pass
    os.kill(os.getpid(), signum)


_ON_FATAL = _tracy._hidden(_on_fatal)


def _ending():
    """What ends recording in this process: python -m tracy's own finish in
    its process (not in a forked child of it), else stopping the client."""
    pid, fn = _state.get("on_signal") or (0, None)
    return fn if fn is not None and pid == os.getpid() else _tracy.stop


def _on_late_signal(signum, frame):
    raise KeyboardInterrupt


def _sig():
    """(_signal.signal, _signal.getsignal, _signal.SIG_DFL) as the
    interpreter defines them, for the profiler's own use (SIG_DFL: the int
    _signal.signal takes, not signal's enum): the program sees them through
    _hide_ours."""
    f = _state.get("sigfuncs")
    if f is None:
        import _signal
        f = _state["sigfuncs"] = (_signal.signal, _signal.getsignal, _signal.SIG_DFL)
    return f


def _install_ours(sig):
    """Installs _on_fatal (and the extension's relay) for sig; returns the
    handler it replaces."""
    old = _sig()[0](sig, _ON_FATAL)
    _tracy._fatal_guard(sig)
    return old


def _take_default(sig):
    """Installs _on_fatal where the action of sig is the default one."""
    import _signal as signal
    if _sig()[1](sig) == signal.SIG_DFL:
        _install_ours(sig)


def _install_signals(on_signal):
    """Handlers only where the action is the default one: a signal the
    program ignores stays ignored, and a handler the program installs later
    replaces this one (its handler then decides; exit paths flush)."""
    import _signal as signal
    _state["on_signal"] = (os.getpid(), on_signal)
    _sig()
    for name in _FATAL:
        sig = getattr(signal, name, None)
        try:
            if sig is not None:
                _take_default(sig)
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
    real_set, real_get, _ = _sig()
    fatal = {int(getattr(signal, n)) for n in _FATAL if hasattr(signal, n)}
    get, set_ = _tracy._signal_wrappers(real_set, real_get, _ON_FATAL, _signal.SIG_DFL,
                                        fatal)
    _OURS.update((get, set_))
    _signal.getsignal, _signal.signal = get, set_


def _fatal_ours():
    """The fatal signals whose handler is _on_fatal in this process."""
    import _signal as signal
    sigs = []
    for name in _FATAL:
        sig = getattr(signal, name, None)
        try:
            if sig is not None and _sig()[1](sig) is _ON_FATAL:
                sigs.append(sig)
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
    if _state.get("fork_guard") or not hasattr(os, "register_at_fork"):
        return
    import _signal as signal
    if not hasattr(signal, "pthread_sigmask"):
        return
    _state["fork_guard"] = True
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


def _signals_done():
    """The program has ended (python -m tracy is finishing the trace): a
    SIGTERM/SIGHUP now interrupts that wait instead."""
    import _signal as signal
    for name in _FATAL:
        sig = getattr(signal, name, None)
        try:
            if sig is not None and _sig()[1](sig) is _ON_FATAL:
                _sig()[0](sig, _on_late_signal)
        except (ValueError, OSError):
            pass


def _stop_mp_helpers():
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


def _install_process_hooks(on_signal=None, at_exit=True):
    """at_exit: stop at interpreter exit (python -m tracy stops by itself,
    after the program's exit functions and the processes it started)."""
    if os._exit not in _OURS:
        os._exit = _tracy._hidden(_exit, "_exit")
        _OURS.add(os._exit)
    for name in ("execv", "execve"):
        real = getattr(os, name, None)
        if real is not None and real not in _OURS:
            setattr(os, name, _tracy._exec_wrapper(real))
            _OURS.add(getattr(os, name))
    if _real_fork is not None and sys.version_info >= (3, 12) and os.fork is _real_fork:
        os.fork = _tracy._fork_wrapper(_real_fork)
    _wrap_fork_exec()
    if at_exit:
        import atexit
        atexit.register(_tracy.stop)
    _install_signals(on_signal)
    if os.environ.get("TRACY_FLIGHT", "0") != "0":
        _flight_hooks()


def _wrap_fork_exec():
    """A child of subprocess with a preexec_fn runs Python between its fork
    and the exec _posixsubprocess does in C: what it records is shipped
    before that exec (unseen.c). subprocess binds fork_exec at import on
    3.11+: both names are replaced."""
    try:
        import _posixsubprocess
    except ImportError:
        return
    real = _posixsubprocess.fork_exec
    if real in _OURS:
        return
    ours = _tracy._fork_exec_wrapper(real)
    _OURS.add(ours)
    _posixsubprocess.fork_exec = ours
    sp = sys.modules.get("subprocess")
    if sp is not None and getattr(sp, "_fork_exec", None) is real:
        sp._fork_exec = ours


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


def dump():
    """Flight recorder (python -m tracy --flight, or TRACY_FLIGHT set): writes
    the events kept in memory (the last N MiB or seconds) as a trace file and
    returns its path. RuntimeError when not in that mode."""
    return _tracy.dump()


# ---- enabling ------------------------------------------------------------------

def _enable():
    """Everything done in Python (importing threading, naming threads) comes
    before the hook is on, and the thread hook is set by assignment (no
    call): nothing of the profiler's own shows as the program's."""
    _ensure_setup()
    _state["count"] += 1
    if _state["count"] == 1:
        if "threading" not in sys.modules and _tracy._next_mode() not in (
                _tracy.MODE_EVAL, _tracy.MODE_MONITOR):
            # a thread started later gets its profile or trace function from
            # threading; the frame-evaluation hook and sys.monitoring need
            # nothing per thread,
            # and a thread's name is taken when it first records (_on_thread,
            # which patches threading if it has been imported since)
            import threading  # noqa: F401
        th = _patch_threading()
        _name_threads()
        mode = _tracy.enable()
        if th is None:
            pass
        elif mode == _tracy.MODE_TRACE:
            th._trace_hook = _tracy._thread_hook
            _state["threads"] = True
        elif mode == _tracy.MODE_PROFILE:
            th._profile_hook = _tracy._thread_hook
            _state["threads"] = True


def _disable():
    if _state["count"] == 0:
        return
    _state["count"] -= 1
    if _state["count"] == 0:
        try:
            _tracy.disable()  # HookError: the hook failed while enabled
        finally:
            if _state["threads"]:
                import threading
                threading._trace_hook = None
                threading._profile_hook = None
                _state["threads"] = False


def enabled():
    """True while function zones are being recorded."""
    return _tracy.mode() != 0


class Profiler:
    """Records function zones (every thread) between enable() and disable().

    Under `python -m tracy -p` these regions are all that is recorded.
    Also a context manager. Nested regions are counted: recording stops
    when the outermost one ends.
    """

    def __init__(self):
        self._on = False

    def enable(self):
        if not self._on:
            self._on = True
            _enable()
        return self

    def disable(self):
        if self._on:
            self._on = False
            _disable()

    def __enter__(self):
        return self.enable()

    def __exit__(self, *exc):
        self.disable()
        return False


class _Profile:
    """`profile` as a decorator or a context manager (Omnitrace style)."""

    def __call__(self, func=None):
        if func is None:
            return self
        import functools
        code = getattr(func, "__code__", None)
        if code is not None and (_state["opts"] or {}).get("lines"):
            # under -l, a line report shows the decorated functions only
            _tracy._mark_profiled(code.co_filename, code.co_firstlineno)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            _enable()
            try:
                return func(*args, **kwargs)
            finally:
                _disable()
        return wrapper

    def __enter__(self):
        _enable()
        return self

    def __exit__(self, *exc):
        _disable()
        return False


profile = _Profile()


class zone:
    """A named zone: `with tracy.zone("load"):` or `@tracy.zone("load")`."""

    def __init__(self, name, text=None):
        self.name = str(name)
        self.text = text
        self._open = []

    def __enter__(self):
        caller = sys._getframe(1)  # the zone's file and line: the with statement's
        on = _tracy.zone_begin(self.name, caller.f_code.co_filename, caller.f_lineno)
        self._open.append(on)
        if on and self.text is not None:
            _tracy.zone_text(str(self.text))
        return self

    def __exit__(self, *exc):
        if self._open.pop():
            _tracy.zone_end()
        return False

    def __call__(self, func):
        name = self.name
        code = getattr(func, "__code__", None)
        file = code.co_filename if code else ""
        line = code.co_firstlineno if code else 0
        import functools

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            on = _tracy.zone_begin(name, file, line)
            try:
                return func(*args, **kwargs)
            finally:
                if on:
                    _tracy.zone_end()
        return wrapper


def signpost(header, message=None):
    """A phase marker: a message in the trace and a row in the op report."""
    _tracy.signpost(str(header), None if message is None else str(message))


def message(text):
    """A log message in the trace."""
    _tracy.message(str(text))


def plot(name, value):
    """A sample of the counter `name`."""
    _tracy.plot(str(name), float(value))


def frame_mark(name=None):
    """A frame mark (the default frame when name is None)."""
    _tracy.frame_mark(None if name is None else str(name))


def thread_name(name):
    """Names the calling thread in the trace."""
    _tracy.thread_name(str(name))


def flush():
    """Sends everything recorded so far to the capture daemon."""
    _tracy.flush()


def _stored():
    """Events the daemon confirmed storing at the end of the connection, or
    None (not known: an older daemon, or the connection was cut)."""
    f = getattr(_tracy, "stored", None)
    return f() if f is not None else None


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


def _child_name():
    """The name a child process is shown under: its script (`python3 x.py`
    is x.py), its module (-m), and for multiprocessing's spawned processes
    (-c ... multiprocessing ...) the program that started them."""
    argv = getattr(sys, "argv", None) or [""]
    a0 = argv[0]
    if a0 == "-c":
        code = _cmdline_arg("-c") or ""
        if "multiprocessing" in code:
            return os.environ.get("TRACY_PY_PROGRAM") or None
        return None
    if a0 == "-m":
        return _cmdline_arg("-m")
    return os.path.basename(a0) or None


def _start_child(env_opts):
    """Profiles a child process started by a profiled program."""
    opts = _decode_opts(env_opts)
    name = _child_name()
    if name:
        argv = getattr(sys, "argv", None) or []
        _tracy.set_info(name, [name] + [str(a) for a in argv[1:]])
    _configure(opts)
    _install_process_hooks()
    # Connect now, not at the first recorded event: the capture stays open
    # for a process that is connected, even one started as its parent ends.
    _tracy.start()
    if not opts["partial"]:
        _enable()


# ---- trace windows: start_trace / stop_trace (see _trace.py) -------------------

_TRACE_NAMES = ("Options", "start_trace", "stop_trace", "trace")


def __getattr__(name):
    """tracy.trace, start_trace, stop_trace and Options live in _trace.py,
    imported when first asked for: most runs never use them, and every run
    pays for what `import tracy` imports."""
    if name in _TRACE_NAMES:
        from . import _trace
        for n in _TRACE_NAMES:
            globals()[n] = getattr(_trace, n)
        return globals()[name]
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def start_server(port, addr="127.0.0.1", token=None):
    """Listens on addr:port for capture requests: the program runs
    unprofiled until `capture-release --connect HOST:PORT --duration 2s -o
    run.tracy` asks for a capture (see tracy/_ondemand.py). Returns the
    port. RuntimeError (one line) when it cannot listen."""
    from . import _ondemand
    return _ondemand.start_server(port, addr, token)


def stop_server():
    """Stops listening for capture requests."""
    from . import _ondemand
    _ondemand.stop_server()


if os.environ.get("TRACY_LISTEN") and "TRACY_PY_OPTS" not in os.environ:
    from . import _ondemand
    _ondemand.from_environment()
