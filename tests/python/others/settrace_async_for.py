"""sys.settrace over an `async for` (test_sys_settrace's test_20): one
'exception' event per step, as unprofiled."""
import sys


class It:
    def __init__(self, obj):
        self._it = iter(obj)

    def __aiter__(self):
        return self

    async def __anext__(self):
        try:
            return next(self._it)
        except StopIteration:
            raise StopAsyncIteration


async def doit():
    async for letter in It("abc"):
        x = letter
    y = 42


events = []


def tracer(frame, event, arg):
    events.append((frame.f_code.co_name, event, frame.f_lineno))
    return tracer


c = doit()
sys.settrace(tracer)
try:
    c.send(None)
except StopIteration:
    pass
sys.settrace(None)
for e in events:
    print(*e)
