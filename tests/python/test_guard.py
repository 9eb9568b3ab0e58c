"""The profiler's descriptor is invisible to the program (PROTOCOL.md, The
daemon's socket): a program under python -m tracy that closes every
descriptor it does not know (os.closerange, as python-daemon's DaemonContext
does), or puts its own socket or pipe where the profiler's socket would be,
keeps a complete and exact trace, receives only its own bytes, and prints and
exits as it does unprofiled. With the sender's private descriptor table (the
default) nothing even needs a resumed connection; with the guarded
descriptor (TRACY_PRIVATE_FD=0, or where unshare is not allowed) each
disruption costs one. A daemon that really went away still means one line
and an unprofiled run, without a hang."""
import os
import signal
import subprocess
import time

import pytest

from conftest import PYTHON, env_for_tests
from test_faults import env_with, finish, port_of, sql, start_daemon

PROGRAM = r'''
import os, socket, sys, time

calls = 0

def fib(n):
    global calls
    calls += 1
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def profiler_fd():
    """The socket numbered 200 or more, as a program could find it."""
    for name in os.listdir("/proc/self/fd"):
        n = int(name)
        if n < 200:
            continue
        try:
            link = os.readlink("/proc/self/fd/%d" % n)
        except OSError:
            continue
        if link.startswith("socket:"):
            return n
    return -1

def replace(kind, phase):
    fd = profiler_fd()
    if fd < 0:  # unprofiled: the shell's `exec 200>lock` habit
        fd = 200
    if kind == "socket":
        a, b = socket.socketpair()
        mine, other = a.fileno(), b
    else:
        r, w = os.pipe()
        mine, other = w, r
    os.dup2(mine, fd)
    if kind == "socket":
        a.close()
    else:
        os.close(w)
    msg = b"the program's own bytes, phase %d" % phase
    os.write(fd, msg)
    for _ in range(10):
        fib(12)
    time.sleep(0.15)  # rounds run: none may write to fd
    if kind == "socket":
        other.setblocking(False)
        got = other.recv(4096)
        try:
            more = other.recv(4096)
        except BlockingIOError:
            more = b""
        other.close()
    else:
        os.set_blocking(other, False)
        got = os.read(other, 4096)
        try:
            more = os.read(other, 4096)
        except BlockingIOError:
            more = b""
        os.close(other)
    os.close(fd)
    if got != msg or more:
        print("foreign bytes:", len(got) + len(more))
        sys.exit(21)

kinds = sys.argv[1].split(",")
for phase in range(6):
    for _ in range(20):
        fib(12)
    time.sleep(0.08)  # a round ships them
    if phase == 5:
        break
    kind = kinds[phase % len(kinds)]
    if kind == "close":
        os.closerange(3, 65536)
    else:
        replace(kind, phase)
print("fib calls", calls)
'''


def stats_of(trace):
    return {r["name"]: (r["severity"], r["value"])
            for r in sql(trace, "SELECT name, severity, value FROM stats")}


@pytest.mark.parametrize("table", ["private", "shared"])
@pytest.mark.parametrize("kinds", ["close", "socket", "pipe", "close,socket,pipe"])
def test_closing_or_replacing_the_descriptor_keeps_the_trace(run_tracy, tmp_path, kinds,
                                                             table):
    prog = tmp_path / "guarded.py"
    prog.write_text(PROGRAM)
    plain = subprocess.run([PYTHON, str(prog), kinds], capture_output=True, text=True,
                           timeout=120, env=env_for_tests())
    assert plain.returncode == 0, plain.stderr
    env = env_for_tests(**({"TRACY_PRIVATE_FD": "0"} if table == "shared" else {}))
    r = run_tracy(None, args=(str(prog), kinds), env=env)
    # python -m tracy adds its one line, "trace written to ... (N events)"
    err = [l for l in r.err.splitlines(True) if not l.startswith("tracy: trace written")]
    assert (r.rc, r.out, "".join(err)) == (plain.returncode, plain.stdout, plain.stderr)
    calls = int(plain.stdout.split()[-1])
    r.assert_balanced()
    assert r.count("fib") == calls
    (p,) = r.trace["processes"]
    assert p["status"] == 0 and p["events_received"] == p["events_sent"], p
    stats = stats_of(r.path)
    assert stats["clients_resumed"] == ("info", 5 if table == "shared" else 0), stats
    for name in ("clients_lost", "clients_refused", "zones_aborted", "events_lost_client"):
        assert stats.get(name, (None, 0))[1] == 0, stats


KILLED = r'''
import os, signal, sys, time
import tracy
tracy.profile.__enter__()

def work():
    pass

for _ in range(1000):
    work()
time.sleep(0.2)
os.kill(int(sys.argv[1]), signal.SIGKILL)
for _ in range(40):
    for _ in range(1000):
        work()
    time.sleep(0.06)
print("done")
'''


def test_a_killed_daemon_means_one_line_and_no_hang(tmp_path):
    trace = str(tmp_path / "killed.tracy")
    daemon = start_daemon(trace, "-p", "0")
    try:
        env = env_with(port_of(daemon))
        start = time.monotonic()
        out = subprocess.run([PYTHON, "-c", KILLED, str(daemon.pid)], env=env,
                             capture_output=True, text=True, timeout=60)
        took = time.monotonic() - start
    finally:
        rc = finish(daemon)
    assert rc == -signal.SIGKILL
    assert out.returncode == 0 and out.stdout == "done\n", out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("tracy: lost the connection to the capture daemon"), lines
    assert lines[0].endswith("; running unprofiled"), lines
    assert took < 15, took
