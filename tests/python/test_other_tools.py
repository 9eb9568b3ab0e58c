"""Other tools in the traced process (tests/python/others/): cProfile, pdb,
sys.settrace/setprofile and sys.monitoring users, and the reference counts
the program sees. Each program runs unprofiled and under python -m tracy;
both runs must print the same and end with the same status, and the trace
must be complete and balanced.

Known differences are listed in KNOWN (strict xfail: a fix shows up)."""
import difflib
import os
import shutil
import subprocess
import sys

import pytest

from conftest import PYTHON, Run, env_for_tests

HERE = os.path.dirname(os.path.abspath(__file__))
OTHERS = os.path.join(HERE, "others")
LIMIT = 90


def _version():
    out = subprocess.run([PYTHON, "-c", "import sys; print(*sys.version_info[:2])"],
                         capture_output=True, text=True, timeout=60).stdout.split()
    return tuple(int(x) for x in out)


VERSION = _version()

# program -> the tracy options it runs with
CASES = [
    ("cprofile_inside.py", []),
    ("cprofile_inside.py", ["--trace-c"]),
    ("pdb_stdin.py", []),
    ("pdb_init.py", []),
    ("settrace_events.py", []),
    ("settrace_async_for.py", []),
    ("monitoring_tools.py", []),
    ("refcounts.py", []),
    ("refcounts.py", ["--trace-c"]),
    ("unseen_calls.py", []),
    ("deep_recursion.py", []),
    ("recursion_limits.py", []),
    ("atexit_child.py", []),
]
# the same under the exact mechanism (no frame-evaluation function)
EXACT = ["--mechanism", "exact"]
CASES += [(name, options + EXACT) for name, options in CASES]
# the hook kept whatever tool begins (auto leaves it, 3.12+)
CASES += [(name, ["--mechanism", "hook"]) for name in
          ("settrace_async_for.py", "monitoring_tools.py", "settrace_events.py")]

# before 3.12 the exact mechanism is hook.c's profile mode
ONE_PROFILE = ("before 3.12 the exact mechanism is a profile function, and there is one per "
               "thread: the program's (cProfile's, sys.setprofile's) replaces it, and the "
               "zones open then never end (the hook, auto's choice there, keeps working)")

# (program, options) -> (versions affected, why)
KNOWN = {
    ("settrace_async_for.py", ""): (
        lambda v: v >= (3, 13),
        "3.13: with a frame-evaluation hook SEND is not inlined and CPython reports the "
        "awaited coroutine's StopIteration to a tracer twice (on 3.12 auto leaves the "
        "hook when a trace function is set; on 3.13 it keeps it: pdb_init.py)"),
    ("settrace_async_for.py", "--mechanism hook"): (
        lambda v: v >= (3, 12),
        "3.12+: with a frame-evaluation hook SEND is not inlined and CPython reports the "
        "awaited coroutine's StopIteration to a tracer twice"),
    ("monitoring_tools.py", "--mechanism hook"): (
        lambda v: v >= (3, 12),
        "3.12+: with a frame-evaluation hook CPython calls Python functions through C "
        "and tells a sys.monitoring tool of their returns as C_RETURN, and a generator "
        "that ends a for loop raises no STOP_ITERATION (auto leaves the hook)"),
    ("cprofile_inside.py", "--trace-c"): (
        lambda v: v < (3, 12),
        "before 3.12 there is one profile function per thread: cProfile's replaces "
        "the one --trace-c records with, and the zones open then are never ended"),
    ("pdb_init.py", "--mechanism exact"): (
        lambda v: v >= (3, 13),
        "3.13.0: while any sys.monitoring tool has PY_START, PY_RESUME, PY_RETURN, "
        "PY_YIELD or LINE events set (cProfile and coverage too), pdb's set_trace() "
        "stops one line after its own (measured with a Python tool of each event "
        "alone; PY_UNWIND, PY_THROW and CALL do not do it)"),
    ("recursion_limits.py", "--mechanism exact"): (
        lambda v: v[:2] == (3, 12),
        "3.12: a sys.monitoring callback is a call CPython makes from C, charged to "
        "the C recursion budget; at the budget's end a recursion through C gets "
        "RecursionError sooner under any tool (747 for 749 here; a Python tool with "
        "PY_START and PY_RETURN: 748)"),
    ("pdb_stdin.py", "--mechanism exact"): (
        lambda v: v >= (3, 13),
        "3.13.0: while any sys.monitoring tool has PY_START, PY_RESUME, PY_RETURN, "
        "PY_YIELD or LINE events set, pdb's set_trace() stops one line after its own"),
}
for _key in [("cprofile_inside.py", "--mechanism exact"),
             ("cprofile_inside.py", "--trace-c --mechanism exact"),
             ("settrace_events.py", "--mechanism exact"),
             ("unseen_calls.py", "--mechanism exact")]:
    KNOWN[_key] = (lambda v: v < (3, 12), ONE_PROFILE)


