"""python -m tracy: the command line, program semantics and the trace."""
import os
import socket
import subprocess
import time

import pytest

from conftest import BIN, PYTHON, Run, env_for_tests

FIB = """
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
fib(20)
"""


def test_fib20_gives_exactly_21891_fib_zones(run_tracy):
    r = run_tracy(FIB)
    assert r.rc == 0, r.err
    assert r.count("fib") == 21891
    r.assert_balanced()
    fib = [z for z in r.zones if z.name == "fib"][0]
    assert fib.kind == 1 and fib.file.endswith("prog.py") and fib.line == 2
    assert "trace written to" in r.err


def test_program_sees_argv_main_and_path_as_without_profiler(run_tracy, tmp_path):
    src = """
    import sys, os
    print(sys.argv[1:], __name__, os.path.basename(__file__), sys.path[0])
    print(sys.modules["__main__"].__dict__ is globals())
    sys.exit(7)
    """
    r = run_tracy(src, args=["a", "--b"])
    assert r.rc == 7
    first, second = r.out.splitlines()
    assert first == "['a', '--b'] __main__ prog.py %s" % tmp_path
    assert second == "True"
    r.assert_balanced()


MAIN_NAMES = """
import sys
print(list(globals()), type(__builtins__).__name__)
print(__annotations__, type(__loader__).__name__, getattr(__loader__, "name", None),
      __loader__.get_source("__main__" if __spec__ is None else __spec__.name) is not None,
      __spec__ and __spec__.name, __package__, __cached__ is None)
"""


@pytest.mark.parametrize("command", [False, True])
@pytest.mark.parametrize("how", ["script", "module"])
def test_main_module_names_as_without_profiler(tmp_path, how, command):
    """__main__ holds the names the interpreter's own has, in its order:
    __annotations__, the builtins module, and a loader that reads the
    script's source, as `python script.py` and `python -m module` give
    them; under python -m tracy and the tracy command alike."""
    (tmp_path / "names.py").write_text(MAIN_NAMES)
    target = ["names.py"] if how == "script" else ["-m", "names"]
    env = env_for_tests()
    plain = subprocess.run([PYTHON] + target, capture_output=True, text=True, timeout=60,
                           env=env, cwd=str(tmp_path))
    assert plain.returncode == 0, plain.stderr
    out = str(tmp_path / "t.tracy")
    tracy = [os.path.join(BIN, "tracy")] if command else ["-m", "tracy"]
    p = subprocess.run([PYTHON] + tracy + ["-o", out] + target, capture_output=True,
                       text=True, timeout=60, env=env, cwd=str(tmp_path))
    assert (p.returncode, p.stdout) == (0, plain.stdout), p.stderr
    assert "'__annotations__'" in p.stdout and "SourceFileLoader" in p.stdout
    assert "] module\n" in p.stdout


SEEN_BELOW = """
import inspect, sys, traceback
def work():
    return len(inspect.stack())
print([f.function for f in inspect.stack()], work(), __file__, __name__)
print(sys._getframe().f_code.co_filename, getattr(sys._getframe().f_back, "f_code", None)
      and sys._getframe().f_back.f_code.co_name)
traceback.print_stack(limit=None)
raise ValueError("the end")
"""


@pytest.mark.parametrize("mechanism", ["hook", "exact"])
@pytest.mark.parametrize("command", [False, True])
def test_the_program_sees_below_it_what_python_puts_there(tmp_path, command, mechanism):
    """What the program finds under its first frame is the plain run's: for
    a module (-m), a package's __main__, a folder and a zipapp, runpy's
    _run_module_as_main and _run_code (inspect.stack(), f_back, tracebacks);
    for a script, nothing, its name as the interpreter gives it (./x.py on
    3.9+ is CWD/./x.py, not normalized). runpy's own functions are not
    recorded."""
    (tmp_path / "below.py").write_text(SEEN_BELOW)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(SEEN_BELOW)
    make_app(tmp_path, SEEN_BELOW)
    (tmp_path / "sub").mkdir()
    env = env_for_tests()
    tracy = [os.path.join(BIN, "tracy")] if command else ["-m", "tracy"]
    for target in (["-m", "below"], ["-m", "pkg"], ["app"], ["app.pyz"], ["./below.py"],
                   ["sub/../below.py"], ["below.py"]):
        plain = subprocess.run([PYTHON] + target, capture_output=True, text=True,
                               timeout=60, env=env, cwd=str(tmp_path))
        assert plain.returncode == 1 and "ValueError: the end" in plain.stderr, plain.stderr
        out = str(tmp_path / ("t%d.tracy" % len(os.listdir(str(tmp_path)))))
        p = subprocess.run([PYTHON] + tracy + ["-o", out, "--mechanism", mechanism]
                           + target, capture_output=True, text=True, timeout=60, env=env,
                           cwd=str(tmp_path))
        assert (p.returncode, p.stdout) == (1, plain.stdout), (target, p.stderr)
        err = [line for line in p.stderr.splitlines() if not line.startswith("tracy: ")]
        assert err == plain.stderr.splitlines(), target
        r = Run(p, out)
        roots = {z.name for z in r.zones if z.depth == 0}
        assert "<module>" in roots, (target, roots)
        assert not roots & {"_run_module_as_main", "_run_code", "_get_module_details",
                            "_get_main_module_details"}, (target, roots)
        assert r.count("work") == 1, target
        r.assert_balanced()


