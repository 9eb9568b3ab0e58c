"""Generators, generator expressions, send() and a hand-driven coroutine."""


def seen():
    pass


def gen(n):
    for i in range(n):
        seen()
        yield i


def echo():
    total = 0
    while True:
        x = yield total
        seen()
        total += x


async def coro():
    seen()
    return 5


print(sum(gen(20)), sum(x for x in gen(10)))
e = echo()
next(e)
for i in range(15):
    e.send(i)
c = coro()
try:
    c.send(None)
except StopIteration as stop:
    print(stop.value)
print("count seen", 20 + 10 + 15 + 1)
