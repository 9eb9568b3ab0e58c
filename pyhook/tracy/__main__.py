"""python -m tracy: run a Python program under the tracy profiler.

Kept lean on purpose: its start-up is part of every profiled run, so it parses
argv by hand and imports nothing beyond what the interpreter already holds.
"""
import os
import sys

import tracy
from tracy import _tracy
from tracy._compat import exit_code as _exit_code

USAGE = """\
usage: python -m tracy [options] (script.py | -m module) [args...]

Records every Python function call of the program (all threads, child
processes too) into a .tracy trace through the capture daemon. When no daemon
answers at TRACY_ADDR:TRACY_PORT, capture-release is started for the run.

options:
  -p, --partial            record only Profiler().enable() regions, tracy.profile
                           blocks and the tracy_profile pytest fixture
  -l, --lines              every executed line is a zone
  -r, --report             write the op report (CSV) next to the trace
  -o, --output PATH        trace file (default <name>.tracy here); an existing
                           directory or a path ending in / receives trace and report
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
  --max-depth N            record zones only down to nesting depth N
  --min-duration NS        keep only zones lasting at least NS nanoseconds (and
                           the zones around them)
  -h, --help               this help
  --version                print the version
Filters may be repeated. Exit status: the program's; 2 for a usage error;
1 when the capture daemon cannot be started.
"""

_WITH_ARG = {
    "-o": "output", "--output": "output", "-t": "port", "--port": "port",
    "-I": "I", "--function-include": "I", "-E": "E", "--function-exclude": "E",
    "-R": "R", "--function-restrict": "R", "-MI": "MI", "--module-include": "MI",
    "-ME": "ME", "--module-exclude": "ME", "-MR": "MR", "--module-restrict": "MR",
    "--label": "label", "--max-depth": "max_depth", "--min-duration": "min_duration",
}
_FLAGS = {
    "-p": "partial", "--partial": "partial", "-l": "lines", "--lines": "lines",
    "-r": "report", "--report": "report", "-v": "verbose", "--verbose": "verbose",
    "--trace-c": "trace_c",
}


class UsageError(Exception):
    pass


def _int_opt(name, v):
    try:
        n = int(v)
    except ValueError:
        raise UsageError("%s expects a number, not %r" % (name, v))
    if n < 0:
        raise UsageError("%s must not be negative" % name)
    return n


def parse_args(argv):
    """Returns (opts, cli) where cli holds output/port/report/verbose/target."""
    opts = tracy._defaults()
    cli = {"output": None, "port": None, "report": False, "verbose": False,
           "module": None, "script": None, "args": []}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            sys.stdout.write(USAGE)
            sys.exit(0)
        if a == "--version":
            sys.stdout.write("tracy %s\n" % tracy.__version__)
            sys.exit(0)
        if a == "-m":
            if i + 1 >= len(argv):
                raise UsageError("-m needs a module name")
            cli["module"] = argv[i + 1]
            cli["args"] = argv[i + 2:]
            break
        name, eq, val = a.partition("=")
        if a.startswith("--") and eq and name in _WITH_ARG:
            a = name
        else:
            val = None
        if a in _FLAGS:
            key = _FLAGS[a]
            (opts if key in opts else cli)[key] = True
        elif a in _WITH_ARG:
            if val is None:
                if i + 1 >= len(argv):
                    raise UsageError("%s needs a value" % a)
                i += 1
                val = argv[i]
            key = _WITH_ARG[a]
            if key in tracy._FILTER_KEYS:
                opts[key].append(val)
            elif key in ("max_depth", "min_duration"):
                opts[key] = _int_opt(a, val)
            elif key == "label":
                bad = [x for x in val.split(",") if x not in ("args", "file", "line")]
                if bad:
                    raise UsageError("--label takes args,file,line, not %r" % bad[0])
                opts["label"] = val
            elif key == "port":
                cli["port"] = _int_opt(a, val)
                if cli["port"] > 65535:
                    raise UsageError("port out of range: %s" % val)
            else:
                cli[key] = val
        elif a.startswith("-") and a != "-":
            raise UsageError("unknown option %s" % a)
        else:
            cli["script"] = a
            cli["args"] = argv[i + 1:]
            break
        i += 1
    if cli["module"] is None and cli["script"] is None:
        raise UsageError("no script or -m module given")
    if opts["R"] or opts["E"] or opts["I"] or opts["MI"] or opts["ME"] or opts["MR"]:
        import re
        for k in tracy._FILTER_KEYS:
            for p in opts[k]:
                try:
                    re.compile(p)
                except re.error as e:
                    raise UsageError("bad regular expression %r: %s" % (p, e))
    return opts, cli


