"""Cumulative time counts the outermost activation of a function on a
thread only (cProfile's cumtime): function_stats.total in tracy-sql,
tracy-csv --stats and python -m tracy.top agree, and a recursive function
never takes longer than the caller that holds every one of its calls."""
import csv
import io
import subprocess

from conftest import PYTHON, env_for_tests
from programs import RECURSIVE, tool


def sql_stats(trace):
    out = tool("tracy-sql", "--csv", trace,
               "SELECT name, calls, total, self FROM function_stats").stdout
    rows = list(csv.reader(io.StringIO(out)))[1:]
    return {r[0]: (int(r[1]), int(r[2]), int(r[3])) for r in rows}


def test_recursive_total_is_the_outermost_call_only(run_tracy):
    r = run_tracy(RECURSIVE)
    assert r.rc == 0, r.err
    stats = sql_stats(r.path)
    calls, total, self_ = stats["fib"]
    m_calls, m_total, m_self = stats["main"]
    assert calls == 21891
    # main's only child is the outermost fib: its time is main's less main's own
    assert total == m_total - m_self
    assert total <= m_total
    # self time adds every call
    assert self_ == sum(max(0, z.end_ts - z.begin_ts - z.child_ns) for z in r.zones if z.name == "fib")
    # mutual recursion: ping's total is its first call's duration
    first_ping = max((z for z in r.zones if z.name == "ping"), key=lambda z: z.end_ts - z.begin_ts)
    assert stats["ping"][1] == first_ping.end_ts - first_ping.begin_ts
    assert stats["ping"][0] == r.count("ping") == 30


def test_csv_stats_and_top_agree_with_function_stats(run_tracy):
    r = run_tracy(RECURSIVE)
    assert r.rc == 0, r.err
    stats = sql_stats(r.path)
    rows = list(csv.DictReader(io.StringIO(tool("tracy-csv", "--stats", r.path).stdout)))
    by_name = {row["name"]: row for row in rows}
    for name in ("fib", "main", "ping", "pong"):
        assert int(by_name[name]["total_ns"]) == stats[name][1], name
        assert int(by_name[name]["counts"]) == stats[name][0], name
    assert max(float(row["total_perc"]) for row in rows) <= 100.0
    # python -m tracy.top: through tracy-sql, and its own decoder
    env = env_for_tests()
    out = subprocess.run([PYTHON, "-m", "tracy.top", r.path, "50"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    line = [ln for ln in out.stdout.splitlines() if ln.split()[:1] == ["fib"]][0]
    assert float(line.split()[-1]) == round(stats["fib"][1] / 1e6, 3)
    from tracy import top
    rows = {row[0]: row for row in top.top_zones(r.path, 50)}
    for name in ("fib", "main", "ping", "pong"):
        assert rows[name][2] == stats[name][0]
        assert rows[name][3] == stats[name][2]
        assert rows[name][4] == stats[name][1], name


def test_top_reports_a_bad_input_once_and_refuses_a_bad_n(run_tracy, tmp_path):
    r = run_tracy(RECURSIVE)
    assert r.rc == 0, r.err
    env = env_for_tests()
    missing = str(tmp_path / "missing.tracy")
    out = subprocess.run([PYTHON, "-m", "tracy.top", missing], capture_output=True,
                         text=True, env=env, timeout=60)
    # one line, tracy-sql's own, and its exit status (2: cannot read)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "missing.tracy" in out.stderr, out.stderr
    # without tracy-sql, its own decoder: the file named once
    from tracy import top
    try:
        top.top_zones(missing, 3)
        raise AssertionError("no error for a missing trace")
    except ValueError as e:
        assert str(e) == missing + ": No such file or directory"
    for n in ("0", "-3", "ten"):
        out = subprocess.run([PYTHON, "-m", "tracy.top", r.path, n], capture_output=True,
                             text=True, env=env, timeout=60)
        assert out.returncode == 2 and out.stdout == "", (n, out.stdout)
        assert out.stderr == "tracy.top: N must be a number of at least 1, not %r\n" % n
