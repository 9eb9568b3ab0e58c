"""A program that crashes keeps what led to the crash (client_crash.c): run
plain and under python -m tracy, it prints the same and ends by the same
signal; its trace holds every zone recorded before the crash, the process
ends "crashed" with the signal, and a message of the crashing thread says
so with the Python stack (as faulthandler prints it; CPython's dumper is
found in the interpreter's symbol table where it is not exported).

And fork children (hook.c, client_buf.c): no event of the parent is sent by
a child, a child's stream is consistent (nothing rejected), and a child
killed at any early moment is recorded clean or counted lost with the
reason."""
import os
import random
import resource
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import PYTHON, Run, _tracy, env_for_tests

FIB15_CALLS = 1973

PROGRAM = r'''
import os, signal, sys, threading
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def crash(how):
    if how == "SIGSEGV":
        import ctypes
        ctypes.string_at(0)
    elif how == "SIGABRT":
        os.abort()
    elif how == "fatal":  # CPython's fatal error: faulthandler disabled, abort()
        import ctypes
        ctypes.pythonapi.Py_FatalError(b"the program's own")
    else:
        os.kill(os.getpid(), getattr(signal, how))

def work(how):
    print(fib(15), flush=True)
    crash(how)

how, where = sys.argv[1], sys.argv[2]
print(signal.getsignal(signal.SIGSEGV), signal.getsignal(signal.SIGABRT), flush=True)
if where == "faulthandler":
    import faulthandler
    faulthandler.enable()
if where == "thread":
    t = threading.Thread(target=work, args=(how,), name="crasher")
    t.start()
    t.join()
    print("not reached")
else:
    work(how)
'''

# A C extension's handler, set with sigaction after the profiler's: here
# libc's _exit, so that the process ends with status 11 instead.
REPLACED = r'''
import ctypes, signal
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
print(fib(15), flush=True)
libc = ctypes.CDLL(None)
libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.signal(signal.SIGSEGV, ctypes.cast(libc._exit, ctypes.c_void_p))
ctypes.string_at(0)
'''


def wait_complete(path):
    """A crash ends python -m tracy's own process at once: the daemon it
    started finishes the file just after. Waits (at most 60 s) for that."""
    for _ in range(1200):
        try:
            if _tracy._read_trace(path)["complete"]:
                return
        except (OSError, ValueError, RuntimeError):
            pass
        time.sleep(0.05)


