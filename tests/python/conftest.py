"""Helpers for the python -m tracy tests: run a program under the profiler
with the real capture daemon and decode the trace it produced."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("LT_BUILD", os.path.join(ROOT, "build"))
BIN = os.path.join(BUILD, "bin")
# The interpreter that runs the traced programs (in subprocesses) and the
# directory holding the tracy package built for it: `make check` runs this
# suite once per interpreter found (tests/pymatrix.sh). pytest itself runs
# under /usr/bin/python3 and reads traces with the build in build/python.
PYTHON = os.environ.get("TRACY_TEST_PYTHON") or (
    "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable)
PYDIR = os.environ.get("TRACY_TEST_PYDIR") or os.path.join(BUILD, "python")
READER_DIR = os.path.join(BUILD, "python")

if READER_DIR not in sys.path:
    sys.path.insert(0, READER_DIR)

from tracy import _tracy  # noqa: E402

# The run of the matrix that also makes the checks whose subject is a
# converter's output, not the interpreter that recorded the trace (a browser
# showing an export, SQLite reading a large one): each interpreter's traces
# go through the same converters, which other tests check on every run.
ONCE_PYTHON = "/usr/bin/python3"


def once(subject):
    """Marks a test to run in the matrix's run for ONCE_PYTHON only."""
    return pytest.mark.skipif(
        os.path.realpath(PYTHON) != os.path.realpath(ONCE_PYTHON),
        reason="%s: checked once, in the run for %s" % (subject, ONCE_PYTHON))


def env_for_tests(**extra):
    env = dict(os.environ)
    # TRACY_TEST_PYTHONPATH: more for the programs (Debian's pytest, for an
    # interpreter that has none of its own)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (PYDIR, os.environ.get("TRACY_TEST_PYTHONPATH")) if p)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env.pop("TRACY_PY_OPTS", None)
    env.pop("TRACY_ADDR", None)
    env["TRACY_PORT"] = "0"  # always a daemon of our own: the machine is shared
    env.update(extra)
    return env


class Run:
    def __init__(self, proc, trace_path):
        self.proc = proc
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr
        self.path = trace_path
        self._trace = None

    @property
    def trace(self):
        if self._trace is None:
            self._trace = _tracy._read_trace(self.path)
        return self._trace

    @property
    def zones(self):
        return self.trace["zones"]

    def names(self, kind=None):
        return [z.name for z in self.zones if kind is None or z.kind == kind]

    def count(self, name):
        return sum(1 for z in self.zones if z.name == name)

    def assert_balanced(self):
        t = self.trace
        assert t["complete"]
        bad = [z for z in t["zones"] if z.flags != 0]
        assert bad == [], bad[:5]
        for p in t["processes"]:
            assert p["status"] == 0, p


@pytest.fixture
def run_tracy(tmp_path):
    """run_tracy(source, *options, args=(), module=None) -> Run"""
    def run(source=None, *options, args=(), module=None, timeout=120, env=None,
            output=None, cwd=None):
        script = tmp_path / "prog.py"
        target = []
        if source is not None:
            script.write_text(textwrap.dedent(source))
            target = [str(script)]
        if module:
            target = ["-m", module]
        out = output or str(tmp_path / "trace.tracy")
        cmd = [PYTHON, "-m", "tracy", "-o", out] + list(options) + target + list(args)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=env or env_for_tests(), cwd=cwd or str(tmp_path))
        return Run(proc, out)
    return run
