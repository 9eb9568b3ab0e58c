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
# How calls are recorded (tracy(1), --mechanism): "hook", a PEP 523
# frame-evaluation function (fast); "exact", none that changes how CPython
# runs the program (sys.monitoring on 3.12+, a profile function before);
# "auto", exact on 3.12+ when another tool is active at start, else hook
# until another tool begins (hook.c, leave_hook).
MECHANISMS = ("auto", "hook", "exact")
# os.environ.get(name), from the bytes dict os.environ keeps: a missing name
# costs os.environ.get a KeyError raised and caught inside (some 9K
# instructions on 3.12), and a run looks up many that are missing.
_env_get = _tracy._env_get


# The process's runtime (tracy/_runtime.py: options, signals, fork and exec
# wrappers), imported when recording is first asked for: a program that
# imports tracy and runs without the profiler does not load it.
_rt = None


def _load_runtime():
    global _rt
    if _rt is None:
        from . import _runtime as rt
        _rt = rt
    return _rt


def _isolated_child():
    """Profiles this process, a child of a profiled program started with -E
    or -I, which reads neither PYTHONPATH nor so the sitecustomize of
    tracy's _child folder: called by tracy-isolated.pth (installed beside
    the package by pip install . and make install) when the environment
    holds TRACY_PY_OPTS; any other start reads two names there and imports
    nothing. Runs the child's start of _child/sitecustomize.py, loaded
    under a name of its own and not kept in sys.modules. Python started
    with -S reads no .pth file and runs unprofiled (the parent says so)."""
    import _frozen_importlib
    import _frozen_importlib_external
    import os
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child",
                        "sitecustomize.py")
    spec = _frozen_importlib_external.spec_from_file_location("tracy._child_start", path)
    mod = _frozen_importlib.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod._isolated()


# Profiler, profile and zone live in _api.py, imported when first asked for
# (__getattr__): their classes and methods cost every process that imports
# tracy some 0.4M instructions to load and make on 3.12+, and most runs
# (python -m tracy, its children) use none.
_API_NAMES = ("Profiler", "_Profile", "profile", "zone")


# signpost, message, plot, frame_mark, thread_name, flush, dump and enabled
# live in _events.py, imported the same way: every process that imports
# tracy would pay their making, and most use none.
_EVENT_NAMES = ("dump", "enabled", "signpost", "message", "plot", "frame_mark",
                "thread_name", "flush")


# ---- trace windows: start_trace / stop_trace (see _trace.py) -------------------

_TRACE_NAMES = ("Options", "start_trace", "stop_trace", "trace")


def __getattr__(name):
    """tracy.trace, start_trace, stop_trace and Options live in _trace.py,
    imported when first asked for: most runs never use them, and every run
    pays for what `import tracy` imports. Profiler, profile and zone come
    from _api.py the same way, signpost, message and the other events'
    functions from _events.py."""
    if name in _EVENT_NAMES:
        from . import _events
        for n in _EVENT_NAMES:
            globals()[n] = getattr(_events, n)
        return globals()[name]
    if name in _API_NAMES:
        from . import _api
        for n in _API_NAMES:
            globals()[n] = getattr(_api, n)
        return globals()[name]
    if name in _TRACE_NAMES:
        from . import _trace
        for n in _TRACE_NAMES:
            globals()[n] = getattr(_trace, n)
        return globals()[name]
    if name == "_PKG_DIR":  # frames there are the profiler's
        return _tracy._pkg_dir()
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




def __dir__():
    """The public API (and the module's own attributes), not the names it
    works with."""
    return sorted(set(__all__) | {"MECHANISMS", "__version__"}
                  | {n for n in globals() if n.startswith("__") and n.endswith("__")})


if _env_get("TRACY_LISTEN") and _tracy._getenv("TRACY_PY_OPTS") is None:
    from . import _ondemand  # listen for captures from the start
    _ondemand.from_environment()