def run_pair(tmp_path, source, *args, core=False, pyargs=(), env=None):
    """The program run plain and traced: (plain, traced Run), each with the
    wait status's core-dump bit in .core. `core`: core dumps allowed (into
    tmp_path, removed), else RLIMIT_CORE 0."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(source))
    out = str(tmp_path / "trace.tracy")
    hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
    limit = (hard, hard) if core else (0, hard)
    res = []
    py = [PYTHON] + list(pyargs)
    for i, cmd in enumerate((py + [str(script)], py + ["-m", "tracy", "-o", out, str(script)])):
        with open(tmp_path / ("out%d" % i), "w+") as fo, \
                open(tmp_path / ("err%d" % i), "w+") as fe:
            p = subprocess.Popen(cmd + list(args), stdout=fo, stderr=fe,
                                 env=env if env is not None else env_for_tests(),
                                 cwd=str(tmp_path),
                                 preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE,
                                                                       limit))
            _, st = os.waitpid(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(st)
            fo.seek(0)
            fe.seek(0)
            run = Run(subprocess.CompletedProcess(cmd, p.returncode, fo.read(), fe.read()),
                      out)
        run.core = os.WIFSIGNALED(st) and os.WCOREDUMP(st)
        if i == 1:
            wait_complete(out)
        for f in os.listdir(tmp_path):
            if f == "core" or f.startswith("core."):
                os.unlink(tmp_path / f)
        res.append(run)
    return res


def fib_zones(run, thread=None):
    return sum(1 for z in run.zones if z.name == "fib" and (thread is None or z.thread == thread))


def crash_notes(run):
    return [m for m in run.trace["messages"] if m.text.startswith("tracy: crashed by ")]


def assert_crashed(traced, sig, thread=1):
    name = signal.Signals(sig).name
    t = traced.trace
    assert t["complete"]
    (proc,) = t["processes"]
    assert proc["status"] == 4, proc  # crashed
    assert proc["end_reason"] == "%s (signal %d)" % (name, sig)
    assert proc["events_received"] == proc["events_sent"]
    assert fib_zones(traced, thread) == FIB15_CALLS
    (note,) = crash_notes(traced)
    assert note.text.split("\n")[0] == "tracy: crashed by %s (signal %d)" % (name, sig)
    assert note.thread == thread
    assert "(most recent call first):" in note.text
    assert ' line ' in note.text and 'in work' in note.text, note.text


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGBUS, signal.SIGILL,
                                 signal.SIGFPE, signal.SIGABRT])
def test_a_crash_keeps_every_event_and_ends_by_its_signal(tmp_path, sig):
    core = sig in (signal.SIGSEGV, signal.SIGABRT)
    plain, traced = run_pair(tmp_path, PROGRAM, signal.Signals(sig).name, "main", core=core)
    assert plain.rc == -sig, plain.err
    assert traced.core == plain.core
    if core and resource.getrlimit(resource.RLIMIT_CORE)[1] != 0:
        assert plain.core  # the check above compared something
    assert (traced.rc, traced.out) == (plain.rc, plain.out), traced.err
    assert "SIG_DFL" in plain.out.split("\n")[0] or plain.out.startswith("0 0")
    assert traced.err == plain.err
    assert_crashed(traced, sig)


OVERFLOW = r'''
import sys
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def work():
    print(fib(15), flush=True)
    sys.setrecursionlimit(10**7)
    nested = []
    for _ in range(10**6):
        nested = [nested]
    return repr(nested)
print(len(work()))
'''


def test_a_stack_overflow_reaches_the_handler(tmp_path):
    """The C stack overflows in repr (up to 3.11; later versions raise
    RecursionError instead): the handler runs on its alternate stack."""
    plain, traced = run_pair(tmp_path, OVERFLOW)
    assert (traced.rc, traced.out) == (plain.rc, plain.out), traced.err
    if plain.rc == -signal.SIGSEGV:
        assert_crashed(traced, signal.SIGSEGV)
    else:
        assert plain.rc == 1 and "RecursionError" in plain.err


@pytest.mark.parametrize("when", ["enabled by the program", "enabled before tracy"])
@pytest.mark.parametrize("how", ["SIGSEGV", "fatal"])
def test_faulthandler_still_prints_and_the_crash_is_kept(tmp_path, when, how):
    """faulthandler.enable() in the program replaces the profiler's handler
    and chains to it; -X faulthandler's is enabled again over the profiler's
    as soon as it starts, so that the same holds. A fatal error
    (Py_FatalError: faulthandler disabled, then abort()) put back the
    actions -X faulthandler's had replaced, over the profiler's, and the
    trace had no event of the process."""
    if when == "enabled by the program":
        plain, traced = run_pair(tmp_path, PROGRAM, how, "faulthandler")
    else:
        plain, traced = run_pair(tmp_path, PROGRAM, how, "main",
                                 pyargs=["-X", "faulthandler"])
    sig = signal.SIGSEGV if how == "SIGSEGV" else signal.SIGABRT
    assert (traced.rc, traced.out) == (plain.rc, plain.out)
    assert plain.rc == -sig and plain.out.endswith("\n610\n")
    for r in (plain, traced):
        assert r.err.startswith("Fatal Python error: "), r.err
        assert 'line 9 in crash' in r.err or 'line 14 in crash' in r.err, r.err
        assert "in work" in r.err, r.err
        assert r.err.count("Fatal Python error") == 1, r.err
        assert r.err.count(" in work") == 1, r.err  # one dump, not two
    if how == "SIGSEGV":
        assert all(r.err.startswith("Fatal Python error: Segmentation fault")
                   for r in (plain, traced))
    assert_crashed(traced, sig)


def test_a_child_of_pythonfaulthandler_keeps_its_fatal_errors_events(tmp_path):
    """PYTHONFAULTHANDLER=1 enables faulthandler in every child at its
    start, before the child's client: the child's fatal error ships its
    events all the same."""
    child = tmp_path / "child.py"
    child.write_text(textwrap.dedent(PROGRAM))
    parent = """
        import subprocess, sys
        p = subprocess.run([sys.executable, %r, "fatal", "main"], capture_output=True, text=True)
        print(p.returncode, p.stdout.split()[-1], p.stderr.count("Fatal Python error"))
        """ % str(child)
    env = dict(env_for_tests(), PYTHONFAULTHANDLER="1")
    plain, traced = run_pair(tmp_path, parent, env=env)
    assert plain.out == "-6 610 1\n", (plain.out, plain.err)
    assert (traced.rc, traced.out) == (plain.rc, plain.out), traced.err
    t = traced.trace
    assert t["complete"]
    (crashed,) = [p for p in t["processes"] if p["status"] == 4]  # crashed
    assert crashed["end_reason"] == "SIGABRT (signal 6)", t["processes"]
    assert fib_zones(traced) == FIB15_CALLS


FAULTHANDLER_FORK = r'''
import faulthandler, os, sys
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
faulthandler.enable()  # as regrtest does, after the profiler's handler
fib(10)
pid = os.fork()
if pid == 0:
    fib(15)
    faulthandler.disable()  # puts back what it replaced
    faulthandler._sigsegv()
    os._exit(0)  # reached only if the SIGSEGV was swallowed
_, st = os.waitpid(pid, 0)
print("child", -os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st))
'''


def test_a_fork_child_that_disables_faulthandler_still_dies_by_its_signal(tmp_path):
    """A fork child inherits its parent's chain of handlers: faulthandler's
    over the profiler's. Its client keeps that chain: installing the
    profiler's over faulthandler's again made a cycle, and after
    faulthandler.disable() a raised SIGSEGV was swallowed (3.13's
    test_concurrent_futures: a fork pool's crashing worker returned)."""
    plain, traced = run_pair(tmp_path, FAULTHANDLER_FORK)
    assert plain.rc == 0 and plain.out == "child -11\n", plain.err
    assert (traced.rc, traced.out) == (plain.rc, plain.out), traced.err
    t = traced.trace
    assert t["complete"]
    child = [p for p in t["processes"] if p["status"] == 4]  # crashed
    assert len(child) == 1 and child[0]["end_reason"] == "SIGSEGV (signal 11)", t["processes"]
    assert fib_zones(traced) == 177 + FIB15_CALLS


def test_a_crash_in_another_thread(tmp_path):
    plain, traced = run_pair(tmp_path, PROGRAM, "SIGABRT", "thread")
    assert (traced.rc, traced.out) == (plain.rc, plain.out)
    assert plain.rc == -signal.SIGABRT and "not reached" not in plain.out
    names = {th.name: th.thread for th in traced.trace["threads"]}
    assert_crashed(traced, signal.SIGABRT, thread=names["crasher"])


@pytest.mark.parametrize("how,where", [("SIGSEGV", "main"), ("SIGABRT", "thread")])
def test_the_flight_recorder_dumps_on_a_crash(tmp_path, how, where):
    """--flight keeps the run in memory only: a crash writes it (even with
    the exit dump off), the process ended "crashed" with the note, and the
    program dies by its signal as plain."""
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    out = str(tmp_path / "flight.tracy")
    hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
    sig = getattr(signal, how)
    p = subprocess.run([PYTHON, "-m", "tracy", "--flight", "1M", "-o", out, str(script), how,
                        where], capture_output=True, text=True, timeout=120,
                       env=env_for_tests(TRACY_FLIGHT_NO_EXIT_DUMP="1"), cwd=str(tmp_path),
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, hard)))
    assert p.returncode == -sig, p.stderr
    assert "not reached" not in p.stdout and "610" in p.stdout
    traced = Run(p, out)
    names = {th.name: th.thread for th in traced.trace["threads"]}
    assert_crashed(traced, sig, thread=names["crasher"] if where == "thread" else 1)


