"""The program's descriptors are its own: /proc/self/fd lists the same
descriptors as unprofiled (CPython's test_pass_fds_redirected compares such
sets), before and after threads and children, and a descriptor the program
opens gets the number it would get unprofiled. A child started with
subprocess lists only what it was passed.

On 3.8 and 3.9 a thread ends by pthread_exit, whose first call loads
libgcc_s (a descriptor open a moment) after join() has returned: plain
Python races with it too. So a first thread runs before the listing, and
each thread is waited for until its task is gone."""
import os
import subprocess
import sys
import threading
import time


def f():
    pass


def mine():
    """The descriptors, without the one listdir uses."""
    return sorted(int(n) for n in os.listdir("/proc/self/fd") if os.path.exists(
        "/proc/self/fd/" + n))


def tasks():
    return len(os.listdir("/proc/self/task"))


def run_thread(target):
    """Runs target in a thread, joins it and waits (5 s at most) until the
    thread's task has left the process."""
    n = tasks()
    t = threading.Thread(target=target)
    t.start()
    t.join()
    deadline = time.monotonic() + 5
    while tasks() > n and time.monotonic() < deadline:
        time.sleep(0.001)


run_thread(lambda: None)
before = mine()
for _ in range(100):
    f()
print("first", before == mine())
fd = os.open(os.devnull, os.O_RDONLY)
print("opened at the lowest free number", fd == min(set(range(3, 1024)) - set(before)))
os.close(fd)
run_thread(lambda: [f() for _ in range(100)])
print("after a thread", before == mine())
r, w = os.pipe()
code = ("import os\n"
        "print(sorted(int(n) for n in os.listdir('/proc/self/fd')"
        " if os.path.exists('/proc/self/fd/' + n)))\n")
child = subprocess.run([sys.executable, "-c", code], pass_fds=(w,), capture_output=True,
                       text=True, check=True)
got = eval(child.stdout)
print("the child holds stdio and the passed descriptor only", got == [0, 1, 2, w])
os.close(r)
os.close(w)
pid = os.fork()
if pid == 0:
    for _ in range(50):
        f()
    ok = mine() == before
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
print("forked child", status >> 8)
print("at the end", before == mine())
print("count f", 250)
