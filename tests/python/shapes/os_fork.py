"""os.fork without exec: the child works and leaves with os._exit."""
import os


def work():
    return 1


def run(n):
    for _ in range(n):
        work()


r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    run(70)
    os.write(w, b"70")
    os._exit(0)
os.close(w)
run(30)
got = int(os.read(r, 16))
os.waitpid(pid, 0)
print("count work", 30 + got)
