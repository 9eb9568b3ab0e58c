"""The same exact zone counts on every interpreter (make check runs this file
under each, see tests/pymatrix.sh) and in every mode: the frame-evaluation
hook (default), the profile function (--trace-c) and the trace function (-l).
A generator or coroutine zone is one run of its body, as cProfile counts."""
import pytest

from conftest import PYTHON

MODES = [[], ["--trace-c"], ["-l"]]

WHOLE = """
import asyncio, subprocess, sys, threading
import tracy

def rec(n):
    return 0 if n == 0 else 1 + rec(n - 1)

def gen(n):
    for i in range(n):
        yield i

async def job(i):
    await asyncio.sleep(0)
    return i

async def amain():
    return await asyncio.gather(*(job(i) for i in range(3)))

def boom():
    raise KeyError(1)

class Point:
    def __init__(self, x):
        self.x = x

def work():
    return rec(5)

rec(10)
assert sum(gen(4)) == 6
assert asyncio.run(amain()) == [0, 1, 2]
for _ in range(3):
    try:
        boom()
    except KeyError:
        pass
pts = [Point(i) for i in range(40)]
ts = [threading.Thread(target=work) for _ in range(2)]
for t in ts:
    t.start()
for t in ts:
    t.join()
tracy.signpost("phase", "one")
subprocess.run([sys.executable, "-c", "def child():\\n    pass\\nchild()\\n"], check=True)
"""


@pytest.mark.parametrize("mode", MODES, ids=["hook", "trace-c", "lines"])
def test_exact_counts_whole_run(run_tracy, mode):
    r = run_tracy(WHOLE, *mode)
    assert r.rc == 0, r.err
    counts = {n: r.count(n) for n in
              ("rec", "gen", "job", "amain", "boom", "Point.__init__", "work", "child")}
    assert counts == {"rec": 11 + 2 * 6, "gen": 5, "job": 6, "amain": 2, "boom": 3,
                      "Point.__init__": 40, "work": 2, "child": 1}, PYTHON
    assert [(s[3], s[4]) for s in r.trace["signposts"]] == [("phase", "one")]
    assert len(r.trace["processes"]) == 2
    r.assert_balanced()


PARTIAL = """
import threading
import tracy

def rec(n):
    return 0 if n == 0 else 1 + rec(n - 1)

def work():
    return rec(3)

go = threading.Event()
def early():
    go.wait()
    work()

t0 = threading.Thread(target=early)
t0.start()                  # running before recording begins
rec(2)                      # outside the region
with tracy.Profiler():
    rec(4)
    go.set()
    t0.join()
    t1 = threading.Thread(target=work)
    t1.start()
    t1.join()
rec(2)                      # outside again
"""


@pytest.mark.parametrize("mode", MODES, ids=["hook", "trace-c", "lines"])
def test_exact_counts_partial_region_and_threads(run_tracy, mode):
    r = run_tracy(PARTIAL, "-p", *mode)
    assert r.rc == 0, r.err
    # early() began before the region: no zone; what it calls inside does
    counts = {n: r.count(n) for n in ("rec", "work", "early")}
    assert counts == {"rec": 5 + 4 + 4, "work": 2, "early": 0}, PYTHON
    r.assert_balanced()


def test_missing_build_for_this_interpreter_is_said_in_one_line(tmp_path):
    """A package holding other interpreters' extensions only: the import error
    names this interpreter, not a "circular import"."""
    import os
    import shutil
    import subprocess
    from conftest import PYDIR
    pkg = tmp_path / "tracy"
    shutil.copytree(os.path.join(PYDIR, "tracy"), str(pkg),
                    ignore=shutil.ignore_patterns("_tracy.*", "__pycache__"))
    (pkg / "_tracy.cpython-399-x86_64-linux-gnu.so").write_bytes(b"")
    p = subprocess.run([PYTHON, "-c", "import tracy"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(tmp_path)), timeout=60)
    assert p.returncode == 1
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: tracy: not built for Python 3."), p.stderr
    assert ".cpython-399-x86_64-linux-gnu.so" in last and "circular" not in p.stderr
