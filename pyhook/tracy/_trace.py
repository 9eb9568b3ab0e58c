"""Trace windows: a program records a region of its own run into a trace.

    with tracy.trace("out/"):          # out/<program>.<time>.tracy
        run()
    tracy.start_trace("run.tracy", lines=True)
    ...
    written = tracy.stop_trace()       # the path, with .events etc.

No daemon needs to be running: start_trace starts the private capture
daemon `python -m tracy` uses (capture-release, on a socket of its own in the
user's run folder) and stop_trace waits until it has finished the file, so
the file is written by the toolkit's one writer and child processes started
in the window (fork, multiprocessing, subprocess) join it as they do under
`python -m tracy` (libtrace/client/client_file.c says why this design).
"""
import os
import sys

from tracy import MECHANISMS, _capture
from tracy import _runtime as _rt
from tracy import _tracy

_OPTION_KEYS = {
    "lines": "lines", "trace_c": "trace_c", "max_depth": "max_depth",
    "min_duration": "min_duration", "label": "label",
    "function_include": "I", "function_exclude": "E", "function_restrict": "R",
    "module_include": "MI", "module_exclude": "ME", "module_restrict": "MR",
    "mechanism": "mechanism",
}


class Options:
    """What to record, as python -m tracy's options say it (XProf's
    ProfileOptions): lines, trace_c, max_depth, min_duration (ns), label
    ("args,file,line"), function_include/_exclude/_restrict and
    module_include/_exclude/_restrict (regular expressions, one or a list),
    quiet (no line on stderr when the trace is written), mechanism ("auto",
    "hook" or "exact": tracy(1), --mechanism)."""

    def __init__(self, lines=False, trace_c=False, max_depth=0, min_duration=0,
                 label="", function_include=(), function_exclude=(),
                 function_restrict=(), module_include=(), module_exclude=(),
                 module_restrict=(), quiet=False, mechanism="auto"):
        self.lines, self.trace_c, self.label, self.quiet = lines, trace_c, label, quiet
        self.max_depth, self.min_duration = max_depth, min_duration
        self.function_include, self.function_exclude = function_include, function_exclude
        self.function_restrict, self.module_include = function_restrict, module_include
        self.module_exclude, self.module_restrict = module_exclude, module_restrict
        self.mechanism = mechanism  # "auto", "hook" or "exact" (tracy(1), --mechanism)

    def _settings(self):
        """The options as _rt.defaults() holds them; ValueError (one
        line) for a bad one."""
        import re
        o = _rt.defaults()
        for attr, key in _OPTION_KEYS.items():
            v = getattr(self, attr)
            if key in _rt.FILTER_KEYS:
                pats = [v] if isinstance(v, str) else list(v)
                for p in pats:
                    try:
                        re.compile(p)
                    except (re.error, TypeError) as e:
                        raise ValueError("tracy: bad regular expression for %s: %r (%s)"
                                         % (attr, p, e))
                o[key] = pats
            elif key in ("max_depth", "min_duration"):
                if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                    raise ValueError("tracy: %s must be a whole number >= 0, not %r"
                                     % (attr, v))
                o[key] = v
            elif key == "label":
                bad = [x for x in str(v).split(",") if x and x not in ("args", "file", "line")]
                if bad:
                    raise ValueError("tracy: label takes args,file,line, not %r" % bad[0])
                o[key] = str(v)
            elif key == "mechanism":
                if v not in MECHANISMS:
                    raise ValueError("tracy: mechanism takes auto, hook or exact, not %r" % (v,))
                o[key] = v
            else:
                o[key] = bool(v)
        return o


class TraceFile(str):
    """The path of a written trace (a str), with what it holds: events,
    processes and lost (None when its trailer could not say), stored:
    the events the daemon confirmed storing from this process, and
    unprofiled: lines saying which child processes could not be profiled
    and why (also messages in the trace)."""
    events = processes = lost = stored = None
    unprofiled = ()


def _options(options, kw):
    if options is not None and not isinstance(options, Options):
        raise TypeError("tracy: options must be a tracy.Options, not %s"
                        % type(options).__name__)
    if options is not None and kw:
        raise TypeError("tracy: give a tracy.Options or keyword options, not both")
    if options is None:
        try:
            options = Options(**kw)
        except TypeError:
            bad = sorted(set(kw) - set(_OPTION_KEYS) - {"quiet"})
            raise TypeError("tracy: unknown option %s (known: %s)"
                            % (bad[0] if bad else "?", ", ".join(sorted(_OPTION_KEYS))))
    return options


def _program():
    name = _rt.child_name() or "python"
    return name[:-3] if name.endswith(".py") else name


