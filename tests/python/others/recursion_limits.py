"""Where RecursionError comes, in a thread (the same budget to start with),
once the calls are warm (plain Python specializes them): in Python code, at
the recursion limit, and through C (3.12+: at the C budget, 750 or 5,000
calls deep). The hook gives back the C budget of an entry only where plain
Python would have made the call inline, and threading's thread start runs
as it does unprofiled (the profiler names the thread without wrapping it)."""
import sys
import threading

reached = [0]


def py_down(n):
    reached[0] = n
    py_down(n + 1)


def c_down(n):
    reached[0] = n
    next(map(c_down, (n + 1,)))


def limit_in_thread(fn):
    out = []

    def run():
        for _ in range(2):
            try:
                fn(0)
            except RecursionError:
                out.append(reached[0])
    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out[-1]


sys.setrecursionlimit(1000)
print("thread limit, Python", limit_in_thread(py_down))
if sys.version_info >= (3, 12):
    sys.setrecursionlimit(100000)
    print("thread limit, through C", limit_in_thread(c_down))
