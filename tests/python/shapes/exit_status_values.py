"""Exit statuses the interpreter takes as they are: sys.exit(-1) ends with
status 255 (not by a signal), and exceptions raised by atexit callbacks
(3.8 and 3.9 raise the last one again after running them all) do not change
the status."""
import atexit
import sys


def f():
    pass


def failing_callback():
    raise ZeroDivisionError("in an atexit callback")


for _ in range(10):
    f()
print("count f", 10, flush=True)
atexit.register(failing_callback)
sys.exit(-1)
