"""The program daemonizes as daemons do (fork, setsid, fork, close every
descriptor, stdio to /dev/null) and the daemon goes on working: its calls
are in the trace. The daemon reports through a file its starter waits
for."""
import os
import sys
import time


def f():
    pass


def g():
    pass


report = os.path.abspath("daemon-report.txt")
if os.path.exists(report):  # from an earlier run
    os.unlink(report)
for _ in range(200):
    f()
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    for _ in range(100):
        g()
    os.closerange(0, 65536)
    fd = os.open(os.devnull, os.O_RDWR)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    for _ in range(300):
        g()
    time.sleep(0.1)
    for _ in range(100):
        g()
    with open(report + ".tmp", "w") as out:
        out.write("count g 500\n")
    os.rename(report + ".tmp", report)
    sys.exit(0)
os.waitpid(pid, 0)
for _ in range(600):  # at most 60 s
    if os.path.exists(report):
        break
    time.sleep(0.1)
with open(report) as got:
    print(got.read(), end="")
print("count f", 200)
