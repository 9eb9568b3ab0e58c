"""The tracy Python API, child processes and the pytest plugin, checked in
the decoded trace."""
import os
import subprocess
import textwrap

import pytest

from conftest import PYTHON, Run, env_for_tests


def test_signpost_message_plot_frame_zone_and_thread_name(run_tracy):
    r = run_tracy("""
    import threading
    import tracy
    tracy.signpost("warmup done", "3 items")
    tracy.signpost("bare")
    tracy.message("hello")
    for v in (1, 2.5):
        tracy.plot("queue", v)
    tracy.frame_mark()
    tracy.frame_mark("render")
    with tracy.zone("load"):
        with tracy.zone("parse"):
            pass
    @tracy.zone("decorated")
    def f():
        return 1
    f(); f()
    def named():
        tracy.thread_name("renamed")
    t = threading.Thread(target=named)
    t.start(); t.join()
    """)
    assert r.rc == 0, r.err
    t = r.trace
    assert [(s.header, s.body) for s in t["signposts"]] == [("warmup done", "3 items"), ("bare", "")]
    assert [m.text for m in t["messages"]] == ["hello"]
    assert [(p.name, p.value) for p in t["plots"]] == [("queue", 1.0), ("queue", 2.5)]
    assert [f.name for f in t["frames"]] == ["", "render"]
    load = [z for z in r.zones if z.name == "load"][0]
    parse = [z for z in r.zones if z.name == "parse"][0]
    assert load.kind == 4 and parse.depth == load.depth + 1
    dec = [z for z in r.zones if z.name == "decorated"]
    assert len(dec) == 2 and dec[0].file.endswith("prog.py")
    assert "renamed" in {th.name for th in t["threads"]}
    r.assert_balanced()


UNDECODABLE = """
import os, sys, tracy
name = os.fsdecode(b"data\\xff.bin")  # as os.listdir gives an undecodable file name
def f():
    return 1
with tracy.zone("load " + name):
    f()
tracy.message("read " + name)
tracy.signpost("phase " + name, "of " + name)
tracy.plot("bytes " + name, 3)
tracy.frame_mark("frame " + name)
tracy.thread_name("thread " + name)
with tracy.zone("lone \\ud800"):
    pass
tracy.message("nul\\0inside")
print("ok", ascii(sys.argv[1:]))
"""


def test_undecodable_names_and_arguments(tmp_path):
    """A script whose name, arguments and zone, message, plot and thread
    names hold bytes UTF-8 cannot decode (as os.fsdecode gives them) runs
    as plain; the trace shows those bytes as \\xNN."""
    script = os.path.join(os.fsencode(str(tmp_path)), b"prog\xfe.py")
    with open(script, "w") as f:
        f.write(UNDECODABLE)
    arg = b"arg\xfd"
    env = env_for_tests(TRACY_PORT="1", TRACY_QUIET="1")
    plain = subprocess.run([os.fsencode(PYTHON), script, arg], env=env, capture_output=True,
                           text=True, timeout=60)
    assert (plain.returncode, plain.stdout) == (0, "ok ['arg\\udcfd']\n"), plain.stderr
    out = str(tmp_path / "t.tracy")
    p = subprocess.run([os.fsencode(PYTHON), b"-m", b"tracy", b"-o", os.fsencode(out), script,
                        arg], env=env_for_tests(), capture_output=True, text=True, timeout=60)
    r = Run(p, out)
    assert (r.rc, r.out) == (0, plain.stdout), r.err
    r.assert_balanced()
    t = r.trace
    assert t["processes"][0]["program"] == "prog\\xfe.py", t["processes"]
    assert "arg\\xfd" in t["processes"][0]["argv"], t["processes"]
    zones = {z.name: z for z in r.zones}
    assert zones["load data\\xff.bin"].file.endswith("/prog\\xfe.py")
    assert zones["f"].file.endswith("/prog\\xfe.py")
    assert "lone \\ud800" in zones
    assert [m.text for m in t["messages"]] == ["read data\\xff.bin", "nul\0inside"]
    assert [(s.header, s.body) for s in t["signposts"]] == [
        ("phase data\\xff.bin", "of data\\xff.bin")]
    assert [pl.name for pl in t["plots"]] == ["bytes data\\xff.bin"]
    assert [fr.name for fr in t["frames"]] == ["frame data\\xff.bin"]
    assert [th.name for th in t["threads"]] == ["thread data\\xff.bin"]


