"""Children forked by the program (os.fork, no exec) while threads run,
ending every way a program ends: sys.exit(4), falling off the end of the
code, os._exit(3). A child that returns from the program's code must end
as the interpreter ends it, not go on as the profiler's run (which once
finished the parent's trace from the child and hung)."""
import os
import sys
import threading
import time

stop = False


def f():
    pass


def spin():
    pass


def busy():
    # paced: the threads run Python code throughout the forks, and the trace
    # stays small however long the forks take (unpaced, a loaded machine
    # made 136M events of spin, and the test's reading of them 15 GB)
    while not stop:
        for _ in range(10):
            spin()
        time.sleep(0.001)


threads = [threading.Thread(target=busy) for _ in range(2)]
for t in threads:
    t.start()
codes = []
child = False
for i in range(24):
    pid = os.fork()
    if pid == 0:
        for _ in range(100):
            f()
        print("count f", 100, flush=True)
        if i % 3 == 0:
            os._exit(3)
        if i % 3 == 1:
            sys.exit(4)
        child = True
        break  # falls off the end of the program: status 0
    _, st = os.waitpid(pid, 0)
    codes.append(os.WEXITSTATUS(st))
if not child:
    stop = True
    for t in threads:
        t.join()
    print("children ended with", sorted(set(codes)), len(codes))
