"""What several test files share: a recursive program to trace and running
one of the toolkit's programs from the build."""
import os
import subprocess

from conftest import BIN

# fib (direct recursion) and ping/pong (mutual recursion) under main:
# cumulative times must count the outermost activation only.
RECURSIVE = """
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def main():
    return fib(20)

def ping(n):
    return pong(n - 1) if n else 0

def pong(n):
    return ping(n) if n else 0

main()
ping(30)
"""


def tool(name, *args, check=True):
    """Runs build/bin/NAME with args; asserts exit 0 (with its stderr)
    unless check is false. Returns the CompletedProcess (text)."""
    proc = subprocess.run([os.path.join(BIN, name)] + list(args), capture_output=True,
                          text=True, timeout=300)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc
