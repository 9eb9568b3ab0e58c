"""sitecustomize for child processes of `python -m tracy`: profiles them
into the same capture (options from TRACY_PY_OPTS), then runs the
sitecustomize this one hides, if any.

The hidden one is looked up before recording begins, with the import
system's own finders (loaded at every start): the lookup is tracy's work,
not the program's, and leaves no module in sys.modules that an unprofiled
start would not load. The hidden module itself runs recorded, as part of
the program.

The tracy package is the folder holding this one, imported from there: its
parent folder (a site-packages, once installed) is not put on sys.path,
where it would come before the standard library, nor is this folder left
on it (the child's sys.path is plain's). os.environ shows the environment
the program gave the child: this folder is taken off its PYTHONPATH, and
the variables the parent's tracy added (TRACY_PY_HIDE, pyhook/childenv.c)
are taken out, from os.environ only: the process's environment keeps them
for its own children.

With no sitecustomize of its own, the child has none in sys.modules, as
plain: this module ends by the ImportError site ignores.

Any interpreter the program starts reads this file: one tracy cannot
profile (another version, tracy not installed for it, Python 2) runs as it
would unprofiled, printing nothing; why it was not profiled goes to the
notes file its profiled parent named (opts "notes", _runtime.py), which
that parent reports. So this file is written for Python 2.7 too."""
import os
import sys


def _opt(opts, key):
    for part in opts.split("\x1f"):
        k, _, v = part.partition("=")
        if k == key:
            return v
    return None


def _note(opts, why, quiet=False):
    """One line `pid<TAB>why` appended to the parent's notes file; on
    standard error when there is none to write to (unless quiet)."""
    line = "%d\t%s\n" % (os.getpid(), " ".join(str(why).split()))
    path = _opt(opts, "notes")
    if path:
        flags = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0))
        try:
            fd = os.open(path, flags, 0o600)
            try:  # (Python 2: line is bytes already)
                os.write(fd, line if isinstance(line, bytes) else
                         line.encode("utf-8", "backslashreplace"))
            finally:
                os.close(fd)
            return
        except Exception:
            pass
    if quiet:
        return
    try:
        sys.stderr.write("tracy: child process not profiled: %s" % line.split("\t", 1)[1])
    except Exception:
        pass


def _tracy_child():
    opts = os.environ.get("TRACY_PY_OPTS")
    if opts is None:
        return
    if sys.version_info < (3, 8):
        _note(opts, "tracy supports CPython 3.8 to 3.13, not %s (%s)"
              % (sys.version.split()[0], sys.executable))
        return
    try:
        _import_tracy()
        from tracy import _runtime
        _runtime.start_child(opts)
        return True
    except Exception as e:  # the child must run even if profiling cannot
        why = str(e)
        if why.startswith("tracy: "):
            why = why[len("tracy: "):]
        _note(opts, why)


_HERE = os.path.dirname(os.path.abspath(__file__))


def _import_tracy():
    """Imports the package this folder is in as `tracy` (unless already)."""
    if "tracy" in sys.modules:
        return
    import _frozen_importlib
    import _frozen_importlib_external
    pkg = os.path.dirname(_HERE)
    spec = _frozen_importlib_external.spec_from_file_location(
        "tracy", os.path.join(pkg, "__init__.py"), submodule_search_locations=[pkg])
    mod = _frozen_importlib.module_from_spec(spec)
    sys.modules["tracy"] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules["tracy"]
        raise


def _hidden_spec():
    """(how to run the hidden sitecustomize, found on sys.path, which this
    folder has left) or None."""
    try:
        import _frozen_importlib_external
    except ImportError:  # Python 2
        import imp
        try:
            return ("imp", imp.find_module("sitecustomize", sys.path))
        except ImportError:
            return None
    spec = _frozen_importlib_external.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None:
        return None
    return ("spec", spec)


def _run_hidden(how):
    kind, found = how
    if kind == "imp":
        import imp
        f, path, desc = found
        try:
            sys.modules["sitecustomize"] = imp.load_module("sitecustomize", f, path, desc)
        finally:
            if f is not None:
                f.close()
        return
    import _frozen_importlib
    mod = _frozen_importlib.module_from_spec(found)
    sys.modules["sitecustomize"] = mod
    found.loader.exec_module(mod)


def _environ_data():
    """os.environ's own dict (and how its keys are written): changed
    directly, the program's view changes, the process's environment (what
    its children inherit) does not."""
    data = getattr(os.environ, "_data", None)
    if not isinstance(data, dict):
        data = getattr(os.environ, "data", None)  # Python 2
    if not isinstance(data, dict):
        return None, None
    fs = getattr(os, "fsencode", None)
    return data, (fs if fs is not None and any(isinstance(k, bytes) for k in data)
                  else (lambda s: s))


def _plain_path(folder=_HERE):
    """The PYTHONPATH the program gave: folder (this one), which the parent
    put first, taken off os.environ's (the parent gave none: no
    PYTHONPATH)."""
    data, fs = _environ_data()
    if data is None:
        return
    key, here = fs("PYTHONPATH"), fs(folder)
    v = data.get(key)
    if v == here:
        del data[key]
    elif v is not None and v.startswith(here + fs(os.pathsep)):
        data[key] = v[len(here) + 1:]
        if not data[key]:  # PYTHONPATH= (empty): not the entry "folder:" made
            _drop_after_here(os.getcwd())


def _drop_after_here(entry):
    """Takes the entry after this folder's off sys.path, when it is entry."""
    for i, p in enumerate(sys.path[:-1]):
        if os.path.abspath(p or ".") == _HERE:
            if sys.path[i + 1] == entry:
                del sys.path[i + 1]
            return


def _plain_rest():
    """The variables the parent's tracy added to an environment the
    program made for this child (TRACY_PY_HIDE) taken off os.environ, once
    the recording has read them."""
    data, fs = _environ_data()
    names = data.pop(fs("TRACY_PY_HIDE"), None) if data is not None else None
    for name in names.split(fs(",")) if names else ():
        data.pop(name, None)


def _isolated():
    """A child started with -E or -I, which reads no PYTHONPATH, profiled
    through tracy-isolated.pth (tracy/_isolated.py loads this file under
    another name): the parent's _child folder (this one or another
    installation's) taken off os.environ's PYTHONPATH, the recording
    started, tracy's variables taken off the view; the parent is told that
    this child is profiled after all (pyhook/childenv.c noted it as not)."""
    data, fs = _environ_data()
    v = data.get(fs("PYTHONPATH")) if data is not None else None
    first = v.split(fs(os.pathsep))[0] if v else None
    if first and first.rstrip(fs("/")).endswith(fs("/tracy/_child")):
        _plain_path(first)
    opts = os.environ.get("TRACY_PY_OPTS")
    if _tracy_child():
        _note(opts, "profiled", quiet=True)
    _plain_rest()


if __name__ == "sitecustomize":
    _plain_path()
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    _how = _hidden_spec()
    _tracy_child()
    _plain_rest()
    if _how is None:
        # As when there is no sitecustomize: site ignores this error, and the
        # import system takes this module off sys.modules.
        if sys.version_info[0] < 3:  # (site ignores any ImportError there)
            raise ImportError("No module named sitecustomize")
        raise ImportError("No module named 'sitecustomize'", name="sitecustomize")
    _run_hidden(_how)
    del _how
