"""fib.py -- recursive fib(25): the worst case for a call tracer (tiny calls);
BENCH_FIB_N chooses another n.

A small fib(12) runs inside a profiled region when the tracy package is
loaded (`python -m tracy -p -l`); otherwise the region costs nothing."""
import os

from region import region


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


if __name__ == "__main__":
    print(fib(int(os.environ.get("BENCH_FIB_N", "25"))))
    with region():
        fib(12)
