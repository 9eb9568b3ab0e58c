"""The program replaces itself with another (os.execv): what it recorded
before must all be in the trace (the connection ends with the exec)."""
import os
import sys


def f():
    pass


for _ in range(30000):
    f()
print("count f", 30000, flush=True)
os.execv(sys.executable, [sys.executable, "-c", "print('the new program runs')"])
