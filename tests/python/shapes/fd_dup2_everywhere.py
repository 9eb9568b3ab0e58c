"""The program puts a pipe at every descriptor number from 3 to 1023 and
writes one byte through each: the pipe holds exactly the program's bytes
(the profiler writes into no descriptor of the program), and the trace is
complete."""
import os
import time


def f():
    pass


for _ in range(500):
    f()
r, w = os.pipe()
for n in range(3, 1024):
    if n not in (r, w):
        os.dup2(w, n)
want = b""
for n in range(3, 1024):
    if n != r:
        b = bytes([97 + n % 26])
        os.write(n, b)
        want += b
for _ in range(500):
    f()
time.sleep(0.15)  # profiler rounds run meanwhile
os.set_blocking(r, False)
got = os.read(r, 4096)
try:
    more = os.read(r, 4096)
except BlockingIOError:
    more = b""
print("only the program's bytes", got == want and more == b"")
for n in range(3, 1024):
    if n != r:
        os.close(n)
for _ in range(500):
    f()
print("count f", 1500)
