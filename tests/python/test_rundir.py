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

from conftest import PYTHON, env_for_tests

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
    killed = _socket_file(folder / "daemon-50001.sock", listen=False)
    live = _socket_file(folder / "daemon-50002.sock", listen=True)
    young = _socket_file(folder / "daemon-50003.sock", listen=False)
    os.utime(str(folder / "daemon-50003.sock"))  # just bound: maybe not yet listening
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
        assert left == ["daemon-50002.sock", "daemon-50003.sock", "run-2.run", "run-3.run"], left
    finally:
        os.close(held)
        for s in (killed, live, young):
            s.close()
