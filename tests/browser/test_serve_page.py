"""tracy-serve's page in a real headless Chromium (Debian's, driven by
puppeteer-core: driver.js) against a real tracy-serve on loopback (-p 0)
serving real traces (tracegen and python -m tracy). What the page shows is
compared with what the command-line tools say of the same files: tracy-info,
tracy-sql, tracy-cut + tracy-csv --stats. Every test also checks that the
page logged no error and asked nothing of any other origin.

Screenshots of each view go to $TRACY_SHOTS (default BUILD/browser-shots);
docs/serve-*.png are copies of them."""
import csv
import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from chrome import BUILD, Page

BIN = os.path.join(BUILD, "bin")
TRACEGEN = os.path.join(BUILD, "tools", "tracegen")
SERVE = os.path.join(BIN, "tracy-serve")
PYDIR = os.path.join(BUILD, "python")
PYTHON = os.environ.get("TRACY_TEST_PYTHON", "/usr/bin/python3")
SHOTS = os.environ.get("TRACY_SHOTS", os.path.join(BUILD, "browser-shots"))
HOSTILE_ZONE = '</script><img src=x onerror="window.__pwned=1"> \'q\''
# a trace's file name: invalid UTF-8 (names inside a trace are valid UTF-8 by
# the format: the client replaces bad bytes, the reader refuses them)
HOSTILE_PATH = b"runs/\xff\xfe<img src=x onerror=window.__pwned=4>\"'\xc3.tracy"
HOSTILE_THREAD = "<img src=y onerror=window.__pwned=2>'\""
HOSTILE_FILE = "q\"'<img src=z onerror=window.__pwned=3>.py"


def tool(*args, ok=(0, 6)):
    r = subprocess.run([os.path.join(BIN, args[0])] + list(args[1:]), capture_output=True,
                       timeout=120)
    assert r.returncode in ok, (args, r.returncode, r.stderr)
    return r.stdout.decode()


def tracegen(path, *opts):
    subprocess.run([TRACEGEN, "-o", path] + list(opts), check=True, timeout=120,
                   capture_output=True)


