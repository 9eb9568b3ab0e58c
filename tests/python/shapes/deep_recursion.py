"""Recursion close to the recursion limit (and RecursionError caught)."""
import sys

sys.setrecursionlimit(2000)


def down(n):
    return 0 if n == 0 else 1 + down(n - 1)


def forever(n):
    return forever(n + 1)


print(down(1900))
try:
    forever(0)
except RecursionError:
    print("caught")
print("count down", 1901)
