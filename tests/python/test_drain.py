"""capture-release's drain mode (SIGUSR1), with the real daemon and real
profiled interpreters: the processes connected go on being recorded, a
child one of them starts is still welcome, a newcomer whose ancestors have
all left runs unprofiled with one line and is not counted as lost, and the
daemon ends when the last connected process leaves."""
import os
import signal
import subprocess
import sys

from test_faults import env_with, finish, port_of, sql, start_daemon
from conftest import BIN, PYTHON

WORK = "def work():\n    pass\nfor _ in range(50):\n    work()\n"

# Connects, says so, waits for a line, starts a profiled child, ends.
HOLDER = ("import subprocess, sys, tracy\ntracy.profile.__enter__()\n" + WORK +
          "print('connected', flush=True)\nsys.stdin.readline()\n"
          "subprocess.run([sys.executable, '-c', sys.argv[1]], check=True)\n")
CHILD = "import tracy\ntracy.profile.__enter__()\n" + WORK + "print('child ok')\n"


def test_drain_keeps_connected_and_their_children_turns_newcomers_away(tmp_path):
    trace = str(tmp_path / "drain.tracy")
    daemon = start_daemon(trace, "-p", "0")
    holder = None
    try:
        env = env_with(port_of(daemon))
        holder = subprocess.Popen([PYTHON, "-c", HOLDER, CHILD], env=env, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        assert holder.stdout.readline() == "connected\n"
        daemon.send_signal(signal.SIGUSR1)
        # Not a descendant of a connected process: turned away, runs anyway.
        late = subprocess.run([PYTHON, "-c", CHILD], env=env, capture_output=True,
                              text=True, timeout=60)
        assert late.returncode == 0 and late.stdout == "child ok\n", late.stderr
        lines = late.stderr.splitlines()
        assert len(lines) == 1 and "the capture is finishing" in lines[0], late.stderr
        assert lines[0].endswith("running unprofiled"), late.stderr
        assert daemon.poll() is None  # the holder is still connected
        out, err = holder.communicate("go\n", timeout=60)
        assert holder.returncode == 0, err
        assert out == "child ok\n" and err == "", err
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
            holder.wait()
        rc = finish(daemon)
    assert rc == 0
    procs = sql(trace, "SELECT status FROM process")
    assert procs == [{"status": "clean"}, {"status": "clean"}]
    (n,) = sql(trace, "SELECT count(*) AS n FROM slice WHERE name = 'work'")
    assert n["n"] == 100
    stats = {r["name"]: (r["severity"], r["value"])
             for r in sql(trace, "SELECT name, severity, value FROM stats")}
    assert stats["clients_after_end"] == ("info", 1), stats
    assert stats.get("clients_refused", ("error", 0))[1] == 0, stats
    info = subprocess.run([os.path.join(BIN, "tracy-info"), trace], capture_output=True,
                          text=True, timeout=60)
    assert info.returncode == 0, info.stdout + info.stderr  # nothing lost


def test_drain_without_clients_ends_at_once(tmp_path):
    trace = str(tmp_path / "empty.tracy")
    daemon = start_daemon(trace, "-p", "0")
    port_of(daemon)
    daemon.send_signal(signal.SIGUSR1)
    assert finish(daemon) == 0
    info = subprocess.run([os.path.join(BIN, "tracy-info"), trace], capture_output=True,
                          text=True, timeout=60)
    assert "state:            complete" in info.stdout, info.stdout + info.stderr
