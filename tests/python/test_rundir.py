"""The user's run folder keeps no litter: a daemon killed without cleaning
up leaves its socket, a run killed before it finished leaves its rendezvous
file; the next daemon, and the next run that starts one, remove those (and
nothing of a live daemon or run)."""
import fcntl
import os
import pathlib
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, PYTHON, env_for_tests

OLD = time.time() - 120


def _socket_file(path, listen):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    if listen:
        s.listen(1)
    os.utime(str(path), (OLD, OLD))
    return s


def _rendezvous(path, pid, out, old=True):
    path.write_text("pid=%d\naddr=unix:/nowhere\njob=x\nsize=0\njoined=1\nout=%s\n" % (pid, out))
    path.chmod(0o600)
    if old:
        os.utime(str(path), (OLD, OLD))


def test_what_killed_daemons_and_runs_left_is_swept(tmp_path):
    # a short folder: a run folder must leave room for socket names (a
    # Unix socket's path is at most 107 bytes), and pytest's are long
    xdg = pathlib.Path(tempfile.mkdtemp(prefix="tr-", dir="/tmp"))
    try:
        _sweep_in(tmp_path, xdg)
    finally:
        shutil.rmtree(str(xdg), ignore_errors=True)


def _sweep_in(tmp_path, xdg):
    folder = xdg / "tracy"
    folder.mkdir(mode=0o700)
    dead = subprocess.Popen(["true"])
    dead.wait()
    # (numbers below 49152: a daemon of -p 0 picks its own from 49152 up,
    # starting from its pid, and may take the number of a socket nobody
    # listens on, the young one's: seen once in CI)
    killed = _socket_file(folder / "daemon-40001.sock", listen=False)
    live = _socket_file(folder / "daemon-40002.sock", listen=True)
    young = _socket_file(folder / "daemon-40003.sock", listen=False)
    os.utime(str(folder / "daemon-40003.sock"))  # just bound: maybe not yet listening
    _rendezvous(folder / "run-1.run", dead.pid, str(tmp_path / "a.tracy"))
    _rendezvous(folder / "run-2.run", dead.pid, str(tmp_path / "b.tracy"))
    _rendezvous(folder / "run-3.run", dead.pid, str(tmp_path / "c.tracy"), old=False)
    held = os.open(str(folder / "run-2.run"), os.O_RDWR)
    fcntl.lockf(held, fcntl.LOCK_EX)  # a run at work on it
    try:
        (tmp_path / "p.py").write_text("def f(n):\n    return n < 2 or f(n - 1) + f(n - 2)\nf(10)\n")
        p = subprocess.run([PYTHON, "-m", "tracy", "-o", str(tmp_path / "p.tracy"), "p.py"],
                           cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                           env=env_for_tests(XDG_RUNTIME_DIR=str(xdg)))
        assert p.returncode == 0, p.stderr
        left = sorted(os.listdir(str(folder)))
        assert left == ["daemon-40002.sock", "daemon-40003.sock", "run-2.run", "run-3.run"], left
    finally:
        os.close(held)
        for s in (killed, live, young):
            s.close()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="a network namespace of its own needs root and unshare "
                           "(make check has both on CI)")
@pytest.mark.skipif(os.path.realpath(PYTHON) != os.path.realpath("/usr/bin/python3"),
                    reason="the daemon alone, no Python in it: checked once, in the run "
                           "for /usr/bin/python3")
def test_a_daemon_in_another_network_namespace_keeps_its_socket(tmp_path):
    """/proc/net/unix lists the sockets of the reader's network namespace
    only. A daemon in another one (a container, `unshare --net`, a service
    with a private network) sharing the run folder keeps its socket's time
    recent, so that a daemon started here does not take it for one a killed
    daemon left and remove it (a suite run in its own namespace lost its
    daemon's socket that way, and its later children ran unprofiled)."""
    xdg = pathlib.Path(tempfile.mkdtemp(prefix="tr-", dir="/tmp"))
    try:
        (xdg / "tracy").mkdir(mode=0o700)
        sock = xdg / "tracy" / "daemon-50010.sock"
        env = env_for_tests(XDG_RUNTIME_DIR=str(xdg))
        daemon = os.path.join(BIN, "capture-release")
        there = subprocess.Popen(["unshare", "--net", "--", daemon, "-q", "-o",
                                  str(tmp_path / "there.tracy"), "-p", "50010", "-s", "120"],
                                 env=env)
        try:
            for _ in range(200):
                if sock.exists():
                    break
                time.sleep(0.05)
            os.utime(str(sock), (OLD, OLD))  # as if bound two minutes ago
            for _ in range(250):  # the daemon sets it back to now (every 15 s)
                if sock.stat().st_mtime > OLD + 60:
                    break
                time.sleep(0.1)
            assert sock.stat().st_mtime > OLD + 60, "the live daemon's socket stayed old"
            here = subprocess.run([daemon, "-q", "-o", str(tmp_path / "here.tracy"), "-p",
                                   "50011", "-s", "0.2"], env=env, timeout=60)
            assert here.returncode == 0
            assert sock.exists(), "the live daemon's socket was swept"
            assert there.poll() is None
        finally:
            there.terminate()
            assert there.wait(timeout=60) == 0
        assert not sock.exists()  # (removed by its daemon at the end)
    finally:
        shutil.rmtree(str(xdg), ignore_errors=True)


@pytest.mark.parametrize("kind, why", [
    ("0660", "can be written by other users (mode 660)"),
    ("0602", "can be written by other users (mode 602)"),
    ("fifo", "is not a regular file"),
    ("symlink", "is a symbolic link"),
])
def test_a_rendezvous_file_others_could_change_is_not_followed(tmp_path, kind, why):
    """This user's rendezvous file for the trace, but one that others may
    write (or not a regular file, or a link): the run says so in one line,
    naming the file and why, and records into a daemon of its own; the file
    is left as it was."""
    xdg = pathlib.Path(tempfile.mkdtemp(prefix="tr-", dir="/tmp"))
    try:
        folder = xdg / "tracy"
        folder.mkdir(mode=0o700)
        out = str(tmp_path / "p.tracy")
        key = subprocess.run([PYTHON, "-c", "import sys; from tracy import _tracy; "
                              "print(_tracy._fnv(sys.argv[1]))", out], capture_output=True,
                             text=True, timeout=60, env=env_for_tests()).stdout.strip()
        path = folder / ("run-%s.run" % key)
        if kind == "fifo":
            os.mkfifo(str(path), 0o600)
        elif kind == "symlink":
            _rendezvous(tmp_path / "elsewhere.run", os.getpid(), out, old=False)
            path.symlink_to(tmp_path / "elsewhere.run")
        else:
            _rendezvous(path, os.getpid(), out, old=False)
            path.chmod(int(kind, 8))
        (tmp_path / "p.py").write_text("def f(n):\n    return n < 2 or f(n - 1) + f(n - 2)\nf(10)\n")
        p = subprocess.run([PYTHON, "-m", "tracy", "-o", out, "p.py"], cwd=str(tmp_path),
                           capture_output=True, text=True, timeout=120,
                           env=env_for_tests(XDG_RUNTIME_DIR=str(xdg)))
        assert p.returncode == 0, p.stderr
        lines = p.stderr.splitlines()
        assert lines[0] == ("tracy: not using the rendezvous file %s %s; this process starts "
                            "a daemon of its own" % (path, why)), p.stderr
        assert lines[1].startswith("tracy: trace written to %s (" % out) and len(lines) == 2
        assert os.path.lexists(str(path))
    finally:
        shutil.rmtree(str(xdg), ignore_errors=True)