def run_pair(name, options, tmp_path):
    path = str(tmp_path / name)
    shutil.copy(os.path.join(OTHERS, name), path)
    env = env_for_tests()
    plain = subprocess.run([PYTHON, path], capture_output=True, text=True, timeout=LIMIT,
                           env=env, cwd=str(tmp_path))
    out = str(tmp_path / "trace.tracy")
    traced = subprocess.run([PYTHON, "-m", "tracy", "-o", out] + options + [path],
                            capture_output=True, text=True, timeout=LIMIT, env=env,
                            cwd=str(tmp_path))
    return plain, Run(traced, out)


@pytest.mark.parametrize("name,options", CASES,
                         ids=["%s%s" % (n[:-3], "".join(o)) for n, o in CASES])
def test_other_tool(name, options, tmp_path, request):
    known = KNOWN.get((name, " ".join(options)))
    if known and known[0](VERSION):
        request.applymarker(pytest.mark.xfail(reason=known[1], strict=True))
    plain, run = run_pair(name, options, tmp_path)
    assert plain.returncode == 0, plain.stderr
    said = [ln for ln in run.err.splitlines()
            if ln.startswith("tracy:") and not ln.startswith("tracy: trace written")]
    assert said == [], run.err
    run.assert_balanced()
    assert run.rc == plain.returncode, run.err
    assert run.out == plain.stdout, "".join(difflib.unified_diff(
        plain.stdout.splitlines(True), run.out.splitlines(True), "plain", "traced"))


def test_child_recording_outlives_its_atexit_introspection(tmp_path):
    """atexit._run_exitfuncs() run by a profiled child runs the program's
    callbacks, not the end of its recording: its later calls are recorded
    (before, the child's last 354 calls of f were missing, uncounted)."""
    plain, run = run_pair("atexit_child.py", [], tmp_path)
    assert run.out == plain.stdout
    run.assert_balanced()
    assert len(run.trace["processes"]) == 2
    assert sum(1 for z in run.zones if z.name.split(" ")[0] == "f") == 3 * 177, \
        sorted(set(run.names()))


@pytest.mark.parametrize("options", [[], EXACT], ids=["hook", "exact"])
def test_recursion_near_the_stack_end(options, tmp_path):
    """100,000 calls deep in a thread with a 1 MiB stack. From 3.11 plain
    Python evaluates them inline, on no C stack, and returns; through a
    frame-evaluation hook each takes C stack, and in the stack's last margin
    the hook goes on on a segment of its own (pycompat.h): as deep as plain,
    never SIGSEGV. Without a hook they run as plain. Either way the zones
    nested past the format's limit are dropped and counted. Before 3.11
    plain Python itself recurses on the C stack and dies by SIGSEGV: the
    traced run dies the same way."""
    path = str(tmp_path / "deep_recursion.py")
    shutil.copy(os.path.join(OTHERS, "deep_recursion.py"), path)
    env = env_for_tests()
    plain = subprocess.run([PYTHON, path, "small"], capture_output=True, text=True,
                           timeout=LIMIT, env=env, cwd=str(tmp_path))
    out = str(tmp_path / "trace.tracy")
    traced = Run(subprocess.run([PYTHON, "-m", "tracy", "-o", out] + options + [path, "small"],
                                capture_output=True, text=True, timeout=LIMIT, env=env,
                                cwd=str(tmp_path)), out)
    if VERSION < (3, 11):
        assert plain.returncode == traced.rc == -11, (plain.stderr, traced.err)
        assert plain.stdout == traced.out == "ok 15000\n"
        return
    assert plain.returncode == 0 and plain.stdout == "ok 15000\nok 100000\n", plain.stderr
    assert traced.rc == 0, traced.err
    traced.assert_balanced()
    lost = sum(x.count for x in traced.trace["lost"])
    # as deep as plain, and the zones past the format's nesting limit
    # (65,536, less the client's room) dropped and counted
    assert traced.out == plain.stdout
    assert lost > 2 * (100001 - 65536)
    assert traced.count("depth") + lost // 2 == 15001 + 100001


def test_cprofile_keeps_its_id(tmp_path):
    """cProfile's tool id (sys.monitoring's PROFILER_ID) is free in a traced
    program, and the program's functions are still recorded."""
    plain, run = run_pair("cprofile_inside.py", [], tmp_path)
    assert run.rc == 0, run.err
    assert run.count("leaf") == 3 * 5 + 2 and run.count("branch") == 4


