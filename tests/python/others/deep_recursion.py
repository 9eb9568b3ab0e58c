"""Recursion 15,000 deep with the limit raised, in a thread with a 32 MiB
stack: plain Python runs it on every version (inline from 3.11, on the C
stack before). Then 100,000 deep in a thread with a 1 MiB stack, where the
outcome (a result or RecursionError) is printed, never a crash."""
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


sys.setrecursionlimit(20000)
print(in_thread(32 << 20, 15000))
if len(sys.argv) > 1:
    sys.setrecursionlimit(200000)
    print(in_thread(1 << 20, 100000))