def _say(cli, msg):
    if cli["verbose"]:
        sys.stderr.write("tracy: %s\n" % msg)


def output_path(cli):
    """The trace path for -o and the program name."""
    if cli["module"]:
        stem = cli["module"]
    else:
        stem = os.path.basename(cli["script"])
        if stem.endswith(".py"):
            stem = stem[:-3]
    out = cli["output"]
    if not out:
        return os.path.abspath(stem + ".tracy")
    if out.endswith("/") or os.path.isdir(out):
        os.makedirs(out, exist_ok=True)
        return os.path.abspath(os.path.join(out, stem + ".tracy"))
    return os.path.abspath(out)


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
    if env_var and os.environ.get(env_var):
        return os.environ[env_var]
    d = tracy._PKG_DIR
    for _ in range(4):
        d = os.path.dirname(d)
        p = os.path.join(d, "bin", prog)
        if os.access(p, os.X_OK) and not os.path.isdir(p):
            return p
    return _which(prog)


def start_daemon(out, cli):
    """Spawns capture-release on a free port. Returns (pid, port)."""
    exe = find_tool("capture-release", "TRACY_CAPTURE")
    if exe is None:
        raise OSError("capture-release not found next to the tracy package or on PATH "
                      "(install the toolkit, or set TRACY_CAPTURE)")
    rfd, wfd = os.pipe()
    argv = [exe, "-o", out, "-f", "-p", "0", "-q"]
    try:
        pid = os.posix_spawn(exe, argv, os.environ,
                             file_actions=[(os.POSIX_SPAWN_DUP2, wfd, 1),
                                           (os.POSIX_SPAWN_CLOSE, rfd)],
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
                      % _exit_code(status))
    _say(cli, "started %s (pid %d) on port %s" % (exe, pid, line.decode()))
    return pid, int(line)


def setup_children_env(opts, port):
    """Child Python processes are profiled into the same capture."""
    env = os.environ
    env["TRACY_PORT"] = str(port)
    env["TRACY_PY_OPTS"] = tracy._encode_opts(opts)
    paths = [os.path.join(tracy._PKG_DIR, "_child"), os.path.dirname(tracy._PKG_DIR)]
    old = env.get("PYTHONPATH")
    if old:
        paths.append(old)
    env["PYTHONPATH"] = os.pathsep.join(paths)


def compile_script(src, path):
    """The script's code object. Through the extension, as the interpreter
    compiles `python script.py`: the builtin compile() would first build
    the AST node types, which costs more than compiling a small script."""
    if b"\0" in src:  # the builtin raises this interpreter's own error
        return compile(src, path, "exec")
    return _tracy._compile_exec(src, path)


def run_script(path, args, start):
    with open(path, "rb") as f:
        src = f.read()
    code = compile_script(src, path)
    full = os.path.abspath(path)
    sys.argv[:] = [path] + list(args)
    sys.path[0] = os.path.dirname(os.path.realpath(path))
    main = type(sys)("__main__")
    main.__dict__.update(__file__=full, __cached__=None, __loader__=None,
                         __package__=None, __spec__=None,
                         __builtins__=__builtins__)
    sys.modules["__main__"] = main
    start()
    exec(code, main.__dict__)


