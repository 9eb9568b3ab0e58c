"""python -m tracy: run a Python program under the tracy profiler.

Kept lean on purpose: its start-up is part of every profiled run, so it parses
argv by hand and imports nothing beyond what the interpreter already holds.
"""
import atexit
import os
import sys

import tracy
from tracy import _tracy
from tracy import _capture
from tracy import _runtime as _rt

USAGE = """\
usage: python -m tracy [options] [--] (script.py | -m module | -c command | -) [args...]
       (script.py may be a folder or zipapp holding __main__.py; - reads the
       program from standard input: as for python)

Records every Python function call of the program (all threads, child
processes too) into a .tracy trace through the capture daemon. When no daemon
of this user answers (daemon-PORT.sock in the user's private run folder, or
TRACY_ADDR), capture-release is started for the run; processes started
together (MPI ranks) record into that one daemon.

options:
  -p, --partial            record only Profiler().enable() regions, tracy.profile
                           blocks and the tracy_profile pytest fixture
  -l, --lines              every executed line is a zone (tracy-export -f lines;
                           @tracy.profile functions only when some are decorated)
  -r, --report             write the op report (CSV) and the HTML report next
                           to the trace
  -o, --output PATH        trace file if PATH ends in .tracy; otherwise a
                           folder (created) receiving <name>.tracy and the
                           reports. An existing file that is not a trace is
                           never overwritten.
  -t, --port N             daemon port (default TRACY_PORT or 8086; 0: always
                           start a daemon for the run)
  -v, --verbose            say what is being done
  -I, --function-include RE  record functions matching RE even if excluded
  -E, --function-exclude RE  do not record functions matching RE
  -R, --function-restrict RE record only functions matching RE
  -MI, --module-include RE   the same by module name or file
  -ME, --module-exclude RE
  -MR, --module-restrict RE
  --label LIST             args,file,line: arguments as zone text, file and/or
                           line in zone names
  --trace-c                also record calls of C functions (builtins, extensions)
  --mechanism M            hook: a frame-evaluation hook (fastest); exact: CPython
                           runs the program as unprofiled (sys.monitoring on 3.12+,
                           a profile function before: reference counts, tracers
                           and debuggers see what they see plain); auto (default,
                           also TRACY_MECHANISM=): exact on 3.12+ when another
                           tool (tracer, profiler, sys.monitoring) is active at
                           start, else hook
  --max-depth N            record zones only down to nesting depth N
  --min-duration NS        keep only zones lasting at least NS nanoseconds (and
                           the zones around them)
  --flight SIZE            flight recorder, no daemon: keep only the last SIZE of
                           events in memory (64M: MiB, 30s: seconds) and write them
                           to the trace on SIGUSR1, tracy.dump(), an escaping
                           exception and at exit (later dumps: NAME.1.tracy, ...)
  --listen [ADDR:]PORT     run the program unprofiled (no hook) and record it
                           only when asked: capture-release --connect PORT
                           --duration 2s -o run.tracy (also TRACY_LISTEN=)
  -h, --help               this help
  --version                print the version
Short flags combine (-pl). Filters may be repeated. Exit status: the
program's (a program ended by a signal ends by the same signal); 2 for a
usage error, a script or module that cannot be found, or an output path that
would overwrite a file that is not a trace; 1 when the capture daemon cannot
be started or the output is being written by another run.
"""

_WITH_ARG = {
    "-o": "output", "--output": "output", "-t": "port", "--port": "port",
    "-I": "I", "--function-include": "I", "-E": "E", "--function-exclude": "E",
    "-R": "R", "--function-restrict": "R", "-MI": "MI", "--module-include": "MI",
    "-ME": "ME", "--module-exclude": "ME", "-MR": "MR", "--module-restrict": "MR",
    "--label": "label", "--max-depth": "max_depth", "--min-duration": "min_duration",
    "--flight": "flight", "--listen": "listen", "--mechanism": "mechanism",
}
_FLAGS = {
    "-p": "partial", "--partial": "partial", "-l": "lines", "--lines": "lines",
    "-r": "report", "--report": "report", "-v": "verbose", "--verbose": "verbose",
    "--trace-c": "trace_c",
}
# Single-letter options that may be combined: -pl, -prv, -pvo out.
_SHORT_FLAGS = "plrv"
_SHORT_WITH_ARG = "otIER"


