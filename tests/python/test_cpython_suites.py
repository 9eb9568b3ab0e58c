"""CPython's own regression suites for tracers and profilers, and for what a
process does with its descriptors, exec and children (test_os, part of
test_subprocess: the profiler's socket is in no table the program sees), run from the
interpreter's `test` package unprofiled and under python -m tracy: every
test must end the same way (its junit status), and the trace must be
complete. Runs where the interpreter is 3.11 or 3.13 and its `test` package
is complete (pyenv builds); skipped with the reason otherwise.

KNOWN lists the tests whose outcome still differs (strict: a fix, or a new
difference, fails the test)."""
import concurrent.futures
import os
import subprocess
import xml.etree.ElementTree as ET

import pytest

from conftest import PYTHON, Run, env_for_tests

SUITES = ["test_cprofile", "test_sys_settrace", "test_pdb", "test_sys_setprofile",
          "test_os", "test_subprocess", "test_pty", "test_signal"]
# suite -> regrtest -m patterns: the part of a long suite that is run. Of
# test_subprocess (about 340 tests, 20-40 s), its descriptor, exec and pid
# tests (about 60, 10-20 s); the rest kills children by signal, whose last
# zones the trace then holds as aborted.
SELECT = {"test_subprocess": ["*fd*", "*exec*", "*pid*"]}
LIMIT = 300
# suite -> children it kills by SIGKILL: lost when they had connected by
# then (test_os: PidTests.test_waitstatus_to_exitcode_kill kills the child
# os.spawnv started at once; whether it had connected is a race, on 3.11.7
# about one run in three)
SIGKILLED = {"test_os": 1}
UNCLOSED = 2  # zone flags (trace.h): the file ends before the zone does

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


def run_suite(suite, tmp, traced, mechanism="hook"):
    xml = os.path.join(tmp, "%s-%s.xml" % (suite, "traced" if traced else "plain"))
    cmd = [PYTHON]
    trace = os.path.join(tmp, suite + ".tracy")
    if traced:
        cmd += ["-m", "tracy", "--mechanism", mechanism, "-o", trace]
    cmd += ["-m", "test", "--junit-xml", xml]
    for pattern in SELECT.get(suite, []):
        cmd += ["-m", pattern]
    cmd += [suite]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT,
                       env=env_for_tests(), cwd=tmp)
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


@pytest.mark.parametrize("suite", SUITES)
def test_suite_same_outcome(suite, tmp_path):
    check_suite(suite, tmp_path, "hook", KNOWN, False)


@pytest.mark.parametrize("suite", EXACT_SUITES)
def test_suite_same_outcome_exact(suite, tmp_path):
    check_suite(suite, tmp_path, "exact", KNOWN_EXACT, (VERSION, suite) in OPEN_EXACT)


def check_suite(suite, tmp_path, mechanism, known, left_open):
    if VERSION is None:
        pytest.skip("%s has no complete `test` package" % PYTHON)
    if VERSION not in ((3, 11), (3, 13)):
        pytest.skip("the regression suites are compared on 3.11 and 3.13")
    if not os.path.exists(os.path.join(TESTDIR, suite + ".py")):
        pytest.skip("%s has no %s" % (PYTHON, suite))
    tmp = str(tmp_path)
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        fp = ex.submit(run_suite, suite, tmp, False)
        ft = ex.submit(run_suite, suite, tmp, True, mechanism)
        (plain, pxml, _), (traced, txml, trace) = fp.result(), ft.result()
    assert os.path.exists(pxml), plain.stdout[-3000:] + plain.stderr[-3000:]
    assert os.path.exists(txml), traced.stdout[-3000:] + traced.stderr[-3000:]
    want, got = outcomes(pxml), outcomes(txml)
    assert want, "no test ran"
    assert set(want) == set(got)
    differ = {k for k in want if want[k] != got[k]}
    assert differ == known.get(VERSION, {}).get(suite, set()), \
        {k: (want[k], got[k]) for k in differ}
    if not differ:
        assert traced.returncode == plain.returncode, traced.stdout[-3000:]
    t = Run(traced, trace).trace
    assert t["complete"]
    assert t["stats"].get("events_rejected", 0) == 0
    assert t["stats"].get("clients_rejected", 0) == 0
    # every child recorded clean (fork children, subprocess children whose
    # preexec_fn ran Python before _posixsubprocess's exec: unseen.c), but
    # those the suite kills by SIGKILL, which are counted lost, with the reason
    lost = [p for p in t["processes"] if p["status"] != 0]
    assert t["stats"].get("clients_lost", 0) == len(lost) <= SIGKILLED.get(suite, 0), lost
    assert all(p["end_reason"].endswith("events recorded but not sent: unknown")
               for p in lost), lost
    # the frames that called a successful exec never return: their zones
    # are left open in the process the exec ended (PROTOCOL.md, exec)
    execd = {p["index"] for p in t["processes"] if p["end_reason"] == "exec"}
    bad = [z for z in t["zones"] if z[10] != 0 and not (z[0] in execd and z[10] == UNCLOSED)]
    assert bool(bad) == left_open, bad[:5]