def py_env():
    env = dict(os.environ, PYTHONPATH=PYDIR, TRACY_PORT="0",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    env.pop("TRACY_ADDR", None)
    env.pop("TRACY_PY_OPTS", None)
    return env


HOSTILE_PROGRAM = """
import threading, tracy
def work():
    with tracy.zone(%r, text='"quoted" <b>bold</b> \\'single\\''):
        sum(range(1000))
t = threading.Thread(target=work, name=%r)
t.start()
t.join()
""" % (HOSTILE_ZONE, HOSTILE_THREAD)
ZONE_LINE = HOSTILE_PROGRAM.split("\n").index(
    next(l for l in HOSTILE_PROGRAM.split("\n") if "tracy.zone" in l)) + 1


class Traces:
    """The served folder and what the command-line tools say of it."""

    def __init__(self, root, dbs):
        self.root = root
        self.dbs = dbs
        self.gen = os.path.join(root, "gen.tracy")
        self.slow = os.path.join(root, "runs", "slow.tracy")
        self.hostile = os.path.join(root, os.fsdecode(HOSTILE_PATH))
        self.py = os.path.join(root, "py", "prog.tracy")
        os.makedirs(os.path.join(root, "runs"))
        os.makedirs(os.path.join(root, "py"))
        common = ["-z", "6000", "-p", "2", "-t", "2", "-d", "4", "-l", "12"]
        tracegen(self.gen, *common, "--signposts", "8", "--messages", "8", "--plots", "120",
                 "--frames", "30", "--lost", "2")
        # a base and a slower run for the comparison: tracy-diff needs 100 us of change
        self.base = os.path.join(root, "runs", "base.tracy")
        tracegen(self.base, "-z", "40000", "-t", "2", "-d", "4", "-l", "12")
        tracegen(self.slow, "-z", "40000", "-t", "2", "-d", "4", "-l", "12", "--slow", "3:60")
        os.makedirs(os.path.join(root, "src"))
        tracegen(self.hostile, "-z", "300", "-t", "2", "-d", "3", "-l", "3",
                 "--rename", "1:" + HOSTILE_ZONE)
        prog = os.path.join(root, "src", HOSTILE_FILE)
        with open(prog, "w") as f:
            f.write(HOSTILE_PROGRAM)
        r = subprocess.run([PYTHON, "-m", "tracy", "-o", self.py, prog], env=py_env(),
                           capture_output=True, timeout=120, cwd=root)
        assert r.returncode == 0, r.stderr
        # a trace cut short (no trailer, not growing) and a file that is no trace
        self.short = os.path.join(root, "runs", "short.tracy")
        with open(self.gen, "rb") as f:
            data = f.read()
        with open(self.short, "wb") as f:
            f.write(data[:len(data) * 3 // 5])
        self.broken = os.path.join(root, "runs", "broken.tracy")
        with open(self.broken, "wb") as f:
            f.write(b"this is not a trace\n" * 20)
        # newest first, by distinct modification times
        self.order = [self.gen, self.short, self.broken, self.slow, self.base, self.py,
                      self.hostile]
        for i, p in enumerate(reversed(self.order)):
            os.utime(p, (1_700_000_000 + i * 60, 1_700_000_000 + i * 60))
        self._sql = {}

    def info(self, path):
        return json.loads(tool("tracy-info", "--json", path, ok=(0, 3, 6)))

    def sql(self, path):
        if path not in self._sql:
            db = os.path.join(self.dbs, os.path.basename(path) + ".db")
            tool("tracy-sql", path, "-o", db, ok=(0, 3, 6))
            self._sql[path] = sqlite3.connect(db)
        return self._sql[path]


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    return Traces(str(tmp_path_factory.mktemp("served")), str(tmp_path_factory.mktemp("dbs")))


def serving(root, cache):
    """A real tracy-serve on a free loopback port over root, its cache in a
    folder of the test's own (capture-release from the build on PATH): yields
    its URL, stops it after."""
    os.makedirs(cache, exist_ok=True)
    errors = open(os.path.join(cache, "stderr.txt"), "w+")  # read only when it fails
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.Popen([SERVE, "-p", "0", "--cache", cache, root],
                            stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
    url = None
    deadline = time.monotonic() + 30
    while url is None and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(r"http://[^\s]+", line)
        if m:
            url = m.group(0)
    if url is None:
        proc.kill()
        errors.seek(0)
        pytest.fail("tracy-serve printed no URL: %s" % errors.read()[-2000:])
    yield url.rstrip("/") + "/"
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    errors.close()


@pytest.fixture(scope="module")
def server(traces, tmp_path_factory):
    yield from serving(traces.root, str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def page():
    p = Page()
    yield p
    p.close()


@pytest.fixture(autouse=True)
def clean_log(page):
    """No console error, no exception, no request outside the server."""
    page.log()
    yield
    log = page.log()
    assert log["errors"] == [], log["answers"]
    assert log["outside"] == []


def shot(page, name):
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(os.path.join(SHOTS, name))


def shown_path(path, root):
    """A served file's relative path as the page shows it: bad bytes as U+FFFD."""
    return os.fsencode(os.path.relpath(path, root)).decode("utf-8", "replace")


def session_id(page, server, path, traces):
    rel = shown_path(path, traces.root)
    page.open(server, ready="window.__tracy && __tracy.sessionsLoaded > 0")
    ids = [s["id"] for s in page.eval("__tracy.sessions") if s["path"] == rel]
    assert len(ids) == 1, (rel, page.eval("__tracy.sessions"))
    return ids[0]


def open_session(page, server, sid):
    page.open("about:blank")  # a new document: nothing kept from the last test
    page.open(server + "#/t/" + sid, ready="__tracy.meta && __tracy.meta.id === %s && "
              "__tracy.settled()" % json.dumps(sid))
    return page.eval("__tracy.meta")


def find_zone(server, sid, name):
    """The first zone of function `name` (the API's find)."""
    url = server + "api/t/%s/find?%s" % (sid, urllib.parse.urlencode({"q": name}))
    with urllib.request.urlopen(url, timeout=30) as r:
        zone = json.load(r)["zone"]
    assert zone is not None, name
    return zone


def settle(page):
    page.wait("__tracy.settled()")


# ---- sessions ---------------------------------------------------------------

def test_sessions_list_matches_tracy_info(page, server, traces):
    page.open(server, ready="window.__tracy && __tracy.sessionsLoaded > 0 && "
              "document.querySelectorAll('#sessions tbody tr').length >= 7")
    rows = page.eval("""Array.from(document.querySelectorAll('#sessions tbody tr')).map(r => ({
        path: r.querySelector('.path').childNodes[0].textContent,
        program: r.querySelector('.program').textContent,
        duration: +r.querySelector('.duration').dataset.ns,
        processes: r.querySelector('.processes').textContent,
        threads: r.querySelector('.threads').textContent,
        zones: r.querySelector('.zones').textContent,
        lost: r.querySelector('.lost').textContent,
        state: r.dataset.state}))""")
    order = traces.order
    assert [r["path"] for r in rows] == [shown_path(p, traces.root) for p in order]
    for row, path in zip(rows, order):
        if path == traces.broken:
            assert row["state"] == "error" and row["zones"] == "", row
            continue
        info = traces.info(path)
        assert row["zones"] == "{:,}".format(info["zones"]), row
        assert row["lost"] == "{:,}".format(info["lost_events"]), row
        assert row["processes"] == str(len(info["processes"])), row
        assert row["threads"] == str(info["threads"]), row
        assert row["duration"] == info["duration_ns"], row
        assert row["state"] == info["state"], row
        assert row["program"] == ", ".join(p["program"] for p in info["processes"]), row
    shot(page, "serve-sessions.png")


def test_unreadable_trace_is_an_error_in_the_page(page, server, traces):
    sid = session_id(page, server, traces.broken, traces)
    reason = page.eval("document.querySelector('#sessions tbody tr[data-state=error] .path')"
                       ".textContent")
    # the row says why, in one line after the file's name
    assert reason.startswith("runs/broken.tracy — ") and len(reason) > 22, reason
    page.open("about:blank")
    page.open(server + "#/t/" + sid, ready="!document.getElementById('error').hidden")
    assert page.eval("document.getElementById('error').textContent").startswith(
        "Cannot open this session: ")
    # the header names it by its file, as the list does, not by its id
    page.wait("document.getElementById('crumbs').textContent.includes('broken.tracy')")
    assert sid not in page.eval("document.getElementById('crumbs').textContent")
    # the browser reports the 422 answer itself; nothing else went wrong
    log = page.log()
    assert all("status of 422" in e for e in log["errors"]), log
    assert log["outside"] == []


# ---- the timeline -------------------------------------------------------------

def thread_keys(db):
    """thread_track id -> (process index, thread index)"""
    return {tt: (upid, ti) for tt, upid, ti in db.execute(
        "SELECT tt.id, t.upid, t.thread_index FROM thread_track tt JOIN thread t USING (utid)")}


def track_keys(meta):
    return {t["track"]: (t["process"], t["thread"]) for t in meta["tracks"]}


def origin(meta):
    return int(meta["origin_ns"])


def test_whole_run_counts_every_zone_once(page, server, traces):
    sid = session_id(page, server, traces.gen, traces)
    meta = open_session(page, server, sid)
    drawn = page.eval("__tracy.drawn")
    merged = [d for d in drawn if d["count"] > 1]
    assert merged, "6000 zones on 1400 px: some runs are merged"
    db = traces.sql(traces.gen)
    tk = track_keys(meta)
    th = thread_keys(db)
    want = {}
    for tt, depth, n in db.execute("SELECT track_id, depth, count(*) FROM slice GROUP BY 1, 2"):
        want[(th[tt], depth)] = n
    got = {}
    for d in drawn:
        key = (tk[d["track"]], d["depth"])
        got[key] = got.get(key, 0) + d["count"]
    assert got == want
    # the tracks are the threads tracy-info lists, under their names
    info = traces.info(traces.gen)
    assert [(t["process"], t["thread"], t["tid"], t["name"]) for t in meta["tracks"]] == [
        (p["index"], t["index"], t["tid"], t["name"]) for p in info["processes"]
        for t in p["threads"]]
    # every message, signpost, frame mark and lost record is on screen
    extras = page.eval("__tracy.extras")
    assert extras["markers"] == info["messages"]
    assert extras["lost"] == info["lost_events"]
    assert extras["frames"] == db.execute("SELECT count(*) FROM frame_mark").fetchone()[0]
    assert extras["plots"] == db.execute("SELECT count(*) FROM counter_track").fetchone()[0]
    # a thread folds with a click on its name, and unfolds
    box = page.eval("(() => { const r = document.getElementById('tl-scroll')"
                    ".getBoundingClientRect(); return [r.left, r.top]; })()")
    head = [box[0] + 60, box[1] + page.eval("__tracy.headY(1)")]
    page.mouse({"down": head}, {"up": head})
    settle(page)
    assert {d["track"] for d in page.eval("__tracy.drawn")} == set(tk) - {1}
    page.mouse({"down": head}, {"up": head})
    settle(page)
    assert {d["track"] for d in page.eval("__tracy.drawn")} == set(tk)
    # a merged run says how many zones it holds
    big = max(merged, key=lambda d: d["w"])
    pt = page.eval("(() => { const d = __tracy.drawn.find(z => z.id === %d && z.count === %d);"
                   "const r = document.getElementById('tl-scroll').getBoundingClientRect();"
                   "return [r.left + d.x + d.w / 2, r.top + __tracy.rowY(d.track, d.depth)]; })()"
                   % (big["id"], big["count"]))
    page.mouse({"move": pt})
    assert page.wait("document.getElementById('tip').textContent")\
        .startswith("%d zones merged" % big["count"])
    shot(page, "serve-timeline.png")
    # a click on it zooms until its zones are apart: the same zones, more items
    page.mouse({"down": pt}, {"up": pt})
    settle(page)
    v = page.eval("__tracy.view")
    assert v["t0"] <= big["start"] and big["start"] + big["dur"] <= v["t1"]
    assert v["t1"] - v["t0"] < 1.2 * big["dur"] + 20
    inside = [d for d in page.eval("__tracy.drawn") if d["track"] == big["track"] and
              d["depth"] == big["depth"] and big["start"] <= d["start"] and
              d["start"] + d["dur"] <= big["start"] + big["dur"]]
    assert sum(d["count"] for d in inside) == big["count"] and len(inside) > 1


def test_truncated_trace_shows_what_tracy_sql_reads(page, server, traces):
    sid = session_id(page, server, traces.short, traces)
    meta = open_session(page, server, sid)
    assert meta["state"] == "truncated"
    db = traces.sql(traces.short)
    tk = track_keys(meta)
    th = thread_keys(db)
    got = {}
    for d in page.eval("__tracy.drawn"):
        key = (tk[d["track"]], d["depth"])
        got[key] = got.get(key, 0) + d["count"]
    assert got == {(th[tt], depth): n for tt, depth, n in db.execute(
        "SELECT track_id, depth, count(*) FROM slice GROUP BY 1, 2")}


def test_deep_zoom_draws_the_zones_tracy_sql_finds(page, server, traces):
    sid = session_id(page, server, traces.gen, traces)
    meta = open_session(page, server, sid)
    db = traces.sql(traces.gen)
    o = origin(meta)
    # a 3 us window in the middle, its edges on no zone boundary (half ns)
    mid = meta["duration_ns"] // 2
    t0, t1 = mid + 0.5, mid + 3000.5
    page.eval("__tracy.setView(%r, %r)" % (t0, t1))
    settle(page)
    drawn = page.eval("__tracy.drawn")
    assert drawn and all(d["count"] == 1 for d in drawn)
    tk = track_keys(meta)
    th = thread_keys(db)
    got = sorted((tk[d["track"]], d["depth"], d["start"], d["dur"], d["name"]) for d in drawn)
    want = sorted((th[tt], depth, ts - o, dur, name) for tt, depth, ts, dur, name in db.execute(
        "SELECT track_id, depth, ts, dur, name FROM slice WHERE ts <= ? AND ts + dur >= ?",
        (o + t1, o + t0)))
    assert got == want
    shot(page, "serve-zoom.png")


def test_clicked_zone_shows_its_tracy_sql_row(page, server, traces):
    sid = session_id(page, server, traces.gen, traces)
    meta = open_session(page, server, sid)
    mid = meta["duration_ns"] // 3
    page.eval("__tracy.setView(%d, %d)" % (mid, mid + 4000))
    settle(page)
    drawn = page.eval("__tracy.drawn")
    target = max((d for d in drawn if d["depth"] >= 2), key=lambda d: d["w"])
    page.mouse({"move": page.eval("__tracy.pointOf(%d)" % target["id"])},
               {"down": page.eval("__tracy.pointOf(%d)" % target["id"])},
               {"up": page.eval("__tracy.pointOf(%d)" % target["id"])})
    page.wait("document.getElementById('details-body').dataset.id === '%d'" % target["id"])
    shown = page.eval("Object.fromEntries(Array.from(document.querySelectorAll("
                      "'#details-body dd')).map(d => [d.dataset.field, "
                      "[d.textContent, d.dataset.value]]))")
    db = traces.sql(traces.gen)
    o = origin(meta)
    tt = {v: k for k, v in thread_keys(db).items()}[track_keys(meta)[target["track"]]]
    row = db.execute("SELECT id, name, src_file, src_line, ts, dur, self_dur, depth, parent_id "
                     "FROM slice WHERE track_id = ? AND ts = ? AND depth = ?",
                     (tt, o + target["start"], target["depth"])).fetchone()
    sid_, name, file, line, ts, dur, self_dur, depth, parent = row
    assert shown["name"][0] == name
    assert shown["file"][0] == "%s:%d" % (file, line)
    assert int(shown["start"][1]) == ts - o
    assert int(shown["duration"][1]) == dur
    assert int(shown["self"][1]) == self_dur
    assert int(shown["depth"][1]) == depth
    chain = []
    while parent:
        n, parent = db.execute("SELECT name, parent_id FROM slice WHERE id = ?", (parent,)).fetchone()
        chain.append(n)
    callers = page.eval("Array.from(document.querySelectorAll('#details-body ol.callers a'))"
                        ".map(a => a.textContent)")
    assert callers == chain
    # the selected zone is outlined on the canvas, its row in the details panel
    shot(page, "serve-details.png")


def test_find_counts_and_jumps_match_tracy_sql(page, server, traces):
    sid = session_id(page, server, traces.gen, traces)
    meta = open_session(page, server, sid)
    page.type("#find", "FUNC_1")
    count = page.wait("document.getElementById('find-count').dataset.count")
    db = traces.sql(traces.gen)
    o = origin(meta)
    starts = [ts - o for (ts,) in db.execute(
        "SELECT ts FROM slice WHERE lower(name) LIKE '%func_1%' ORDER BY ts")]
    assert int(count) == len(starts)
    page.click("#find-next")
    page.wait("__tracy.selected && __tracy.selected.start === %d" % starts[0])
    # "k of N": k counts the occurrences that start before this one
    n = "{:,}".format(len(starts))
    assert page.wait("document.getElementById('find-count').textContent")\
        .startswith("1 of %s; at " % n)
    nxt = min(s for s in starts if s > starts[0])
    page.click("#find-next")
    page.wait("__tracy.selected && __tracy.selected.start === %d" % nxt)
    k = 1 + sum(1 for s in starts if s < nxt)
    assert page.wait("document.getElementById('find-count').dataset.index") == str(k)
    assert page.eval("document.getElementById('find-count').textContent")\
        .startswith("{:,} of {}; at ".format(k, n))
    page.click("#find-prev")
    page.wait("__tracy.selected && __tracy.selected.start === %d" % starts[0])
    assert page.wait("document.getElementById('find-count').dataset.index === '1'")
    settle(page)
    # the occurrences in view are the ones highlighted
    drawn = page.eval("__tracy.drawn")
    hl = set(page.eval("__tracy.find.funcs"))
    assert {d["name"] for d in drawn if d["func"] in hl} <= {
        n for (n,) in db.execute("SELECT name FROM func WHERE lower(name) LIKE '%func_1%'")}
    shot(page, "serve-find.png")


def test_range_table_matches_tracy_cut_and_csv_stats(page, server, traces, tmp_path):
    sid = session_id(page, server, traces.gen, traces)
    meta = open_session(page, server, sid)
    w = page.eval("__tracy.view.width")
    box = page.eval("(() => { const r = document.getElementById('tl-scroll')"
                    ".getBoundingClientRect(); return [r.left, r.top]; })()")
    y = box[1] + 200
    page.mouse({"keydown": "Shift"}, {"down": [box[0] + 0.3 * w, y]},
               {"up": [box[0] + 0.55 * w, y]}, {"keyup": "Shift"})
    rng = page.wait("__tracy.range")
    rows = page.eval("Array.from(document.querySelectorAll('#range-body tbody tr')).map(r => ["
                     "r.querySelector('.name').textContent, +r.querySelector('.calls').dataset.value,"
                     "+r.querySelector('.total').dataset.value])")
    o = origin(meta)
    cut = str(tmp_path / "cut.tracy")
    tool("tracy-cut", "--absolute", "--from", str(o + rng["t0"]), "--to", str(o + rng["t1"]),
         "-o", cut, traces.gen)
    want = {}
    for r in csv.DictReader(io.StringIO(tool("tracy-csv", "--stats", cut))):
        want[r["name"]] = (int(r["counts"]), int(r["total_ns"]))
    shot(page, "serve-range.png")
    # the flame graph: the root spans the width; a click on a frame makes it
    # the root, Reset undoes it
    flame = page.eval("__tracy.flame")
    assert flame[0]["name"] == "all" and len(flame) > len(want)
    top = max((f for f in flame if f["y"] > 0), key=lambda f: f["w"])
    fbox = page.eval("(() => { const r = document.getElementById('flame')"
                     ".getBoundingClientRect(); return [r.left, r.top]; })()")
    at = [fbox[0] + top["x"] + top["w"] / 2, fbox[1] + top["y"] + 5]
    page.mouse({"down": at}, {"up": at})
    assert page.wait("__tracy.flameRoot") == top["name"]
    assert page.eval("__tracy.flame[0].w") == pytest.approx(flame[0]["w"])
    page.click("#flame-reset")
    assert page.wait("__tracy.flameRoot === null")
    assert {n: (c, t) for n, c, t in rows} == want


def test_wheel_drag_and_keys(page, server, traces):
    sid = session_id(page, server, traces.gen, traces)
    open_session(page, server, sid)
    v = page.eval("__tracy.view")
    box = page.eval("(() => { const r = document.getElementById('tl-scroll')"
                    ".getBoundingClientRect(); return [r.left, r.top]; })()")
    x = 0.25 * v["width"]
    t_at = v["t0"] + (v["t1"] - v["t0"]) * 0.25
    page.mouse({"wheel": [box[0] + x, box[1] + 150, -400]})
    z = page.eval("__tracy.view")
    assert z["t1"] - z["t0"] < 0.7 * (v["t1"] - v["t0"])
    # the time under the cursor stays under it (within a pixel)
    assert abs(z["t0"] + (z["t1"] - z["t0"]) * 0.25 - t_at) <= (z["t1"] - z["t0"]) / z["width"]
    # drag right by 200 px: the view moves left by 200 px worth of time
    page.mouse({"down": [box[0] + 600, box[1] + 150]}, {"up": [box[0] + 800, box[1] + 150]})
    d = page.eval("__tracy.view")
    px = (z["t1"] - z["t0"]) / z["width"]
    assert abs((z["t0"] - d["t0"]) - 200 * px) <= 2 * px
    page.mouse({"move": [box[0] + 700, box[1] + 150]}, {"key": "d"})
    assert page.eval("__tracy.view.t0") > d["t0"]
    page.mouse({"key": "a"}, {"key": "a"})
    assert page.eval("__tracy.view.t0") < d["t0"]
    page.mouse({"key": "s"})
    assert page.eval("__tracy.view.t1 - __tracy.view.t0") > d["t1"] - d["t0"]
    # down to single nanoseconds: W until the view is 10 ns wide
    page.mouse(*[{"key": "w"} for _ in range(120)])
    assert page.eval("__tracy.view.t1 - __tracy.view.t0") == pytest.approx(10)
    settle(page)
    drawn = page.eval("__tracy.drawn")
    assert drawn and all(d["count"] == 1 for d in drawn)
    shot(page, "serve-ns.png")


def test_compare_and_trend(page, server, traces):
    page.open(server, ready="window.__tracy && __tracy.sessionsLoaded > 0")
    for p in (traces.base, traces.slow):
        rel = shown_path(p, traces.root)
        page.eval("Array.from(document.querySelectorAll('#sessions tbody tr')).find(r => "
                  "r.querySelector('.path').childNodes[0].textContent === %s)"
                  ".querySelector('input').click()" % json.dumps(rel))
    page.click("#compare")
    page.wait("document.querySelectorAll('#compare-body tbody tr').length > 0")
    rows = page.eval("Array.from(document.querySelectorAll('#compare-body tbody tr')).map(r => "
                     "[r.querySelector('.name').textContent, r.querySelector('.status').textContent,"
                     "+r.querySelector('.a_total').dataset.value,"
                     "+r.querySelector('.b_total').dataset.value])")
    # the rows of tracy-diff, in its order: tracegen --slow 3:60 makes func_3
    # (and func_2, which calls it) regressions
    want = [[r["name"], r["status"], r["base"]["total_ns"], r["new"]["total_ns"]]
            for r in json.loads(tool("tracy-diff", "-f", "json", traces.base, traces.slow,
                                     ok=(0, 1)))["rows"]]
    assert rows == want
    assert rows[0][:2] == ["func_3", "regression"]
    shot(page, "serve-compare.png")
    # a row opens B's timeline on that function
    page.eval("document.querySelector('#compare-body tbody tr').click()")
    page.wait("__tracy.meta && __tracy.find && __tracy.find.count > 0")
    assert page.eval("document.getElementById('find').value") == "func_3"
    page.open(server + "#/trend/app1", ready="document.querySelectorAll("
              "'#compare-body tbody tr').length > 0")
    assert page.eval("document.querySelectorAll('#compare-body canvas.spark').length") > 0
    shot(page, "serve-trend.png")
    # the runs of app1, oldest first, and each function's total in each run
    # as tracy-csv --stats says it
    runs = page.eval("Array.from(document.querySelectorAll('#compare-body ol.runs a'))"
                     ".map(a => a.textContent)")
    app1 = [p for p in reversed(traces.order) if p != traces.broken and "app1" in
            [q["program"] for q in traces.info(p)["processes"]]]
    assert runs == [shown_path(p, traces.root) for p in app1]
    table = page.eval("Array.from(document.querySelectorAll('#compare-body tbody tr')).map(r => "
                      "[r.querySelector('.name').textContent, r.querySelector('.loc').textContent,"
                      "Array.from(r.querySelectorAll('td')).slice(3).map(c => "
                      "c.dataset.value === undefined ? null : +c.dataset.value)])")
    assert 0 < len(table) <= 20
    stats = []
    for p in app1:
        rows = csv.DictReader(io.StringIO(tool("tracy-csv", "--stats", p, ok=(0, 3, 6))))
        stats.append({(r["name"], "%s:%s" % (r["src_file"], r["src_line"])): int(r["total_ns"])
                      for r in rows})
    for name, loc, totals in table:
        assert totals == [s.get((name, loc)) for s in stats], name
    # the hostile run's function and file names are in the trend, as text
    assert HOSTILE_ZONE in [name for name, _, _ in table]
    assert shown_path(traces.hostile, traces.root) in runs
    assert page.eval("document.querySelectorAll('img, b').length") == 0
    assert page.eval("window.__pwned === undefined")


def test_hostile_names_are_text(page, server, traces):
    for path in (traces.hostile, traces.py):
        sid = session_id(page, server, path, traces)
        meta = open_session(page, server, sid)
        names = [t["name"] for t in meta["tracks"]]
        if path == traces.py:
            # its zone is a thread's few microseconds in the run: below a
            # pixel of the whole run (drawn merged) when the machine is busy
            z0 = find_zone(server, sid, HOSTILE_ZONE)
            page.eval("__tracy.setView(%d, %d)" % (z0["start"], z0["start"] + max(z0["dur"], 1)))
            settle(page)
        drawn = page.eval("__tracy.drawn")
        shown = {d["name"] for d in drawn}
        if path == traces.hostile:
            assert HOSTILE_ZONE in shown
        else:
            assert HOSTILE_THREAD in names
            assert HOSTILE_ZONE in shown
        # click the hostile zone: its name and text are text in the panel
        z = next(d for d in drawn if d["name"] == HOSTILE_ZONE)
        pt = page.eval("__tracy.pointOf(%d)" % z["id"])
        if pt is None:
            page.eval("__tracy.setView(%d, %d)" % (z["start"], z["start"] + z["dur"]))
            settle(page)
            pt = page.eval("__tracy.pointOf(%d)" % z["id"])
        page.mouse({"down": pt}, {"up": pt})
        page.wait("document.getElementById('details-body').dataset.id === '%d'" % z["id"])
        assert page.eval("document.querySelector('#details-body dd[data-field=name]')"
                         ".textContent") == HOSTILE_ZONE
        if path == traces.py:
            assert page.eval("document.querySelector('#details-body dd[data-field=file]')"
                             ".textContent").endswith(HOSTILE_FILE + ":%d" % ZONE_LINE)
            assert page.eval("document.querySelector('#details-body dd[data-field=text]')"
                             ".textContent") == '"quoted" <b>bold</b> \'single\''
        page.mouse({"move": pt})
        assert HOSTILE_ZONE in page.wait("document.getElementById('tip').textContent")
        # nothing of it became markup
        assert page.eval("document.querySelectorAll('img, b, script:not([src])').length") == 0
        assert page.eval("window.__pwned === undefined")
    shot(page, "serve-hostile.png")
    page.open(server, ready="window.__tracy && __tracy.sessionsLoaded > 0")
    assert page.eval("document.querySelectorAll('img, b').length") == 0
    assert page.eval("window.__pwned === undefined")


# ---- live ---------------------------------------------------------------------

LIVE_PROGRAM = """
import os, sys, time, tracy
stop = sys.argv[1]
def leaf(i):
    return sum(range(200 + i % 50))
def step(i):
    return leaf(i) + leaf(i + 1)
def batch(i):
    for k in range(100):
        step(i + k)
i = 0
deadline = time.monotonic() + 90
while not os.path.exists(stop) and time.monotonic() < deadline:
    batch(i)
    i += 100
    tracy.flush()
    time.sleep(0.05)
"""


def test_live_capture_grows_on_screen(page, server, traces, tmp_path):
    prog = tmp_path / "live.py"
    prog.write_text(LIVE_PROGRAM)
    stop = tmp_path / "stop"
    out = os.path.join(traces.root, "live", "live.tracy")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    # the sessions page is open before the capture starts: its row appears
    # by itself (the list refreshes), marked as being written
    page.open(server, ready="window.__tracy && __tracy.sessionsLoaded > 0")
    assert "live/live.tracy" not in [s["path"] for s in page.eval("__tracy.sessions")]
    log = open(tmp_path / "live.log", "w")
    proc = subprocess.Popen([PYTHON, "-m", "tracy", "-o", out, str(prog), str(stop)],
                            env=py_env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        row = "#sessions tbody tr[data-state=writing]"
        page.wait("Array.from(document.querySelectorAll(%s)).some(r => "
                  "r.querySelector('.path').textContent === 'live/live.tracy')"
                  % json.dumps(row), timeout=60)
        assert page.eval("document.querySelector(%s).textContent" % json.dumps(
            row + " .state-cell")) == "being written"
        sid = next(s["id"] for s in page.eval("__tracy.sessions")
                   if s["path"] == "live/live.tracy")
        page.click(row + " .path")
        page.wait("__tracy.meta && __tracy.meta.id === %s" % json.dumps(sid))
        assert page.eval("__tracy.meta.state") == "writing"
        # (the badge is drawn once the session's functions are loaded, a
        # moment after its meta is known)
        page.wait("!document.getElementById('live').hidden")
        first = page.eval("[__tracy.meta.zones, __tracy.meta.duration_ns]")
        first_drawn = page.eval("__tracy.drawn.reduce((s, d) => s + d.count, 0)")
        before = page.eval("__tracy.asked")
        # the page polls: more zones and a longer run, drawn, without a reload
        page.wait("__tracy.meta.zones > %d && __tracy.meta.duration_ns > %d && "
                  "__tracy.drawn.reduce((s, d) => s + d.count, 0) > %d"
                  % (first[0], first[1], first_drawn), timeout=60)
        settle(page)
        shot(page, "serve-live.png")
        # following a run being written asks for a view about once per poll:
        # an answer indexed after the poll's figures is not asked for again
        # and again until the next poll
        time.sleep(3)
        after = page.eval("__tracy.asked")
        views, polls = (after[k] - before[k] for k in ("views", "polls"))
        print("live: %d views for %d polls" % (views, polls))
        assert polls >= 2 and views <= 2 * polls + 2, (views, polls)
        stop.write_text("")
        assert proc.wait(timeout=60) == 0, (tmp_path / "live.log").read_text()
        page.wait("__tracy.meta.state === 'complete'", timeout=60)
        info = traces.info(out)
        assert page.eval("__tracy.meta.zones") == info["zones"]
        assert page.wait("__tracy.settled() && __tracy.drawn.reduce((s, d) => s + d.count, 0)") \
            == info["zones"]
    finally:
        stop.write_text("")
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        log.close()
