"""tracy.Profiler, tracy.profile and tracy.zone: imported by the package's
__getattr__ when a program first asks for one of them (most runs use none:
python -m tracy, its children). Their names are the package's own
(tracy.Profiler, tracy.zone)."""
import sys

from . import _load_runtime, _tracy


class Profiler:
    """Records function zones (every thread) between enable() and disable().

    Under `python -m tracy -p` these regions are all that is recorded.
    Also a context manager. Nested regions are counted: recording stops
    when the outermost one ends.
    """
    __module__ = "tracy"

    def __init__(self):
        self._on = False

    def enable(self):
        if not self._on:
            self._on = True
            _load_runtime().enable()
        return self

    def disable(self):
        if self._on:
            self._on = False
            _load_runtime().disable()

    def __enter__(self):
        return self.enable()

    def __exit__(self, *exc):
        self.disable()
        return False


class _Profile:
    """`profile` as a decorator or a context manager (Omnitrace style)."""
    __module__ = "tracy"

    def __call__(self, func=None):
        if func is None:
            return self
        from ._wrap import wrap
        rt = _load_runtime()
        code = getattr(func, "__code__", None)
        if code is not None and rt.lines_on():
            # under -l, a line report shows the decorated functions only
            _tracy._mark_profiled(code.co_filename, code.co_firstlineno)
        # a generator's or coroutine's steps, each (tracy/_wrap.py)
        return wrap(func, rt.enable, lambda _: rt.disable())

    def __enter__(self):
        _load_runtime().enable()
        return self

    def __exit__(self, *exc):
        _load_runtime().disable()
        return False


class zone:
    """A named zone: `with tracy.zone("load"):` or `@tracy.zone("load")`."""
    __module__ = "tracy"

    def __init__(self, name, text=None):
        self.name = str(name)
        self.text = text
        self._open = []

    def __enter__(self):
        caller = sys._getframe(1)  # the zone's file and line: the with statement's
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


profile = _Profile()
