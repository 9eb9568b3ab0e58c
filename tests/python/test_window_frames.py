"""Calls already running when a trace window opens (issue 25): every thread's
recorded frames on its stack are in the trace as cut zones (FORMAT.md, block
kind 17) that begin where the window begins, enclose what the window
recorded under them at the right depth, and end when those frames return
(or are flagged unclosed at the stop), in every recording mode; tracy-sql,
tracy-export -f pstats and tracy-serve show them so."""
import json
import os
import pstats
import subprocess
import textwrap
import urllib.request

import pytest

from conftest import BIN, PYTHON, env_for_tests
from tracy import _tracy

# end flags of a zone (trace.h LT_EVF_*)
UNCLOSED, CUT = 0x2, 0x4

# main() -> loop() -> work() in two threads; the main thread opens the
# window inside its loop while the other thread waits inside its own; that
# loop returns inside the window, its main() calls work again.
PROGRAM = """
import sys, threading, tracy
def work(i):
    return sum(range(50))
go, opened, back, end = (threading.Event() for _ in range(4))
def loop(who):
    for i in range(3):
        work(i)
    if who == "main":
        go.wait()
        with tracy.trace(sys.argv[1], quiet=True, %s):
            work(-1)
            opened.set()
            back.wait()
            work(-2)
    else:
        go.set()
        opened.wait()
        work(-3)
def main(who):
    loop(who)
    if who != "main":
        work(-4)
        back.set()
        end.wait()
def run():
    main("t")
t = threading.Thread(target=run)
t.start()
main("main")
end.set()
t.join()
print("done")
"""


# every program below starts with this
PRELUDE = """import os, sys, threading, time, tracy
def work(*args):
    return 1
"""


