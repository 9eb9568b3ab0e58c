"""sitecustomize for child processes of `python -m tracy`: profiles them
into the same capture (options from TRACY_PY_OPTS), then runs the
sitecustomize this one hides, if any."""
import os
import sys


def _tracy_child():
    opts = os.environ.get("TRACY_PY_OPTS")
    if opts is None:
        return
    try:
        from tracy import _runtime
        _runtime.start_child(opts)
    except Exception as e:  # the child must run even if profiling cannot
        sys.stderr.write("tracy: child process not profiled: %s\n" % e)


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    import importlib.machinery
    import importlib.util
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    spec.loader.exec_module(mod)


_tracy_child()
_chain()