@pytest.mark.parametrize("command", [False, True])
def test_orig_argv_is_the_plain_command_line(tmp_path, command):
    """sys.orig_argv (3.10+), which a program that restarts itself execs,
    is the command line of the plain run: the interpreter's options, then
    the program's, without tracy's part."""
    show = "import sys\nprint(getattr(sys, 'orig_argv', ['?'])[1:])\n"
    (tmp_path / "oa.py").write_text(show)
    env = env_for_tests()
    tracy = [os.path.join(BIN, "tracy")] if command else ["-m", "tracy"]
    for opts, target in (([], ["oa.py", "a", "-b"]), (["-X", "dev", "-B"], ["-m", "oa", "x"]),
                         (["-W", "ignore"], ["-c", show, "y"])):
        plain = subprocess.run([PYTHON] + opts + target, capture_output=True, text=True,
                               timeout=60, env=env, cwd=str(tmp_path))
        assert plain.returncode == 0, plain.stderr
        if plain.stdout == "[]\n":
            pytest.skip("sys.orig_argv is 3.10+")
        p = subprocess.run([PYTHON] + opts + tracy + ["-t", "0", "-o", "t.tracy", "-l"]
                           + target, capture_output=True, text=True, timeout=60, env=env,
                           cwd=str(tmp_path))
        assert (p.returncode, p.stdout) == (0, plain.stdout), p.stderr


APP_MAIN = """
import sys
def work():
    return 42
print(work(), list(globals()), __file__, __package__, __spec__.name,
      type(__loader__).__name__, sys.argv, sys.path[0])
"""


PKG_INIT = """
import time
def setup():
    time.sleep(0.01)
setup()
"""


def test_a_modules_package_is_imported_recorded_as_python_imports_it(tmp_path):
    """python -m pkg.mod imports pkg first: under python -m tracy that
    import is the program's, recorded (its functions' zones are in the
    trace), and an error in it is reported as python reports it, with its
    traceback; a package without __main__ and a missing submodule end as
    plain's (the message on stderr, status 1)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(PKG_INIT)
    (pkg / "mod.py").write_text("def work():\n    return 1\nwork()\n")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "__init__.py").write_text("def fails():\n    raise RuntimeError('no')\nfails()\n")
    (bad / "mod.py").write_text("")
    env = env_for_tests()
    for target, rc in (("pkg.mod", 0), ("bad.mod", 1), ("pkg", 1), ("pkg.nothing", 1)):
        plain = subprocess.run([PYTHON, "-m", target], capture_output=True, text=True,
                               timeout=60, env=env, cwd=str(tmp_path))
        assert plain.returncode == rc, plain.stderr
        out = str(tmp_path / ("%s.tracy" % target))
        p = subprocess.run([PYTHON, "-m", "tracy", "-o", out, "-m", target],
                           capture_output=True, text=True, timeout=60, env=env,
                           cwd=str(tmp_path))
        assert (p.returncode, p.stdout) == (rc, plain.stdout), p.stderr
        err = [line for line in p.stderr.splitlines() if not line.startswith("tracy: ")]
        assert err == plain.stderr.splitlines(), target
        r = Run(p, out)
        r.assert_balanced()
        if target == "pkg.mod":
            assert (r.count("setup"), r.count("work")) == (1, 1)
        if target == "bad.mod":
            assert r.count("fails") == 1 and "RuntimeError: no" in p.stderr


def make_app(tmp_path, main_source):
    """tmp_path/app, a folder holding __main__.py, and app.pyz, its zipapp."""
    import zipapp
    app = tmp_path / "app"
    app.mkdir()
    (app / "__main__.py").write_text(main_source)
    zipapp.create_archive(str(app), str(tmp_path / "app.pyz"))


@pytest.mark.parametrize("form", ["app", "app/", "app.pyz", "empty"])
def test_a_folder_or_zipapp_runs_its_main_module(tmp_path, form):
    """python FOLDER and python APP.pyz (zipapp) run the __main__ module
    they hold: so does python -m tracy, with the same names and argv, and
    the trace holds its calls. One with no __main__ fails as plain does."""
    make_app(tmp_path, APP_MAIN)
    (tmp_path / "empty").mkdir()
    env = env_for_tests()
    plain = subprocess.run([PYTHON, form, "x"], capture_output=True, text=True, timeout=60,
                           env=env, cwd=str(tmp_path))
    out = str(tmp_path / "t.tracy")
    p = subprocess.run([PYTHON, "-m", "tracy", "-o", out, form, "x"], capture_output=True,
                       text=True, timeout=60, env=env, cwd=str(tmp_path))
    assert (p.returncode, p.stdout) == (plain.returncode, plain.stdout), p.stderr
    if form == "empty":
        assert p.returncode == 1 and "can't find '__main__' module" in p.stderr, p.stderr
        assert "can't find '__main__' module" in plain.stderr
        return
    assert p.stdout.startswith("42 ["), p.stdout
    r = Run(p, out)
    assert r.count("work") == 1
    r.assert_balanced()


SOURCE = """import sys
def work():
    return 42
