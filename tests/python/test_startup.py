"""python -m tracy imports only what a run needs: every profiled child
process pays its start-up. The modules a script finds loaded under it are
those of plain `python -m` (runpy and what it loads) and the tracy package's
own; the heavy ones the profiler used to import (signal and its enum,
functools, threading) come only with the program or a mechanism that needs
them. Measured by what the interpreter holds, so load cannot move it."""
import json
import os
import subprocess

from conftest import PYTHON, Run, env_for_tests

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


# What a child's start under tracy may add to plain's: the package's runtime
# and tracy's own sitecustomize (which hides a program's: see below)
CHILD_OURS = {"tracy", "tracy._tracy", "tracy._runtime", "atexit", "gc", "sitecustomize"}
PARENT = ("import subprocess, sys\n"
          "p = subprocess.run([sys.executable, 'show.py'], capture_output=True, text=True)\n"
          "sys.stdout.write(p.stdout); sys.stderr.write(p.stderr)\n"
          "sys.exit(p.returncode)\n")


def test_a_child_starts_with_nothing_of_the_lookup(tmp_path):
    """A profiled child process loads what plain Python loads and the
    runtime: finding the sitecustomize tracy's hides uses the import
    system's own finders (no importlib.util, importlib.machinery, warnings
    or types, which an unprofiled start does not load)."""
    write_scripts(tmp_path)
    (tmp_path / "parent.py").write_text(PARENT)
    plain = modules(tmp_path, "show.py")
    child = modules(tmp_path, "-m", "tracy", "-o", str(tmp_path / "t.tracy"), "parent.py")
    assert child - plain <= CHILD_OURS, sorted(child - plain - CHILD_OURS)


def test_a_childs_own_sitecustomize_runs_recorded(tmp_path):
    """A program's sitecustomize, hidden by tracy's in a child, still runs
    there, recorded as the program's code; tracy's lookup of it is not
    recorded (no zone of the import system's finders, of posixpath, of
    tracy's package at the child's start)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os\n"
        "def site_setup():\n"
        "    os.environ['SITE_SEEN'] = 'yes'\n"
        "site_setup()\n")
    (tmp_path / "child.py").write_text(
        "import os\n"
        "def child_work():\n"
        "    return os.environ.get('SITE_SEEN')\n"
        "print('child', child_work())\n")
    (tmp_path / "parent.py").write_text(PARENT.replace("show.py", "child.py"))
    env = env_for_tests()
    env["PYTHONPATH"] += os.pathsep + str(site)
    plain = subprocess.run([PYTHON, "parent.py"], capture_output=True, text=True,
                           timeout=120, cwd=str(tmp_path), env=env)
    assert plain.stdout == "child yes\n", plain.stderr
    out = str(tmp_path / "t.tracy")
    p = subprocess.run([PYTHON, "-m", "tracy", "-o", out, "parent.py"], capture_output=True,
                       text=True, timeout=120, cwd=str(tmp_path), env=env)
    assert p.returncode == 0 and p.stdout == plain.stdout, p.stderr
    r = Run(p, out)
    r.assert_balanced()
    child = [z for z in r.zones if z.process == 2]
    names = {z.name for z in child}
    assert {"site_setup", "child_work"} <= names, sorted(names)
    roots = {z.name for z in child if z.depth == 0}
    tracy_own = {"PathFinder.find_spec", "abspath", "dirname", "_find_and_load"}
    assert not roots & tracy_own, sorted(roots)
