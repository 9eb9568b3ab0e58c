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
import os as _os
import sys as _sys

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
# "auto", exact on 3.12+ when another tool is active at start, else hook.
MECHANISMS = ("auto", "hook", "exact")
_PKG_DIR = _os.path.dirname(_os.path.abspath(__file__))  # frames here are the profiler's

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


def dump():
    """Flight recorder (python -m tracy --flight, or TRACY_FLIGHT set): writes
    the events kept in memory (the last N MiB or seconds) as a trace file and
    returns its path. RuntimeError when not in that mode."""
    return _tracy.dump()


def enabled():
    """True while function zones are being recorded."""
    return _tracy.mode() != 0


# Profiler, profile and zone are made when first asked for (__getattr__):
# a class costs every process that imports tracy some 0.1M instructions to
# make on 3.12+, and most runs (python -m tracy, its children) use none.
_API_NAMES = ("Profiler", "_Profile", "profile", "zone")


def _make_api():
    """Makes the API's classes and puts them in the module's namespace."""
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
                (_rt or _load_runtime()).enable()
            return self

        def disable(self):
            if self._on:
                self._on = False
                (_rt or _load_runtime()).disable()

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
            from ._wrap import wrap
            rt = _rt or _load_runtime()
            code = getattr(func, "__code__", None)
            if code is not None and rt.lines_on():
                # under -l, a line report shows the decorated functions only
                _tracy._mark_profiled(code.co_filename, code.co_firstlineno)
            # a generator's or coroutine's steps, each (tracy/_wrap.py)
            return wrap(func, rt.enable, lambda _: rt.disable())

        def __enter__(self):
            (_rt or _load_runtime()).enable()
            return self

        def __exit__(self, *exc):
            (_rt or _load_runtime()).disable()
            return False




    class zone:
        """A named zone: `with tracy.zone("load"):` or `@tracy.zone("load")`."""

        def __init__(self, name, text=None):
            self.name = str(name)
            self.text = text
            self._open = []

        def __enter__(self):
            caller = _sys._getframe(1)  # the zone's file and line: the with statement's
            on = _tracy.zone_begin(self.name, caller.f_code.co_filename, caller.f_lineno,
                                   caller)
            self._open.append(on)
            if on and self.text is not None:
                _tracy.zone_text(str(self.text))
            return self

        def __exit__(self, *exc):
            on = self._open.pop()
            if on:
                _tracy.zone_end(on)
            return False

        def __call__(self, func):
            from ._wrap import wrap
            name = self.name
            code = getattr(func, "__code__", None)
            file = code.co_filename if code else ""
            line = code.co_firstlineno if code else 0

            def end(on):
                if on:
                    _tracy.zone_end(on)
            # a generator's or coroutine's steps, a zone each (tracy/_wrap.py)
            return wrap(func, lambda: _tracy.zone_begin(name, file, line), end)

    for cls in (Profiler, _Profile, zone):
        cls.__qualname__ = cls.__name__
    globals().update(Profiler=Profiler, _Profile=_Profile, profile=_Profile(), zone=zone)


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


# ---- trace windows: start_trace / stop_trace (see _trace.py) -------------------

_TRACE_NAMES = ("Options", "start_trace", "stop_trace", "trace")


def __getattr__(name):
    """tracy.trace, start_trace, stop_trace and Options live in _trace.py,
    imported when first asked for: most runs never use them, and every run
    pays for what `import tracy` imports. Profiler, profile and zone are
    made then too (_make_api)."""
    if name in _API_NAMES:
        _make_api()
        return globals()[name]
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




def __dir__():
    """The public API (and the module's own attributes), not the names it
    works with."""
    return sorted(set(__all__) | {"MECHANISMS", "__version__"}
                  | {n for n in globals() if n.startswith("__") and n.endswith("__")})


if _os.environ.get("TRACY_LISTEN") and _tracy._getenv("TRACY_PY_OPTS") is None:
    from . import _ondemand  # listen for captures from the start
    _ondemand.from_environment()
