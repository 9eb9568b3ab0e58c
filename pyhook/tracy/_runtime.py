"""The tracy package's runtime: what a profiled process needs around the
extension (tracy._tracy) for its whole life. Most of it is C
(pyhook/runtime.c: the options applied, nested enable() calls, the fatal
signals, the fork, exec and os._exit wrappers, multiprocessing's helpers,
the environment children inherit), which python -m tracy's common path
runs without this module. Here are its names for the package's Python
(Profiler regions, trace windows, the on-demand listener, a child's start)
and what only those need: decoding the options, the filters, a child's
start, the flight recorder's hooks.

Imported when recording is first asked for outside python -m tracy: it
imports nothing the interpreter does not already hold; what a function
needs it imports when called.
"""
import os
import sys

from . import _tracy

PKG_DIR = _tracy._pkg_dir()  # frames there are the profiler's
_tracy._rt_init()  # (os.fork as it is now is the one wrapped)

# sig()'s signal functions when one stands in for them (a test); None:
# _signal's own, as the extension keeps them.
state = type(sys.implementation)(sigfuncs=None)


# ---- options ---------------------------------------------------------------

FILTER_KEYS = ("I", "E", "R", "MI", "ME", "MR")
defaults = _tracy._rt_defaults  # a new dict of the default options
encode_opts = _tracy._rt_encode_opts  # the options as one environment string


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


# Applies options (a dict as from defaults()) to the extension.
configure = _tracy._rt_configure
# Configured from the parent's TRACY_PY_OPTS (or the defaults) unless done.
ensure_setup = _tracy._rt_ensure_setup
# True when configured to record lines (-l).
lines_on = _tracy._rt_lines_on


# ---- enabling ------------------------------------------------------------------

# A region begins (enable) or ends (disable): recording is on while one is.
# Everything done in Python for it (importing threading, naming threads)
# comes before the hook is on. With no daemon (said once: "running
# unprofiled") no hook slows the program. end_regions: every region ends.
enable = _tracy._rt_enable
disable = _tracy._rt_disable
end_regions = _tracy._rt_end_regions


# ---- signals, forks and exits ------------------------------------------------

# The signals whose default action ends the process and that Python leaves
# at the default (pyhook/runtime.c says why these).
_FATAL = ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM",
          "SIGPROF", "SIGXCPU", "SIGIO", "SIGPWR", "SIGSTKFLT")
# Their handler where the program left the default action: ships what was
# recorded, then ends the process by the same signal.
_ON_FATAL = _tracy._rt_on_fatal()


def sig():
    """(_signal.signal, _signal.getsignal, _signal.SIG_DFL) as the
    interpreter defines them, for the profiler's own use (SIG_DFL: the int
    _signal.signal takes, not signal's enum): the program sees them through
    the wrappers."""
    return state.sigfuncs or _tracy._rt_sig()


def _install_ours(signum):
    """Installs _ON_FATAL (and the extension's relay) for signum; returns
    the handler it replaces."""
    return _tracy._fatal_install(sig()[0], signum, _ON_FATAL)


# install_signals(on_signal): the handler where the action is the default
# one (on_signal: what ends the recording then; None: stopping the client),
# the signal functions the program sees, the fatal signals held across
# os.fork. The ends of python -m tracy's run: signals_done, signals_hurry,
# signals_quiet, die_by. stop_mp_helpers: multiprocessing's helper
# processes stopped, as their parent's exit would.
install_signals = _tracy._rt_install_signals
signals_installed = _tracy._rt_signals_installed
signals_done = _tracy._rt_signals_done
signals_hurry = _tracy._rt_signals_hurry
signals_quiet = _tracy._rt_signals_quiet
die_by = _tracy._rt_die_by
stop_mp_helpers = _tracy._rt_stop_mp_helpers
# os's function that a wrapper replaced (tracy's own use), or None.
real = _tracy._rt_real


def install_process_hooks(on_signal=None, at_exit=True):
    """The wrappers of os._exit, the execs and spawns and os.fork, and the
    fatal signals' handler. at_exit: stop at interpreter exit (python -m
    tracy stops by itself, after the program's exit functions and the
    processes it started)."""
    _tracy._rt_install_process_hooks(on_signal, at_exit)


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

# set_env(name, value) / unset_env(name): the process's environment (what
# its children inherit; the client reads it there), not the program's view
# of it (os.environ): the program sees the environment it was given. A name
# the view lacks is named in TRACY_PY_HIDE, which a child's sitecustomize
# reads to take it off the child's view (pyhook/childenv.c).
set_env = _tracy._rt_set_env
unset_env = _tracy._rt_unset_env
# setup_children_env(opts, program): child Python processes are profiled
# into the same capture, their options and the _child folder first on their
# PYTHONPATH in the process's environment; end_children_env: no longer.
setup_children_env = _tracy._rt_setup_children_env
end_children_env = _tracy._rt_end_children_env
# Lines that say which child processes could not be profiled and why (one
# per reason, the processes counted), from the notes file the children
# wrote (_child/sitecustomize.py), which this removes.
take_unprofiled = _tracy._rt_take_unprofiled


def stored():
    """Events the daemon confirmed storing at the end of the connection, or
    None (not known: an older daemon, or the connection was cut)."""
    f = getattr(_tracy, "stored", None)
    return f() if f is not None else None
