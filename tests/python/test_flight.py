"""Flight recorder (python -m tracy --flight, tracy.dump()): only the last
part of the run is kept in memory and written on request, on an escaping
exception and at exit; the written part is a trace whose zones are whole or
marked as cut."""
import os

from conftest import PYTHON  # noqa: F401  (the interpreter under test)
from tracy import _tracy

CUT, UNCLOSED = 0x4, 0x2

PROGRAM = """
import os, signal, sys, time, tracy
def early(i): return i
def late(i): return i
def after(i): return i
def main():
    for i in range(600000): early(i)
    for i in range(1000): late(i)
    os.kill(os.getpid(), signal.SIGUSR1)
    out = sys.argv[1]              # the trace: the first dump's path
    for _ in range(1000):          # the dump is being written once it exists
        if os.path.exists(out): break
        time.sleep(0.01)
    for i in range(100): after(i)
    path = tracy.dump()
    print("DUMP", path)
    if os.environ.get("RAISE"): raise ValueError("boom")
main()
"""


def zones_by_name(path):
    t = _tracy._read_trace(path)
    assert t["complete"], path
    out = {}
    for z in t["zones"]:
        whole = "cut" if z.flags & CUT else "whole"
        if z.flags & UNCLOSED:
            whole += "+open"
        d = out.setdefault(z.name, {})
        d[whole] = d.get(whole, 0) + 1
    return out


def numbered(base, k):
    return base if k == 0 else base[:-6] + ".%d.tracy" % k


def test_signal_dump_holds_the_window_exactly(run_tracy, tmp_path):
    r = run_tracy(PROGRAM, "--flight", "1M", args=[str(tmp_path / "trace.tracy")])
    assert r.rc == 0, r.err
    base = r.path
    # 1: SIGUSR1, after the late calls; 2: tracy.dump(); 3: exit
    first, second, last = (zones_by_name(numbered(base, k)) for k in range(3))
    assert not os.path.exists(numbered(base, 3))
    assert first["late"] == {"whole": 1000}
    assert "after" not in first
    assert 1000 < first["early"]["whole"] < 600000  # the oldest fell out of 1 MiB
    assert first["early"].get("cut", 0) <= 1
    assert first["main"] == {"cut+open": 1}          # open at both ends of the window
    assert second["after"] == {"whole": 100} and second["late"] == {"whole": 1000}
    assert last["main"] == {"cut": 1}                # ended before exit, began earlier
    assert "DUMP %s" % numbered(base, 1) in r.out
    t = _tracy._read_trace(base)
    assert t["processes"][0]["status"] == -1         # a window: no end record


def test_escaping_exception_dumps(run_tracy, tmp_path):
    env = None
    from conftest import env_for_tests
    env = env_for_tests(RAISE="1")
    r = run_tracy(PROGRAM, "--flight", "30s", env=env, args=[str(tmp_path / "trace.tracy")])
    assert r.rc == 1 and "ValueError: boom" in r.err
    # signal, tracy.dump(), the exception, then exit (the exception's shutdown)
    dumps = [numbered(r.path, k) for k in range(4)]
    assert all(os.path.exists(p) for p in dumps[:3])
    third = zones_by_name(dumps[2])
    assert third["after"] == {"whole": 100}
    assert third["early"]["whole"] == 600000         # 30 s: everything is kept


def test_dump_outside_flight_mode_is_an_error(run_tracy):
    r = run_tracy("import tracy\ntry:\n    tracy.dump()\nexcept RuntimeError as e:\n"
                  "    print('ERR', e)\n")
    assert r.rc == 0 and "ERR tracy.dump(): not recording in flight" in r.out


FAMILY = """
import os, subprocess, sys
def child_work(i): return i
def parent_work(i): return i
pid = os.fork()
if pid == 0:
    for i in range(100): child_work(i)
    sys.exit(0)
os.waitpid(pid, 0)
subprocess.run([sys.executable, "-c", "def sub_work(i): return i\\nfor i in range(100): sub_work(i)\\n"],
               check=True)
for i in range(100): parent_work(i)
print("parent", os.getpid())
"""


def test_the_output_path_holds_the_program_even_when_a_child_dumps_first(run_tracy, tmp_path):
    # A forked child and a child process end (and dump) before the program:
    # the first of them took the -o path, the program's dump a number.
    r = run_tracy(FAMILY, "--flight", "30s")
    assert r.rc == 0, r.err
    parent = int(r.out.split()[-1])
    base = _tracy._read_trace(r.path)
    assert [p["pid"] for p in base["processes"]] == [parent]
    names = zones_by_name(r.path)
    assert names["parent_work"] == {"whole": 100} and "child_work" not in names
    children = [zones_by_name(numbered(r.path, k)) for k in (1, 2)]
    assert not os.path.exists(numbered(r.path, 3))
    assert sorted(n for c in children for n in ("child_work", "sub_work") if n in c) == \
        ["child_work", "sub_work"]
    for c in children:
        assert "parent_work" not in c
