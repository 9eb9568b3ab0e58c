"""The program leaves with os._exit(4) (no interpreter shutdown)."""
import os


def work():
    pass


for _ in range(40):
    work()
print("count work", 40, flush=True)
os._exit(4)