def refused(msg, status=2, usage=False):
    """The run cannot start: one line on stderr, then the usage's first
    lines when `usage` (a command-line error), and exit status `status` (2:
    a usage error, an output path refused, a script that cannot be opened;
    1: -m NAME finds no module, as python -m). An Exception marked with its
    status (`refused`), not a class of its own: each class costs every
    run's start some 0.1M instructions on 3.12+."""
    e = Exception(msg)
    e.refused, e.usage = status, usage
    return e


def _usage_error(msg):
    return refused(msg, usage=True)


def _int_opt(name, v):
    try:
        n = int(v)
    except ValueError:
        raise _usage_error("%s expects a number, not %r" % (name, v))
    if n < 0:
        raise _usage_error("%s must not be negative" % name)
    return n


def _expand_short(a):
    """-pl -> [-p, -l]; -pvo -> [-p, -v, -o] (the last may take a value);
    None when `a` is not a group of single-letter options."""
    if len(a) < 3 or a[0] != "-" or a[1] == "-" or a in _WITH_ARG:
        return None
    letters = a[1:]
    if all(c in _SHORT_FLAGS for c in letters[:-1]) and \
            (letters[-1] in _SHORT_FLAGS or letters[-1] in _SHORT_WITH_ARG):
        return ["-" + c for c in letters]
    return None


def _set_value(a, val, opts, cli):
    key = _WITH_ARG[a]
    if key in _rt.FILTER_KEYS:
        opts[key].append(val)
    elif key in ("max_depth", "min_duration"):
        opts[key] = _int_opt(a, val)
    elif key == "label":
        bad = [x for x in val.split(",") if x not in ("args", "file", "line")]
        if bad:
            raise _usage_error("--label takes args,file,line, not %r" % bad[0])
        opts["label"] = val
    elif key == "mechanism":
        opts["mechanism"] = val
    elif key == "port":
        cli["port"] = _int_opt(a, val)
        if cli["port"] > 65535:
            raise _usage_error("port out of range: %s" % val)
    else:
        cli[key] = val
        cli["given"].add(key)


def parse_args(argv):
    """Returns (opts, cli) where cli holds output/port/report/verbose/target."""
    opts = _rt.defaults()
    cli = {"output": None, "port": None, "report": False, "verbose": False,
           "module": None, "script": None, "command": None, "args": [], "given": set()}
    argv = list(argv)
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            sys.stdout.write(USAGE)
            sys.exit(0)
        if a == "--version":
            sys.stdout.write("tracy %s\n" % tracy.__version__)
            sys.exit(0)
        if a == "--":
            if i + 1 >= len(argv):
                raise _usage_error("no script or -m module given")
            if argv[i + 1] in ("-m", "-c"):
                i += 1
                continue
            cli["script"] = argv[i + 1]
            cli["args"] = argv[i + 2:]
            break
        if a in ("-m", "-c"):
            if i + 1 >= len(argv):
                raise _usage_error("-m needs a module name" if a == "-m" else
                                   "-c needs a command")
            cli["module" if a == "-m" else "command"] = argv[i + 1]
            cli["args"] = argv[i + 2:]
            break
        group = _expand_short(a)
        if group is not None:
            argv[i:i + 1] = group
            continue
        name, eq, val = a.partition("=")
        if a.startswith("--") and eq and name in _WITH_ARG:
            a = name
        else:
            val = None
        if a in _FLAGS:
            key = _FLAGS[a]
            (opts if key in opts else cli)[key] = True
            cli["given"].add(key)
        elif a in _WITH_ARG:
            if val is None:
                if i + 1 >= len(argv):
                    raise _usage_error("%s needs a value" % a)
                i += 1
                val = argv[i]
            _set_value(a, val, opts, cli)
        elif a.startswith("-") and a != "-":
            raise _usage_error("unknown option %s" % a)
        else:
            cli["script"] = a
            cli["args"] = argv[i + 1:]
            break
        i += 1
    if cli["module"] is None and cli["script"] is None and cli["command"] is None:
        raise _usage_error("no script or -m module given")
    if opts["mechanism"] not in tracy.MECHANISMS:
        raise _usage_error("--mechanism (or TRACY_MECHANISM) takes auto, hook or exact, not %r"
                         % opts["mechanism"])
    if opts["R"] or opts["E"] or opts["I"] or opts["MI"] or opts["ME"] or opts["MR"]:
        import re
        for k in _rt.FILTER_KEYS:
            for p in opts[k]:
                try:
                    re.compile(p)
                except re.error as e:
                    raise _usage_error("bad regular expression %r: %s" % (p, e))
    return opts, cli


