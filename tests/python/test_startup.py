"""python -m tracy imports only what a run needs: every profiled child
process pays its start-up. The modules a script finds loaded under it are
those of plain `python -m` (runpy and what it loads) and the tracy package's
own; the heavy ones the profiler used to import (signal and its enum,
functools, threading) come only with the program or a mechanism that needs
them. Measured by what the interpreter holds, so load cannot move it."""
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import PYDIR, PYTHON, Run, _tracy, env_for_tests

SHOW = "import json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
# (gc and atexit: built-in modules, nothing to load; the hook looks gc up
# on 3.8, hook.c. Not _posixsubprocess: its fork_exec is wrapped when
# subprocess is first used, unseen.c py__fork_exec_seen)
OURS = {"tracy", "tracy._tracy", "tracy._runtime", "tracy._capture", "atexit", "gc"}
HEAVY = ("signal", "enum", "functools", "threading", "tracy._trace")


def modules(tmp_path, *args):
    p = subprocess.run([PYTHON] + list(args), capture_output=True, text=True, timeout=120,
                       cwd=str(tmp_path), env=env_for_tests())
    assert p.returncode == 0, p.stderr
    return set(json.loads(p.stdout.strip().splitlines()[-1]))


def write_scripts(tmp_path, body=""):
    (tmp_path / "show.py").write_text(body + SHOW)
    (tmp_path / "showmod.py").write_text(SHOW)


def test_an_empty_program_gets_nothing_heavy(tmp_path):
    write_scripts(tmp_path, "import json\n")  # (json: what the script itself needs)
    plain = modules(tmp_path, "-m", "showmod")
    traced = modules(tmp_path, "-m", "tracy", "-o", str(tmp_path / "t.tracy"), "show.py")
    extra = traced - plain
    assert extra <= OURS, sorted(extra - OURS)
    for name in HEAVY:
        assert name not in traced or name in plain, name


def test_trace_c_brings_threading_for_later_threads(tmp_path):
    """Under a profile function (--trace-c), a thread started later gets it
    from threading: it is imported before recording starts."""
    write_scripts(tmp_path)
    traced = modules(tmp_path, "-m", "tracy", "--trace-c", "-o", str(tmp_path / "t.tracy"),
                     "show.py")
    assert "threading" in traced


def test_start_trace_is_there_when_asked_for(tmp_path):
    write_scripts(tmp_path, "import sys, tracy\n"
                            "assert 'tracy._trace' not in sys.modules\n"
                            "from tracy import start_trace, stop_trace, trace, Options\n"
                            "assert trace is tracy.trace and callable(start_trace)\n")
    got = modules(tmp_path, "show.py")
    assert "tracy._trace" in got


def test_import_tracy_alone_loads_no_runtime(tmp_path):
    """A program that imports tracy and runs without the profiler loads the
    API and the extension only; the runtime comes with the first region."""
    write_scripts(tmp_path, "import sys, tracy\n"
                            "assert 'tracy._runtime' not in sys.modules\n"
                            "assert 'tracy._capture' not in sys.modules\n"
                            "assert sorted(n for n in dir(tracy) if not n.startswith('_'))"
                            " == sorted(tracy.__all__ + ['MECHANISMS'])\n"
                            "with tracy.Profiler():\n"
                            "    pass\n")
    got = modules(tmp_path, "show.py")
    assert "tracy._runtime" in got and "tracy._capture" not in got


# What a child's start under tracy may add to plain's: the package's runtime
# (tracy's own sitecustomize, which hides a program's, is not left in
# sys.modules: see below)
CHILD_OURS = {"tracy", "tracy._tracy", "tracy._runtime", "atexit", "gc"}
PARENT = ("import subprocess, sys\n"
          "p = subprocess.run([sys.executable, 'show.py'], capture_output=True, text=True)\n"
          "sys.stdout.write(p.stdout); sys.stderr.write(p.stderr)\n"
          "sys.exit(p.returncode)\n")


def test_a_child_starts_with_nothing_of_the_lookup(tmp_path):
    """A profiled child process loads what plain Python loads and the
    runtime: finding the sitecustomize tracy's hides uses the import
    system's own finders (no importlib.util, importlib.machinery, warnings
    or types, which an unprofiled start does not load)."""
    write_scripts(tmp_path)
    (tmp_path / "parent.py").write_text(PARENT)
    plain = modules(tmp_path, "show.py")
    child = modules(tmp_path, "-m", "tracy", "-o", str(tmp_path / "t.tracy"), "parent.py")
    assert child - plain <= CHILD_OURS, sorted(child - plain - CHILD_OURS)


