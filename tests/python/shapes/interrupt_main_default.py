"""_thread.interrupt_main(SIGTERM) and (SIGHUP) where the program left the
default action: plain Python does nothing (3.10+ takes a signal number), so
the traced program goes on too; a real SIGTERM afterwards still ends it by
the signal, with what it recorded in the trace."""
import _thread
import os
import signal
import sys
import time


def work():
    pass


for _ in range(50):
    work()
for sig in (signal.SIGTERM, signal.SIGHUP):
    if sys.version_info >= (3, 10):
        _thread.interrupt_main(sig)
    for _ in range(10):
        work()  # a handler tripped by interrupt_main would run here
print("still running", signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, flush=True)
print("count work", 70, flush=True)
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(10)
print("not reached")
