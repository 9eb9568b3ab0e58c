"""The two recording mechanisms (python -m tracy --mechanism hook|exact)
record the same zones: deterministic programs (shapes of
tests/python/shapes/ and bench/workloads) run under each, and the call
trees (names, counts, nesting, per thread) must be identical. The exact
mechanism sets no frame-evaluation function: the interpreter runs the
program as unprofiled (reference counts here; other tools in
test_other_tools.py, which runs under TRACY_MECHANISM too)."""
import os
import subprocess

import pytest

from conftest import PYTHON, Run, env_for_tests

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHAPES = os.path.join(HERE, "shapes")
WORKLOADS = os.path.join(ROOT, "bench", "workloads")
LIMIT = 120

# programs whose call tree does not depend on timing, with their options.
# (Not deep_recursion.py: the call that CPython refuses with RecursionError
# gets a zone from the hook, which is entered before the limit is checked,
# and none from the exact mechanism, as its body never starts.)
PROGRAMS = [
    (os.path.join(SHAPES, "generators_coroutines.py"), []),
    (os.path.join(SHAPES, "exception_escapes.py"), []),
    (os.path.join(SHAPES, "c_callbacks.py"), []),
    (os.path.join(SHAPES, "sys_exit.py"), []),
    (os.path.join(WORKLOADS, "fib.py"), []),
    (os.path.join(WORKLOADS, "mixed.py"), []),
    (os.path.join(WORKLOADS, "gen.py"), []),
    (os.path.join(SHAPES, "exception_escapes.py"), ["--max-depth", "3"]),
    (os.path.join(SHAPES, "generators_coroutines.py"), ["--label", "args,line"]),
]


def _version():
    out = subprocess.run([PYTHON, "-c", "import sys; print(*sys.version_info[:2])"],
                         capture_output=True, text=True, timeout=60).stdout.split()
    return tuple(int(x) for x in out)


VERSION = _version()


def record(path, options, mechanism, tmp_path):
    out = str(tmp_path / ("%s.tracy" % mechanism))
    env = env_for_tests(BENCH_MIXED_ROUNDS="1", BENCH_GEN_ROUNDS="2")
    env.pop("TRACY_MECHANISM", None)
    proc = subprocess.run([PYTHON, "-m", "tracy", "-o", out, "--mechanism", mechanism]
                          + options + [path], capture_output=True, text=True,
                          timeout=LIMIT, env=env, cwd=str(tmp_path))
    return Run(proc, out)


def call_trees(run, path):
    """{(process, thread): [(depth, name, kind, file), ...] in begin order}, of
    the zones inside the program's own <module> zone: what the interpreter
    runs at exit (threading._shutdown once the profile mechanism imported
    threading, atexit handlers) is not the program's."""
    base = os.path.basename(path)
    spans = [(z.begin_ts, z.end_ts) for z in run.zones
             if z.depth == 0 and z.name.startswith("<module>") and os.path.basename(z.file) == base]
    trees = {}
    for z in sorted(run.zones, key=lambda z: (z.process, z.thread, z.begin_ts, z.depth)):
        if any(b <= z.begin_ts and z.end_ts <= e for b, e in spans):
            trees.setdefault((z.process, z.thread), []).append((z.depth, z.name, z.kind, z.file))
    # the import system's own calls depend on its caches (a folder's
    # listing is read again when its mtime changed): not compared
    return without(trees, lambda name, kind, file: file.startswith(
        ("<frozen importlib", "<frozen zipimport")))


def without(trees, drop):
    """The trees without the zones whose (name, kind) `drop` says, their
    children one level up."""
    out = {}
    for key, zones in trees.items():
        stack = []  # depths of the zones kept that are open
        for depth, name, kind, file in zones:
            while stack and stack[-1] >= depth:
                stack.pop()
            if not drop(name, kind, file):
                out.setdefault(key, []).append((len(stack), name, kind, file))
                stack.append(depth)
    return out


def python_only(trees):
    """The trees of Python function zones alone."""
    return without(trees, lambda name, kind, file: kind != 1)


