"""sys.monitoring tools of the program (3.12+): the reserved ids are free,
and each tool sees its events as unprofiled, those that a frame-evaluation
function would change included: a C_RETURN is a C function's return, not a
Python function's (under such a function CPython calls Python functions
through C, and tells a tool of their returns as C ones), and a generator
that ends a for loop raises STOP_ITERATION."""
import sys

m = getattr(sys, "monitoring", None)
if m is None:
    print("no sys.monitoring")
    sys.exit(0)
E = m.events if m else None
counts = {}


def count(key):
    counts[key] = counts.get(key, 0) + 1


def fn(tool):
    def cb(code, *rest):
        if code.co_filename == __file__:
            count((tool, code.co_name))
    return cb


def on_c_return(code, offset, callable, arg0):
    if code.co_filename == __file__:
        count(("C_RETURN", code.co_name, getattr(callable, "__name__", "?")))


def on_stop_iteration(code, offset, exc):
    if code.co_filename == __file__:
        count(("STOP_ITERATION", code.co_name, type(exc).__name__))


def work(n):
    return [i for i in range(n)]


def gen(n):
    yield from range(n)


def loop():
    total = 0
    for x in gen(3):
        total += len(str(x))
    return total


class Simple:
    def __init__(self):
        self.x = 1


for tool in (m.DEBUGGER_ID, m.COVERAGE_ID, m.PROFILER_ID, m.OPTIMIZER_ID):
    m.use_tool_id(tool, "mine")
    m.register_callback(tool, E.PY_START, fn(tool))
    m.set_events(tool, E.PY_START)
for _ in range(5):
    work(3)
    Simple()
for tool in (m.DEBUGGER_ID, m.COVERAGE_ID, m.PROFILER_ID, m.OPTIMIZER_ID):
    m.set_events(tool, 0)
    m.free_tool_id(tool)

# C_RETURN comes with CALL; STOP_ITERATION by itself
m.use_tool_id(m.PROFILER_ID, "mine")
m.register_callback(m.PROFILER_ID, E.C_RETURN, on_c_return)
m.register_callback(m.PROFILER_ID, E.STOP_ITERATION, on_stop_iteration)
m.set_events(m.PROFILER_ID, E.CALL | E.STOP_ITERATION)
for _ in range(4):
    loop()
    work(2)
m.set_events(m.PROFILER_ID, 0)
m.free_tool_id(m.PROFILER_ID)
for k in sorted(counts, key=str):
    print(*k, counts[k])
