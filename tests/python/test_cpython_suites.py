"""CPython's own regression suites for tracers and profilers, for what a
process does with its descriptors, exec, signals, threads and children
(test_os, test_subprocess: the profiler's socket is in no table the program
sees; test_threading), and for what programs commonly use (logging,
faulthandler, weakref, tempfile, contextlib, asyncio's events and tasks,
inspect, sys, gc, traceback, coroutines, exceptions, _thread, atexit), run
from the interpreter's `test` package unprofiled and under python -m tracy,
several suites at a time (JOBS): every
test must end the same way (its junit status), and the trace must be
complete. Runs where the interpreter is 3.11 or 3.13 and its `test` package
is complete (pyenv builds); skipped with the reason otherwise.

KNOWN lists the tests whose outcome still differs (strict: a fix, or a new
difference, fails the test)."""
import concurrent.futures
import os
import re
import signal
import subprocess
import xml.etree.ElementTree as ET

import pytest

from conftest import PYTHON, Run, env_for_tests

SUITES = ["test_cprofile", "test_sys_settrace", "test_pdb", "test_sys_setprofile",
          "test_os", "test_subprocess", "test_pty", "test_signal", "test_threading",
          # what programs commonly use, tried as a new user would
          "test_logging", "test_faulthandler", "test_weakref", "test_tempfile",
          "test_contextlib", "test_asyncio.test_events", "test_asyncio.test_tasks",
          "test_inspect", "test_sys", "test_gc", "test_traceback", "test_coroutines",
          "test_exceptions", "test_thread", "test_atexit"]
# suite -> regrtest -m patterns: the part of a long suite that is run (none:
# the whole suite)
SELECT = {}
# suite -> regrtest -i patterns: tests left out. test_threading's
# test_print_exception_gh_102056 (3.13) recurses exponentially until
# interrupt_main stops it a second later; on a loaded machine it spins on for
# minutes, unprofiled as well, past LIMIT.
IGNORE = {"test_threading": ["*test_print_exception_gh_102056"]}
LIMIT = 300
# Suites run at once, each plain and traced side by side (most of their time
# is spent waiting: sleeps, timeouts, children); the longest start first.
JOBS = int(os.environ.get("TRACY_SUITE_JOBS", "3"))
LONGEST = ["test_subprocess", "test_signal", "test_asyncio.test_tasks", "test_threading",
           "test_os", "test_asyncio.test_events", "test_pdb", "test_logging",
           "test_faulthandler", "test_weakref"]
# suite -> the signals that end some of its children, sent by the suite
# (Popen.kill/terminate/send_signal, a transport's) or raised by the child
# (os.abort). Such a process says so in the trace, and only such a process
# may end with frames open: SIGKILL, lost ("ended by SIGKILL (signal 9)": the
# daemon asks the kernel, capture/procexit.c); SIGTERM/SIGHUP, clean after
# shipping its events, the signal as its end reason; SIGABRT, crashed. Each
# is a race the child may lose before it connects, so each may also not
# show (test_os: PidTests.test_waitstatus_to_exitcode_kill kills the child
# os.spawnv started at once).
SIGNALLED = {"test_os": {"SIGKILL", "SIGTERM"},
             "test_subprocess": {"SIGKILL", "SIGTERM", "SIGABRT", "SIGINT"},
             "test_asyncio.test_events": {"SIGKILL", "SIGTERM", "SIGHUP", "SIGINT"}}
UNCLOSED = 2  # zone flags (trace.h): the file ends before the zone does
LOST, CRASHED = 1, 4  # process status (trace.h)

# (major, minor) -> {suite: {test id differing}}
KNOWN = {
    (3, 13): {
        # SEND is not inlined under a frame-evaluation hook: the coroutine's
        # StopIteration reaches the tracer twice (see test_other_tools)
        "test_sys_settrace": {
            "test.test_sys_settrace.%s.test_20_async_for_loop" % c
            for c in ("SkipLineEventsTraceTestCase", "TestLinesAfterTraceStarted",
                      "TestSetLocalTrace", "TraceOpcodesTestCase", "TraceTestCase")},
        # pdb stops one line late in an __init__ watched through sys.monitoring
        "test_pdb": {"test.test_pdb.test_pdb_issue_gh_65052"},
    },
}


def _probe():
    code = ("import sys, os, test.libregrtest, test.support; "
            "print(*sys.version_info[:2]); print(os.path.dirname(test.__file__))")
    p = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=60,
                       env=env_for_tests())
    if p.returncode:
        return None, None
    ver, d = p.stdout.split("\n")[:2]
    return tuple(int(x) for x in ver.split()), d


VERSION, TESTDIR = _probe()


def outcomes(xml_path):
    """{test id: 'ok' | 'failure' | 'error' | 'skipped'} from regrtest's junit."""
    out = {}
    for tc in ET.parse(xml_path).getroot().iter("testcase"):
        name = tc.get("name", "")
        cls = tc.get("classname")
        key = name if not cls or name.startswith(cls) else "%s.%s" % (cls, name)
        status = "ok"
        for child in tc:
            if child.tag in ("failure", "error", "skipped"):
                status = child.tag
        out[key] = status
    return out