print(work(), list(globals()), __loader__, __spec__, sys.argv, repr(sys.path[0]),
      sys._getframe().f_code.co_filename)
"""


@pytest.mark.parametrize("how", ["-c", "-"])
def test_a_command_or_standard_input_runs_as_python_runs_it(tmp_path, how):
    """python -c CODE and python - (the program on standard input): the
    program sees what plain python gives it (argv, sys.path[0], __main__'s
    names, <string> or <stdin>), the default trace is command.tracy or
    stdin.tracy, and it holds the program's calls; an error ends as
    plain's."""
    env = env_for_tests()
    for src, rc in ((SOURCE, 0), ("import sys\nsys.exit(3)\n", 3), ("x = (\n", 1)):
        target, given = ([how, src], None) if how == "-c" else ([how], src)
        plain = subprocess.run([PYTHON] + target + ["a", "b"], input=given,
                               capture_output=True, text=True, timeout=60, env=env,
                               cwd=str(tmp_path))
        assert plain.returncode == rc, plain.stderr
        p = subprocess.run([PYTHON, "-m", "tracy"] + target + ["a", "b"], input=given,
                           capture_output=True, text=True, timeout=60, env=env,
                           cwd=str(tmp_path))
        assert (p.returncode, p.stdout) == (rc, plain.stdout), p.stderr
        if rc == 1:
            assert plain.stderr.splitlines()[-1] in p.stderr, (plain.stderr, p.stderr)
    assert plain.stdout == "" and "SyntaxError" in plain.stderr
    out = tmp_path / ("command.tracy" if how == "-c" else "stdin.tracy")
    p = subprocess.run([PYTHON, "-m", "tracy"] + target[:1] + ([SOURCE] if how == "-c" else []),
                       input=None if how == "-c" else SOURCE, capture_output=True, text=True,
                       timeout=60, env=env, cwd=str(tmp_path))
    assert p.returncode == 0 and p.stdout.startswith("42 "), p.stderr
    r = Run(p, str(out))
    assert r.count("work") == 1
    assert r.trace["processes"][0]["program"] == how
    r.assert_balanced()


@pytest.mark.parametrize("ending", [
    "import os; os.close(2)",
    "import sys; sys.stderr.close()",
    "import sys; sys.stderr = None",
    "import os; os.close(1); os.close(2)",
    "import io, sys; sys.stderr = io.StringIO()",
    "import sys; sys.stderr = None; sys.exit('bye')",
    "import sys; sys.stderr.close(); sys.exit('bye')",
])
def test_a_program_that_closes_or_replaces_its_stderr_ends_as_plain(tmp_path, ending):
    """tracy's own lines at the end go to the interpreter's standard error
    while it can be written, and never change how the program ends: its
    status and output are plain's, whatever it did to sys.stderr or to
    descriptor 2."""
    (tmp_path / "prog.py").write_text("def f():\n    return 1\nf()\nprint('out')\n" + ending + "\n")
    env = env_for_tests()
    plain = subprocess.run([PYTHON, "prog.py"], capture_output=True, text=True, timeout=60,
                           env=env, cwd=str(tmp_path))
    out = str(tmp_path / "t.tracy")
    p = subprocess.run([PYTHON, "-m", "tracy", "-o", out, "prog.py"], capture_output=True,
                       text=True, timeout=60, env=env, cwd=str(tmp_path))
    assert (p.returncode, p.stdout) == (plain.returncode, plain.stdout), p.stderr
    ours = [ln for ln in p.stderr.splitlines() if ln.startswith("tracy: ")]
    rest = [ln for ln in p.stderr.splitlines() if not ln.startswith("tracy: ")]
    assert rest == plain.stderr.splitlines(), (p.stderr, plain.stderr)
    assert all("trace written to" in ln for ln in ours), ours
    r = Run(p, out)
    assert r.count("f") == 1
    r.assert_balanced()


