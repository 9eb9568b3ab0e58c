"""tracy._tracy as a CPython extension: sub-interpreters refused with a clear
message, failures inside the hook raised once by disable()/stop() while
recording goes on, named results."""
import subprocess
import sys

import pytest

from conftest import PYTHON, _tracy, env_for_tests

SUBINTERP = r'''
import os, sys
out = sys.argv[1]
how = sys.argv[2]
import tracy                      # the main interpreter has loaded the extension
code = """
try:
    import tracy._tracy
    msg = "imported"
except ImportError as e:
    msg = "ImportError: %%s" %% e
with open(%r, "w") as f:
    f.write(msg)
""" % out
if how == "legacy":
    try:
        import _testcapi
        _testcapi.run_in_subinterp(code)
    except ImportError:
        import _xxsubinterpreters as xx   # before 3.12: legacy interpreters
        i = xx.create()
        xx.run_string(i, code)
        xx.destroy(i)
else:
    try:
        import _interpreters as xx        # 3.13
    except ImportError:
        import _xxsubinterpreters as xx   # 3.12
    i = xx.create()                       # isolated by default
    xx.run_string(i, code)
    xx.destroy(i)
print("main still works:", tuple(tracy._tracy.counts()))
'''


def interpreter_version():
    out = subprocess.run([PYTHON, "-c", "import sys; print(sys.hexversion)"],
                         capture_output=True, text=True, check=True).stdout
    return int(out)


def has_module(*names):
    code = "import importlib.util as u, sys; sys.exit(0 if any(u.find_spec(n) for n in %r) else 1)"
    return subprocess.run([PYTHON, "-c", code % (names,)]).returncode == 0


def run_subinterp(tmp_path, how):
    prog = tmp_path / "sub.py"
    prog.write_text(SUBINTERP)
    out = tmp_path / "sub.txt"
    p = subprocess.run([PYTHON, str(prog), str(out), how], capture_output=True, text=True,
                       env=env_for_tests(), timeout=60)
    assert p.returncode == 0, p.stderr
    assert "main still works: (0, 0)" in p.stdout
    return out.read_text()


def test_legacy_subinterpreter_import_is_refused_with_a_clear_message(tmp_path):
    if not has_module("_testcapi", "_xxsubinterpreters"):
        pytest.skip("%s has neither _testcapi nor _xxsubinterpreters" % PYTHON)
    msg = run_subinterp(tmp_path, "legacy")
    assert msg.startswith("ImportError: tracy._tracy cannot be imported in a "
                          "sub-interpreter"), msg


def test_isolated_subinterpreter_import_is_refused(tmp_path):
    if interpreter_version() < 0x030C0000:
        pytest.skip("%s: isolated interpreters (Py_mod_multiple_interpreters) "
                    "came with 3.12" % PYTHON)
    msg = run_subinterp(tmp_path, "isolated")
    assert msg == ("ImportError: module tracy._tracy does not support loading in "
                   "subinterpreters"), msg


HOOK_FAILURES = r'''
import threading
import tracy
from tracy import _tracy

def victim():
    return 1

def other():
    return 2

def gen():
    yield 1

def bad_filter(qualname, module, file):
    if qualname in ("victim", "gen"):
        raise ValueError("boom " + qualname)
    return True

_tracy.configure(filter=bad_filter, skip_prefix=tracy._PKG_DIR)
_tracy.enable()
victim()
other()
try:
    gen().throw(KeyError("in flight"))   # first sight of gen, exception set
except KeyError as e:
    print("in-flight exception kept:", e)
try:
    _tracy.disable()
    print("disable did not raise")
except _tracy.HookError as e:
    print("first disable:", e)
    print("cause:", repr(e.__cause__))
_tracy.enable()
victim()
_tracy.disable()
print("second disable: no error")

def bad_thread_cb():
    raise OSError("no name")

_tracy.configure(on_thread=bad_thread_cb, skip_prefix=tracy._PKG_DIR)
_tracy.enable()
t = threading.Thread(target=victim)
t.start()
t.join()
try:
    _tracy.stop()
    print("stop did not raise")
except _tracy.HookError as e:
    print("stop:", e)
_tracy.stop()
print("second stop: no error")
'''


