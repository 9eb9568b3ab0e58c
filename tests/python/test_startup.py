"""python -m tracy imports only what a run needs: every profiled child
process pays its start-up. The modules a script finds loaded under it are
those of plain `python -m` (runpy and what it loads) and the tracy package's
own; the heavy ones the profiler used to import (signal and its enum,
functools, threading) come only with the program or a mechanism that needs
them. Measured by what the interpreter holds, so load cannot move it."""
import json
import subprocess

from conftest import PYTHON, env_for_tests

SHOW = "import json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
# (gc and atexit: built-in modules, nothing to load; the hook looks gc up
# on 3.8, hook.c. Not _posixsubprocess: its fork_exec is wrapped when
# subprocess is first used, unseen.c py__fork_exec_seen)
OURS = {"tracy", "tracy._tracy", "tracy._runtime", "tracy._capture", "atexit", "gc"}
HEAVY = ("signal", "enum", "functools", "threading", "tracy._trace")


def modules(tmp_path, *args):
    p = subprocess.run([PYTHON] + list(args), capture_output=True, text=True, timeout=120,
                       cwd=str(tmp_path), env=env_for_tests())
    assert p.returncode == 0, p.stderr
    return set(json.loads(p.stdout.strip().splitlines()[-1]))


def write_scripts(tmp_path, body=""):
    (tmp_path / "show.py").write_text(body + SHOW)
    (tmp_path / "showmod.py").write_text(SHOW)


def test_an_empty_program_gets_nothing_heavy(tmp_path):
    write_scripts(tmp_path, "import json\n")  # (json: what the script itself needs)
    plain = modules(tmp_path, "-m", "showmod")
    traced = modules(tmp_path, "-m", "tracy", "-o", str(tmp_path / "t.tracy"), "show.py")
    extra = traced - plain
    assert extra <= OURS, sorted(extra - OURS)
    for name in HEAVY:
        assert name not in traced or name in plain, name


def test_trace_c_brings_threading_for_later_threads(tmp_path):
    """Under a profile function (--trace-c), a thread started later gets it
    from threading: it is imported before recording starts."""
    write_scripts(tmp_path)
    traced = modules(tmp_path, "-m", "tracy", "--trace-c", "-o", str(tmp_path / "t.tracy"),
                     "show.py")
    assert "threading" in traced


def test_start_trace_is_there_when_asked_for(tmp_path):
    write_scripts(tmp_path, "import sys, tracy\n"
                            "assert 'tracy._trace' not in sys.modules\n"
                            "from tracy import start_trace, stop_trace, trace, Options\n"
                            "assert trace is tracy.trace and callable(start_trace)\n")
    got = modules(tmp_path, "show.py")
    assert "tracy._trace" in got


def test_import_tracy_alone_loads_no_runtime(tmp_path):
    """A program that imports tracy and runs without the profiler loads the
    API and the extension only; the runtime comes with the first region."""
    write_scripts(tmp_path, "import sys, tracy\n"
                            "assert 'tracy._runtime' not in sys.modules\n"
                            "assert 'tracy._capture' not in sys.modules\n"
                            "assert sorted(n for n in dir(tracy) if not n.startswith('_'))"
                            " == sorted(tracy.__all__ + ['MECHANISMS'])\n"
                            "with tracy.Profiler():\n"
                            "    pass\n")
    got = modules(tmp_path, "show.py")
    assert "tracy._runtime" in got and "tracy._capture" not in got
