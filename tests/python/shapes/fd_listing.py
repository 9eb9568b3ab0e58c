"""The program's descriptors are its own: /proc/self/fd lists the same
descriptors as unprofiled (CPython's test_pass_fds_redirected compares such
sets), before and after threads and children, and a descriptor the program
opens gets the number it would get unprofiled. A child started with
subprocess lists only what it was passed."""
import os
import subprocess
import sys
import threading


def f():
    pass


def mine():
    """The descriptors, without the one listdir uses."""
    return sorted(int(n) for n in os.listdir("/proc/self/fd") if os.path.exists(
        "/proc/self/fd/" + n))


before = mine()
for _ in range(100):
    f()
print("first", before == mine())
fd = os.open(os.devnull, os.O_RDONLY)
print("opened at the lowest free number", fd == min(set(range(3, 1024)) - set(before)))
os.close(fd)
t = threading.Thread(target=lambda: [f() for _ in range(100)])
t.start()
t.join()
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
