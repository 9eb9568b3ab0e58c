"""The program closes every descriptor it does not know (os.closerange, as
python-daemon's DaemonContext does) in the middle of its work, twice, with a
thread running: everything it recorded, before and after, is in the trace."""
import os
import threading
import time


def f():
    pass


def worker(n):
    for _ in range(n):
        f()
        time.sleep(0.0005)


t = threading.Thread(target=worker, args=(400,))
t.start()
for _ in range(1000):
    f()
time.sleep(0.06)
os.closerange(3, 65536)
for _ in range(1000):
    f()
time.sleep(0.06)
os.closerange(3, 65536)
t.join()
for _ in range(1000):
    f()
print("count f", 3400)