def test_a_childs_own_sitecustomize_runs_recorded(tmp_path):
    """A program's sitecustomize, hidden by tracy's in a child, still runs
    there, recorded as the program's code; tracy's lookup of it is not
    recorded (no zone of the import system's finders, of posixpath, of
    tracy's package at the child's start)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os\n"
        "def site_setup():\n"
        "    os.environ['SITE_SEEN'] = 'yes'\n"
        "site_setup()\n")
    (tmp_path / "child.py").write_text(
        "import os\n"
        "def child_work():\n"
        "    return os.environ.get('SITE_SEEN')\n"
        "print('child', child_work())\n")
    (tmp_path / "parent.py").write_text(PARENT.replace("show.py", "child.py"))
    env = env_for_tests()
    env["PYTHONPATH"] += os.pathsep + str(site)
    plain = subprocess.run([PYTHON, "parent.py"], capture_output=True, text=True,
                           timeout=120, cwd=str(tmp_path), env=env)
    assert plain.stdout == "child yes\n", plain.stderr
    out = str(tmp_path / "t.tracy")
    p = subprocess.run([PYTHON, "-m", "tracy", "-o", out, "parent.py"], capture_output=True,
                       text=True, timeout=120, cwd=str(tmp_path), env=env)
    assert p.returncode == 0 and p.stdout == plain.stdout, p.stderr
    r = Run(p, out)
    r.assert_balanced()
    child = [z for z in r.zones if z.process == 2]
    names = {z.name for z in child}
    assert {"site_setup", "child_work"} <= names, sorted(names)
    roots = {z.name for z in child if z.depth == 0}
    tracy_own = {"PathFinder.find_spec", "abspath", "dirname", "_find_and_load"}
    assert not roots & tracy_own, sorted(roots)


SITE = ("import os\n"
        "os.environ['SITE_SEEN'] = 'yes'\n")
ASK = ("import os, sys\n"
       "sys.stdout.write('%s %s\\n' % (os.environ.get('SITE_SEEN'), 'tracy' in sys.modules))\n")


def unprofiled_children(tmp_path, children, env):
    """Runs parent.py (starting `children`, argv lists, each running ask.py
    and printing what it wrote) plain and under tracy. Returns (plain,
    traced Run)."""
    (tmp_path / "ask.py").write_text(ASK)
    (tmp_path / "parent.py").write_text(
        "import os, subprocess, sys\n"
        "env = dict(os.environ)\n"
        "if 'OTHER_CHILD' in env:  # a tracy package that cannot load, first\n"
        "    env['PYTHONPATH'] = env['OTHER_CHILD'] + os.pathsep + env['PYTHONPATH']\n"
        "for argv in %r:\n"
        "    p = subprocess.run(argv + ['ask.py'], capture_output=True, text=True, env=env)\n"
        "    print(repr(p.stdout), repr(p.stderr), p.returncode)\n" % (children,))
    plain = subprocess.run([PYTHON, "parent.py"], capture_output=True, text=True,
                           timeout=120, cwd=str(tmp_path), env=env)
    assert plain.returncode == 0, plain.stderr
    out = str(tmp_path / "t.tracy")
    p = subprocess.Popen([PYTHON, "-m", "tracy", "-o", out, "parent.py"], text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(tmp_path),
                         env=env)
    stdout, stderr = p.communicate(timeout=120)
    r = Run(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr), out)
    r.pid = p.pid  # (its notes file: unprofiled-PID.txt)
    return plain, r


def check_unprofiled(plain, r, n, why):
    """The children ran and printed as plain (nothing of tracy on their
    standard error), the parent's run says which were not profiled and
    why, in one line per reason, and so does its trace; the notes file
    is gone (other runs of this user may have theirs meanwhile)."""
    assert r.rc == 0 and r.out == plain.stdout, (r.out, plain.stdout, r.err)
    said = [ln for ln in r.err.splitlines() if "not profiled" in ln]
    assert len(said) == n and all(why in ln for ln in said), r.err
    notes = [m.text for m in r.trace["messages"] if "not profiled" in m.text]
    assert notes == said, (notes, said)
    r.assert_balanced()
    rundir = _tracy._rundir()
    assert not os.path.exists(os.path.join(rundir, "unprofiled-%d.txt" % r.pid))


def unbuilt_copy(tmp_path):
    """A copy of the tracy package with no extension built: the _child
    folder of an installation made for another interpreter; and that
    interpreter: the test's, under a name that is not python* (tracy gives
    a Python child started with an environment of its own its _child
    folder: this one keeps the one it is given)."""
    copy = tmp_path / "unbuilt" / "tracy"
    shutil.copytree(os.path.join(PYDIR, "tracy"), str(copy),
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    interp = tmp_path / "interp"
    os.symlink(PYTHON, str(interp))
    return str(copy / "_child"), str(interp)


def test_a_child_that_cannot_load_tracy_runs_as_plain(tmp_path):
    """A child whose tracy cannot load (a package with no extension built
    for it) runs unprofiled with its own sitecustomize, and prints nothing
    of tracy."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE)
    child, interp = unbuilt_copy(tmp_path)
    env = env_for_tests(OTHER_CHILD=child)
    env["PYTHONPATH"] += os.pathsep + str(site)
    plain, r = unprofiled_children(tmp_path, [[interp], [interp]], env)
    assert plain.stdout == "'yes False\\n' '' 0\n" * 2
    check_unprofiled(plain, r, 1, "2 child processes not profiled (pids ")
    assert "): not built for Python " in r.err, r.err


