"""fib.py -- recursive fib(25): the worst case for a call tracer (tiny calls)."""


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


if __name__ == "__main__":
    print(fib(25))
