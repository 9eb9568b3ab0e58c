"""CPython 3.12+ warns when a process with threads forks. The profiler's own
threads must not count: a program without threads gets no warning, one with
a thread of its own gets it, as unprofiled."""
import os
import threading
import time
import warnings


def f():
    pass


def fork_warnings():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    return len([x for x in w if "multi-threaded" in str(x.message)])


for _ in range(5):
    f()
print("count f", 5, flush=True)
print("fork warnings, no thread:", fork_warnings())
t = threading.Thread(target=time.sleep, args=(0.5,))
t.start()
print("fork warnings, a thread:", fork_warnings())
t.join()
