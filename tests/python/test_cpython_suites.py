"""CPython's own regression suites for tracers and profilers, for what a
process does with its descriptors, exec, signals, threads and children
(test_os, test_subprocess: the profiler's socket is in no table the program
sees; test_threading), and for what programs commonly use (logging,
faulthandler, weakref, tempfile, contextlib, asyncio's events and tasks,
inspect, sys, gc, traceback, coroutines, exceptions, _thread, atexit), for
recursion deeper than the C stack (test_call), run
from the interpreter's `test` package unprofiled and under python -m tracy
(the default mechanism, auto; EXACT_SUITES also under exact), several
suites at a time (JOBS), each in a network namespace of its own
where that can be had (OWN_NETWORK): every
test must end the same way (its junit status), and the trace must be
complete. Runs where the interpreter is 3.11 or 3.13 (on 3.12, the suites
of the tools that share the interpreter's hooks: HOOK_SUITES) and its
`test` package is complete (pyenv builds); skipped with the reason
otherwise.

KNOWN lists the tests whose outcome still differs (strict: a fix, or a new
difference, fails the test).

FLOOR_SUITES test the interpreter's own specializer and sys.monitoring,
whose outcome any frame-evaluation function changes (the calls it must see
are not specialized inline): they are compared with a run under an empty
one (bench/emptyeval.c, built here with the interpreter's headers), so that
the profiler may differ only where the mechanism itself does."""
import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import xml.etree.ElementTree as ET

import pytest

from conftest import PYTHON, ROOT, Run, env_for_tests

SUITES = ["test_cprofile", "test_sys_settrace", "test_pdb", "test_sys_setprofile",
          "test_os", "test_subprocess", "test_pty", "test_signal", "test_threading",
          # what programs commonly use, tried as a new user would
          "test_logging", "test_faulthandler", "test_weakref", "test_tempfile",
          "test_contextlib", "test_asyncio.test_events", "test_asyncio.test_tasks",
          "test_inspect", "test_sys", "test_gc", "test_traceback", "test_coroutines",
          "test_exceptions", "test_thread", "test_atexit", "test_functools",
          # recursion past the C stack: 3.13's test_super_deep
          "test_call",
          # children given environments of their own: posix_spawn(p),
          # venv's ensurepip (pyhook/childenv.c)
          "test_posix", "test_venv",
          # children's fatal errors under -X faulthandler (Py_FatalError
          # disables it before abort())
          "test_capi"]
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
             "test_asyncio.test_events": {"SIGKILL", "SIGTERM", "SIGHUP", "SIGINT"},
             "test_venv": {"SIGTERM"},  # (multiprocessing's Pool.terminate)
             "test_posix": {"SIGUSR1"},  # (posix_spawn's setsigmask, setsigdef)
             "test_capi": {"SIGABRT"}}
# suites whose children end by os._exit() inside frames of their main thread
# (test_capi: "exit immediately to avoid a crash while deallocating"): those
# frames never return, and their zones stay open as a daemon thread's do
EXITS_IN_FRAMES = {"test_capi"}
UNCLOSED = 2  # zone flags (trace.h): the file ends before the zone does
LOST, CRASHED = 1, 4  # process status (trace.h)

# SEND is not inlined under a frame-evaluation hook (3.12+): the coroutine's
# StopIteration reaches the tracer twice (see test_other_tools). The suites
# run under auto, the default, which leaves the hook when another tool
# begins: on 3.12 for a trace or profile function, and on 3.12 and 3.13 for
# a sys.monitoring tool, unless the program holds tool ids 3 and 4 as well
# (test_monitoring holds 2, 3 and 4: compared with FLOOR_SUITES). On 3.13 a
# trace function keeps the hook.
ASYNC_FOR = {"test.test_sys_settrace.%s.test_20_async_for_loop" % c
             for c in ("SkipLineEventsTraceTestCase", "TestLinesAfterTraceStarted",
                       "TestSetLocalTrace", "TraceOpcodesTestCase", "TraceTestCase")}
# (major, minor) -> {suite: {test id differing}}
KNOWN = {
    (3, 13): {"test_sys_settrace": ASYNC_FOR},
}