def test_raising_callbacks_make_disable_and_stop_raise_once(run_tracy):
    r = run_tracy(HOOK_FAILURES, "-p")
    assert r.rc == 0, r.err
    lines = r.out.splitlines()
    assert "in-flight exception kept: 'in flight'" in lines, r.out
    assert ("first disable: 2 failures in the profiler's hook; the first: the filter "
            "callback raised (the function is recorded): ValueError('boom victim')") in lines, r.out
    assert "cause: ValueError('boom victim')" in lines, r.out
    assert "second disable: no error" in lines, r.out
    assert ("stop: 1 failure in the profiler's hook; the first: the on_thread callback "
            "raised (the thread keeps its name): OSError('no name')") in lines, r.out
    assert "second stop: no error" in lines, r.out
    # python -m tracy's own disable/stop found nothing more to report
    assert "failure" not in r.err, r.err
    # recording went on: the function whose filter raised is recorded
    assert r.count("victim") == 2 + 1  # twice in the main thread, once in the thread
    assert r.count("other") == 1
    r.assert_balanced()


def test_python_m_tracy_reports_a_hook_failure_in_one_line(run_tracy):
    r = run_tracy("""
        import tracy
        from tracy import _tracy
        def victim():
            return 1
        def bad_filter(qualname, module, file):
            if qualname == "victim":
                raise ValueError("boom")
            return True
        _tracy.configure(filter=bad_filter, skip_prefix=tracy._PKG_DIR)
        _tracy.enable()
        victim()
    """, "-p")
    assert r.rc == 0, r.err
    lines = [l for l in r.err.splitlines() if "profiler's hook" in l]
    assert lines == ["tracy: 1 failure in the profiler's hook; the first: the filter "
                     "callback raised (the function is recorded): ValueError('boom')"], r.err
    assert "Traceback" not in r.err
    assert r.count("victim") == 1
    r.assert_balanced()


def test_results_are_named_and_still_indexable(run_tracy):
    r = run_tracy("""
        import tracy
        from tracy import _tracy
        def work():
            tracy.message("hi")
            tracy.signpost("phase", "body")
            tracy.plot("q", 3)
            tracy.frame_mark()
        work()
        c = _tracy.counts()
        print("counts", type(c).__name__, c.sent == c[0], c.lost == c[1], len(c))
    """)
    assert r.rc == 0, r.err
    assert "counts Counts True True 2" in r.out
    t = r.trace
    work = [z for z in t["zones"] if z.name == "work"]
    assert len(work) == 1
    z = work[0]
    fields = ("process", "thread", "name", "kind", "file", "line", "begin_ts",
              "end_ts", "depth", "text", "flags", "child_ns")
    assert type(z).__name__ == "Zone" and isinstance(z, tuple) and len(z) == len(fields)
    assert tuple(getattr(z, f) for f in fields) == tuple(z)
    assert z.name == z[2] and z.flags == z[10] == 0 and z.end_ts >= z.begin_ts
    m, = t["messages"]
    assert (type(m).__name__, m.text, m[3]) == ("Message", "hi", "hi")
    s, = t["signposts"]
    assert (s.header, s.body) == ("phase", "body")
    p, = t["plots"]
    assert (p.name, p.value) == ("q", 3.0)
    f, = t["frames"]
    assert f.name == "" and f.ts > 0
    th = t["threads"][0]
    assert (th.process, th.thread) == (1, 1) and th.tid > 0 and th.name == th[3]
    assert isinstance(_tracy.HookError("x"), RuntimeError)


def test_every_function_of_the_extension_has_a_docstring():
    funcs = [getattr(_tracy, n) for n in dir(_tracy)
             if callable(getattr(_tracy, n)) and not isinstance(getattr(_tracy, n), type)]
    assert len(funcs) >= 20
    missing = [f.__name__ for f in funcs if not (f.__doc__ or "").strip()]
    assert missing == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