def _say(cli, msg):
    if cli["verbose"]:
        _capture.tell("tracy: %s\n" % msg)


# ---- the output path -----------------------------------------------------------

def output_path(cli):
    """The trace path for -o and the program name. -o PATH is a file when
    it ends in .tracy, else a folder (tt-metal's `-o profile_out`)."""
    if cli["module"]:
        stem = cli["module"]
    elif cli["command"] is not None or cli["script"] == "-":
        stem = "command" if cli["command"] is not None else "stdin"
    else:
        stem = os.path.basename(os.path.normpath(cli["script"]))
        for ext in (".py", ".pyz"):
            if stem.endswith(ext):
                stem = stem[:-len(ext)]
    out = cli["output"]
    if not out:
        return os.path.abspath(stem + ".tracy")
    if out.endswith(".tracy") and not os.path.isdir(out):
        return os.path.abspath(out)
    if os.path.exists(out) and not os.path.isdir(out):
        if cli["script"] not in (None, "-") and os.path.samefile(out, cli["script"]):
            raise refused("refusing to write the trace over the script %s" % out)
        raise refused("refusing to overwrite %s: not a trace (name the trace "
                          "*.tracy or give a folder)" % out)
    return os.path.abspath(os.path.join(out, stem + ".tracy"))


def check_output(out, cli):
    """Refuses to write over the program itself or over a file that is not a
    trace; creates the folder. Raises refused()."""
    target = cli["script"]
    if target not in (None, "-") and os.path.exists(out) and os.path.samefile(out, target):
        raise refused("refusing to write the trace over the script %s" % target)
    if os.path.isdir(out):
        raise refused("%s is a folder" % out)
    if os.path.exists(out) and not _capture.is_trace(out):
        raise refused("refusing to overwrite %s: not a trace" % out)
    d = os.path.dirname(out)
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        f = d
        while f and not os.path.exists(f):
            f = os.path.dirname(f)
        if f and not os.path.isdir(f):  # makedirs says "File exists"
            raise refused("cannot create %s: %s is not a folder" % (d, f))
        raise refused("cannot create %s: %s" % (d, e.strerror))


# ---- children, the program -----------------------------------------------------

def compile_script(src, path):
    """The script's code object. Through the extension, as the interpreter
    compiles `python script.py`: the builtin compile() would first build
    the AST node types, which costs more than compiling a small script."""
    if b"\0" in src:  # the builtin raises this interpreter's own error
        return compile(src, path, "exec")
    return _tracy._compile_exec(src, path)


def set_path0(entry, needed=False):
    """sys.path[0] as python sets it for the program: it replaces the entry
    python put there to run tracy (runpy's working folder, the tracy
    command's folder). Under -P or PYTHONSAFEPATH (3.11+) python puts none
    there, and none is added but a folder or zipapp holding the program
    (`needed`)."""
    if getattr(sys.flags, "safe_path", False):
        if needed:
            sys.path.insert(0, entry)
        return
    sys.path[0] = entry


def is_path_entry(path):
    """Whether python runs `path` as a folder or zip archive (a zipapp, .pyz)
    holding a __main__ module, not as a script."""
    if os.path.isdir(path):
        return True
    if path.endswith((".py", ".pyw")):
        return False
    import zipimport  # (loaded at every start)
    try:
        zipimport.zipimporter(path)
        return True
    except Exception:
        return False


def prepare_path_entry(path, args):
    """As `python FOLDER` or `python APP.pyz`: the path goes first on
    sys.path and its __main__ module runs (found before recording starts).
    Raises refused() (status 1) when it has none."""
    import runpy
    # (3.9+ joins it to the working folder as it is, a final / kept)
    set_path0(path if sys.version_info < (3, 9) else os.path.join(os.getcwd(), path),
              needed=True)
    try:
        _, spec, code = runpy._get_main_module_details()
    except SyntaxError:  # (reported as the interpreter reports it)
        raise
    except Exception as e:
        raise refused(_last_line(e, "can't find '__main__' module in %r" % path), 1)
    sys.argv[:] = [path] + list(args)
    return code, spec_main(spec)


