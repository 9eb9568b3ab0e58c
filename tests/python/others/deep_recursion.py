"""Recursion 15,000 deep with the limit raised, in a thread with a 32 MiB
stack: plain Python runs it on every version (inline from 3.11, on the C
stack before). From 3.11, 50,000 deep on the main thread (past its 8 MiB
stack, had the calls taken C stack), and from 3.12 a recursion through a C
function (map), which plain Python ends with RecursionError at its C
limit. With an argument, instead, 100,000 deep in a thread with a 1 MiB
stack, where the outcome (a result or RecursionError) is printed, never a
crash."""
import sys
import threading


def depth(n):
    return 0 if n == 0 else 1 + depth(n - 1)


def in_thread(stack, n):
    out = []

    def run():
        try:
            out.append("ok %d" % depth(n))
        except RecursionError:
            out.append("RecursionError")
    threading.stack_size(stack)
    t = threading.Thread(target=run)
    t.start()
    t.join()
    threading.stack_size(0)
    return out[0]


def via_c(n):
    return 0 if n == 0 else 1 + next(map(via_c, (n - 1,)))


sys.setrecursionlimit(20000)
# (flushed: before 3.11 a crash comes next, and a pipe holds what is not)
print(in_thread(32 << 20, 15000), flush=True)
if len(sys.argv) > 1:
    sys.setrecursionlimit(200000)
    print(in_thread(1 << 20, 100000), flush=True)
else:
    if sys.version_info >= (3, 11):
        sys.setrecursionlimit(100000)
        print("main thread", depth(50000))
    if sys.version_info >= (3, 12):
        try:
            print("through C", via_c(50000))
        except RecursionError:
            print("through C: RecursionError")