STACK = """
import atexit, inspect, sys, threading, traceback, warnings
def where():
    return [f.function for f in inspect.stack()], len(traceback.extract_stack())
print(where(), sys._getframe().f_back)
warnings.warn("beyond the stack", stacklevel=3)
atexit.register(lambda: print("atexit", where()))
t = threading.Thread(target=lambda: print("thread", where()[0][-1]))
t.start(); t.join()
"""


@pytest.mark.parametrize("command", [False, True])
def test_the_program_sees_no_frame_of_the_profiler(tmp_path, command):
    """The script's frame has no caller and atexit callbacks run from none,
    as the interpreter runs them from C: inspect.stack(), a warning's
    stacklevel and traceback.extract_stack() give plain's answers, not
    the profiler's frames (runpy's, tracy's)."""
    (tmp_path / "stack.py").write_text(STACK)
    env = env_for_tests()
    plain = subprocess.run([PYTHON, "stack.py"], capture_output=True, text=True, timeout=60,
                           env=env, cwd=str(tmp_path))
    assert plain.returncode == 0 and "beyond the stack" in plain.stderr, plain.stderr
    out = str(tmp_path / "t.tracy")
    tracy = [os.path.join(BIN, "tracy")] if command else ["-m", "tracy"]
    p = subprocess.run([PYTHON] + tracy + ["-o", out, "stack.py"], capture_output=True,
                       text=True, timeout=60, env=env, cwd=str(tmp_path))
    assert (p.returncode, p.stdout) == (0, plain.stdout), p.stderr
    assert p.stdout.startswith("(['where', '<module>'], 2) None\n"), p.stdout
    assert [ln for ln in p.stderr.splitlines() if not ln.startswith("tracy: ")] == \
        plain.stderr.splitlines()
    r = Run(p, out)
    assert r.count("where") == 3
    r.assert_balanced()


@pytest.mark.parametrize("command", [False, True])
@pytest.mark.parametrize("target", [["path.py"], ["-c", "import sys; print(sys.path[:3])"],
                                    ["-m", "path"], ["app"]])
def test_sys_path_under_safe_path_as_plain(tmp_path, target, command):
    """PYTHONSAFEPATH (-P, 3.11+): python puts neither the script's folder,
    the working folder nor '' first on sys.path, but a folder holding
    __main__; under tracy the program's sys.path is the same (it lost its
    first PYTHONPATH entry to the script's folder). Before 3.11 the
    variable means nothing, and the paths are plain's as well."""
    (tmp_path / "path.py").write_text("import sys\nprint(sys.path[:3])\n")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__main__.py").write_text("import sys\nprint(sys.path[:3])\n")
    (tmp_path / "extra").mkdir()
    env = env_for_tests(PYTHONSAFEPATH="1")
    env["PYTHONPATH"] += os.pathsep + str(tmp_path / "extra")
    plain = subprocess.run([PYTHON] + target, capture_output=True, text=True, timeout=60,
                           env=env, cwd=str(tmp_path))
    out = str(tmp_path / "t.tracy")
    tracy = [os.path.join(BIN, "tracy")] if command else ["-m", "tracy"]
    p = subprocess.run([PYTHON] + tracy + ["-o", out] + target, capture_output=True,
                       text=True, timeout=60, env=env, cwd=str(tmp_path))
    assert (p.returncode, p.stdout) == (plain.returncode, plain.stdout), (p.stderr,
                                                                          plain.stderr)


