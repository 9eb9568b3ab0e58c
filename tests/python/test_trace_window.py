"""Trace windows (tracy.start_trace / stop_trace / trace): a program run by
plain python, with no daemon running, records a region of itself into a
complete trace; its threads and the processes it forks in the window are in
it, exactly."""
import json
import os
import subprocess
import textwrap

from conftest import PYTHON, env_for_tests
from programs import tool
from tracy import _tracy

FIB = """
import os, sys, threading, tracy
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
"""
# end flags of a zone (trace.h LT_EVF_*)
UNCLOSED, CUT = 0x2, 0x4


def calls(n):
    """fib(n) makes this many calls of fib."""
    a, b = 0, 1
    for _ in range(n + 1):
        a, b = b, a + b
    return 2 * a - 1


def run_plain(tmp_path, body, *args):
    """Runs FIB + body under plain python (not python -m tracy)."""
    script = tmp_path / "prog.py"
    script.write_text(FIB + textwrap.dedent(body))
    env = env_for_tests()
    env.pop("TRACY_PORT", None)
    proc = subprocess.run([PYTHON, str(script)] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=180, env=env,
                          cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    return proc


def fib_zones(path):
    """{process index: fib zones}; asserts a complete file whose zones all
    ended inside it."""
    t = _tracy._read_trace(str(path))
    assert t["complete"], path
    per = {}
    for z in t["zones"]:
        if z.name == "fib":
            assert z.flags == 0, z
            per[z.process] = per.get(z.process, 0) + 1
    return per


def test_a_block_under_plain_python_is_traced_exactly(tmp_path):
    out = tmp_path / "fib.tracy"
    proc = run_plain(tmp_path, """
        with tracy.trace(sys.argv[1]) as t:
            fib(20)
        fib(5)
        print(t.result, t.result.events, t.result.processes)
    """, out)
    path, events, procs = proc.stdout.split()
    assert path == str(out) and procs == "1"
    assert fib_zones(out) == {1: calls(20)}
    # and the module's frame, running when the window opened: a cut zone
    # (one begin stored), ended by the end of the window
    mod = [z for z in _tracy._read_trace(str(out))["zones"] if z.name == "<module>"]
    assert [(z.depth, z.flags) for z in mod] == [(0, CUT | UNCLOSED)]
    assert int(events) == 2 * calls(20) + 1
    info = json.loads(tool("tracy-info", "--json", str(out)).stdout)
    assert info["complete"]
    assert proc.stderr.strip() == "tracy: trace written to %s (%d events)" % (
        out, 2 * calls(20) + 1)


def test_threads_alive_at_the_start_and_started_in_the_window(tmp_path):
    out = tmp_path / "threads.tracy"
    run_plain(tmp_path, """
        go, done = threading.Event(), threading.Event()
        def early():
            go.wait()
            fib(16)
            done.set()
        e = threading.Thread(target=early)
        e.start()
        tracy.start_trace(sys.argv[1], quiet=True)
        go.set()
        ts = [threading.Thread(target=fib, args=(18,)) for _ in range(4)]
        for t in ts: t.start()
        fib(20)
        for t in ts: t.join()
        done.wait()
        tracy.stop_trace()
        e.join()
    """, out)
    t = _tracy._read_trace(str(out))
    per_thread = {}
    for z in t["zones"]:
        if z.name == "fib":
            assert z.flags == 0, z
            per_thread[z.thread] = per_thread.get(z.thread, 0) + 1
    assert sorted(per_thread.values()) == sorted([calls(16)] + [calls(18)] * 4 + [calls(20)])


def test_a_fork_pool_in_the_window_joins_the_trace(tmp_path):
    out = tmp_path / "pool.tracy"
    run_plain(tmp_path, """
        import multiprocessing
        if __name__ == "__main__":
            with tracy.trace(sys.argv[1], quiet=True):
                with multiprocessing.get_context("fork").Pool(2) as pool:
                    assert pool.map(fib, [15] * 4) == [610] * 4
                fib(20)
    """, out)
    per = fib_zones(out)
    assert per.pop(1) == calls(20)
    assert sum(per.values()) == 4 * calls(15)
    assert 1 <= len(per) <= 2


def test_nested_and_unmatched_calls_are_one_line_errors(tmp_path):
    proc = run_plain(tmp_path, """
        tracy.start_trace(sys.argv[1], quiet=True)
        for f in (lambda: tracy.start_trace(sys.argv[1]), lambda: tracy.trace(sys.argv[1]).__enter__()):
            try:
                f()
            except RuntimeError as e:
                print("E", e)
        tracy.stop_trace()
        try:
            tracy.stop_trace()
        except RuntimeError as e:
            print("E", e)
    """, tmp_path / "n.tracy")
    lines = proc.stdout.splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith("E tracy: a trace is already being recorded to ")
    assert lines[1] == lines[0]
    assert lines[2] == "E tracy: no trace is being recorded (tracy.start_trace was not called)"


def test_two_windows_in_a_row_into_a_folder(tmp_path):
    folder = tmp_path / "traces"
    proc = run_plain(tmp_path, """
        a = tracy.start_trace(sys.argv[1], quiet=True)
        fib(20)
        a = tracy.stop_trace()
        fib(10)
        with tracy.trace(sys.argv[1], tracy.Options(quiet=True)) as t:
            fib(15)
        print(a)
        print(t.result)
    """, folder)
    first, second = proc.stdout.split()
    assert first != second
    for p in (first, second):
        assert os.path.dirname(p) == str(folder)
        assert os.path.basename(p).startswith("prog.") and p.endswith(".tracy")
    assert fib_zones(first) == {1: calls(20)}
    assert fib_zones(second) == {1: calls(15)}
    assert sorted(os.listdir(folder)) == sorted(os.path.basename(p) for p in (first, second))


def test_a_window_into_a_folder_is_named_as_the_program(tmp_path):
    """<program>.<time>.tracy: a script's name, a module's, and for a
    package or folder run by its __main__.py, the package's or folder's."""
    for d in ("pkg", "app"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "__main__.py").write_text(FIB + textwrap.dedent("""
            with tracy.trace(sys.argv[1], quiet=True) as t:
                fib(5)
            print(os.path.basename(t.result).split(".")[0])
        """))
    (tmp_path / "mod.py").write_text((tmp_path / "app" / "__main__.py").read_text())
    env = env_for_tests()
    env.pop("TRACY_PORT", None)
    for target, name in ((["-m", "pkg"], "pkg"), (["app"], "app"), (["-m", "mod"], "mod"),
                         (["mod.py"], "mod")):
        proc = subprocess.run([PYTHON] + target + [str(tmp_path / "out")], capture_output=True,
                              text=True, timeout=180, env=env, cwd=str(tmp_path))
        assert (proc.returncode, proc.stdout) == (0, name + "\n"), proc.stderr


def test_a_file_that_is_not_a_trace_is_kept(tmp_path):
    notes = tmp_path / "notes.tracy"
    notes.write_text("keep me\n")
    proc = run_plain(tmp_path, """
        try:
            tracy.start_trace(sys.argv[1])
        except ValueError as e:
            print(e)
        try:
            tracy.start_trace(sys.argv[1] + ".d", max_depth=-1)
        except ValueError as e:
            print(e)
    """, notes)
    assert proc.stdout.splitlines() == [
        "tracy: refusing to overwrite %s: not a trace" % notes,
        "tracy: max_depth must be a whole number >= 0, not -1"]
    assert notes.read_text() == "keep me\n"


def test_calls_open_at_the_stop_end_with_the_window(tmp_path):
    out = tmp_path / "open.tracy"
    run_plain(tmp_path, """
        def inner(p):
            fib(3)
            tracy.stop_trace()
        def middle(p):
            inner(p)
        tracy.start_trace(sys.argv[1], quiet=True)
        middle(sys.argv[1])
    """, out)
    t = _tracy._read_trace(str(out))
    assert t["complete"]
    ends = {}
    for z in t["zones"]:
        ends.setdefault(z.name, []).append(z.flags)
    # fib(3): 5 calls ended normally; middle and inner were open at the stop:
    # each once, ended by the end of its stream (LT_EVF_UNCLOSED)
    assert ends["fib"] == [0] * 5
    assert ends["middle"] == [2] and ends["inner"] == [2]
