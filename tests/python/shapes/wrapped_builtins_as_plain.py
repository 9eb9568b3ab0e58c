"""The builtins the profiler stands in for (os._exit, os.execv, os.execve,
_posixsubprocess.fork_exec, _signal.signal and getsignal) as plain Python
shows them: name, module, doc and the signature inspect reads (CPython's
test_inspect asks every os builtin for one). Every line is compared with the
unprofiled run's."""
import _posixsubprocess
import _signal
import inspect
import os


def work():
    pass


for _ in range(10):
    work()
print("count work", 10, flush=True)

for owner, name in ((os, "_exit"), (os, "execv"), (os, "execve"),
                    (_posixsubprocess, "fork_exec"), (_signal, "signal"),
                    (_signal, "getsignal")):
    f = getattr(owner, name)
    try:
        sig = str(inspect.signature(f))
    except ValueError as e:
        sig = "no signature: %s" % type(e).__name__
    print(owner.__name__, name, f.__name__, f.__module__, sig,
          (f.__doc__ or "").splitlines()[:1], flush=True)