def test_the_tracy_command_runs_as_python_m_tracy(tmp_path):
    """build/bin/tracy (pip installs it too): the same main without runpy.
    The program sees what it sees under python -m tracy, and the trace holds
    its calls; a module runs with -m as well."""
    (tmp_path / "prog.py").write_text(
        "import sys, os\n"
        "def fib(n):\n"
        "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "fib(10)\n"
        "print(sys.argv, __name__, os.path.basename(__file__), sys.path[0])\n"
        "sys.exit(3)\n")
    cmd = [PYTHON, os.path.join(BIN, "tracy")]
    out = str(tmp_path / "cmd.tracy")
    p = subprocess.run(cmd + ["-o", out, "prog.py", "a"], capture_output=True, text=True,
                       timeout=120, env=env_for_tests(), cwd=str(tmp_path))
    assert p.returncode == 3, p.stderr
    assert p.stdout == "['prog.py', 'a'] __main__ prog.py %s\n" % tmp_path
    r = Run(p, out)
    assert r.count("fib") == 177 and r.trace["complete"]
    r.assert_balanced()
    p = subprocess.run(cmd + ["-o", str(tmp_path / "m.tracy"), "-m", "prog"],
                       capture_output=True, text=True, timeout=120, env=env_for_tests(),
                       cwd=str(tmp_path))
    assert p.returncode == 3, p.stderr
    assert Run(p, str(tmp_path / "m.tracy")).count("fib") == 177
    p = subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=60,
                       env=env_for_tests())
    assert p.returncode == 0 and p.stdout.startswith("tracy "), p.stderr


def test_unhandled_exception_exits_1_and_trace_is_flushed(run_tracy):
    src = """
    def inner():
        raise ValueError("boom")
    def outer():
        inner()
    outer()
    """
    r = run_tracy(src)
    assert r.rc == 1
    assert "ValueError: boom" in r.err
    assert r.count("inner") == 1 and r.count("outer") == 1
    r.assert_balanced()


def test_sys_exit_and_keyboard_interrupt_deep_in_the_stack(run_tracy):
    r = run_tracy("""
    def deep(n):
        if n == 0:
            raise KeyboardInterrupt
        deep(n - 1)
    deep(5)
    """)
    # As the interpreter itself (3.8+): an uncaught KeyboardInterrupt ends
    # the process by SIGINT, so that the shell sees an interrupted program.
    assert r.rc == -2, r.err
    assert r.count("deep") == 6
    r.assert_balanced()
    r = run_tracy("""
    import sys
    def deep(n):
        if n == 0:
            sys.exit(4)
        deep(n - 1)
    deep(3)
    """)
    assert r.rc == 4 and r.count("deep") == 4
    r.assert_balanced()


def test_generators_coroutines_and_exceptions_stay_balanced(run_tracy):
    r = run_tracy("""
    import asyncio
    def gen(n):
        for i in range(n):
            yield i
    def failing():
        try:
            raise KeyError(1)
        finally:
            pass
    async def job(i):
        await asyncio.sleep(0)
        return i
    async def main():
        return await asyncio.gather(*(job(i) for i in range(3)))
    assert sum(gen(5)) == 10
    for _ in range(3):
        try:
            failing()
        except KeyError:
            pass
    asyncio.run(main())
    """)
    assert r.rc == 0, r.err
    assert r.count("gen") == 6  # one zone per run: 5 values, exhaustion
    assert r.count("failing") == 3
    assert r.count("job") == 6  # each coroutine runs twice (sleep(0) yields)
    assert r.count("main") == 2
    r.assert_balanced()


def test_qualified_names_and_threads_with_names(run_tracy):
    r = run_tracy("""
    import threading
    class Record:
        def __init__(self, x):
            self.x = x
    def work():
        return [Record(i) for i in range(10)]
    before = threading.Thread(target=work, name="early")
    ts = [threading.Thread(target=work, name="worker-%d" % i) for i in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    # the profiler names threads without changing threading
    print(type(threading.Thread._bootstrap_inner).__name__,
          [n for n in vars(threading.Thread) if "tracy" in n])
    """)
    assert r.rc == 0, r.err
    assert r.out == "function []\n"
    assert r.count("Record.__init__") == 30
    names = {t[3] for t in r.trace["threads"]}
    assert {"MainThread", "worker-0", "worker-1", "worker-2"} <= names
    by_thread = {(z.process, z.thread) for z in r.zones if z.name == "work"}
    assert len(by_thread) == 3
    r.assert_balanced()


def test_qualified_names_of_code_defined_before_recording(run_tracy):
    """Functions, methods and closures made before recording began (their
    defining code ran unseen) are named as 3.11's co_qualname names them,
    on 3.8-3.10 too; so are the standard library's, imported earlier."""
    r = run_tracy("""
    import threading, tracy
    class Box:
        def put(self):
            return 1
        class Inner:
            def get(self):
                return 2
    def outer():
        def inner():
            return 3
        return inner
    inner = outer()
    def plain():
        return 4
    p = tracy.Profiler()
    p.enable()
    Box().put(); Box.Inner().get(); inner(); plain()
    e = threading.Event()
    e.set()
    p.disable()
    """, "-p")
    assert r.rc == 0, r.err
    names = {z.name for z in r.zones}
    assert {"Box.put", "Box.Inner.get", "outer.<locals>.inner", "plain",
            "Event.set"} <= names, names
    assert not {"put", "get", "inner", "set"} & names, names
    r.assert_balanced()