def test_a_handler_set_later_replaces_the_profilers_and_the_loss_is_said(tmp_path):
    plain, traced = run_pair(tmp_path, REPLACED)
    assert (traced.rc, traced.out) == (plain.rc, plain.out) == (11, "610\n")
    (proc,) = traced.trace["processes"]
    assert proc["status"] == 1  # lost: the program's handler ended it at once
    assert "events recorded but not sent: unknown" in proc["end_reason"], proc


def test_signals_off_leaves_crashes_alone(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    out = str(tmp_path / "t.tracy")
    p = subprocess.run([PYTHON, "-m", "tracy", "-o", out, str(script), "SIGABRT", "main"],
                       capture_output=True, text=True, timeout=120,
                       env=env_for_tests(TRACY_SIGNALS="0"))
    assert p.returncode == -signal.SIGABRT
    t = Run(p, out).trace
    assert t["processes"][0]["status"] == 1 and not crash_notes(Run(p, out))


# ---- fork children ----------------------------------------------------------

FORKS = r'''
import os, pty, sys
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def child_work():
    print("child", fib(12), flush=True)

def forked():
    pid = os.fork()
    if pid == 0:
        child_work()
        os._exit(3)
    return os.waitpid(pid, 0)[1]

def main():
    fib(10)
    st = forked()
    print("fork child", os.WEXITSTATUS(st), flush=True)
    st = pty.spawn([sys.executable, "-c", "print('spawned')"])
    print("pty child", os.WEXITSTATUS(st), flush=True)
main()
'''


def test_fork_and_pty_children_send_consistent_records(tmp_path):
    plain, traced = run_pair(tmp_path, FORKS)
    assert (traced.rc, traced.out) == (plain.rc, plain.out), traced.err
    assert plain.rc == 0 and "fork child 3" in plain.out and "pty child 0" in plain.out
    t = traced.trace
    assert t["complete"]
    procs = t["processes"]
    assert [p["status"] for p in procs] == [0] * len(procs), procs
    stats = t["stats"]
    assert stats["events_rejected"] == 0 and stats["clients_rejected"] == 0
    # zones end normally, but the exec frames of the pty child before its
    # exec, which never return (unclosed, flag 2, as for any exec)
    execs = {"execlp", "execvp", "_execvpe", "execv", "_exec_wrapper"}
    assert [z for z in t["zones"] if z.flags and (z.flags != 2 or z.name not in execs)] == []
    # the fork child's own records only: its fib(12), nothing of main/forked
    child = procs[1]["index"]
    names = [z.name for z in t["zones"] if z.process == child]
    assert names.count("fib") == 465 and "main" not in names and "forked" not in names
    info = subprocess.run(["tracy-info", traced.path], capture_output=True, text=True,
                          env=env_for_tests())
    assert "rejected events:  0" in info.stdout and ", rejected:" not in info.stdout


KILLED = r'''
import os, random, signal, sys, time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
rng = random.Random(int(sys.argv[1]))
for i in range(30):
    pid = os.fork()
    if pid == 0:
        if i % 5 == 4:
            os._exit(0)  # right after fork
        while True:
            fib(8)
    time.sleep(rng.random() * 0.004)
    os.kill(pid, signal.SIGKILL if i % 2 else signal.SIGTERM)
    os.waitpid(pid, 0)
print("done")
'''


def test_fork_children_killed_early_are_recorded_clean_or_counted(tmp_path):
    seed = random.randrange(1 << 30)
    plain, traced = run_pair(tmp_path, KILLED, str(seed))
    assert (traced.rc, traced.out) == (plain.rc, plain.out) == (0, "done\n"), seed
    t = traced.trace
    assert t["complete"], seed
    stats = t["stats"]
    assert stats["events_rejected"] == 0 and stats["clients_rejected"] == 0, seed
    for p in t["processes"][1:]:
        if p["status"] == 1:  # SIGKILL: what it had not sent is said unknown
            # the signal is named when the daemon could ask the kernel: a
            # child killed and reaped before the daemon took its pidfd at
            # HELLO leaves no trace of how it ended
            assert p["end_reason"].endswith("events recorded but not sent: unknown"), (seed, p)
            assert "(signal" not in p["end_reason"] or \
                "ended by SIGKILL (signal 9)" in p["end_reason"], (seed, p)
        else:
            assert p["status"] == 0, (seed, p)
            assert p["events_received"] == p["events_sent"], (seed, p)
