"""runwith.py -- runs a script or module under a profiler that has no
command line of its own, the way `python -m cProfile` does.

    python runwith.py empty  (script.py | -m module) [args...]
    python runwith.py eval   (script.py | -m module) [args...]
    python runwith.py yappi  (script.py | -m module) [args...]
    python runwith.py listen (script.py | -m module) [args...]

empty: the emptyprof extension (an empty PyEval_SetProfile callback; needs
build/bench on PYTHONPATH). eval: the emptyeval extension (an empty PEP 523
frame-evaluation function that calls CPython's own). yappi: yappi on its wall clock, stats saved in
pstat form to $BENCH_YAPPI_OUT (default /dev/null) at the end, as
`python -m cProfile -o` saves its own. listen: tracy.start_server(0), a
listener for on-demand captures that is never asked (the idle cost).
"""
import os
import sys


def load_yappi():
    try:
        import yappi
    except ImportError:
        # Debian's python3-yappi, for another CPython 3.11 of this machine.
        sys.path.append("/usr/lib/python3/dist-packages")
        import yappi
    return yappi


def start(mode):
    if mode == "empty":
        import emptyprof
        emptyprof.install()
        return emptyprof.uninstall
    if mode == "eval":
        import emptyeval
        emptyeval.install()
        return emptyeval.uninstall
    if mode == "yappi":
        yappi = load_yappi()
        # Wall clock, as the other tracers record; yappi's default CPU clock
        # makes a system call per event, which is slower still.
        yappi.set_clock_type("wall")
        yappi.start()

        def stop():
            yappi.stop()
            out = os.environ.get("BENCH_YAPPI_OUT", os.devnull)
            yappi.get_func_stats().save(out, type="pstat")
        return stop
    if mode == "listen":
        import tracy
        tracy.start_server(0)
        return tracy.stop_server
    raise SystemExit(f"runwith.py: unknown mode {mode!r} (empty, eval, yappi, listen)")


def run_script(path):
    """Runs the script at `path` as `python path` does. Not runpy.run_path:
    it imports pkgutil (and with it typing and re), which would add tens of
    millions of instructions to every run measured through this file (80M
    on 3.12) and none of them the profiler's."""
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec")
    main = type(sys)("__main__")
    main.__dict__.update(__file__=path, __cached__=None, __loader__=None,
                         __package__=None, __spec__=None, __builtins__=__builtins__)
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def main(argv):
    if len(argv) < 2 or (argv[1] == "-m" and len(argv) < 3):
        raise SystemExit(__doc__)
    mode, rest = argv[0], argv[1:]
    if rest[0] == "-m":
        target, sys.argv = rest[1], rest[1:]
        sys.path[0] = ""  # as `python -m` has it
        import runpy
        run = lambda: runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        target, sys.argv = rest[0], rest[:]
        sys.path[0] = os.path.dirname(os.path.abspath(target))
        run = lambda: run_script(target)
    stop = start(mode)
    try:
        run()
    finally:
        stop()


if __name__ == "__main__":
    main(sys.argv[1:])