def prepare_source(src, filename, argv0, args, **names):
    """As `python -c CODE` (filename <string>) and `python -` (<stdin>):
    the code runs in a __main__ whose loader is BuiltinImporter, with '' (the
    working folder) first on sys.path."""
    code = compile_script(src, filename)
    sys.argv[:] = [argv0] + list(args)
    set_path0("")
    loader = sys.modules["_frozen_importlib"].BuiltinImporter
    return code, new_main(__loader__=loader, **names)


def prepare_script(path, args):
    """Reads and compiles the script, sets up __main__; returns (code, globals).
    The script's name (__file__, the code's, its frames' in tracebacks) is
    the interpreter's: on 3.9+ the path joined to the working folder as it
    is (./x.py is /cwd/./x.py), on 3.8 the path as given. A folder or zip
    archive runs its __main__ module, as python runs it."""
    if is_path_entry(path):
        return prepare_path_entry(path, args)
    with open(path, "rb") as f:
        src = f.read()
    full = os.path.join(os.getcwd(), path) if sys.version_info >= (3, 9) else path
    code = compile_script(src, full)
    sys.argv[:] = [path] + list(args)
    set_path0(os.path.dirname(os.path.realpath(path)))
    # the import system's loader class, loaded at every start
    loader = sys.modules["_frozen_importlib_external"].SourceFileLoader("__main__", full)
    return code, new_main(__loader__=loader, __file__=full, __cached__=None)


def new_main(**names):
    """A new __main__ module with the names the interpreter's own has, in
    its order (what globals() and vars() show), and `names`; returns its
    dict."""
    main = type(sys)("__main__")
    loader = names.pop("__loader__")
    spec = names.pop("__spec__", None)
    package = names.pop("__package__", None)
    main.__dict__.update(__package__=package, __loader__=loader, __spec__=spec,
                         __annotations__={}, __builtins__=sys.modules["builtins"])
    main.__dict__.update(names)
    sys.modules["__main__"] = main
    return main.__dict__


def spec_main(spec):
    """new_main() for a module found by runpy: its names as runpy sets them."""
    return new_main(__package__=spec.parent, __loader__=spec.loader, __spec__=spec,
                    __file__=spec.origin, __cached__=spec.cached)


def _last_line(e, default):
    """The last line of the error's message, or `default` when it has none."""
    text = str(e).strip()
    return text.splitlines()[-1] if text else default


def prepare_module(name, args):
    """As `python -m name`: a __main__ module for runpy to fill, and argv as
    python has it until runpy found the module (['-m', args...]). The
    module is found, its parent packages imported and its code loaded by
    runpy once recording began (run_code), as python does it: a package's
    import is the program's, recorded, and an error in it is reported as
    python reports it. A top-level name no finder knows is refused here
    (status 1), before a daemon is started for nothing."""
    if name == "pytest" and "tracy.pytest_plugin" not in args:
        args = ["-p", "tracy.pytest_plugin"] + list(args)
    set_path0(os.getcwd())
    top = name.partition(".")[0]
    try:
        import importlib.util  # (runpy's, loaded with it)
        missing = bool(top) and importlib.util.find_spec(top) is None
    except Exception:  # (runpy says what is wrong with such a name)
        missing = False
    if missing:
        raise refused("No module named %s" % name if top == name else
                      "Error while finding module specification for %r "
                      "(ModuleNotFoundError: No module named %r)" % (name, top), 1)
    sys.argv[:] = ["-m"] + list(args)
    loader = sys.modules["_frozen_importlib"].BuiltinImporter
    return None, new_main(__loader__=loader)


# The program ended by a signal, an uncaught KeyboardInterrupt (SIGINT), not
# by an exit status: any int, negative ones too, is a status.
INTERRUPTED = ("signal", 2)


def _exit_message(code):
    """What the interpreter writes for sys.exit(non-int): str(code) to
    sys.stderr (to descriptor 2 when sys.stderr is None; dropped when it
    cannot be written), then a newline, on descriptor 2 when sys.stderr
    cannot take it."""
    err = sys.stderr
    try:
        msg = "%s" % (code,)
    except Exception:  # (a __str__ that raises: nothing but the newline)
        msg = ""
    for text in (msg, "\n"):
        try:
            if err is None:
                raise ValueError
            err.write(text)
        except Exception:
            if err is None or text == "\n":
                try:
                    os.write(2, text.encode("utf-8", "backslashreplace"))
                except OSError:
                    pass