def test_partial_records_only_profiled_regions(run_tracy):
    r = run_tracy("""
    import tracy
    def outside(): pass
    def inside(): pass
    @tracy.profile
    def decorated(): inside()
    outside()
    p = tracy.Profiler()
    p.enable()
    inside()
    p.disable()
    with tracy.profile:
        inside()
    decorated()
    outside()
    """, "-p")
    assert r.rc == 0, r.err
    assert r.count("outside") == 0
    assert r.count("inside") == 3
    r.assert_balanced()


def test_decorated_generators_and_coroutines_are_recorded_as_they_run(run_tracy):
    """tracy.profile and tracy.zone on a generator, a coroutine and an async
    generator function: their bodies run in steps after the call; each step
    is recorded (the function's zone, a zone named by tracy.zone), and not
    the caller's work while it is suspended. What they return, raise and
    are sent is the plain function's."""
    r = run_tracy("""
    import asyncio, tracy
    def work(): pass
    def between(): pass
    @tracy.profile
    def gen(n):
        got = []
        for i in range(n):
            work()
            got.append((yield i))
        return got
    @tracy.zone("z-gen")
    def zgen(n):
        yield from range(n)
    @tracy.profile
    async def coro(n):
        await asyncio.sleep(0)
        work()
        return n * 2
    @tracy.zone("z-coro")
    async def zcoro():
        await asyncio.sleep(0)
        return 5
    @tracy.profile
    async def agen(n):
        for i in range(n):
            await asyncio.sleep(0)
            work()
            yield i
    async def main():
        out = [x async for x in agen(3)]
        return out, await coro(4), await zcoro()
    g = gen(3)
    first = next(g)
    between()
    second = g.send("a")
    between()
    third = g.send("b")
    try:
        g.send("c")
    except StopIteration as e:
        print(first, second, third, e.value)
    g2 = gen(5)
    next(g2)
    try:
        g2.throw(KeyError("k"))
    except KeyError as e:
        print("raised", e)
    print(list(zgen(2)), asyncio.run(main()))
    import inspect
    print(inspect.isgeneratorfunction(gen), inspect.iscoroutinefunction(zcoro),
          inspect.isasyncgenfunction(agen), gen.__name__)
    """, "-p")
    assert r.rc == 0, r.err
    assert r.out == ("0 1 2 ['a', 'b', 'c']\nraised 'k'\n"
                     "[0, 1] ([0, 1, 2], 8, 5)\nTrue True True gen\n"), r.out
    assert r.count("between") == 0
    # gen: 4 steps then 2 (the throw), coro and agen: each resume
    assert r.count("gen") == 6 and r.count("coro") >= 2 and r.count("agen") >= 4
    assert r.count("work") == 3 + 1 + 1 + 3
    assert r.count("z-gen") == 3 and r.count("z-coro") >= 2
    r.assert_balanced()


def test_enable_and_disable_in_the_middle_of_a_stack(run_tracy):
    r = run_tracy("""
    import tracy
    p = tracy.Profiler()
    def starts():
        p.enable()
        leaf()
    def stops():
        leaf()
        p.disable()
        leaf()
    def leaf(): pass
    def top():
        starts()
        stops()
    top()
    """, "-p")
    assert r.rc == 0, r.err
    assert r.count("top") == 0 and r.count("starts") == 0
    assert r.count("stops") == 1 and r.count("leaf") == 2
    r.assert_balanced()


def test_lines_mode_records_each_line(run_tracy):
    r = run_tracy("""
    def f(n):
        a = n + 1
        b = a * 2
        return b
    for i in range(3):
        f(i)
    """, "-l")
    assert r.rc == 0, r.err
    lines = [z for z in r.zones if z.kind == 3]
    assert sum(1 for z in lines if z.name == "f:3") == 3
    assert sum(1 for z in lines if z.name == "f:5") == 3
    z = [z for z in lines if z.name == "f:4"][0]
    assert z.file.endswith("prog.py") and z.line == 4
    assert r.count("f") == 3
    r.assert_balanced()


