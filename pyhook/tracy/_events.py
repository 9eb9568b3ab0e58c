"""tracy.signpost, message, plot, frame_mark, thread_name, flush, dump and
enabled: imported by the package's __getattr__ when a program first asks for
one of them (most runs use none: python -m tracy, its children). Their
names are the package's own (tracy.signpost)."""
from . import _tracy


def dump():
    """Flight recorder (python -m tracy --flight, or TRACY_FLIGHT set): writes
    the events kept in memory (the last N MiB or seconds) as a trace file and
    returns its path. RuntimeError when not in that mode."""
    return _tracy.dump()


def enabled():
    """True while function zones are being recorded."""
    return _tracy.mode() != 0


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


for _f in (dump, enabled, signpost, message, plot, frame_mark, thread_name, flush):
    _f.__module__ = "tracy"
del _f