FLOOR_SUITES = ["test_monitoring", "test_dis", "test_opcache"]
KNOWN_FLOOR = {
    (3, 13): {
        # these check that CPython specialized the call of a class with a
        # simple __init__ (CALL_ALLOC_AND_ENTER_INIT), which the hook keeps
        # visible by keeping the class from that specialization
        "test_monitoring": {
            "test.test_monitoring.ExceptionMonitoringTest.test_no_unwind_for_shim_frame"},
        "test_opcache": {"test.test_opcache.TestCallCache.test_assign_init_code"},
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


def _own_network():
    """The command prefix that runs a suite in a network namespace of its own
    with its loopback up (as root, where unshare is allowed), or []. Suites
    run side by side pick ports with socket_helper.find_unused_port(), which
    another run may take before the test uses it (seen once in 3.11's
    test_asyncio.test_events, plain and traced running at once)."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        return []
    cmd = ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]
    try:
        p = subprocess.run(cmd + ["true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return cmd if p.returncode == 0 else []


OWN_NETWORK = _own_network()


def build_emptyeval(tmp):
    """bench/emptyeval.c built for PYTHON in tmp: the folder to import it from."""
    code = ("import sysconfig; print(sysconfig.get_paths()['include']); "
            "print(sysconfig.get_config_var('EXT_SUFFIX'))")
    p = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=60,
                       env=env_for_tests())
    assert p.returncode == 0, p.stderr
    include, suffix = p.stdout.split("\n")[:2]
    out = os.path.join(tmp, "emptyeval" + suffix)
    cc = subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-I" + include,
                         os.path.join(ROOT, "bench", "emptyeval.c"), "-o", out],
                        capture_output=True, text=True, timeout=120)
    assert cc.returncode == 0, cc.stderr
    return tmp


def run_suite(suite, tmp, traced, mechanism="auto", floor=None):
    """Runs the suite (under the empty frame-evaluation function imported
    from `floor`, when given); its output goes to files, not pipes: a child
    the suite leaves behind (and that this ends with the session) holds no
    pipe open."""
    kind = ("traced-" + mechanism) if traced else "floor" if floor else "plain"
    xml = os.path.join(tmp, "%s-%s.xml" % (suite, kind))
    cmd = OWN_NETWORK + [PYTHON]
    trace = os.path.join(tmp, suite + ".tracy")
    env = env_for_tests()
    if traced:
        cmd += ["-m", "tracy", "--mechanism", mechanism, "-o", trace]
    elif floor:
        cmd += [os.path.join(ROOT, "bench", "runwith.py"), "eval"]
        env["PYTHONPATH"] = floor + os.pathsep + env["PYTHONPATH"]
    cmd += ["-m", "test", "--junit-xml", xml]
    for pattern in SELECT.get(suite, []):
        cmd += ["-m", pattern]
    for pattern in IGNORE.get(suite, []):
        cmd += ["-i", pattern]
    cmd += [suite]
    out = os.path.join(tmp, "%s-%s.out" % (suite, kind))
    with open(out, "w+") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env,
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


# The tracer suites under the exact mechanism (no frame-evaluation function)
EXACT_SUITES = ["test_cprofile", "test_sys_settrace", "test_pdb", "test_sys_setprofile"]
KNOWN_EXACT = {
    (3, 13): {
        # 3.13.0: while any sys.monitoring tool has PY_START, PY_RESUME,
        # PY_RETURN, PY_YIELD or LINE events set, pdb's set_trace() stops one
        # line after its own (cProfile or coverage's sys.monitoring core does
        # the same; test_other_tools). Why auto keeps the hook on 3.13 for a
        # trace function.
        "test_pdb": {"test.test_pdb." + n for n in (
            "test_convenience_variables", "test_list_commands",
            "test_next_until_return_at_return_event", "test_pdb_alias_command",
            "test_pdb_ambiguous_statements", "test_pdb_basic_commands",
            "test_pdb_breakpoint_commands", "test_pdb_breakpoint_with_filename",
            "test_pdb_closure", "test_pdb_continue_in_bottomframe", "test_pdb_display_command",
            "test_pdb_displayhook", "test_pdb_empty_line", "test_pdb_f_trace_lines",
            "test_pdb_function_break", "test_pdb_interact_command", "test_pdb_invalid_arg",
            "test_pdb_issue_20766", "test_pdb_issue_43318", "test_pdb_issue_gh_101517",
            "test_pdb_issue_gh_101673", "test_pdb_issue_gh_103225", "test_pdb_issue_gh_108976",
            "test_pdb_issue_gh_65052", "test_pdb_issue_gh_80731", "test_pdb_issue_gh_91742",
            "test_pdb_issue_gh_94215", "test_pdb_multiline_statement",
            "test_pdb_next_command_for_asyncgen", "test_pdb_next_command_for_coroutine",
            "test_pdb_next_command_for_generator",
            "test_pdb_next_command_in_generator_for_loop", "test_pdb_next_command_subiterator",
            "test_pdb_pp_repr_exc", "test_pdb_return_command_for_coroutine",
            "test_pdb_return_command_for_generator", "test_pdb_return_to_different_file",
            "test_pdb_show_attribute_and_item", "test_pdb_skip_modules",
            "test_pdb_skip_modules_with_callback", "test_pdb_until_command_for_coroutine",
            "test_pdb_until_command_for_generator", "test_pdb_whatis_command",
            "test_pdb_where_command", "test_post_mortem")},
    },
}
# (version, suite) under the exact mechanism whose trace keeps zones open:
# before 3.12 the exact mechanism is a profile function, and the suite's
# sys.setprofile (cProfile's too) replaces it: the zones open then never end
OPEN_EXACT = {((3, 11), "test_cprofile"), ((3, 11), "test_sys_setprofile")}


# 3.12 brought sys.monitoring, which cProfile and the exact mechanism use and
# beside which the hook runs: there the tracer suites (EXACT_SUITES) and
# FLOOR_SUITES are compared (the others behave there as on 3.11 and 3.13: a
# run of all of SUITES on 3.12.1 differed in test_sys_settrace's async for
# only)
HOOK_SUITES = set(EXACT_SUITES) | set(FLOOR_SUITES)


def skip_reason(suite):
    if VERSION is None:
        return "%s has no complete `test` package" % PYTHON
    if VERSION == (3, 12) and suite not in HOOK_SUITES:
        return "on 3.12 the suites of the tools that share the interpreter's hooks are compared"
    if VERSION not in ((3, 11), (3, 12), (3, 13)):
        return "the regression suites are compared on 3.11, 3.12 (in part) and 3.13"
    path = os.path.join(TESTDIR, *suite.split("."))
    if not (os.path.exists(path + ".py") or os.path.exists(os.path.join(path, "__init__.py"))):
        return "%s has no %s" % (PYTHON, suite)
    return None


def mechanism_of(item):
    return {"test_suite_same_outcome_exact": "exact",
            "test_suite_same_outcome_as_any_hook": "floor"}.get(item.originalname, "auto")


@pytest.fixture(scope="module")
def suite_runs(request, tmp_path_factory):
    """(suite, mechanism) -> (plain, traced) futures of run_suite: every
    suite selected (-k) is started at the module's first test, JOBS at a
    time, the longest first; a suite compared under two mechanisms is run
    plain once."""
    chosen = {(i.callspec.params["suite"], mechanism_of(i)) for i in request.session.items
              if getattr(i, "module", None) is request.module and hasattr(i, "callspec")}
    order = sorted((k for k in chosen if not skip_reason(k[0])),
                   key=lambda k: (LONGEST.index(k[0]) if k[0] in LONGEST else len(LONGEST),
                                  k[0], k[1]))
    floor = None
    if any(m == "floor" for _, m in order):
        floor = build_emptyeval(str(tmp_path_factory.mktemp("emptyeval")))
    ex = concurrent.futures.ThreadPoolExecutor(2 * JOBS)
    runs, plain = {}, {}  # (plain: one run a suite, whatever the mechanism compared)
    for suite, mechanism in order:
        tmp = str(tmp_path_factory.mktemp("%s-%s" % (suite, mechanism)))
        if mechanism == "floor":
            runs[suite, mechanism] = (ex.submit(run_suite, suite, tmp, False, floor=floor),
                                      ex.submit(run_suite, suite, tmp, True, "auto"))
        else:
            if suite not in plain:
                plain[suite] = ex.submit(run_suite, suite, tmp, False)
            runs[suite, mechanism] = (plain[suite],
                                      ex.submit(run_suite, suite, tmp, True, mechanism))
    yield runs
    ex.shutdown(wait=True)


@pytest.mark.parametrize("suite", SUITES)
def test_suite_same_outcome(suite, suite_runs):
    check_suite(suite, suite_runs, "auto", KNOWN, False)


@pytest.mark.parametrize("suite", EXACT_SUITES)
def test_suite_same_outcome_exact(suite, suite_runs):
    check_suite(suite, suite_runs, "exact", KNOWN_EXACT, (VERSION, suite) in OPEN_EXACT)


@pytest.mark.parametrize("suite", FLOOR_SUITES)
def test_suite_same_outcome_as_any_hook(suite, suite_runs):
    check_suite(suite, suite_runs, "floor", KNOWN_FLOOR, False)


def check_suite(suite, suite_runs, mechanism, known, left_open):
    why = skip_reason(suite)
    if why:
        pytest.skip(why)
    fp, ft = suite_runs[suite, mechanism]
    (plain, pxml, _), (traced, txml, trace) = fp.result(), ft.result()
    assert os.path.exists(pxml), plain.output[-3000:]
    assert os.path.exists(txml), traced.output[-3000:]
    want, got = outcomes(pxml), outcomes(txml)
    assert want, "no test ran"
    assert set(want) == set(got)
    differ = {k for k in want if want[k] != got[k]}
    assert differ == known.get(VERSION, {}).get(suite, set()), \
        {k: (want[k], got[k]) for k in differ}
    if not differ:
        assert traced.returncode == plain.returncode, traced.output[-3000:]
    t = Run(traced, trace).trace
    assert t["complete"]
    assert t["stats"].get("events_rejected", 0) == 0
    assert t["stats"].get("clients_rejected", 0) == 0
    check_endings(t, SIGNALLED.get(suite, set()), left_open, suite in EXITS_IN_FRAMES)


def ended_by(p):
    """The signal named in a process's end reason ("SIGKILL"), or None."""
    m = re.search(r"\b(SIG[A-Z0-9]+) \(signal \d+\)", p["end_reason"])
    return m.group(1) if m else None


def check_endings(t, signalled, left_open=False, main_open=False):
    """Every process of the trace ended clean, but those a signal in
    `signalled` ended, whose end says so: lost by SIGKILL (with what the
    client could not send, unknown), clean after SIGTERM, crashed by SIGABRT.
    Zones that did not end are held only by those, by the processes a
    successful exec replaced (their frames that called exec never return:
    PROTOCOL.md, exec), and by threads other than the main one that were
    still running when their process ended (daemon threads: a chain of
    frames from the thread's outermost, each inside the one before; with
    `main_open`, the main thread's too: os._exit() in a frame)."""
    lost = [p for p in t["processes"] if p["status"] == LOST]
    assert t["stats"].get("clients_lost", 0) == len(lost), lost
    for p in t["processes"]:
        if p["status"] == 0 and p["end_reason"] in ("", "exec"):
            continue
        # a child killed and reaped before the daemon took its pidfd (at
        # HELLO) is lost without the signal: the kernel no longer knows it
        unnamed_kill = p["status"] == LOST and ended_by(p) is None and "SIGKILL" in signalled
        assert p["status"] in (0, LOST, CRASHED) and (ended_by(p) in signalled or unnamed_kill), p
        if p["status"] == LOST:  # (what a fatal signal ends is shipped first: crashed)
            assert ended_by(p) in ("SIGKILL", None), p
            assert p["end_reason"].endswith("events recorded but not sent: unknown"), p
    signalled_procs = {p["index"] for p in t["processes"] if ended_by(p) or p["status"] == LOST}
    execd = {p["index"] for p in t["processes"] if p["end_reason"] == "exec"}
    if left_open:
        # the exact mechanism's profile function replaced by the suite's own
        # (OPEN_EXACT): zones open then never end
        assert any(z.flags != 0 for z in t["zones"])
        return
    open_by_thread = {}
    for z in t["zones"]:
        if z.flags != 0 and z.process not in signalled_procs and \
                not (z.process in execd and z.flags == UNCLOSED):
            open_by_thread.setdefault((z.process, z.thread), []).append(z)
    for (proc, thread), zones in open_by_thread.items():
        zones.sort(key=lambda z: z.depth)
        assert (thread != 1 or main_open) and all(z.flags == UNCLOSED for z in zones) and \
            [z.depth for z in zones] == list(range(len(zones))) and \
            all(a.begin_ts <= b.begin_ts for a, b in zip(zones, zones[1:])), zones[:8]