OLD = [os.path.expanduser("~/.pyenv/versions/%s/bin/python%s" % (v, v[:3]))
       for v in ("2.7.18", "3.6.15", "3.7.16")]


def test_interpreters_tracy_does_not_support_run_as_plain(tmp_path):
    """Python 2.7, 3.6 and 3.7 (pyenv's, where present) started by a traced
    program run as plain, their own sitecustomize too."""
    old = [[p] for p in OLD if os.path.exists(p)]
    if not old:
        pytest.skip("no Python 2.7, 3.6 or 3.7 in ~/.pyenv")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE)
    env = env_for_tests()
    env["PYTHONPATH"] += os.pathsep + str(site)
    plain, r = unprofiled_children(tmp_path, old, env)
    assert plain.stdout == "'yes False\\n' '' 0\n" * len(old)
    check_unprofiled(plain, r, len(old), "tracy supports CPython 3.8 to 3.13, not ")


def test_notes_left_by_a_killed_run_are_swept(tmp_path):
    """A notes file whose run was killed before reading it is removed by
    the next run that starts a daemon, once a minute old; a recent one, or
    one of a live process, is left to its run."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    rundir = _tracy._rundir()
    old = os.path.join(rundir, "unprofiled-%d.txt" % dead.pid)
    recent = os.path.join(rundir, "unprofiled-%d.txt" % (dead.pid + 1000000))
    live = os.path.join(rundir, "unprofiled-%d.txt" % os.getpid())
    try:
        for path in (old, recent, live):
            with open(path, "w") as f:
                f.write("1\tleft\n")
        for path in (old, live):
            os.utime(path, (1, 1))
        write_scripts(tmp_path)
        modules(tmp_path, "-m", "tracy", "-o", str(tmp_path / "t.tracy"), "show.py")
        assert (os.path.exists(old), os.path.exists(recent), os.path.exists(live)) == \
            (False, True, True)
    finally:
        for path in (old, recent, live):
            if os.path.exists(path):
                os.unlink(path)


def test_a_window_reports_children_it_could_not_profile(tmp_path):
    """tracy.trace: a child that cannot load tracy runs as plain and the
    window's result (and trace) says so."""
    other, interp = unbuilt_copy(tmp_path)
    (tmp_path / "ask.py").write_text(ASK)
    (tmp_path / "win.py").write_text(
        "import os, subprocess, sys, tracy\n"
        "with tracy.trace(%r, quiet=True) as w:\n"
        "    env = dict(os.environ)\n"
        "    env['PYTHONPATH'] = %r + os.pathsep + env['PYTHONPATH']  # first\n"
        "    p = subprocess.run([%r, 'ask.py'], capture_output=True, text=True,\n"
        "                       env=env)\n"
        "print(repr(p.stdout), repr(p.stderr), p.returncode)\n"
        "print(len(w.result.unprofiled), 'not built for Python' in w.result.unprofiled[0])\n"
        % (str(tmp_path / "w.tracy"), other, interp))
    p = subprocess.run([PYTHON, "win.py"], capture_output=True, text=True, timeout=120,
                       cwd=str(tmp_path), env=env_for_tests())
    assert (p.returncode, p.stdout, p.stderr) == (0, "'None False\\n' '' 0\n1 True\n", ""), \
        p.stderr
    t = _tracy._read_trace(str(tmp_path / "w.tracy"))
    assert [m.text for m in t["messages"] if "not profiled" in m.text], t["messages"]


