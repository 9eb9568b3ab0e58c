"""Faults seen from Python: a profiled interpreter killed with SIGKILL while a
second one goes on, a profiled program with no daemon, one that waits for a
late daemon (TRACY_WAIT). The real capture-release, the real hook."""
import json
import os
import signal
import subprocess

from conftest import BIN, PYDIR, PYTHON

VICTIM = """\
import tracy


def step(i):
    tracy.plot("seq", i)


def outer():
    i = 0
    while True:
        step(i)
        i += 1
        if i % 1000 == 0:
            tracy.flush()  # everything up to i is on its way
            print(i, flush=True)


outer()
"""

SURVIVOR = """\
import sys
import tracy


def step(i):
    tracy.plot("seq", i)


def main(n):
    for i in range(n):
        step(i)
    print("done", flush=True)


main(int(sys.argv[1]))
"""

WORK = """\
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


print(fib(18))
"""


def env_with(port, **extra):
    env = dict(os.environ)
    env.update(PYTHONPATH=PYDIR, PATH=BIN + os.pathsep + env.get("PATH", ""),
               TRACY_PORT=str(port))
    for k in ("TRACY_ADDR", "TRACY_PY_OPTS", "TRACY_WAIT", "TRACY_QUIET", "TRACY_DROP"):
        env.pop(k, None)
    env.update(extra)
    return env