def run_code(code, glb, start, runpy_name=None):
    """Calls start(), then runs the program: its code in glb from no Python
    caller, as the interpreter runs a script; a module (-m, runpy_name its
    name; code None) or a folder or zipapp (runpy_name "__main__") as
    python runs them, through runpy's _run_module_as_main, which finds the
    module and runs it in sys.modules["__main__"] (glb). The program sees
    runpy's frames below its own (stack, tracebacks), as under python;
    runpy's functions are not recorded, what they call is."""
    start()
    if runpy_name is None:
        _tracy._call_detached(exec, code, glb)
        return
    import runpy
    _tracy._unrecorded(*(getattr(runpy, f).__code__ for f in (
        "_run_module_as_main", "_run_code", "_get_module_details",
        "_get_main_module_details")))
    _tracy._call_detached(runpy._run_module_as_main, runpy_name, runpy_name != "__main__")


def run_program(code, glb, start, runpy_name=None):
    """Runs the target (run_code), calling start() just before; returns its
    exit status (what sys.exit was given, as the interpreter takes it), or
    INTERRUPTED when it ended by KeyboardInterrupt (exceptions are reported
    as the interpreter would)."""
    try:
        run_code(code, glb, start, runpy_name)
        return 0
    except SystemExit as e:
        code = e.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        _exit_message(code)
        return 1
    except KeyboardInterrupt:
        _report()
        return INTERRUPTED
    except BaseException:
        _report()
        return 1


def _report():
    """The traceback as the interpreter prints it: from the program's first
    frame, without this module's."""
    t, v, tb = sys.exc_info()
    if tb is not None and tb.tb_frame.f_globals is globals():
        while tb is not None and tb.tb_frame.f_globals is globals():
            tb = tb.tb_next
        if v is not None:
            v.__traceback__ = tb
    sys.excepthook(t, v, tb)


def write_report(trace, cli):
    csv = _capture.find_tool("tracy-csv")
    report = trace[:-6] + ".csv" if trace.endswith(".tracy") else trace + ".csv"
    if csv is None:
        _capture.tell("tracy: tracy-csv not found, no op report written\n")
        return None
    # (-o: tracy-csv creates it as every tool does, never through a link
    # another user made)
    if _capture.run_tool([csv, "-o", report, trace]) != 0:
        _capture.tell("tracy: tracy-csv failed on %s\n" % trace)
        return None
    return report


def write_html_report(trace):
    """<trace>.html through tracy-export; its path, or None."""
    exporter = _capture.find_tool("tracy-export")
    html = trace[:-6] + ".html" if trace.endswith(".tracy") else trace + ".html"
    if exporter is None:
        _capture.tell("tracy: tracy-export not found, no HTML report written\n")
        return None
    return html if _capture.run_tool([exporter, "-f", "html", "-o", html, trace]) == 0 else None


def where(addr, port):
    """A daemon's name for messages: its socket (this user's daemon-PORT.sock
    when addr is None), or host:port."""
    if addr is None:
        return _capture.daemon_socket(port)
    return addr[5:] if addr.startswith("unix:") else "%s:%d" % (addr, port)


def connect_existing(port):
    """Connects to a daemon already listening, without a word when none is.
    Nothing is sent to a daemon unless it is one: no probe connection."""
    old = _tracy._getenv("TRACY_QUIET")
    os.putenv("TRACY_QUIET", "1")
    _rt.set_env("TRACY_PORT", str(port))  # (for the children too)
    try:
        return _tracy.start()
    finally:
        if old is None:
            os.unsetenv("TRACY_QUIET")
        else:
            os.putenv("TRACY_QUIET", old)


def summarize(run, sent, lost):
    """The last line: what the file (or the daemon) holds."""
    if run.mode == Mode.FLIGHT:  # the dumps say where they went
        return
    if run.mode == Mode.OWN:
        s = _capture.file_summary(run.out)
        if s is not None:
            events, procs, flost = s
            extra = "" if procs == 1 else " from %d processes" % procs
            if flost:
                extra += ", %d lost" % flost
            _capture.tell("tracy: trace written to %s (%d events%s)\n"
                             % (run.out, events, extra))
        else:
            _capture.tell("tracy: trace written to %s (%d events sent%s)\n"
                             % (run.out, sent, ", %d lost" % lost if lost else ""))
        return
    stored = _rt.stored()
    daemon = "the daemon at %s" % where(run.addr, run.port)
    if run.mode == Mode.JOIN:
        daemon = "the capture of %s (capture-release pid %d)" % (run.out, run.pid)
    if stored is None:
        _capture.tell("tracy: %s did not confirm storing any of the %d events sent "
                         "(it may have rejected them: see its log)\n" % (daemon, sent))
    elif stored < sent:
        _capture.tell("tracy: %d of %d events stored by %s (%d rejected or lost)\n"
                         % (stored, sent, daemon, sent - stored))
    else:
        _capture.tell("tracy: %d events stored by %s%s\n"
                         % (stored, daemon, ", %d lost" % lost if lost else ""))


