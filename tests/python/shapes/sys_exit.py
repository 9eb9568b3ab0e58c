"""sys.exit(3) from deep inside the program."""
import sys


def work(n):
    if n == 0:
        sys.exit(3)
    work(n - 1)


print("count work", 11, flush=True)
work(10)
