"""SIGTERM while the main thread is inside one long C call (sum over a huge
range) that never returns to the bytecode loop, so a Python-level handler
cannot run until it ends (minutes). First in a forked child, whose parent
must see it end by SIGTERM, then in the program itself. With the default
action each dies of it at once; profiled, each must too, with its zones
shipped, not only when the C call ends. The signal comes from a shell: a
Python thread would wait for the GIL, which the C call never lets go."""
import os
import subprocess


def work():
    pass


def take_it():
    subprocess.Popen(["sh", "-c", "sleep 0.3; kill -TERM %d" % os.getpid()],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def compute(n):
    for _ in range(n):
        work()
    print("count work", n, flush=True)
    take_it()
    sum(range(3 * 10**9))


pid = os.fork()
if pid == 0:
    compute(140)
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("child signal", os.WTERMSIG(status) if os.WIFSIGNALED(status) else None, flush=True)
compute(160)
print("not reached")