# A plain record (types.SimpleNamespace, without importing types): a class
# costs every run's start some 0.1M instructions on 3.12+.
_Record = type(sys.implementation)

# Where a run records: NONE (not recording), FLIGHT (in memory, no daemon),
# EXTERNAL (a daemon found running), OWN (the daemon this process started)
# or JOIN (the daemon another process of the run started).
Mode = _Record(NONE="none", FLIGHT="flight", EXTERNAL="external", OWN="own", JOIN="join")


def new_run(addr, port, out):
    """Where this run records, and what finishing it waits for: mode (Mode),
    the daemon's addr, port and pid (OWN, JOIN), the trace path out; rv and
    size: the rendezvous of the run's processes and how many it expects;
    spread and final: a job on several hosts (_capture.spread()) and the
    merged trace's path."""
    return _Record(mode=Mode.NONE, addr=addr, port=port, out=out, pid=0, rv=None, size=0,
                   spread=None, final=None)


def connect(cli, out):
    """Finds or starts the daemon and connects. Returns the run record."""
    addr = tracy._env_get("TRACY_ADDR") or None  # None: this user's local daemon
    port = cli["port"]
    if port is None:
        port = _int_opt("TRACY_PORT", tracy._env_get("TRACY_PORT") or "8086")
    run = new_run(addr, port, out)
    flight = cli.get("flight")
    if flight:  # the client keeps the events in memory: no daemon
        _rt.set_env("TRACY_FLIGHT", flight)
        _rt.set_env("TRACY_FLIGHT_OUT", out)
        run.mode = Mode.FLIGHT
        if not _tracy.start():
            raise refused("not recording (invalid --flight %s)" % flight)
        return run
    if port != 0 and connect_existing(port):
        run.mode = Mode.EXTERNAL
        _say(cli, "recording to the daemon at %s" % where(addr, port))
        asked = [o for o in ("output", "report") if o in cli["given"]]
        if asked:
            _capture.tell("tracy: %s not applied: the capture daemon already running "
                             "at %s writes the trace (use -t 0 for a daemon of this "
                             "run)\n" % (" and ".join("-" + o[0] for o in asked),
                                         where(addr, port)))
        return run
    check_output(out, cli)
    spread = _capture.spread()
    if spread is not None:  # ranks on several hosts: a daemon and a part per host
        run.spread, run.final = spread, out
        from tracy import _hosts
        out = run.out = _hosts.part_path(out, spread[0])
    run.mode, run.pid, addr, run.rv, run.size = _capture.own_or_join(
        out, lambda: _capture.start_daemon(out, lambda msg: _say(cli, msg)))
    _rt.set_env("TRACY_ADDR", addr)
    if not addr.startswith("unix:"):  # (TRACY_PORT=0 would be refused)
        _rt.unset_env("TRACY_PORT")
    run.addr = addr
    if run.mode == Mode.JOIN:
        _say(cli, "joining the capture of %s (capture-release pid %d)" % (out, run.pid))
    if not _tracy.start():
        _capture.tell("tracy: not recording (no capture daemon at %s)\n"
                         % where(addr, port))
    elif run.mode == Mode.JOIN:
        run.rv.count_in(run.pid)
    return run


def _checked(fn):
    """Calls _tracy.disable or _tracy.stop: a failure of the hook during the
    run (a callback that raised, memory exhausted), raised there once, is
    reported in one line and the run goes on."""
    try:
        fn()
    except _tracy.HookError as e:
        _capture.tell("tracy: %s\n" % e)