def run_module(name, args, start):
    import runpy
    if name == "pytest" and "tracy.pytest_plugin" not in args:
        args = ["-p", "tracy.pytest_plugin"] + list(args)
    sys.argv[:] = [name] + list(args)
    start()
    runpy.run_module(name, run_name="__main__", alter_sys=True)


def run_program(cli, start):
    """Runs the target, calling start() just before; returns its exit status
    (exceptions are reported as the interpreter would)."""
    try:
        if cli["module"]:
            run_module(cli["module"], cli["args"], start)
        else:
            run_script(cli["script"], cli["args"], start)
        return 0
    except SystemExit as e:
        code = e.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        sys.stderr.write("%s\n" % (code,))
        return 1
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        return 130
    except BaseException:
        sys.excepthook(*sys.exc_info())
        return 1


def wind_down():
    """What the interpreter would do at exit, while still recording:
    wait for non-daemon threads and run atexit callbacks."""
    th = sys.modules.get("threading")
    if th is not None:
        try:
            th._shutdown()
        except Exception:
            pass
    import atexit
    atexit._run_exitfuncs()


def write_report(trace, cli):
    csv = find_tool("tracy-csv")
    report = trace[:-6] + ".csv" if trace.endswith(".tracy") else trace + ".csv"
    if csv is None:
        sys.stderr.write("tracy: tracy-csv not found, no op report written\n")
        return None
    with open(report, "wb") as f:
        pid = os.posix_spawn(csv, [csv, trace], os.environ,
                             file_actions=[(os.POSIX_SPAWN_DUP2, f.fileno(), 1)])
        _, status = os.waitpid(pid, 0)
    if _exit_code(status) != 0:
        sys.stderr.write("tracy: tracy-csv failed on %s\n" % trace)
        return None
    return report


def main(argv):
    try:
        opts, cli = parse_args(argv)
    except UsageError as e:
        sys.stderr.write("tracy: %s\n%s" % (e, USAGE.split("\n\n")[0] + "\n"))
        return 2
    if cli["script"] and not os.path.isfile(cli["script"]):
        sys.stderr.write("tracy: cannot open %s\n" % cli["script"])
        return 2
    addr = os.environ.get("TRACY_ADDR", "127.0.0.1")
    port = cli["port"]
    if port is None:
        port = _int_opt("TRACY_PORT", os.environ.get("TRACY_PORT", "8086"))
    out = output_path(cli)
    daemon = None
    if port != 0 and _tracy.probe(addr, port):
        _say(cli, "recording to the daemon at %s:%d" % (addr, port))
    else:
        try:
            daemon, port = start_daemon(out, cli)
        except OSError as e:
            sys.stderr.write("tracy: %s\n" % e)
            return 1
        os.environ["TRACY_ADDR"] = addr = "127.0.0.1"
    setup_children_env(opts, port)
    program = cli["module"] or cli["script"]
    _tracy.set_info(program, [program] + cli["args"])
    tracy._configure(opts)
    tracy._install_process_hooks()
    if not _tracy.start():
        sys.stderr.write("tracy: not recording (no capture daemon at %s:%d)\n" % (addr, port))

    def start():
        if not opts["partial"]:
            tracy._enable()
        _say(cli, "mode %d" % _tracy.mode())
    status = run_program(cli, start)
    wind_down()
    _tracy.stop()
    sent, lost = _tracy.counts()
    if daemon is not None:
        _, st = os.waitpid(daemon, 0)
        code = _exit_code(st)
        if code != 0:
            sys.stderr.write("tracy: capture-release exited with status %d\n" % code)
        sys.stderr.write("tracy: trace written to %s (%d events%s)\n"
                         % (out, sent, ", %d lost" % lost if lost else ""))
        if cli["report"]:
            report = write_report(out, cli)
            if report:
                sys.stderr.write("tracy: op report written to %s\n" % report)
    else:
        sys.stderr.write("tracy: %d events sent to the daemon at %s:%d\n" % (sent, addr, port))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
