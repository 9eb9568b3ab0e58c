"""Measured by coverage.py plain and under python -m tracy: the report has
the same rows (no file of the profiler's) and the same lines run."""
import os
import signal
import subprocess
import sys
import threading


def work(n):
    return n if n < 2 else work(n - 1) + work(n - 2)


def in_thread():
    work(6)


def preexec():
    work(3)


def handler(signum, frame):
    pass


def main():
    threads = [threading.Thread(target=in_thread) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        os.execv("/nonexistent/program", ["program"])
    except OSError:
        print("exec failed")
    p = subprocess.run([sys.executable, "-c", "pass"], preexec_fn=preexec)
    print("subprocess", p.returncode)
    old = signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGTERM, old)
    pid = os.fork()
    if pid == 0:
        work(4)
        os._exit(0)
    os.waitpid(pid, 0)
    print("done", work(10))


main()