def finish(run, cli, urgent=False):
    """After the program: stop recording, let the daemon finish, report.
    An interrupt (Ctrl-C, SIGTERM) while waiting asks the daemon to finish
    the file now: processes still connected are recorded as stopped.
    urgent: the program is being ended by a signal; nothing is waited for
    but the daemon, asked to finish at once (see finish_quietly)."""
    _checked(_tracy.disable)
    interrupted = urgent

    def say(msg):
        _say(cli, msg)
    try:
        if not urgent:
            if run.mode == Mode.OWN:
                _capture.wait_for_ranks(run.rv, run.size, say)
            _capture.wait_for_children(say)
    except KeyboardInterrupt:
        interrupted = True
    if not urgent and run.mode == Mode.OWN:
        _rt.signals_hurry(lambda: _capture.hurry_daemon(run.pid))
    unprofiled = _rt.take_unprofiled()
    for line in unprofiled:  # in the trace too, on this process's timeline
        _tracy.message("tracy: " + line)
    _checked(_tracy.stop)
    sent, lost = _tracy.counts()
    if run.mode == Mode.OWN:
        if not interrupted:
            _capture.drain_daemon(run.pid)
            # A thread still running may have started multiprocessing's
            # helpers again: connected, they would hold the capture open.
            _rt.stop_mp_helpers()
        code = _capture.wait_daemon(run.pid, interrupted,
                                    run.addr if run.size <= 1 and run.spread is None else None)
        run.rv.remove(run.pid)
        if code != 0:
            _capture.tell("tracy: capture-release exited with status %d\n" % code)
    summarize(run, sent, lost)
    for line in unprofiled:
        _capture.tell("tracy: %s\n" % line)
    final = run.out if run.mode == Mode.OWN else None
    if run.spread is not None:
        final = _gather(run, say) if not urgent else None
    if final and cli["report"]:
        report = write_report(final, cli)
        if report:
            _capture.tell("tracy: op report written to %s\n" % report)
        html = write_html_report(final)
        if html:
            _capture.tell("tracy: HTML report written to %s\n" % html)


def _gather(run, say):
    """A job on several hosts: rank 0 merges the hosts' parts into the trace
    asked for (tracy/_hosts.py). Returns its path, or None."""
    from tracy import _hosts
    job, world, rank = run.spread
    if rank != 0:
        return None
    return _hosts.gather(run.final, job, world, say)


def _die_like(status):
    """Exit status of the program (for sys.exit, which takes it as the
    program's own sys.exit would), or the signal that ended it, raised again
    so that the parent sees the same end."""
    if status is not INTERRUPTED:
        return status
    sig = INTERRUPTED[1]
    sys.stdout.flush()
    sys.stderr.flush()
    _rt.die_by(sig)
    return 128 + sig


def plain_orig_argv(argv, cli):
    """sys.orig_argv (3.10+) as python gives it to the program run plain:
    the interpreter's options, then the program's command line, without
    `-m tracy` (or the tracy command) and tracy's options. None when the
    command line is not one of those."""
    orig = getattr(sys, "orig_argv", None)
    if not isinstance(orig, list) or len(orig) < len(argv) + 2:
        return None
    head = orig[:len(orig) - len(argv)]
    if head[-2:] == ["-m", "tracy"]:
        head = head[:-2]
    elif head[-1] == "-mtracy" or (head[-1] == sys.argv[0]
                                   and os.path.basename(head[-1]) == "tracy"):
        head = head[:-1]
    else:
        return None
    if cli["module"]:
        return head + ["-m", cli["module"]] + cli["args"]
    if cli["command"] is not None:
        return head + ["-c", cli["command"]] + cli["args"]
    return head + [cli["script"]] + cli["args"]


