"""exec calls that fail (a missing file; a name on no PATH entry, which
os.execvp tries entry by entry) change nothing: the program prints what it
would unprofiled (nothing from the profiler), goes on being recorded, and a
child it starts afterwards is recorded as usual."""
import os
import subprocess
import sys


def f():
    pass


for _ in range(100):
    f()
try:
    os.execv("/nonexistent/program", ["program"])
except OSError as e:
    print("execv failed", e.errno)
for _ in range(100):
    f()
os.environ["PATH"] = os.pathsep.join(["/nonexistent/a", "/nonexistent/b", "/usr/bin",
                                      os.environ.get("PATH", "")])
try:
    os.execvp("no-such-program-anywhere", ["no-such-program-anywhere"])
except OSError as e:
    print("execvp failed", e.errno)
for _ in range(100):
    f()
code = "def g():\n    pass\nfor _ in range(50):\n    g()\nprint('count g', 50)\n"
print(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                     check=True).stdout, end="")
print("count f", 300)
