"""Threads started before recording begins (run with -p): their calls after
Profiler().enable() are recorded, those before are not."""
import threading

import tracy

go = threading.Event()
ready = threading.Barrier(3)


def work():
    pass


def worker():
    work()  # before recording
    ready.wait()
    go.wait()
    for _ in range(25):
        work()


ts = [threading.Thread(target=worker) for _ in range(2)]
for t in ts:
    t.start()
ready.wait()
with tracy.Profiler():
    go.set()
    for t in ts:
        t.join()
print("count work", 50)
