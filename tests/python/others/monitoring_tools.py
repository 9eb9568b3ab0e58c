"""sys.monitoring tools of the program (3.12+): the reserved ids are free,
and each tool sees its events as unprofiled."""
import sys

m = getattr(sys, "monitoring", None)
if m is None:
    print("no sys.monitoring")
    sys.exit(0)
counts = {}


def fn(tool):
    def cb(code, *rest):
        if code.co_filename == __file__:
            counts[(tool, code.co_name)] = counts.get((tool, code.co_name), 0) + 1
    return cb


def work(n):
    return [i for i in range(n)]


class Simple:
    def __init__(self):
        self.x = 1


for tool in (m.DEBUGGER_ID, m.COVERAGE_ID, m.PROFILER_ID, m.OPTIMIZER_ID):
    m.use_tool_id(tool, "mine")
    m.register_callback(tool, m.events.PY_START, fn(tool))
    m.set_events(tool, m.events.PY_START)
for _ in range(5):
    work(3)
    Simple()
for tool in (m.DEBUGGER_ID, m.COVERAGE_ID, m.PROFILER_ID, m.OPTIMIZER_ID):
    m.set_events(tool, 0)
    m.free_tool_id(tool)
for k in sorted(counts):
    print(*k, counts[k])