def test_a_child_keeps_the_path_order_of_an_installed_tracy(tmp_path):
    """tracy installed in a site-packages (here the user site): its child
    processes get plain's sys.path, not that folder ahead of the standard
    library, where a module of it named as a standard one (here
    `fractions`) would replace the standard one."""
    env = env_for_tests(PYTHONUSERBASE=str(tmp_path / "userbase"))
    env.pop("PYTHONPATH")
    site = subprocess.run([PYTHON, "-c", "import site; print(site.getusersitepackages())"],
                          capture_output=True, text=True, timeout=60, env=env).stdout.strip()
    shutil.copytree(os.path.join(PYDIR, "tracy"), os.path.join(site, "tracy"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(os.path.join(site, "fractions.py"), "w") as f:
        f.write("SHADOW = True\n")
    (tmp_path / "kid.py").write_text(
        "import fractions, sys\n"
        "print(hasattr(fractions, 'SHADOW'), sys.path[1:])\n")
    (tmp_path / "parent.py").write_text(PARENT.replace("show.py", "kid.py"))
    plain = subprocess.run([PYTHON, "parent.py"], capture_output=True, text=True, timeout=60,
                           env=env, cwd=str(tmp_path))
    assert plain.returncode == 0 and plain.stdout.startswith("False ["), plain.stderr
    out = str(tmp_path / "t.tracy")
    p = subprocess.run([PYTHON, "-m", "tracy", "-o", out, "parent.py"], capture_output=True,
                       text=True, timeout=60, env=env, cwd=str(tmp_path))
    r = Run(p, out)
    assert (r.rc, r.out) == (0, plain.stdout), r.err
    assert len(r.trace["processes"]) == 2
    r.assert_balanced()


ENV_KID = ("import os, sys\n"
       "def kid():\n"
       "    return [p for p in sys.path[1:]\n"
       "            if 'pyenv' not in p and '/usr/' not in p and 'site-packages' not in p]\n"
       "print(sys.argv[1], kid(), repr(os.environ.get('PYTHONPATH')), sorted(os.environ))\n")

# A program that starts Python children every way it can give them an
# environment: inherited, a copy without PYTHONPATH (venv's ensurepip, pip's
# build steps), one made anew, one with a PYTHONPATH of its own or an empty
# one, a PYTHONPATH the program set in os.environ, os.execve, os.posix_spawnp,
# and through a shell given a copy.
ENV_PARENT = """import os, subprocess, sys
print('parent', repr(os.environ.get('PYTHONPATH')), sorted(os.environ))
def run(tag, env=None, cmd=None):
    p = subprocess.run(cmd or [sys.executable, 'kid.py', tag], env=env, capture_output=True,
                       text=True)
    print(p.stdout.strip(), repr(p.stderr), p.returncode)
base = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
run('inherit')
run('copy', base)
run('anew', {'A': '1'})
run('own', dict(base, PYTHONPATH=%(extra)r))
run('anew-own', {'A': '1', 'PYTHONPATH': %(extra)r})
run('empty', dict(base, PYTHONPATH=''))
run('shell', dict(base), ['sh', '-c', '%(py)s kid.py shell'])
run('shell-copy', None, ['sh', '-c', 'exec %(py)s -c "import os, subprocess, sys; '
                         'subprocess.run([sys.executable, \\'kid.py\\', \\'grandchild\\'], '
                         'env=dict(os.environ, B=\\'2\\'))"'])
run('env-anew', {'A': '1'}, ['env'])
pid = os.posix_spawnp(%(py)r, [%(py)r, 'kid.py', 'spawnp'], {'A': '1'})
os.waitpid(pid, 0)
os.environ['PYTHONPATH'] = %(extra)r
run('set')
del os.environ['PYTHONPATH']
run('unset')
sys.stdout.flush()
os.execve(sys.executable, [sys.executable, 'kid.py', 'execve'], base)
"""


def test_every_python_child_is_profiled_and_sees_what_it_was_given(tmp_path):
    """Every Python child of a profiled program is profiled, however it is
    given its environment, and sees the one it was given: its os.environ,
    PYTHONPATH and sys.path are plain's (tracy's _child folder and TRACY_
    variables are in the process's environment, not in the program's
    view; a child takes those off its own view). So does the program
    itself (TRACY_PORT=0, the test's, is there as plain; no other
    TRACY_ variable); a copy of the view given to a shell or to a Python
    child of a child still reaches a profiled grandchild; a program not
    Python given an environment made anew gets it unchanged."""
    (tmp_path / "extra").mkdir()
    (tmp_path / "kid.py").write_text(ENV_KID)
    py = os.path.realpath(PYTHON)
    (tmp_path / "parent.py").write_text(ENV_PARENT % {"extra": str(tmp_path / "extra"), "py": py})
    env = env_for_tests()
    plain = subprocess.run([PYTHON, "parent.py"], capture_output=True, text=True, timeout=60,
                           env=env, cwd=str(tmp_path))
    assert plain.returncode == 0 and plain.stdout.count("'' 0") == 11, plain
    assert "\nA=1 '' 0\n" in plain.stdout and "'TRACY_PORT'" in plain.stdout
    out = str(tmp_path / "t.tracy")
    p = subprocess.run([PYTHON, "-m", "tracy", "-o", out, "parent.py"], capture_output=True,
                       text=True, timeout=120, env=env, cwd=str(tmp_path))
    r = Run(p, out)
    assert (r.rc, r.out) == (0, plain.stdout), r.err
    assert "anew [] None ['A', 'LC_CTYPE']" in r.out or "anew [] None ['A']" in r.out
    assert len(r.trace["processes"]) == 14, r.trace["processes"]
    assert r.count("kid") == 12
    t = r.trace
    assert t["complete"] and all(p["status"] == 0 for p in t["processes"]), t["processes"]
    # (the one zone left open: the parent's module, which execve replaced)
    assert [(z.process, z.name) for z in t["zones"] if z.flags] == [(1, "<module>")]


def test_a_python_child_that_skips_sitecustomize_is_reported(tmp_path):
    """A Python child started with -E, -I or -S (alone or in a cluster)
    does not read tracy's sitecustomize: it runs unprofiled, and the run
    says so, one line per option; options after -c's code are the
    program's, and -W and -X take a value."""
    (tmp_path / "iso.py").write_text(
        "import os, subprocess, sys\n"
        "for flags in (['-I'], ['-Es'], ['-W', 'ignore', '-S'], ['-X', 'dev'],\n"
        "              ['-W', 'I'], ['-c', 'print(1)', '-I']):\n"
        "    code = [] if '-c' in flags else ['-c', 'print(1)']\n"
        "    subprocess.run([sys.executable] + flags + code, check=True)\n"
        "pid = os.posix_spawn(sys.executable, [sys.executable, '-I', '-c', 'print(1)'],\n"
        "                     os.environ)\n"
        "assert os.waitpid(pid, 0)[1] == 0\n")
    out = str(tmp_path / "t.tracy")
    p = subprocess.run([PYTHON, "-m", "tracy", "-o", out, "iso.py"], capture_output=True,
                       text=True, timeout=120, env=env_for_tests(), cwd=str(tmp_path))
    r = Run(p, out)
    assert (r.rc, r.out) == (0, "1\n" * 7), r.err
    said = {}
    for ln in r.err.splitlines():
        m = re.match(r"tracy: (?:a child process|(\d+) child processes) not profiled "
                     r"\(pids? [\d ]+\): started with -(.): Python does not read tracy's "
                     r"sitecustomize then$", ln)
        if m:
            said[m.group(2)] = int(m.group(1) or 1)
    assert said == {"I": 2, "E": 1, "S": 1}, r.err
    assert len(r.trace["processes"]) == 4  # the program, -X dev, -W I, -c ... -I


def test_the_wrapped_os_functions_look_as_plain(tmp_path):
    """os and posix hold the same wrapped functions (test_posix calls
    posix.execve), which are in the os.supports_* sets where the real ones
    are (`os.execve in os.supports_fd` decides whether fexecve is used)."""
    (tmp_path / "look.py").write_text(
        "import os, posix\n"
        "for n in ('execv', 'execve', 'posix_spawn', 'posix_spawnp', '_exit', 'fork'):\n"
        "    print(n, getattr(os, n) is getattr(posix, n), getattr(os, n).__name__,\n"
        "          [s for s in ('supports_fd', 'supports_dir_fd', 'supports_follow_symlinks',\n"
        "                       'supports_effective_ids') if getattr(os, n) in getattr(os, s)])\n")
    env = env_for_tests()
    plain = subprocess.run([PYTHON, "look.py"], capture_output=True, text=True, timeout=60,
                           env=env, cwd=str(tmp_path))
    assert plain.returncode == 0 and "execve True execve ['supports_fd']" in plain.stdout
    out = str(tmp_path / "t.tracy")
    p = subprocess.run([PYTHON, "-m", "tracy", "-o", out, "look.py"], capture_output=True,
                       text=True, timeout=120, env=env, cwd=str(tmp_path))
    assert (p.returncode, p.stdout) == (0, plain.stdout), p.stderr