def hook_misses(name, kind, file):
    """Frames CPython pushes inline past a frame-evaluation function: 3.13
    a simple __init__ (CALL_ALLOC_AND_ENTER_INIT; the hook sees it once it
    has seen its code, hook.c mon_watch), 3.11.2 a __getitem__
    (BINARY_SUBSCR_GETITEM; Debian's 3.11.2, not 3.11.7). The exact
    mechanism sees every one."""
    n = name.split(" ")[0]
    return kind == 1 and ((VERSION >= (3, 13) and n.endswith(".__init__")) or
                          (VERSION == (3, 11) and n.endswith(".__getitem__")))


def same_trees(a, b):
    assert sum(len(t) for t in a.values()) > 0
    assert sorted(a) == sorted(b)
    for key in a:
        diff = next((i for i, (x, y) in enumerate(zip(a[key], b[key])) if x != y),
                    min(len(a[key]), len(b[key])))
        assert a[key] == b[key], (key, len(a[key]), len(b[key]), a[key][diff:diff + 5],
                                  b[key][diff:diff + 5])


def count(trees, pred):
    return sum(1 for t in trees.values() for _, name, kind, file in t if pred(name, kind, file))


@pytest.mark.parametrize("path,options", PROGRAMS,
                         ids=["%s%s" % (os.path.basename(p)[:-3], "".join(o))
                              for p, o in PROGRAMS])
def test_same_call_tree(path, options, tmp_path):
    hook = record(path, options, "hook", tmp_path)
    exact = record(path, options, "exact", tmp_path)
    assert (exact.rc, exact.out) == (hook.rc, hook.out), exact.err
    hook.assert_balanced()
    exact.assert_balanced()
    a, b = call_trees(hook, path), call_trees(exact, path)
    assert count(b, hook_misses) >= count(a, hook_misses)
    same_trees(without(a, hook_misses), without(b, hook_misses))


# (options, program, {zone: count}) -- C calls (--trace-c) and lines (-l):
# with those options the hook mechanism records through PyEval_SetProfile or
# PyEval_SetTrace, whose events differ from sys.monitoring's on 3.12+ (a C
# call ended by StopIteration is not reported; code imported inside a traced
# import is not seen): the exact mechanism's Python zones are compared with
# the hook's default run, its C and line zones with the program's counts.
EXTRA = [
    (["--trace-c"], "generators_coroutines.py",
     {"generator.send": 15, "coroutine.send": 1, "seen": 46}),
    (["-l"], "generators_coroutines.py", {"gen:10": 30, "echo:17": 16, "seen:5": 46}),
]


@pytest.mark.parametrize("options,name,counts", EXTRA, ids=[o[0] for o, _, _ in EXTRA])
def test_exact_c_calls_and_lines(options, name, counts, tmp_path):
    path = os.path.join(SHAPES, name)
    hook = record(path, [], "hook", tmp_path)
    exact = record(path, options, "exact", tmp_path)
    assert (exact.rc, exact.out) == (hook.rc, hook.out), exact.err
    exact.assert_balanced()
    a, b = call_trees(hook, path), python_only(call_trees(exact, path))
    same_trees(without(a, hook_misses), without(b, hook_misses))
    assert {n: exact.count(n) for n in counts} == counts


def test_exact_refcounts_as_plain_lines(run_tracy, tmp_path):
    """sys.getrefcount inside a traced function says what it says plain,
    with line zones too (tests/python/others/refcounts.py; test_other_tools
    runs it with the other options)."""
    with open(os.path.join(HERE, "others", "refcounts.py")) as f:
        source = f.read()
    (tmp_path / "plain.py").write_text(source)
    plain = subprocess.run([PYTHON, "plain.py"], capture_output=True, text=True,
                           timeout=LIMIT, cwd=str(tmp_path), env=env_for_tests())
    r = run_tracy(source, "--mechanism", "exact", "-l")
    assert (r.rc, r.out) == (0, plain.stdout), r.err
    # (arg: once at the top, 12 times in shapes(); O.m: o.m() and bound())
    assert r.count("arg") == 13 and r.count("O.m") == 2 and r.count("arg:13") == 13
    r.assert_balanced()