def run(tmp_path, source, out):
    script = tmp_path / "prog.py"
    script.write_text(PRELUDE + textwrap.dedent(source))
    env = env_for_tests()
    env.pop("TRACY_PORT", None)
    proc = subprocess.run([PYTHON, str(script), str(out)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    return proc


def python_zones(path):
    t = _tracy._read_trace(str(path))
    assert t["complete"], path
    return [z for z in t["zones"] if z.kind == 1]  # kind 1: Python functions


def one(zones, name):
    found = [z for z in zones if z.name == name]
    assert len(found) == 1, (name, found)
    return found[0]


def inside(z, outer, step=1):
    """z lies in outer, `step` levels below it."""
    return ((z.process, z.thread) == (outer.process, outer.thread) and z.depth == outer.depth + step and
            outer.begin_ts <= z.begin_ts and z.end_ts <= outer.end_ts)


@pytest.mark.parametrize("mode", ["", "trace_c=True", "lines=True"],
                         ids=["hook", "profile", "lines"])
def test_running_calls_of_two_threads_are_cut_zones_around_the_window(tmp_path, mode):
    out = tmp_path / "w.tracy"
    assert run(tmp_path, PROGRAM % mode, out).stdout == "done\n"
    zs = python_zones(out)
    # under -l a line zone of the caller lies between a call and its caller
    step = 2 if mode == "lines=True" else 1
    start = min(z.begin_ts for z in zs)
    cut = [z for z in zs if z.flags & CUT]
    # every cut zone begins where the window begins; nothing begins before
    assert cut and all(z.begin_ts == start for z in cut)
    assert all(z.begin_ts > start for z in zs if not z.flags & CUT)

    # the main thread: <module> -> main -> loop, open from start to stop
    t_main = one(zs, "<module>")[0:2]
    mine = [z for z in zs if (z.process, z.thread) == t_main]
    outer = [one(mine, n) for n in ("<module>", "main", "loop")]
    assert [(z.depth, z.flags) for z in outer] == [(0, CUT | UNCLOSED), (1, CUT | UNCLOSED),
                                              (2, CUT | UNCLOSED)]
    work = [z for z in mine if z.name == "work"]
    assert len(work) == 2 and all(inside(z, outer[2], step) and z.flags == 0 for z in work)

    # the other thread: its loop returns inside the window and ends its zone
    # there; main's next call is a sibling of that loop, after it
    t_other = one(zs, "run")[0:2]
    other = [z for z in zs if (z.process, z.thread) == t_other]
    run_z, main_z, loop_z = (one(other, n) for n in ("run", "main", "loop"))
    assert run_z.flags == main_z.flags == CUT | UNCLOSED
    assert loop_z.flags == CUT and inside(main_z, run_z) and inside(loop_z, main_z)
    assert loop_z.end_ts < main_z.end_ts
    w3, w4 = sorted((z for z in other if z.name == "work"), key=lambda z: z.begin_ts)
    assert inside(w3, loop_z, step) and inside(w4, main_z, step) and w4.begin_ts >= loop_z.end_ts
    # the wait it was in when the window opened ended there too
    wait = [z for z in other if z.name == "Event.wait" and z.flags & CUT]
    assert len(wait) == 1 and wait[0].flags == CUT and wait[0].depth > loop_z.depth
    assert wait[0].end_ts <= w3.begin_ts
    # none of the calls made before the window is in it
    assert len([z for z in zs if z.name == "work"]) == 4


def sql(path, query):
    p = subprocess.run([os.path.join(BIN, "tracy-sql"), "--json", str(path), query],
                       capture_output=True, text=True, timeout=60, env=env_for_tests())
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_tools_show_the_cut_zones(tmp_path):
    out = tmp_path / "w.tracy"
    run(tmp_path, PROGRAM % "", out)
    # tracy-sql: flags 4 (cut), depth and parent as in the program
    rows = sql(out, "select s.id, s.name, s.depth, s.parent_id, s.flags, s.ts from slice s "
                    "where s.name in ('<module>', 'main', 'loop', 'work') order by s.ts, s.depth")
    by_id = {r["id"]: r for r in rows}
    top = [r for r in rows if r["name"] == "<module>"]
    assert [(r["depth"], r["flags"]) for r in top] == [(0, 4 | 2)]
    loops = [r for r in rows if r["name"] == "loop"]
    assert sorted(r["flags"] for r in loops) == [4, 4 | 2]
    for r in loops:
        assert by_id[r["parent_id"]]["name"] == "main" and by_id[r["parent_id"]]["flags"] & 4
    works = [r for r in rows if r["name"] == "work"]
    assert len(works) == 4 and all(r["flags"] == 0 for r in works)
    assert sorted(by_id[r["parent_id"]]["name"] for r in works) == ["loop", "loop", "loop",
                                                                    "main"]
    # tracy-export -f pstats: the running calls are callers of the window's
    prof = tmp_path / "w.pstats"
    p = subprocess.run([os.path.join(BIN, "tracy-export"), "-f", "pstats", "-o", str(prof),
                        str(out)], capture_output=True, text=True, timeout=60,
                       env=env_for_tests())
    assert p.returncode == 0, p.stderr
    st = pstats.Stats(str(prof)).stats
    loop = [k for k in st if k[2] == "loop"]
    work = [k for k in st if k[2] == "work"]
    assert len(loop) == 1 and len(work) == 1
    assert st[loop[0]][1] == 2 and st[work[0]][1] == 4  # calls
    assert loop[0] in st[work[0]][4]  # loop calls work
    # tracy-serve: the zone says cut, its callers are the running calls
    srv = subprocess.Popen([os.path.join(BIN, "tracy-serve"), "-p", "0", "--cache",
                            str(tmp_path / "cache"), str(out)], stdout=subprocess.PIPE,
                           text=True, env=env_for_tests())
    try:
        url = srv.stdout.readline().split(" at ")[1].strip().rstrip("/")

        def get(path):
            with urllib.request.urlopen(url + path, timeout=60) as r:
                return json.load(r)
        sid = get("/api/sessions")["sessions"][0]["id"]
        found = get("/api/t/%s/find?q=loop" % sid)
        assert found["count"] == 2
        zone = get("/api/t/%s/zone?id=%d" % (sid, found["zone"]["id"]))
        assert zone["flags"] & 4 and zone["function"] == "loop"
        assert [c["name"] for c in zone["callers"]][:1] == ["main"]
    finally:
        srv.terminate()
        srv.wait(timeout=30)


def test_a_program_profile_function_stays_its_own(tmp_path):
    # the program's profile function sees its calls as before; under the hook
    # the running calls' returns are seen through sys.monitoring from 3.12,
    # before that by the hook itself: no profile function of tracy's is needed
    out = tmp_path / "p.tracy"
    proc = run(tmp_path, """
        seen = []
        def prof(frame, event, arg):
            if event == "call" and frame.f_code.co_name == "work":
                seen.append(1)
        def work():
            return 1
        def main():
            sys.setprofile(prof)
            with tracy.trace(sys.argv[1], quiet=True):
                work()
            sys.setprofile(None)
            print(len(seen), sys.getprofile())
        main()
    """, out)
    assert proc.stdout.split() == ["1", "None"]
    zs = sorted(python_zones(out), key=lambda z: (z.begin_ts, z.depth))
    got = [(z.name, z.depth, z.flags) for z in zs if z.name in ("<module>", "main", "work")]
    assert got == [("<module>", 0, CUT | UNCLOSED), ("main", 1, CUT | UNCLOSED),
                   ("work", 2, 0)]


def test_the_program_sees_no_profile_function(tmp_path):
    # under the hook, what watches the running calls' returns is not the
    # program's to see, before and after they have returned
    out = tmp_path / "g.tracy"
    proc = run(tmp_path, """
        def work():
            return sys.getprofile()
        def opener():
            tracy.start_trace(sys.argv[1], quiet=True)
            return work()
        def main():
            a = opener()   # returns inside the window
            b = work()
            tracy.stop_trace()
            print(a, b)
        main()
    """, out)
    assert proc.stdout == "None None\n"
    zs = python_zones(out)
    names = [(z.name, z.depth, z.flags) for z in sorted(zs, key=lambda z: (z.begin_ts, z.depth))]
    assert names == [("<module>", 0, CUT | UNCLOSED), ("main", 1, CUT | UNCLOSED),
                     ("opener", 2, CUT), ("work", 3, 0), ("work", 2, 0)]


@pytest.mark.parametrize("mode", ["", "trace_c=True"], ids=["hook", "profile"])
def test_a_running_call_ends_between_its_last_child_and_the_next_event(tmp_path, mode):
    # outer() and inner() return inside the window after their last calls;
    # under the hook before 3.12 their returns are found at main's next call
    # and their ends are the thread's last event then: their last child's end
    out = tmp_path / "b.tracy"
    proc = run(tmp_path, """
        def inner():
            tracy.start_trace(sys.argv[1], quiet=True, %s)
            work()
            work()
        def outer():
            inner()
            work()
        def main():
            outer()
            work()
            work()
            tracy.stop_trace()
            print(sys.version_info >= (3, 12))
        main()
    """ % mode, out)
    zs = sorted(python_zones(out), key=lambda z: (z.begin_ts, z.depth))
    got = [(z.name, z.depth, z.flags) for z in zs if z.name in ("<module>", "main", "outer", "inner",
                                                      "work")]
    assert got == [("<module>", 0, CUT | UNCLOSED), ("main", 1, CUT | UNCLOSED),
                   ("outer", 2, CUT), ("inner", 3, CUT), ("work", 4, 0), ("work", 4, 0),
                   ("work", 3, 0), ("work", 2, 0), ("work", 2, 0)]
    main_z, outer_z, inner_z = (one(zs, n) for n in ("main", "outer", "inner"))
    w = [z for z in zs if z.name == "work"]
    # each ends after its last child, before the next call of its caller
    assert w[1].end_ts <= inner_z.end_ts <= w[2].begin_ts
    assert max(w[2].end_ts, inner_z.end_ts) <= outer_z.end_ts <= w[3].begin_ts
    assert outer_z.end_ts <= main_z.end_ts
    if proc.stdout == "False\n" and mode == "":
        assert (inner_z.end_ts, outer_z.end_ts) == (w[1].end_ts, w[2].end_ts)


def test_a_running_call_that_returns_right_before_the_stop_is_ended(tmp_path):
    # nothing recorded between inner()'s return and the stop: the stop finds
    # it returned (before 3.12), sys.monitoring saw it (3.12+)
    out = tmp_path / "s.tracy"
    run(tmp_path, """
        def inner():
            tracy.start_trace(sys.argv[1], quiet=True)
            work()
        def main():
            inner()
            tracy.stop_trace()
        main()
    """, out)
    zs = sorted(python_zones(out), key=lambda z: (z.begin_ts, z.depth))
    got = [(z.name, z.depth, z.flags) for z in zs if z.name in ("<module>", "main", "inner", "work")]
    assert got == [("<module>", 0, CUT | UNCLOSED), ("main", 1, CUT | UNCLOSED),
                   ("inner", 2, CUT), ("work", 3, 0)]
    assert one(zs, "work")[7] <= one(zs, "inner")[7] <= one(zs, "main")[7]


@pytest.mark.parametrize("mode", ["", "trace_c=True"], ids=["hook", "profile"])
def test_a_call_begun_in_the_previous_window_ends_once(tmp_path, mode):
    # inner() began inside the first window and returns inside the second:
    # there it is a cut zone like any running call, ended once, and outer()
    # stays open around what follows
    a, b = tmp_path / "a.tracy", tmp_path / "b.tracy"
    script = tmp_path / "prog.py"
    script.write_text(PRELUDE + textwrap.dedent("""
        def work():
            return sum(range(10))
        def inner():
            work()
            tracy.stop_trace()
            tracy.start_trace(sys.argv[2], quiet=True, %s)
            work()
        def outer():
            tracy.start_trace(sys.argv[1], quiet=True, %s)
            inner()
            work()
            tracy.stop_trace()
        outer()
    """ % (mode, mode)))
    env = env_for_tests()
    env.pop("TRACY_PORT", None)
    proc = subprocess.run([PYTHON, str(script), str(a), str(b)], capture_output=True,
                          text=True, timeout=120, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    first = [(z.name, z.depth, z.flags) for z in sorted(python_zones(a), key=lambda z: (z.begin_ts, z.depth))
             if z.name in ("<module>", "outer", "inner", "work")]
    assert first == [("<module>", 0, CUT | UNCLOSED), ("outer", 1, CUT | UNCLOSED),
                     ("inner", 2, UNCLOSED), ("work", 3, 0)]
    zs = python_zones(b)
    got = [(z.name, z.depth, z.flags) for z in sorted(zs, key=lambda z: (z.begin_ts, z.depth))
           if z.name in ("<module>", "outer", "inner", "work")]
    assert got == [("<module>", 0, CUT | UNCLOSED), ("outer", 1, CUT | UNCLOSED),
                   ("inner", 2, CUT), ("work", 3, 0), ("work", 2, 0)]


def test_running_calls_that_raise_or_yield_end_there(tmp_path):
    # g() raises out of the window's start, the generator yields: each cut
    # zone ends there; the generator's next run is a zone of its own
    out = tmp_path / "e.tracy"
    proc = run(tmp_path, """
        def g():
            tracy.start_trace(sys.argv[1], quiet=True)
            work()
            raise ValueError("x")
        def gen():
            try:
                g()
            except ValueError:
                work()
            yield 1
            work()
            yield 2
        def f():
            it = gen()
            next(it)
            work()
            next(it)
            tracy.stop_trace()
            print("ok")
        f()
    """, out)
    assert proc.stdout == "ok\n"
    zs = sorted(python_zones(out), key=lambda z: (z.begin_ts, z.depth))
    got = [(z.name, z.depth, z.flags) for z in zs if z.name in ("<module>", "f", "gen", "g", "work")]
    assert got == [("<module>", 0, CUT | UNCLOSED), ("f", 1, CUT | UNCLOSED), ("gen", 2, CUT),
                   ("g", 3, CUT), ("work", 4, 0), ("work", 3, 0), ("work", 2, 0),
                   ("gen", 2, 0), ("work", 3, 0)]


def test_a_child_forked_under_running_calls_ends_its_zones(tmp_path):
    out = tmp_path / "f.tracy"
    run(tmp_path, """
        def child():
            work()
        def main():
            with tracy.trace(sys.argv[1], quiet=True):
                pid = os.fork()
                if pid == 0:
                    child()
                    os._exit(0)
                os.waitpid(pid, 0)
        main()
    """, out)
    zs = python_zones(out)
    # (at-fork handlers of the stdlib may run in the child first)
    kid = [(z.name, z.depth, z.flags) for z in sorted(zs, key=lambda z: (z.begin_ts, z.depth))
           if z.process == 2 and z.name in ("child", "work", "main", "<module>")]
    assert kid == [("child", 0, 0), ("work", 1, 0)]
    assert [(z.name, z.depth, z.flags) for z in zs if z.process == 1 and z.name in ("<module>", "main")] in (
        [("<module>", 0, CUT | UNCLOSED), ("main", 1, CUT | UNCLOSED)],
        [("main", 1, CUT | UNCLOSED), ("<module>", 0, CUT | UNCLOSED)])


def test_max_depth_counts_the_running_calls(tmp_path):
    out = tmp_path / "d.tracy"
    run(tmp_path, """
        def mid():
            work()
        def loop():
            with tracy.trace(sys.argv[1], quiet=True, max_depth=4):
                mid()
        def main():
            loop()
        main()
    """, out)
    got = [(z.name, z.depth, z.flags) for z in sorted(python_zones(out), key=lambda z: (z.begin_ts, z.depth))]
    assert got == [("<module>", 0, CUT | UNCLOSED), ("main", 1, CUT | UNCLOSED),
                   ("loop", 2, CUT | UNCLOSED), ("mid", 3, 0)]


def test_a_thread_whose_first_call_is_an_inlined_init(tmp_path):
    # 3.13 runs a simple __init__ inline once the call is specialized (seen
    # through sys.monitoring, not the hook): the thread's running calls are
    # its callers, once, whatever its first event in the window
    out = tmp_path / "i.tracy"
    run(tmp_path, """
        class P:
            def __init__(self, x):
                self.x = x
        going = [True]
        def spin():
            i = 0
            while going[0]:
                P(i)
                i += 1
        t = threading.Thread(target=spin)
        t.start()
        time.sleep(0.05)
        with tracy.trace(sys.argv[1], quiet=True):
            P(-1)  # the hook sees P.__init__ here first (3.13: then watches it)
            time.sleep(0.05)
        going[0] = False
        t.join()
    """, out)
    zs = python_zones(out)
    spin = one(zs, "spin")
    assert spin.flags == CUT | UNCLOSED
    inits = [z for z in zs if z.name == "P.__init__" and (z.process, z.thread) == (spin.process, spin.thread)]
    assert inits and all(z.depth == spin.depth + 1 and z.flags & ~UNCLOSED == 0 for z in inits)


@pytest.mark.parametrize("mode", ["", "trace_c=True", "lines=True"],
                         ids=["hook", "profile", "lines"])
def test_a_class_called_inline_since_before_the_window(tmp_path, mode):
    # 3.13 pushes a simple __init__ inline, past the hook, from a call site
    # specialized before the window (CALL_ALLOC_AND_ENTER_INIT): the window
    # still records every call of it, in each of two windows
    out = tmp_path / "w.tracy"
    run(tmp_path, """
        class A:
            def __init__(self, x):
                self.x = x
        def make(n):
            out = []
            for i in range(n):
                out.append(A(i))
            return out
        make(2000)  # specialized here; A is called from nowhere else
        for k in (1, 2):
            with tracy.trace(sys.argv[1].replace(".tracy", "%%d.tracy" %% k), quiet=True%s):
                make(100)
            make(2000)
    """ % ((", " + mode) if mode else ""), out)
    for k in (1, 2):
        zs = python_zones(tmp_path / ("w%d.tracy" % k))
        make = one(zs, "make")
        inits = [z for z in zs if z.name == "A.__init__"]
        step = 2 if mode == "lines=True" else 1  # (under the line zone of make)
        assert len(inits) == 100 and all(inside(z, make, step) for z in inits), (k, len(inits))