def test_api_is_silent_without_profiler_and_daemon(tmp_path):
    src = tmp_path / "p.py"
    src.write_text(textwrap.dedent("""
    import tracy
    tracy.signpost("x"); tracy.message("m"); tracy.plot("p", 1)
    with tracy.zone("z"):
        pass
    with tracy.Profiler():
        sum(range(10))
    print("done")
    """))
    env = env_for_tests(TRACY_PORT="1", TRACY_QUIET="1")
    p = subprocess.run([PYTHON, str(src)], env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "done\n"


def test_subprocess_and_multiprocessing_children_are_traced(run_tracy):
    r = run_tracy("""
    import multiprocessing, subprocess, sys
    def child_work(x):
        return x * 2
    if __name__ == "__main__":
        code = "def in_child():\\n    pass\\nin_child()\\n"
        subprocess.run([sys.executable, "-c", code], check=True)
        ctx = multiprocessing.get_context("fork")
        p = ctx.Process(target=child_work, args=(3,))
        p.start(); p.join()
        assert p.exitcode == 0
    """)
    assert r.rc == 0, r.err
    procs = r.trace["processes"]
    assert len(procs) == 3, procs
    by_proc = {}
    for z in r.zones:
        by_proc.setdefault(z.process, set()).add(z.name)
    assert any("in_child" in names for names in by_proc.values())
    assert any("child_work" in names and "<module>" not in names for names in by_proc.values())
    r.assert_balanced()


def test_child_processes_follow_partial_mode(run_tracy):
    r = run_tracy("""
    import subprocess, sys
    code = "import tracy\\ndef a(): pass\\ndef b(): pass\\na()\\nwith tracy.profile: b()\\n"
    subprocess.run([sys.executable, "-c", code], check=True)
    """, "-p")
    assert r.rc == 0, r.err
    assert len(r.trace["processes"]) == 2
    assert r.count("a") == 0 and r.count("b") == 1


def test_pytest_plugin_profiles_test_bodies_under_partial(run_tracy, tmp_path):
    (tmp_path / "test_sample.py").write_text(textwrap.dedent("""
    def helper():
        return 1
    def test_profiled(tracy_profile):
        assert helper() == 1
    def test_plain():
        assert helper() == 1
    """))
    r = run_tracy(None, "-p", module="pytest",
                  args=["-q", "-p", "no:cacheprovider", str(tmp_path / "test_sample.py")])
    assert r.rc == 0, r.out + r.err
    assert "2 passed" in r.out
    assert r.count("helper") == 1
    assert r.count("test_profiled") == 1 and r.count("test_plain") == 0
    assert any(z.name.endswith("test_sample.py::test_profiled") and z.kind == 4 for z in r.zones)
    r.assert_balanced()


def test_pytest_failure_status_passes_through(run_tracy, tmp_path):
    (tmp_path / "test_bad.py").write_text("def test_bad():\n    assert 0\n")
    r = run_tracy(None, module="pytest",
                  args=["-q", "-p", "no:cacheprovider", str(tmp_path / "test_bad.py")])
    assert r.rc == 1
    assert "1 failed" in r.out


# A generator and coroutines that suspend inside `with tracy.zone(...)`.
SUSPENDED_ZONES = """
import asyncio, tracy
def leaf(): pass
def g():
    with tracy.zone("z"):
        yield 1
        leaf()
        yield 2
def caller():
    it = g()
    next(it)
    leaf()
    next(it)
    leaf()
    for _ in it:
        pass
async def handler(i):
    with tracy.zone("db"):
        await asyncio.sleep(0.001)
        leaf()
    return i
async def main():
    return await asyncio.gather(*(handler(i) for i in range(3)))
caller()
print(asyncio.run(main()))
"""


def parents(zones):
    """zone -> the zone it is nested in (same thread, one level up)."""
    out = {}
    by_thread = {}
    for z in sorted(zones, key=lambda z: (z.begin_ts, z.depth)):
        stack = by_thread.setdefault((z.process, z.thread), [])
        while stack and not (stack[-1].depth < z.depth and z.end_ts <= stack[-1].end_ts):
            stack.pop()
        out[z] = stack[-1] if stack else None
        stack.append(z)
    return out


@pytest.mark.parametrize("options", [[], ["-l"], ["--trace-c"], ["--mechanism", "exact"]],
                         ids=["hook", "lines", "trace-c", "exact"])
def test_a_zone_a_generator_or_coroutine_suspends_in(run_tracy, options):
    """A generator or coroutine that yields or awaits inside `with
    tracy.zone(...)`: the zone is recorded as each step of the frame inside
    it (it ends at the suspension and begins again at the resumption), in
    the frame's zone; what the caller and the event loop do meanwhile is
    not in it, and every zone nests (no call of the loop inside another)."""
    r = run_tracy(SUSPENDED_ZONES, *options)
    assert r.rc == 0 and r.out == "[0, 1, 2]\n", r.err
    r.assert_balanced()
    zs = r.zones
    up = parents(zs)

    def first(z, kinds):  # the zone z is in, past line zones
        p = up[z]
        while p is not None and p.kind not in kinds:
            p = up[p]
        return p

    def frame(z):  # the function zone z is in
        return first(z, (1,))
    z = [x for x in zs if x.name == "z"]
    assert len(z) == 3 and all(frame(x).name == "g" for x in z), [(x, frame(x)) for x in z]
    db = [x for x in zs if x.name == "db"]
    assert len(db) == 6 and all(frame(x).name == "handler" for x in db)
    leaves = [frame(x).name for x in zs if x.name == "leaf"]
    assert sorted(leaves) == ["caller", "caller", "g"] + ["handler"] * 3, leaves
    # the leaves g and handler call are in their zone; the caller's are not
    inside = sorted(first(x, (1, 4)).name for x in zs
                    if x.name == "leaf" and frame(x).name != "caller")
    assert inside == ["db"] * 3 + ["z"], inside
    for x in zs:  # no function zone inside another of its own name from the loop
        if x.name in ("Handle._run", "BaseEventLoop._run_once"):
            p = up[x]
            while p is not None:
                assert p.name != x.name, (x, p)
                p = up[p]


@pytest.mark.parametrize("options", [["--max-depth", "3"], ["--max-depth", "3", "--trace-c"],
                                     ["--min-duration", "1000"],
                                     ["--min-duration", "1000", "--trace-c"]],
                         ids=["hook", "trace-c", "min-duration", "min-duration-trace-c"])
def test_a_zone_suspended_in_a_frame_without_a_zone(run_tracy, options):
    """The same where the generator's and coroutines' frames get no zone
    (past --max-depth) or may not (--min-duration): the user zones still
    end at each suspension and begin again, none inside another."""
    r = run_tracy(SUSPENDED_ZONES, *options)
    assert r.rc == 0 and r.out == "[0, 1, 2]\n", r.err
    r.assert_balanced()
    up = parents(r.zones)
    user = [x for x in r.zones if x.kind == 4]
    assert sorted(x.name for x in user) == ["db"] * 6 + ["z"] * 3, [x.name for x in user]
    for x in user:
        p = up[x]
        while p is not None:
            assert p.kind != 4, (x, p)
            p = up[p]


@pytest.mark.parametrize("options", [[], ["--trace-c"], ["-l"]], ids=["hook", "trace-c", "lines"])
def test_a_frame_that_raises_with_a_zone_left_open(run_tracy, options):
    """A function, a generator and a coroutine that enter a zone, never
    exit it and raise: the exception reaches the caller as it would
    unprofiled; the zones end with their frames."""
    r = run_tracy("""
    import asyncio, tracy
    def opens_and_raises():
        tracy.zone("left").__enter__()
        raise KeyError("k")
    def gen():
        tracy.zone("gleft").__enter__()
        yield 1
        raise ValueError("v")
    async def coro():
        tracy.zone("cleft").__enter__()
        raise RuntimeError("r")
    try:
        opens_and_raises()
    except KeyError as e:
        print("caught", e)
    g = gen()
    next(g)
    try:
        next(g)
    except ValueError as e:
        print("caught", e)
    try:
        asyncio.run(coro())
    except RuntimeError as e:
        print("caught", e)
    """, *options)
    assert r.rc == 0 and r.out == "caught 'k'\ncaught v\ncaught r\n", r.err
    r.assert_balanced()
    assert sorted(z.name for z in r.zones if z.kind == 4) == ["cleft", "gleft", "gleft", "left"]
