"""The tracy Python API, child processes and the pytest plugin, checked in
the decoded trace."""
import subprocess
import textwrap

from conftest import PYTHON, env_for_tests


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