def main(argv):
    _capture.keep_stderr()
    try:
        opts, cli = parse_args(argv)
        orig = plain_orig_argv(argv, cli)
        script = cli["script"]
        if script and script != "-" and not (os.path.isfile(script) or os.path.isdir(script)):
            raise refused("cannot open %s" % script)
        out = output_path(cli)
        if cli["module"]:
            program = cli["module"]
            code, glb = prepare_module(cli["module"], cli["args"])
        elif cli["command"] is not None:
            program = "-c"
            code, glb = prepare_source(os.fsencode(cli["command"]), "<string>", "-c",
                                       cli["args"])
        elif script == "-":
            program = "-"
            code, glb = prepare_source(sys.stdin.buffer.read(), "<stdin>", "-", cli["args"],
                                       __file__="<stdin>", __cached__=None)
        else:
            program = os.path.basename(os.path.normpath(script))
            code, glb = prepare_script(script, cli["args"])
        _tracy.set_info(program, [program] + cli["args"])
        # a module, folder or zipapp runs through runpy (run_code)
        runpy_name = cli["module"] or ("__main__" if glb["__spec__"] is not None else None)
        listen = cli.get("listen") or tracy._env_get("TRACY_LISTEN")
        if listen:
            return run_listening(listen, code, glb, runpy_name)
        run = connect(cli, out)
    except OSError as e:
        _capture.tell("tracy: %s\n" % e)
        return 1
    except SyntaxError:  # as the interpreter: the error alone, no frames
        t, v, _ = sys.exc_info()
        v.__traceback__ = None
        sys.excepthook(t, v, None)
        return 1
    except Exception as e:
        if not hasattr(e, "refused"):
            raise
        _capture.tell("tracy: %s\n%s" % (e, USAGE.split("\n\n")[0] + "\n" if e.usage else ""))
        return e.refused
    _rt.setup_children_env(opts, program)
    _rt.configure(opts)
    _rt.install_process_hooks(on_signal=lambda: finish_quietly(run, cli), at_exit=False)

    def start():
        if not opts["partial"]:
            _rt.enable()
    if orig is not None:
        sys.orig_argv = orig
    me = os.getpid()
    status = run_program(code, glb, start, runpy_name)
    # What the interpreter does at exit, while still recording: wait for
    # non-daemon threads, run atexit callbacks. Here, in a frame older than
    # any tracer the program set, not in a function of the profiler's, whose
    # call a tracer (coverage stopping at exit) would see.
    try:
        th = sys.modules.get("threading")
        if th is not None:
            try:
                _tracy._call_detached(th._shutdown)
            except BaseException:
                pass
        try:
            _tracy._call_detached(atexit._run_exitfuncs)
        except (Exception, SystemExit):
            # 3.8/3.9 raise the last callback's exception again once all
            # have run (each was printed); the interpreter ignores it at exit
            pass
    except KeyboardInterrupt:
        status = INTERRUPTED
    if status is INTERRUPTED:
        _tracy._end_signal(INTERRUPTED[1])  # (the goodbye names it)
    if os.getpid() != me:
        # a child forked by the program (os.fork, not multiprocessing, which
        # ends its children itself) ended by sys.exit or by returning: it
        # ships what it recorded and exits as the interpreter would; the
        # trace is the parent's to finish
        _checked(_tracy.stop)
        return _die_like(status)
    # From here on the work is the profiler's own: not recorded. Stop
    # multiprocessing's helper processes (resource tracker, fork server),
    # which live until this process exits: they are clients of the capture.
    _checked(_tracy.disable)
    _rt.stop_mp_helpers()
    _rt.signals_done()
    finish(run, cli)
    if status is not INTERRUPTED:
        _rt.signals_quiet()
    return _die_like(status)


def run_listening(spec, code, glb, runpy_name):
    """--listen: the program runs unprofiled, as under plain python, and a
    capture-release --connect records it for a while (tracy/_ondemand.py).
    Its exit status is the program's."""
    from tracy import _ondemand
    try:
        addr, port = _ondemand.parse_listen(spec)
        if _ondemand._srv["sock"] is None:  # (TRACY_LISTEN: import tracy started it)
            _ondemand.start_server(port, addr)
    except (ValueError, RuntimeError) as e:
        _capture.tell("%s\n" % e)
        return 2
    os.environ.pop("TRACY_LISTEN", None)  # its children do not listen on the port
    # SIGTERM/SIGHUP with the default action: a capture under way is sent
    # before the program ends by the signal (otherwise it ends at once)
    _rt.install_signals(None)
    status = run_program(code, glb, lambda: None, runpy_name)
    return _die_like(status)


def finish_quietly(run, cli):
    """A fatal signal (SIGTERM, SIGHUP) reached the program: ship what was
    recorded, have the daemon finish the file now, and die of the signal.
    Nothing else is waited for: unprofiled, the program would end at once,
    and its children (pool workers, multiprocessing's resource tracker) may
    be waiting for it. Those still connected are recorded as stopped."""
    try:
        finish(run, cli, urgent=True)
    except BaseException:
        pass


def command():
    """The tracy command (pyhook/cmd/tracy): python -m tracy without runpy."""
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    command()