def run_suite(suite, tmp, traced):
    """Runs the suite; its output goes to files, not pipes: a child the suite
    leaves behind (and that this ends with the session) holds no pipe open."""
    kind = "traced" if traced else "plain"
    xml = os.path.join(tmp, "%s-%s.xml" % (suite, kind))
    cmd = [PYTHON]
    trace = os.path.join(tmp, suite + ".tracy")
    if traced:
        cmd += ["-m", "tracy", "-o", trace]
    cmd += ["-m", "test", "--junit-xml", xml]
    for pattern in SELECT.get(suite, []):
        cmd += ["-m", pattern]
    for pattern in IGNORE.get(suite, []):
        cmd += ["-i", pattern]
    cmd += [suite]
    out = os.path.join(tmp, "%s-%s.out" % (suite, kind))
    with open(out, "w+") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env_for_tests(),
                             cwd=tmp, start_new_session=True)
        try:
            p.wait(timeout=LIMIT)
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # what the suite left running
            except ProcessLookupError:
                pass
            p.wait()
        f.seek(0)
        p.output = f.read()
    return p, xml, trace


def skip_reason(suite):
    if VERSION is None:
        return "%s has no complete `test` package" % PYTHON
    if VERSION not in ((3, 11), (3, 13)):
        return "the regression suites are compared on 3.11 and 3.13"
    path = os.path.join(TESTDIR, *suite.split("."))
    if not (os.path.exists(path + ".py") or os.path.exists(os.path.join(path, "__init__.py"))):
        return "%s has no %s" % (PYTHON, suite)
    return None


@pytest.fixture(scope="module")
def suite_runs(request, tmp_path_factory):
    """suite -> (plain, traced) futures of run_suite: every suite selected
    (-k) is started at the module's first test, JOBS at a time."""
    chosen = {i.callspec.params["suite"] for i in request.session.items
              if getattr(i, "module", None) is request.module and hasattr(i, "callspec")}
    order = sorted((s for s in SUITES if s in chosen and not skip_reason(s)),
                   key=lambda s: LONGEST.index(s) if s in LONGEST else len(LONGEST))
    ex = concurrent.futures.ThreadPoolExecutor(2 * JOBS)
    runs = {}
    for suite in order:
        tmp = str(tmp_path_factory.mktemp(suite))
        runs[suite] = (ex.submit(run_suite, suite, tmp, False),
                       ex.submit(run_suite, suite, tmp, True))
    yield runs
    ex.shutdown(wait=True)


@pytest.mark.parametrize("suite", SUITES)
def test_suite_same_outcome(suite, suite_runs):
    why = skip_reason(suite)
    if why:
        pytest.skip(why)
    fp, ft = suite_runs[suite]
    (plain, pxml, _), (traced, txml, trace) = fp.result(), ft.result()
    assert os.path.exists(pxml), plain.output[-3000:]
    assert os.path.exists(txml), traced.output[-3000:]
    want, got = outcomes(pxml), outcomes(txml)
    assert want, "no test ran"
    assert set(want) == set(got)
    differ = {k for k in want if want[k] != got[k]}
    assert differ == KNOWN.get(VERSION, {}).get(suite, set()), \
        {k: (want[k], got[k]) for k in differ}
    if not differ:
        assert traced.returncode == plain.returncode, traced.output[-3000:]
    t = Run(traced, trace).trace
    assert t["complete"]
    assert t["stats"].get("events_rejected", 0) == 0
    assert t["stats"].get("clients_rejected", 0) == 0
    check_endings(t, SIGNALLED.get(suite, set()))


def ended_by(p):
    """The signal named in a process's end reason ("SIGKILL"), or None."""
    m = re.search(r"\b(SIG[A-Z0-9]+) \(signal \d+\)", p["end_reason"])
    return m.group(1) if m else None


def check_endings(t, signalled):
    """Every process of the trace ended clean, but those a signal in
    `signalled` ended, whose end says so: lost by SIGKILL (with what the
    client could not send, unknown), clean after SIGTERM, crashed by SIGABRT.
    Zones that did not end are held only by those, by the processes a
    successful exec replaced (their frames that called exec never return:
    PROTOCOL.md, exec), and by threads other than the main one that were
    still running when their process ended (daemon threads: a chain of
    frames from the thread's outermost, each inside the one before)."""
    lost = [p for p in t["processes"] if p["status"] == LOST]
    assert t["stats"].get("clients_lost", 0) == len(lost), lost
    for p in t["processes"]:
        if p["status"] == 0 and p["end_reason"] in ("", "exec"):
            continue
        assert p["status"] in (0, LOST, CRASHED) and ended_by(p) in signalled, p
        if p["status"] == LOST:
            assert p["end_reason"].endswith("events recorded but not sent: unknown"), p
    signalled_procs = {p["index"] for p in t["processes"] if ended_by(p)}
    execd = {p["index"] for p in t["processes"] if p["end_reason"] == "exec"}
    open_by_thread = {}
    for z in t["zones"]:
        if z[10] != 0 and z[0] not in signalled_procs and \
                not (z[0] in execd and z[10] == UNCLOSED):
            open_by_thread.setdefault((z[0], z[1]), []).append(z)
    for (proc, thread), zones in open_by_thread.items():
        zones.sort(key=lambda z: z[8])
        assert thread != 1 and all(z[10] == UNCLOSED for z in zones) and \
            [z[8] for z in zones] == list(range(len(zones))) and \
            all(a[6] <= b[6] for a, b in zip(zones, zones[1:])), zones[:8]