def start_daemon(trace, *extra):
    d = subprocess.Popen([os.path.join(BIN, "capture-release"), "-o", trace, "-q"]
                         + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    return d


def port_of(daemon):
    line = daemon.stdout.readline().strip()
    assert line.isdigit(), daemon.stderr.read()
    return int(line)


def finish(daemon):
    try:
        return daemon.wait(timeout=60)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        daemon.stdout.close()
        daemon.stderr.close()


def sql(trace, query):
    out = subprocess.run([os.path.join(BIN, "tracy-sql"), "--json", trace, query],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_killed_interpreter_keeps_its_data_and_the_other_goes_on(tmp_path):
    (tmp_path / "victim.py").write_text(VICTIM)
    (tmp_path / "survivor.py").write_text(SURVIVOR)
    trace = str(tmp_path / "run.tracy")
    daemon = start_daemon(trace, "-p", "0", "-n", "2")
    try:
        port = port_of(daemon)
        victim = subprocess.Popen([PYTHON, "-m", "tracy", "victim.py"], cwd=str(tmp_path),
                                  env=env_with(port), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        flushed = 0
        while flushed < 5000:
            line = victim.stdout.readline()
            assert line, victim.stderr.read()
            flushed = int(line)
        victim.send_signal(signal.SIGKILL)
        assert victim.wait(timeout=60) == -signal.SIGKILL
        victim.stdout.close()
        victim.stderr.close()
        survivor = subprocess.run([PYTHON, "-m", "tracy", "survivor.py", "3000"],
                                  cwd=str(tmp_path), env=env_with(port),
                                  capture_output=True, text=True, timeout=120)
        assert survivor.returncode == 0, survivor.stderr
        assert survivor.stdout == "done\n"
    finally:
        rc = finish(daemon)
    assert rc == 0

    procs = sql(trace, "SELECT upid, pid, status, end_reason, events_received, events_sent "
                       "FROM process ORDER BY upid")
    assert len(procs) == 2 and procs[0]["pid"] == victim.pid
    v, s = procs
    assert v["status"] == "lost" and "without goodbye" in v["end_reason"]
    assert s["status"] == "clean" and s["events_received"] == s["events_sent"]

    # Everything the victim flushed is there, in order.
    seq = sql(trace, "SELECT c.value FROM counter c JOIN process_counter_track t "
                     "ON c.track_id = t.id WHERE t.upid = %d ORDER BY c.ts, c.id" % v["upid"])
    values = [int(r["value"]) for r in seq]
    assert len(values) >= flushed
    assert values == list(range(len(values)))
    survivor_seq = sql(trace, "SELECT count(*) AS n FROM counter c JOIN process_counter_track t "
                              "ON c.track_id = t.id WHERE t.upid = %d" % s["upid"])
    assert survivor_seq == [{"n": 3000}]

    # Its open zones (<module>, outer, perhaps step) closed by the daemon and
    # flagged; the survivor has none.
    aborted = sql(trace, "SELECT s.name, t.upid FROM slice s JOIN thread_track tt "
                         "ON s.track_id = tt.id JOIN thread t USING (utid) "
                         "WHERE s.flags = 1 ORDER BY s.depth")
    assert {a["upid"] for a in aborted} == {v["upid"]}
    assert "outer" in [a["name"] for a in aborted]
    (st,) = sql(trace, "SELECT value FROM stats WHERE name = 'zones_aborted' "
                       "AND severity = 'data_loss'")
    assert st["value"] == len(aborted)
    (st,) = sql(trace, "SELECT value FROM stats WHERE name = 'clients_lost' "
                       "AND severity = 'data_loss'")
    assert st["value"] == 1

    info = subprocess.run([os.path.join(BIN, "tracy-info"), trace], capture_output=True,
                          text=True, timeout=60)
    # Exit 6: the file is intact but records lost data (a client lost).
    assert info.returncode == 6, info.stderr
    assert "data lost while capturing" in info.stderr, info.stderr
    assert "lost: connection closed without goodbye" in info.stdout, info.stdout


def test_program_runs_unprofiled_without_a_daemon(tmp_path):
    """The hook inside a program that was not started by python -m tracy
    (as in a child of a profiled run whose daemon is gone): one warning."""
    (tmp_path / "work.py").write_text("import tracy\ntracy.flush()\n" + WORK)
    port = free_port()
    env = env_with(port)
    run = subprocess.run([PYTHON, "-c", "import tracy._tracy as t; t.start(); "
                          "exec(open('work.py').read())"], cwd=str(tmp_path), env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "2584\n"
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("tracy: no capture daemon at /"), run.stderr
    assert "/daemon-%d.sock (" % port in lines[0], run.stderr
    assert lines[0].endswith("running unprofiled")


def test_profiler_regions_without_a_daemon_install_no_hook(tmp_path):
    """tracy.Profiler() regions in a program run with no daemon: one line
    says so, once for every region, and the program runs as unprofiled: no
    hook (_tracy.mode() 0), an argument's reference count as plain Python
    has it (a frame-evaluation hook adds one on 3.11+)."""
    (tmp_path / "regions.py").write_text(
        "import sys, tracy\n"
        "from tracy import _tracy\n"
        "def refs(o):\n"
        "    return sys.getrefcount(o)\n"
        "plain = refs(object())\n"
        "seen = set()\n"
        "for i in range(200):\n"
        "    with tracy.Profiler():\n"
        "        seen.add((_tracy.mode(), refs(object()) - plain))\n"
        "print(sorted(seen))\n")
    env = env_with(free_port())
    run = subprocess.run([PYTHON, "regions.py"], cwd=str(tmp_path), env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "[(0, 0)]\n", run.stdout
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].endswith("running unprofiled"), run.stderr


def test_tracy_wait_connects_to_a_late_daemon(tmp_path):
    (tmp_path / "work.py").write_text(WORK)
    trace = str(tmp_path / "run.tracy")
    port = free_port()
    env = env_with(port, TRACY_WAIT="30")
    # The client library is told to wait; python -m tracy would start its
    # own daemon when none answers, so the hook is started directly.
    prog = subprocess.Popen([PYTHON, "-c", "import tracy; tracy.profile.__enter__(); "
                             "exec(open('work.py').read())"],
                            cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    daemon = None
    try:
        import time
        time.sleep(0.5)  # the client is retrying by now (or soon)
        daemon = start_daemon(trace, "-p", str(port))
        out, err = prog.communicate(timeout=120)
        assert prog.returncode == 0, err
        assert out == "2584\n"
        assert err == "", err
    finally:
        if prog.poll() is None:
            prog.kill()
            prog.wait()
        rc = finish(daemon) if daemon else None
    assert rc == 0
    procs = sql(trace, "SELECT status FROM process")
    assert procs == [{"status": "clean"}]
    (n,) = sql(trace, "SELECT count(*) AS n FROM slice WHERE name = 'fib'")
    assert n["n"] == 8361  # calls of fib(18)
