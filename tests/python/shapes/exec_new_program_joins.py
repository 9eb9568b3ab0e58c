"""The program replaces itself with another Python program (os.execv): both
are recorded, the first up to the exec, the second as a process of its own
with the same pid."""
import os
import sys


def f():
    pass


for _ in range(300):
    f()
print("count f", 300, flush=True)
code = "def g():\n    pass\nfor _ in range(70):\n    g()\nprint('count g', 70)\n"
os.execv(sys.executable, [sys.executable, "-c", code])
