"""python -m tracy's rare paths, imported only when a run needs one: the
usage (-h, a usage error), filters' regular expressions, -m modules,
folders and zipapps (runpy), --listen, the reports (-r) and a job on
several hosts. The common path is C: tracy._tracy._main (pyhook/run.c)."""
import os
import sys

from tracy import _tracy

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
                           a profile function before: tracers and debuggers see
                           what they see plain); auto (default,
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


def usage_head():
    """The usage's first lines, after a usage error's line."""
    return USAGE.split("\n\n")[0] + "\n"


def refused(msg, status=2, usage=False):
    """The run cannot start: an Exception marked with its exit status
    (refused; 2: a usage error, 1: -m NAME finds no module, as python -m)
    and whether the usage's first lines follow its line (usage), as
    pyhook/run.c makes its own."""
    e = Exception(msg)
    e.refused, e.usage = status, usage
    return e


def check_filters(opts):
    """The filters' regular expressions compile (a usage error when not)."""
    import re
    for k in ("I", "E", "R", "MI", "ME", "MR"):
        for p in opts[k]:
            try:
                re.compile(p)
            except re.error as e:
                raise refused("bad regular expression %r: %s" % (p, e), usage=True)


def _last_line(e, default):
    """The last line of the error's message, or `default` when it has none."""
    text = str(e).strip()
    return text.splitlines()[-1] if text else default


def prepare_module(name, args):
    """As `python -m name`: a __main__ module for runpy to fill, and argv as
    python has it until runpy found the module (['-m', args...]): returns
    (None, its globals). The module is found, its parent packages imported
    and its code loaded by runpy once recording began, as python does it:
    a package's import is the program's, recorded, and an error in it is
    reported as python reports it. A top-level name no finder knows is
    refused here (status 1), before a daemon is started for nothing."""
    if name == "pytest" and "tracy.pytest_plugin" not in args:
        args = ["-p", "tracy.pytest_plugin"] + list(args)
    _tracy._set_path0(os.getcwd())
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
    return None, _tracy._new_main(loader)


def prepare_path_entry(path, args):
    """As `python FOLDER` or `python APP.pyz`: the path goes first on
    sys.path and its __main__ module runs (found before recording starts).
    Returns (code, globals); refused (status 1) when it has none."""
    import runpy
    # (3.9+ joins it to the working folder as it is, a final / kept)
    _tracy._set_path0(path if sys.version_info < (3, 9) else os.path.join(os.getcwd(), path),
                      True)
    try:
        _, spec, code = runpy._get_main_module_details()
    except SyntaxError:  # (reported as the interpreter reports it)
        raise
    except Exception as e:
        raise refused(_last_line(e, "can't find '__main__' module in %r" % path), 1)
    sys.argv[:] = [path] + list(args)
    return code, _tracy._new_main(spec.loader, spec, spec.parent, __file__=spec.origin,
                                  __cached__=spec.cached)


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
        _tracy._tell("%s\n" % e)
        return 2
    os.environ.pop("TRACY_LISTEN", None)  # its children do not listen on the port
    # SIGTERM/SIGHUP with the default action: a capture under way is sent
    # before the program ends by the signal (otherwise it ends at once)
    _tracy._rt_install_signals(None)
    return _tracy._run_unprofiled(code, glb, runpy_name)


def write_report(trace):
    """<trace>.csv through tracy-csv; its path, or None."""
    from tracy import _capture
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
    from tracy import _capture
    exporter = _capture.find_tool("tracy-export")
    html = trace[:-6] + ".html" if trace.endswith(".tracy") else trace + ".html"
    if exporter is None:
        _capture.tell("tracy: tracy-export not found, no HTML report written\n")
        return None
    return html if _capture.run_tool([exporter, "-f", "html", "-o", html, trace]) == 0 else None


def reports(trace):
    """-r: the op report and the HTML report of the finished trace."""
    report = write_report(trace)
    if report:
        _tracy._tell("tracy: op report written to %s\n" % report)
    html = write_html_report(trace)
    if html:
        _tracy._tell("tracy: HTML report written to %s\n" % html)


def gather(final, spread, verbose):
    """A job on several hosts: rank 0 merges the hosts' parts into the trace
    asked for (tracy/_hosts.py). Returns its path, or None."""
    job, world, rank = spread
    if rank != 0:
        return None
    from tracy import _hosts

    def say(msg):
        if verbose:
            _tracy._tell("tracy: %s\n" % msg)
    return _hosts.gather(final, job, world, say)