AUTO = """
import sys
import tracy
from tracy import _tracy
%s
with tracy.Profiler():
    print(_tracy.mode())
"""


@pytest.mark.parametrize("other", [
    "", "sys.settrace(lambda *a: None)", "sys.setprofile(lambda *a: None)",
    "sys.monitoring.use_tool_id(1, 'cov')"], ids=["alone", "settrace", "setprofile", "monitoring"])
def test_auto(other, run_tracy):
    """auto (the default): the hook, unless another tool is active when
    recording starts: then, on 3.12, the exact mechanism; on 3.13, only
    for a sys.monitoring tool (a trace function there is pdb's or
    coverage's, and 3.13.0's pdb stops late under any PY_START tool);
    before 3.12 never (a profile function would displace that tool's)."""
    if "monitoring" in other and VERSION < (3, 12):
        pytest.skip("sys.monitoring comes with 3.12")
    r = run_tracy(AUTO % other, "-p")
    if "monitoring" in other:
        exact = True
    else:
        exact = other != "" and (3, 12) <= VERSION < (3, 13)
    assert (r.rc, r.out) == (0, "%d\n" % (4 if exact else 1)), r.err


def test_bad_mechanism(run_tracy):
    r = run_tracy("print(1)", "--mechanism", "fast")
    assert r.rc == 2 and "--mechanism (or TRACY_MECHANISM) takes auto, hook or exact" in r.err
    r = run_tracy("print(1)", env=env_for_tests(TRACY_MECHANISM="fast"))
    assert r.rc == 2 and "takes auto, hook or exact, not 'fast'" in r.err


def test_options_mechanism(tmp_path):
    """tracy.Options(mechanism=) for a trace window of the program's own."""
    prog = tmp_path / "own.py"
    prog.write_text(
        "import sys, tracy\n"
        "def arg(o):\n"
        "    return sys.getrefcount(o)\n"
        "o = object()\n"
        "plain = arg(o)\n"
        "with tracy.trace(sys.argv[1], mechanism='exact', quiet=True) as t:\n"
        "    print(arg(o) == plain, tracy._tracy.mode() in (2, 4))\n"
        "print(t.result.events > 0)\n"
        "try:\n"
        "    tracy.Options(mechanism='fast')._settings()\n"
        "except ValueError as e:\n"
        "    print(e)\n")
    out = str(tmp_path / "own.tracy")
    r = subprocess.run([PYTHON, str(prog), out], capture_output=True, text=True,
                       timeout=LIMIT, env=env_for_tests(), cwd=str(tmp_path))
    assert (r.returncode, r.stdout) == (
        0, "True True\nTrue\ntracy: mechanism takes auto, hook or exact, not 'fast'\n"), r.stderr
    run = Run(r, out)
    # the module's code was running when the window opened: a cut zone (kind
    # 17), open at the stop; every zone begun in the window ended
    flagged = [(z.name, z.flags) for z in run.zones if z.flags]
    assert flagged == [("<module>", 0x4 | 0x2)], flagged
    assert run.count("arg") == 1  # the call inside the window


def test_exact_no_tool_id_left(run_tracy):
    """Tool ids 3 and 4 taken by the program before recording starts: the
    exact mechanism says so once and records through a profile function."""
    if VERSION < (3, 12):
        pytest.skip("the exact mechanism uses sys.monitoring from 3.12")
    r = run_tracy("""
        import sys
        m = sys.monitoring
        m.use_tool_id(3, "a"); m.use_tool_id(4, "b")
        import tracy
        from tracy import _tracy
        def f(o):
            return sys.getrefcount(o)
        o = object()
        plain = f(o)
        with tracy.Profiler():
            for _ in range(20):
                same = f(o) == plain
            mode = _tracy.mode()
        print(m.get_tool(3), m.get_tool(4), mode, same)
    """, "-p", "--mechanism", "exact")
    assert r.rc == 0, r.err
    assert r.out == "a b 2 True\n"
    assert r.err.count("tool ids 3 and 4 are taken: the exact mechanism records "
                       "through PyEval_SetProfile instead") == 1, r.err
    r.assert_balanced()
    assert r.count("f") == 20