def _resolve(path):
    """The file to write: `path` itself when it ends in .tracy (and is not
    a folder), else a new <program>.<time>.tracy in the folder `path`
    (created), never one that exists."""
    path = os.path.abspath(os.fspath(path))
    if path.endswith(".tracy") and not os.path.isdir(path):
        if os.path.exists(path) and not _capture.is_trace(path):
            raise ValueError("tracy: refusing to overwrite %s: not a trace" % path)
        d = os.path.dirname(path)
        if not os.path.isdir(d):
            os.makedirs(d, exist_ok=True)
        return path
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError("tracy: %s is a file that is not a trace (name the trace *.tracy "
                         "or give a folder)" % path)
    os.makedirs(path, exist_ok=True)
    import time
    stem = os.path.join(path, "%s.%s" % (_program(), time.strftime("%Y%m%d-%H%M%S")))
    for i in range(1000):
        cand = stem + (".%d" % i if i else "") + ".tracy"
        try:  # taken here, so that no other window picks the same name
            os.close(os.open(cand, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))
            return cand
        except FileExistsError:
            continue
    raise ValueError("tracy: no free trace name in %s" % path)


_starting = __import__("_thread").allocate_lock()
_ENV = ("TRACY_ADDR", "TRACY_PORT", "TRACY_OUTPUT", "TRACY_PY_OPTS", "TRACY_PY_PROGRAM",
        "TRACY_PY_HIDE")
_win = {"path": None, "pid": 0, "env": None, "quiet": False, "hooks": False}


def _open_here():
    return _win["path"] is not None and _win["pid"] == os.getpid()


def start_trace(path, options=None, **kw):
    """Starts recording every thread of this process (and the processes it
    starts) into the trace `path`: a .tracy file, or a folder that receives
    <program>.<time>.tracy. Options: a tracy.Options, or its fields as
    keywords. RuntimeError (one line) when a trace is already being recorded
    or the capture cannot start."""
    if not _starting.acquire(blocking=False):
        raise RuntimeError("tracy: another thread is starting a trace")
    try:
        _start(path, options, kw)
    finally:
        _starting.release()


def _start(path, options, kw):
    if _open_here():
        raise RuntimeError("tracy: a trace is already being recorded to %s; call "
                           "tracy.stop_trace() first" % _win["path"])
    if _tracy.active():
        raise RuntimeError("tracy: this process already records into a capture daemon "
                           "(python -m tracy, or TRACY_ADDR): start_trace is for a "
                           "program run without it")
    opts = _options(options, kw)
    settings = opts._settings()
    exe = _capture.find_tool("capture-release", "TRACY_CAPTURE")
    if exe is None:
        raise RuntimeError("tracy: capture-release not found next to the tracy package or "
                           "on PATH (install the toolkit, or set TRACY_CAPTURE)")
    out = _resolve(path)
    env = {k: _tracy._getenv(k) for k in _ENV}
    try:
        addr = _tracy._trace_start(out, exe)
    except OSError as e:
        raise RuntimeError("tracy: cannot record to %s: %s" % (out, e))
    _rt.set_env("TRACY_ADDR", addr)  # (libtrace has set it already)
    _rt.unset_env("TRACY_PORT")
    _rt.unset_env("TRACY_OUTPUT")
    _rt.setup_children_env(settings, _program())
    _win.update(path=out, pid=os.getpid(), env=env, quiet=opts.quiet)
    _rt.configure(settings)
    if not _win["hooks"]:
        _rt.install_process_hooks()
        _win["hooks"] = True
    _rt.enable()


def stop_trace():
    """Stops recording, waits until the trace is complete and returns its
    path (a TraceFile: with .events, .processes, .lost). Zones still open end
    with the window (marked as cut). RuntimeError when no trace is being
    recorded."""
    if not _open_here():
        raise RuntimeError("tracy: no trace is being recorded (tracy.start_trace was not "
                           "called)")
    out, env = _win["path"], _win["env"]
    _win.update(path=None, pid=0, env=None)
    unprofiled = []
    try:
        _rt.end_regions()  # Profiler regions inside end with the window
        unprofiled = _rt.take_unprofiled()
        for line in unprofiled:
            _tracy.message("tracy: " + line)
    finally:
        try:
            stored = _tracy._trace_stop()
        finally:
            for k, v in env.items():  # (the process's; the view was left alone)
                if v is None:
                    os.unsetenv(k)
                else:
                    os.putenv(k, v)
            _rt.end_children_env()
    res = TraceFile(out)
    res.stored = stored
    s = _capture.file_summary(out)
    if s is not None:
        res.events, res.processes, res.lost = s
    if not _win["quiet"]:
        if s is None:
            _capture.tell("tracy: trace written to %s (%d events stored)\n" % (out, stored))
        else:
            extra = "" if res.processes == 1 else " from %d processes" % res.processes
            _capture.tell("tracy: trace written to %s (%d events%s%s)\n"
                             % (out, res.events, extra,
                                ", %d lost" % res.lost if res.lost else ""))
        for line in unprofiled:
            _capture.tell("tracy: %s\n" % line)
    res.unprofiled = unprofiled
    return res


class trace:
    """`with tracy.trace(path, **options):` records the block (see
    start_trace); `.result` is then what stop_trace returned."""

    def __init__(self, path, options=None, **kw):
        self._args = (path, options, kw)
        self.result = None

    def __enter__(self):
        path, options, kw = self._args
        start_trace(path, options, **kw)
        return self

    def __exit__(self, *exc):
        self.result = stop_trace()
        return False
