"""A sys.settrace and sys.setprofile user sees the events it sees unprofiled."""
import sys

events = []


def tracer(frame, event, arg):
    if frame.f_code.co_filename == __file__:
        events.append((frame.f_code.co_name, event, frame.f_lineno - frame.f_code.co_firstlineno))
    return tracer


def profiler(frame, event, arg):
    if event.startswith("c_") or frame.f_code.co_filename == __file__:
        events.append(("P", getattr(arg, "__name__", None) if event.startswith("c_")
                       else frame.f_code.co_name, event))


def gen(n):
    for i in range(n):
        yield i


def raises():
    try:
        raise ValueError("x")
    except ValueError:
        return len("caught")


class Init:
    def __init__(self, v):
        self.v = v


def body():
    total = sum(gen(3))
    raises()
    Init(total)
    return total


sys.settrace(tracer)
body()
sys.settrace(None)
sys.setprofile(profiler)
body()
sys.setprofile(None)
for e in events:
    print(*e)
