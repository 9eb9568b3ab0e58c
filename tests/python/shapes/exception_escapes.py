"""An exception escapes the script: traceback, status 1."""


def work(n):
    if n == 0:
        raise ValueError("escaped")
    return work(n - 1)


print("count work", 6, flush=True)
work(5)
