"""Daemon threads that keep starting short profiled children, still doing
so when the program ends (unprofiled, the exit ends them)."""
import subprocess
import sys
import threading
import time


def work():
    pass


def spawn():
    while True:
        subprocess.run([sys.executable, "-c", "import time; time.sleep(0.2)"])


for _ in range(3):
    threading.Thread(target=spawn, daemon=True).start()
for _ in range(200):
    work()
time.sleep(0.5)
print("count work", 200)
