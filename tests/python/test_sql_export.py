"""tracy-sql writes the zone table and its indexes as b-tree pages of its
own: these tests check the result with the real SQLite library
(integrity_check compares every index with the table) and against the op
report of tracy-csv, on traces large enough for many-level trees, sorted
runs on disk and zones that stay open across the reorder window."""
import csv
import io
import json
import os
import signal
import sqlite3
import subprocess
import time

from conftest import BIN, BUILD, once

# A program whose outer zones (module, main, each phase) each span more than
# the 65536 zone ids tracy-sql keeps in its reorder window.
LONG_PHASES = """
import threading

def leaf(i):
    return i

def phase(n):
    for i in range(n):
        leaf(i)

def worker():
    phase(3000)

def main():
    t = threading.Thread(target=worker, name="side")
    t.start()
    phase(70000)
    phase(70000)
    t.join()

main()
"""


LARGE = once("tracy-sql's trees and sorted runs on a large trace")


def tool(name, *args):
    proc = subprocess.run([os.path.join(BIN, name)] + list(args), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def export(trace, db, *options):
    tool("tracy-sql", *options, trace, "-o", str(db))
    con = sqlite3.connect(str(db))
    assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    return con


def check_indexes_answer_like_scans(con):
    """Per-function and per-thread questions give the same answers through
    the indexes (seeks and full walks) as through scans of the table."""
    funcs = [f for (f,) in con.execute("SELECT id FROM func ORDER BY id")]
    for func in funcs[::max(1, len(funcs) // 12)] + funcs[-1:]:
        q = "SELECT count(*), sum(id), sum(dur) FROM slice_data {} WHERE func_id = ?"
        assert (con.execute(q.format("INDEXED BY slice_data_func"), (func,)).fetchone() ==
                con.execute(q.format("NOT INDEXED"), (func,)).fetchone())
    for (track,) in con.execute("SELECT id FROM thread_track").fetchall():
        q = ("SELECT count(*), sum(id), min(ts), max(ts) FROM slice_data {}"
             " WHERE track_id = ? AND ts >= (SELECT min(ts) FROM slice_data)")
        assert (con.execute(q.format("INDEXED BY slice_data_track_ts"), (track,)).fetchone() ==
                con.execute(q.format("NOT INDEXED"), (track,)).fetchone())
    q = "SELECT {} FROM slice_data INDEXED BY {} ORDER BY {}"
    walk = con.execute(q.format("func_id, id", "slice_data_func", "func_id, id")).fetchall()
    assert walk == sorted(con.execute("SELECT func_id, id FROM slice_data NOT INDEXED"))
    cols = "track_id, ts, dur, depth, func_id, id"  # the covering index's record
    walk = con.execute(q.format(cols, "slice_data_track_ts", "track_id, ts, id")).fetchall()
    assert walk == sorted(con.execute(f"SELECT {cols} FROM slice_data NOT INDEXED"),
                          key=lambda r: (r[0], r[1], r[5]))
    plan = " ".join(r[3] for r in con.execute(
        "EXPLAIN QUERY PLAN SELECT count(*) FROM slice WHERE name = 'leaf'"))
    assert "slice_data_func" in plan, plan


def op_report_zones(trace):
    rows = csv.DictReader(io.StringIO(tool("tracy-csv", trace)))
    return sorted((int(r["GLOBAL CALL COUNT"]), r["OP CODE"], int(r["DEPTH"]),
                   int(r["HOST START TS"]), int(r["HOST DURATION [ns]"]),
                   int(r["HOST SELF DURATION [ns]"]))
                  for r in rows if r["OP TYPE"] != "signpost")


@LARGE
def test_long_open_zones_and_deep_trees_match_the_op_report(run_tracy, tmp_path):
    run = run_tracy(LONG_PHASES)
    assert run.rc == 0, run.err
    expected = op_report_zones(run.path)
    names = [z[1] for z in expected]
    assert (names.count("leaf"), names.count("phase"), names.count("main")) == (143000, 3, 1)
    tables = {}
    for page_size in ("65536", "512"):
        con = export(run.path, tmp_path / f"run-{page_size}.db", "--page-size", page_size)
        assert con.execute("PRAGMA page_size").fetchone() == (int(page_size),)
        got = sorted(con.execute(
            "SELECT id, name, depth, ts, dur, self_dur FROM slice WHERE category = 'python'"))
        assert got == expected
        # Parents: one level up, enclosing the child, on the same thread.
        bad = con.execute(
            "SELECT count(*) FROM slice_data c JOIN slice_data p ON p.id = c.parent_id"
            " WHERE p.depth != c.depth - 1 OR p.ts > c.ts OR p.ts + p.dur < c.ts + c.dur"
            " OR p.track_id != c.track_id OR p.id >= c.id").fetchone()
        assert bad == (0,)
        orphans = con.execute("SELECT count(*) FROM slice_data WHERE depth > 0 AND parent_id"
                              " NOT IN (SELECT id FROM slice_data)").fetchone()
        assert orphans == (0,)
        assert con.execute("SELECT calls FROM function_stats WHERE name = 'leaf'"
                           ).fetchone() == (143000,)
        check_indexes_answer_like_scans(con)
        order = " ORDER BY 1, 2, 3"
        # total counts a zone only when no enclosing zone (up the parent chain)
        # is the same function
        inner = ("WITH RECURSIVE up(id, func, anc) AS ("
                 " SELECT id, func_id, parent_id FROM slice_data WHERE parent_id IS NOT NULL"
                 " UNION ALL SELECT up.id, up.func, a.parent_id FROM up"
                 " JOIN slice_data a ON a.id = up.anc WHERE a.func_id != up.func"
                 " AND a.parent_id IS NOT NULL)"
                 " SELECT DISTINCT up.id FROM up JOIN slice_data a ON a.id = up.anc"
                 " WHERE a.func_id = up.func")
        con.execute("CREATE TEMP TABLE inner_zone AS " + inner)
        assert (con.execute("SELECT name, src_file, src_line, calls, total, self, min, max, mean"
                            " FROM function_stats" + order).fetchall() ==
                con.execute("SELECT f.name, f.src_file, f.src_line, count(*), sum(CASE WHEN"
                            " d.id IN (SELECT id FROM temp.inner_zone) THEN 0 ELSE d.dur END)"
                            " AS t, sum(d.self_dur), min(d.dur), max(d.dur),"
                            " CAST(sum(CASE WHEN d.id IN (SELECT id FROM temp.inner_zone)"
                            " THEN 0 ELSE d.dur END) AS REAL) / count(*)"
                            " FROM slice_data d JOIN func f ON f.id = d.func_id GROUP BY f.id"
                            + order).fetchall())
        tables[page_size] = con.execute("SELECT * FROM slice_data ORDER BY id").fetchall()
        con.close()
    assert tables["512"] == tables["65536"]


@LARGE
def test_many_zones_spill_sorted_runs_and_keep_every_row(tmp_path):
    trace = str(tmp_path / "gen.tracy")
    tool(os.path.join(BUILD, "tools", "tracegen"), "-o", trace, "-z", "600000", "-p", "2",
         "-t", "3", "-d", "9", "-l", "300", "--messages", "40")
    con = export(trace, tmp_path / "gen.db", "--page-size", "1024")
    assert json.loads(tool("tracy-info", "--json", trace))["zones"] == 600000
    assert con.execute("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM slice_data"
                       ).fetchone() == (600000, 600000, 1, 600000)
    assert con.execute("SELECT count(*) FROM message").fetchone() == (40,)
    check_indexes_answer_like_scans(con)
    # A thread picked by name: through thread_track(utid) to the per-thread index.
    plan = " ".join(r[3] for r in con.execute(
        "EXPLAIN QUERY PLAN SELECT count(*) FROM slice s JOIN thread_track tt"
        " ON s.track_id = tt.id JOIN thread USING(utid) WHERE thread.name = 'worker-1'"))
    assert "thread_track_utid" in plan and "COVERING INDEX slice_data_track_ts" in plan, plan
    # Per-thread questions on slice's name, time, duration and depth read the
    # index only (and func), no slice_data row.
    q = ("SELECT count(*), sum(s.dur), max(s.depth), min(s.name), max(s.name) FROM slice s"
         " JOIN thread_track tt ON s.track_id = tt.id JOIN thread USING(utid)"
         " WHERE thread.name = 'worker-1' AND s.depth < 3")
    plan = " ".join(r[3] for r in con.execute("EXPLAIN QUERY PLAN " + q))
    assert "COVERING INDEX slice_data_track_ts" in plan, plan
    utids = [u for (u,) in con.execute("SELECT utid FROM thread WHERE name = 'worker-1'")]
    assert utids
    scan = con.execute(
        "SELECT count(*), sum(d.dur), max(d.depth), min(f.name), max(f.name)"
        " FROM slice_data d NOT INDEXED JOIN func f ON f.id = d.func_id"
        " JOIN thread_track tt ON d.track_id = tt.id"
        f" WHERE tt.utid IN ({','.join(map(str, utids))}) AND d.depth < 3").fetchall()
    assert con.execute(q).fetchall() == scan and scan[0][0] > 0
    con.close()


def test_an_export_cut_short_leaves_no_file_behind(tmp_path):
    """SIGINT, SIGTERM or SIGHUP during an export (Ctrl-C on a long one):
    tracy-sql ends by that signal, as it would, and leaves neither the
    database half written next to -o's name nor the temporary database of a
    query in TMPDIR (before, both stayed)."""
    trace = str(tmp_path / "big.tracy")
    gen = subprocess.run([os.path.join(BUILD, "tools", "tracegen"), "-z", "3000000", "-t", "2",
                          "-o", trace], capture_output=True, text=True, timeout=600)
    assert gen.returncode == 0, gen.stderr
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    sql = os.path.join(BIN, "tracy-sql")
    for sig, args in ((signal.SIGINT, ["-o", str(tmp_path / "out.db")]),
                      (signal.SIGTERM, ["SELECT count(*) FROM slice"]),
                      (signal.SIGHUP, ["-o", str(tmp_path / "out.db"), "SELECT 1"])):
        p = subprocess.Popen([sql, trace] + args, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        try:
            # the export has begun once its file is there
            deadline = time.monotonic() + 60
            while not [f for d in (tmp, tmp_path) for f in os.listdir(str(d))
                       if ".tmp-" in f] and time.monotonic() < deadline:
                time.sleep(0.002)
            p.send_signal(sig)
            out, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == -sig, (sig, p.returncode, err)
        assert os.listdir(str(tmp)) == [], sig
        assert sorted(os.listdir(str(tmp_path))) == ["big.tracy", "tmp"], sig