def test_sys_monitoring_is_left_to_the_program(run_tracy):
    """The hook takes no sys.monitoring tool id (3.13's inline calls of a
    simple __init__ are kept visible to it otherwise): the program finds
    every id free, with no events, and may take all six, while every
    __init__ call is recorded."""
    if VERSION < (3, 12):
        pytest.skip("sys.monitoring is 3.12+")
    r = run_tracy("""
        import sys
        m = sys.monitoring
        class A:
            def __init__(self):
                self.x = 1
        def f():
            pass
        for _ in range(20):
            A(); f()
        print([m.get_tool(i) for i in range(6)], [m.get_events(i) for i in range(6)])
        for i in range(6):
            m.use_tool_id(i, "t%d" % i)
        for _ in range(20):
            A(); f()
        print([m.get_tool(i) for i in range(6)])
    """)
    assert r.rc == 0, r.err
    assert r.out == ("[None, None, None, None, None, None] [0, 0, 0, 0, 0, 0]\n"
                     "['t0', 't1', 't2', 't3', 't4', 't5']\n")
    assert "tracy: " not in r.err.replace("tracy: trace written", ""), r.err
    r.assert_balanced()
    assert r.count("A.__init__") == 40 and r.count("f") == 40


@pytest.mark.parametrize("name,run", [("coverage_rows.py", ["-m", "coverage", "run"]),
                                      ("coverage_atexit.py", [])])
def test_coverage_reports_the_same_rows(tmp_path, name, run):
    """coverage.py measuring a program (threads, a fork, a failed exec, a
    subprocess with a preexec_fn, a signal handler set and put back; or
    started by the program and stopped at exit) under python -m tracy
    reports what it reports plain: no row of the profiler's files (its work
    in the program's window is C, pyhook/unseen.c, and its end of the
    program runs in a frame older than the tracer)."""
    env = env_for_tests()
    if subprocess.run([PYTHON, "-c", "import coverage"], env=env, capture_output=True,
                      timeout=60).returncode:
        pytest.skip("no coverage.py for %s (Debian's python3-coverage serves "
                    "/usr/bin/python3)" % PYTHON)
    prog = str(tmp_path / name)
    shutil.copy(os.path.join(OTHERS, name), prog)
    reports = []
    for how, pre in (("plain", []), ("traced", ["-m", "tracy", "-o", "t.tracy"])):
        env_run = dict(env, COVERAGE_FILE=str(tmp_path / (how + ".cov")))
        done = subprocess.run([PYTHON] + pre + run + [prog], capture_output=True, text=True,
                              timeout=LIMIT, env=env_run, cwd=str(tmp_path))
        assert done.returncode == 0, done.stderr
        rep = subprocess.run([PYTHON, "-m", "coverage", "report", "-m"], capture_output=True,
                             text=True, timeout=LIMIT, env=env_run, cwd=str(tmp_path))
        assert rep.returncode == 0, rep.stderr
        reports.append((done.stdout, rep.stdout))
    assert name in reports[0][1]
    assert reports[1] == reports[0]


NUMPY = """
import numpy as np
a = np.zeros(3)
a.resize(5)
np.zeros(3).resize(5)
print(a.shape, np.zeros(2).resize(4))
"""


@pytest.mark.parametrize("options", [[], ["--trace-c"], EXACT, ["--trace-c"] + EXACT],
                         ids=["default", "trace-c", "exact", "trace-c-exact"])
def test_numpy_resize(options, run_tracy, tmp_path):
    """NumPy's reference check (ndarray.resize): as unprofiled."""
    env = env_for_tests()
    if subprocess.run([PYTHON, "-c", "import numpy"], env=env, capture_output=True,
                      timeout=60).returncode:
        pytest.skip("no numpy for %s (tools/deps.sh installs python3-numpy for "
                    "/usr/bin/python3)" % PYTHON)
    r = run_tracy(NUMPY, *options)
    assert (r.rc, r.out) == (0, "(5,) None\n"), r.err
    r.assert_balanced()


# An array made by the caller and resized by the function it is passed to:
# the argument's references are the callee's and the resize's own
NUMPY_ARG = """
import numpy as np
def grow(a):
    a.resize(5)
    return a.shape
def make():
    return grow(np.zeros(3))
try:
    print(make())
except ValueError as e:
    print("ValueError:", str(e).split(chr(10))[0])
"""

@pytest.mark.parametrize("options", [[], ["--trace-c"], EXACT, ["--trace-c"] + EXACT],
                         ids=["default", "trace-c", "exact", "trace-c-exact"])
def test_numpy_resize_of_an_argument(options, run_tracy, tmp_path):
    """A function that resizes the array it was passed (NumPy's reference
    check sees the argument's references): as unprofiled. Under the hook
    (3.11+) the caller's references to the arguments are given up for the
    call (pyhook/argref.c)."""
    env = env_for_tests()
    plain = subprocess.run([PYTHON, "-c", NUMPY_ARG], env=env, capture_output=True, text=True,
                           timeout=60)
    if plain.returncode and "No module named 'numpy'" in plain.stderr:
        pytest.skip("no numpy for %s (tools/deps.sh installs python3-numpy for "
                    "/usr/bin/python3)" % PYTHON)
    assert (plain.returncode, plain.stdout) == (0, "(5,)\n"), plain.stderr
    r = run_tracy(NUMPY_ARG, *options)
    assert (r.rc, r.out) == (0, plain.stdout), r.err
    r.assert_balanced()
