"""sitecustomize for child processes of `python -m tracy`: profiles them
into the same capture (options from TRACY_PY_OPTS), then runs the
sitecustomize this one hides, if any.

The hidden one is looked up before recording begins, with the import
system's own finders (loaded at every start): the lookup is tracy's work,
not the program's, and leaves no module in sys.modules that an unprofiled
start would not load. The hidden module itself runs recorded, as part of
the program."""
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


def _hidden_spec():
    import _frozen_importlib_external
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = _frozen_importlib_external.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return None
    return spec


def _run_hidden(spec):
    import _frozen_importlib
    mod = _frozen_importlib.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    spec.loader.exec_module(mod)


_spec = _hidden_spec()
_tracy_child()
if _spec is not None:
    _run_hidden(_spec)
del _spec
