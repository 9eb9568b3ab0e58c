"""SIGTERM in the middle of the run, default action: the process dies of it."""
import os
import signal
import time


def work():
    pass


for _ in range(120):
    work()
print("count work", 120, flush=True)
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(10)
print("not reached")