def test_trace_c_records_builtin_calls(run_tracy):
    r = run_tracy("""
    def f(xs):
        return len(xs) + len(sorted(xs))
    for _ in range(4):
        f([3, 1, 2])
    l = []
    l.append(1)
    """, "--trace-c")
    assert r.rc == 0, r.err
    fz = [z for z in r.zones if z.name == "f"]
    inside = [z.name for z in r.zones if z.kind == 2 and
              any(f.begin_ts <= z.begin_ts and z.end_ts <= f.end_ts
                  and (f.process, f.thread) == (z.process, z.thread) for f in fz)]
    assert sorted(inside) == ["len"] * 8 + ["sorted"] * 4
    assert "list.append" in r.names(kind=2)
    assert "thread_name" not in r.names(kind=2)
    assert r.count("f") == 4
    r.assert_balanced()


def test_function_and_module_filters(run_tracy):
    src = """
    import json
    def keep_a(): pass
    def keep_b(): pass
    def drop_c(): pass
    for f in (keep_a, keep_b, drop_c):
        f()
    json.dumps({"a": 1})
    """
    r = run_tracy(src, "-R", "^keep_")
    assert set(r.names()) == {"keep_a", "keep_b"}
    r = run_tracy(src, "-E", "^keep_", "-I", "keep_b")
    assert "keep_a" not in r.names() and "keep_b" in r.names() and "drop_c" in r.names()
    r = run_tracy(src, "-ME", "json")
    assert "dumps" not in r.names() and "drop_c" in r.names()
    r = run_tracy(src, "--module-restrict", "json")
    assert "dumps" in r.names() and "keep_a" not in r.names()
    r.assert_balanced()


def test_max_depth(run_tracy):
    r = run_tracy(FIB.replace("fib(20)", "fib(10)"), "--max-depth", "3")
    assert r.rc == 0
    assert max(z.depth for z in r.zones) == 2
    assert r.count("<module>") == 1
    r.assert_balanced()


def test_min_duration_keeps_slow_zones_and_their_ancestors(run_tracy):
    r = run_tracy("""
    import time
    def quick(): pass
    def slow():
        time.sleep(0.02)
    def parent():
        for _ in range(50):
            quick()
        slow()
    parent()
    """, "--min-duration", "5000000")
    assert r.rc == 0, r.err
    assert r.count("quick") == 0
    assert r.count("slow") == 1 and r.count("parent") == 1
    slow = [z for z in r.zones if z.name == "slow"][0]
    parent = [z for z in r.zones if z.name == "parent"][0]
    assert parent.begin_ts <= slow.begin_ts and slow.end_ts <= parent.end_ts
    assert slow.end_ts - slow.begin_ts >= 5000000
    r.assert_balanced()


def test_labels_args_file_and_line(run_tracy):
    r = run_tracy("""
    def greet(name, times=2):
        return name * times
    class Point:
        def __init__(self, x, y):  # 3.13 runs it inline: seen by sys.monitoring
            self.x = x
    greet("ab", times=3)
    for i in range(3):
        Point(i, i + 1)
    """, "--label", "args,file,line")
    assert r.rc == 0, r.err
    z = [z for z in r.zones if z.name.startswith("greet")][0]
    assert z.name == "greet [prog.py:2]"
    assert z.text == "name='ab', times=3"
    inits = [z.text for z in r.zones if z.name.startswith("Point.__init__")]
    assert [t.split(", ", 1)[1] for t in inits] == ["x=0, y=1", "x=1, y=2", "x=2, y=3"], inits


def test_output_directory_and_report(run_tracy, tmp_path):
    out = tmp_path / "out"
    r = run_tracy(FIB.replace("fib(20)", "fib(5)"), "-r", output=str(out) + "/")
    assert r.rc == 0, r.err
    assert (out / "prog.tracy").exists()
    assert (out / "prog.csv").exists() and (out / "prog.csv").stat().st_size > 0
    assert "op report written to" in r.err


def test_default_output_name_in_cwd(tmp_path):
    (tmp_path / "myprog.py").write_text("x = 1\n")
    p = subprocess.run([PYTHON, "-m", "tracy", "myprog.py"], cwd=str(tmp_path),
                       env=env_for_tests(), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "myprog.tracy").exists()


