"""A program that looks at SIGTERM's handler, installs its own, puts the
previous one back, then is ended by SIGTERM. It must see the default action
where it left it (getsignal and signal() say SIG_DFL, as CPython's own
test_signal checks), and restoring it must keep the zones recorded before
the end."""
import os
import signal
import time


def work():
    pass


for _ in range(50):
    work()
print("count work", 50, flush=True)
print("default at start:", signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)
old = signal.signal(signal.SIGTERM, lambda s, f: print("own handler", flush=True))
print("previous was the default:", old == signal.SIG_DFL)
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(0.2)
signal.signal(signal.SIGTERM, old)
print("default again:", signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, flush=True)
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(10)
print("not reached")