def test_usage_errors_and_help():
    env = env_for_tests()
    for bad in (["--bogus", "x.py"], [], ["--max-depth", "x", "a.py"],
                ["-R", "(", "a.py"], ["--label", "nope", "a.py"], ["missing.py"]):
        p = subprocess.run([PYTHON, "-m", "tracy"] + bad, env=env, capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 2, (bad, p.stderr)
        assert p.stderr.startswith("tracy: ")
    p = subprocess.run([PYTHON, "-m", "tracy", "-h"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and "--min-duration" in p.stdout


@pytest.mark.parametrize("args, line", [
    (["-t", "99999", "a.py"], "tracy: port out of range: 99999"),
    (["--port=-1", "a.py"], "tracy: --port must not be negative"),
    (["--max-depth", "2x", "a.py"], "tracy: --max-depth expects a number, not '2x'"),
    (["-t0", "a.py"], "tracy: unknown option -t0"),
    (["--lines=1", "a.py"], "tracy: unknown option --lines=1"),
    (["--label", "", "a.py"], "tracy: --label takes args,file,line, not ''"),
    (["--mechanism", "fast", "a.py"],
     "tracy: --mechanism (or TRACY_MECHANISM) takes auto, hook or exact, not 'fast'"),
    (["-o"], "tracy: -o needs a value"),
    (["--"], "tracy: no script or -m module given"),
    (["-p", "-c"], "tracy: -c needs a command"),
    (["-v", "-m"], "tracy: -m needs a module name"),
])
def test_a_usage_error_is_one_line_and_the_usage(tmp_path, args, line):
    """Each usage error: its line, the usage's first lines after it, exit
    status 2, no daemon started (no trace), nothing on standard output."""
    p = subprocess.run([PYTHON, "-m", "tracy"] + args, env=env_for_tests(), capture_output=True,
                       text=True, timeout=60, cwd=str(tmp_path))
    assert (p.returncode, p.stdout) == (2, ""), p.stderr
    first, second = p.stderr.splitlines()[:2]
    assert first == line and second.startswith("usage: python -m tracy [options]"), p.stderr
    assert not list(tmp_path.glob("*.tracy"))


def test_the_command_line_forms_reach_the_program(tmp_path):
    """`--` before -m or -c, short flags grouped with a value last (-pvo
    OUT), --option=value and -c's code: each runs the program with the
    options given (a trace where -o says, -v's lines) and its arguments as
    plain python gives them."""
    (tmp_path / "mod.py").write_text("import sys\nprint('mod', sys.argv[1:])\n")
    env = env_for_tests()
    cases = [
        (["--", "-m", "mod", "-v"], "mod ['-v']", "mod.tracy"),
        (["-o", "c.tracy", "--", "-c", "import sys; print('c', sys.argv)", "x"],
         "c ['-c', 'x']", "c.tracy"),
        (["-pvo", "grouped.tracy", "mod.py", "-o", "y"], "mod ['-o', 'y']", "grouped.tracy"),
        (["--output=eq.tracy", "--max-depth=3", "mod.py"], "mod []", "eq.tracy"),
    ]
    for args, out, trace in cases:
        p = subprocess.run([PYTHON, "-m", "tracy"] + args, env=env, capture_output=True,
                           text=True, timeout=60, cwd=str(tmp_path))
        assert (p.returncode, p.stdout) == (0, out + "\n"), (args, p.stderr)
        assert ("tracy: started " in p.stderr) == ("-pvo" in args), (args, p.stderr)
        assert Run(p, str(tmp_path / trace)).trace["complete"], args


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_connects_to_a_running_daemon(run_tracy, tmp_path):
    out = tmp_path / "ext.tracy"
    d = subprocess.Popen([os.path.join(BIN, "capture-release"), "-o", str(out), "-p", "0",
                          "-q"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(d.stdout.readline())
        r = run_tracy(FIB.replace("fib(20)", "fib(6)"), "-t", str(port))
        assert r.rc == 0, r.err
        assert "events stored by the daemon" in r.err
        assert d.wait(timeout=60) == 0
    finally:
        if d.poll() is None:
            d.kill()
            d.wait()
    r.path = str(out)
    assert r.count("fib") == 25
    r.assert_balanced()


def test_output_under_a_file_says_it_is_not_a_folder(tmp_path):
    (tmp_path / "prog.py").write_text("x = 1\n")
    (tmp_path / "afile").write_text("")
    p = subprocess.run([PYTHON, "-m", "tracy", "-o", "afile/sub/out.tracy", "prog.py"],
                       cwd=str(tmp_path), env=env_for_tests(), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2
    d = tmp_path / "afile"
    assert p.stderr == "tracy: cannot create %s: %s is not a folder\n" % (d / "sub", d), p.stderr


def test_the_daemon_socket_leaves_the_low_descriptors_to_the_program(run_tracy):
    r = run_tracy("""
    import os
    fd = os.open(os.devnull, os.O_RDONLY)
    print(fd)
    """)
    assert r.rc == 0, r.err
    assert r.out == "3\n"
