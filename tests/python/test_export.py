"""tracy-export's formats, each checked by the program that reads it:
pstats.Stats under the interpreter under test (and its counts against
cProfile's own on the same program), valgrind's callgrind_annotate,
speedscope's JSON schema (python3-jsonschema) and viewer, and a real headless
Chromium for the HTML report; tracy-json's frame names. On examples/demo.py
and on a small recursive program."""
import csv
import io
import json
import os
import re
import subprocess
import time

import pytest

from conftest import BUILD, PYTHON, ROOT, env_for_tests, once
from programs import RECURSIVE, tool

BROWSER = once("an export in a browser")
SPEEDSCOPE = os.path.join(BUILD, "npm", "node_modules", "speedscope", "dist", "release")


def function_stats(trace):
    out = tool("tracy-sql", "--csv", trace, "SELECT name, src_file, src_line, calls, total, "
               "self FROM function_stats").stdout
    return {(r[0], r[1], int(r[2])): (int(r[3]), int(r[4]), int(r[5]))
            for r in list(csv.reader(io.StringIO(out)))[1:]}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """examples/demo.py traced once, and every export of it."""
    d = tmp_path_factory.mktemp("demo")
    trace = str(d / "demo.tracy")
    proc = subprocess.run([PYTHON, "-m", "tracy", "-o", trace,
                           os.path.join(ROOT, "examples", "demo.py")],
                          capture_output=True, text=True, env=env_for_tests(), cwd=str(d),
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = {"dir": d, "trace": trace, "stats": function_stats(trace)}
    for name in ("x.prof", "x.callgrind", "x.folded", "x.speedscope.json", "x.html"):
        tool("tracy-export", trace, "-o", str(d / name))
        out[name] = str(d / name)
    return out


# ---- pstats --------------------------------------------------------------

def pstats_of(path):
    """The stats dict as the interpreter under test loads it."""
    code = ("import pstats, sys; s = pstats.Stats(sys.argv[1]); "
            "print(repr({k: v[:4] + ({c: cv for c, cv in v[4].items()},) "
            "for k, v in s.stats.items()}))")
    proc = subprocess.run([PYTHON, "-c", code, path], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return eval(proc.stdout)  # a dict of tuples of str/int/float, from repr


def test_pstats_counts_equal_cprofile_on_recursion(run_tracy, tmp_path):
    r = run_tracy(RECURSIVE)
    assert r.rc == 0, r.err
    prof = str(tmp_path / "x.prof")
    tool("tracy-export", r.path, "-o", prof)
    ours = {k[2]: v for k, v in pstats_of(prof).items()}
    (tmp_path / "rec.py").write_text(RECURSIVE)
    subprocess.run([PYTHON, "-m", "cProfile", "-o", str(tmp_path / "c.prof"),
                    str(tmp_path / "rec.py")], check=True, timeout=60,
                   stdout=subprocess.DEVNULL)
    theirs = {k[2]: v for k, v in pstats_of(str(tmp_path / "c.prof")).items()}
    assert ours["fib"][:2] == (1, 21891)
    for name in ("fib", "main", "ping", "pong"):
        assert ours[name][:2] == theirs[name][:2], name
        callers = {c[2]: cv[:2] for c, cv in ours[name][4].items()}
        assert callers == {c[2]: cv[:2] for c, cv in theirs[name][4].items()}, name
    # times agree with function_stats (ns -> s)
    stats = {k[0]: v for k, v in function_stats(r.path).items()}
    for name in ("fib", "main", "ping", "pong"):
        assert ours[name][2] == pytest.approx(stats[name][2] / 1e9, abs=1e-12)
        assert ours[name][3] == pytest.approx(stats[name][1] / 1e9, abs=1e-12)
    assert ours["fib"][3] <= ours["main"][3]


def test_pstats_of_demo_prints_and_agrees_with_function_stats(demo):
    proc = subprocess.run([PYTHON, "-c", "import pstats; pstats.Stats('x.prof')"
                           ".sort_stats('cumulative').print_stats()"],
                          cwd=str(demo["dir"]), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"demo\.py:\d+\(main\)", proc.stdout)
    stats = pstats_of(demo["x.prof"])
    assert len(stats) == len(demo["stats"])
    for (name, file, line), (calls, total, self_) in demo["stats"].items():
        key = (file, line, name) if file else ("~", 0, name)
        cc, nc, tt, ct, callers = stats[key]
        assert nc == calls and cc <= nc
        assert tt == pytest.approx(self_ / 1e9, abs=1e-12)
        assert ct == pytest.approx(total / 1e9, abs=1e-12)
        # every call but the top-level ones comes from a caller
        assert sum(v[0] for v in callers.values()) <= nc


# ---- callgrind -----------------------------------------------------------

def annotate(path, *options):
    # Run from /: callgrind_annotate 3.19 strips the working directory from
    # fl= names but not from cfl= names, so that below the sources' folder
    # one function would show under two names (a relative and an absolute).
    proc = subprocess.run(["callgrind_annotate"] + list(options) + [os.path.abspath(path)],
                          capture_output=True, text=True, timeout=60, cwd="/")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def cg_number(s):
    return int(s.replace(",", ""))


def test_callgrind_annotate_reads_it_and_totals_agree(demo):
    out = annotate(demo["x.callgrind"])
    total = cg_number(re.search(r"^\s*([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", out, re.M).group(1))
    assert total == sum(v[2] for v in demo["stats"].values())
    # inclusive cost = cumulative time of the outermost calls
    out = annotate(demo["x.callgrind"], "--inclusive=yes", "--threshold=100")
    main = [(k, v) for k, v in demo["stats"].items() if k[0] == "main"][0]
    m = re.search(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+\S*demo\.py:main$", out, re.M)
    assert m, out[:2000]
    assert cg_number(m.group(1)) == main[1][1]
    # self cost per function
    out = annotate(demo["x.callgrind"], "--threshold=100")
    m = re.search(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+\S*demo\.py:parse$", out, re.M)
    parse = [v for k, v in demo["stats"].items()
             if k[0] == "parse" and k[1].endswith("demo.py")][0]
    assert cg_number(m.group(1)) == parse[2]


def test_callgrind_inclusive_costs_are_cumulative_times_under_recursion(run_tracy, tmp_path):
    r = run_tracy(RECURSIVE)
    assert r.rc == 0, r.err
    out = str(tmp_path / "rec.callgrind")
    tool("tracy-export", r.path, "-o", out)
    text = annotate(out, "--inclusive=yes", "--threshold=100")
    stats = {k[0]: v for k, v in function_stats(r.path).items() if k[1].endswith("prog.py")}
    for name in ("fib", "main", "ping", "pong", "<module>"):
        m = re.search(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+\S*prog\.py:" + re.escape(name) + "$",
                      text, re.M)
        assert m and cg_number(m.group(1)) == stats[name][1], name


# ---- folded stacks -------------------------------------------------------

def folded(path):
    rows = []
    for line in open(path, encoding="utf-8"):
        stack, weight = line.rstrip("\n").rsplit(" ", 1)
        rows.append((stack.split(";"), int(weight)))
    return rows


def test_folded_stacks_weigh_self_time_merged_and_per_thread(demo):
    selfs = sum(v[2] for v in demo["stats"].values())
    merged = folded(demo["x.folded"])
    assert sum(w for _, w in merged) == selfs
    assert len({tuple(s) for s, _ in merged}) == len(merged)
    assert any(s[-1].startswith("parse (") and s[-1].endswith("demo.py:31)")
               for s, _ in merged)
    per = str(demo["dir"] / "per.folded")
    tool("tracy-export", "--per-thread", "-f", "folded", "-o", per, demo["trace"])
    rows = folded(per)
    assert sum(w for _, w in rows) == selfs
    threads = {s[1] for s, _ in rows}
    assert {t.split()[0] for t in threads} == {"MainThread", "worker-0", "worker-1",
                                                "worker-2"}


# ---- speedscope ----------------------------------------------------------

@once("the speedscope export against its schema")
def test_speedscope_export_is_valid_against_its_schema(demo):
    import jsonschema
    with open(os.path.join(SPEEDSCOPE, "file-format-schema.json")) as f:
        schema = json.load(f)
    with open(demo["x.speedscope.json"]) as f:
        jsonschema.Draft7Validator(schema).validate(json.load(f))


def test_speedscope_export_has_every_call_nested_in_order(demo):
    with open(demo["x.speedscope.json"]) as f:
        doc = json.load(f)
    frames = doc["shared"]["frames"]
    main = [f for f in frames if f["name"] == "main"]
    assert main and main[0]["file"].endswith("demo.py") and main[0]["line"] == 52
    assert len(doc["profiles"]) == 4
    opened = 0
    for p in doc["profiles"]:
        stack = []
        for e in p["events"]:
            if e["type"] == "O":
                stack.append(e["frame"])
                opened += 1
            else:
                assert stack.pop() == e["frame"]
        assert stack == []
        ats = [e["at"] for e in p["events"]]
        assert ats == sorted(ats) and p["startValue"] == ats[0] and p["endValue"] == ats[-1]
    assert opened == sum(v[0] for v in demo["stats"].values())


# ---- Chrome JSON ---------------------------------------------------------

def test_chrome_json_names_are_clean_and_user_zones_have_their_line(run_tracy, tmp_path):
    r = run_tracy("""
    import tracy

    def work():
        return sum(range(1000))

    with tracy.zone("load"):
        work()
    """)
    assert r.rc == 0, r.err
    events = json.loads(tool("tracy-json", r.path).stdout)
    zones = [e for e in events if e["ph"] == "X"]
    assert zones and all("{" not in e["name"] and "src_" not in e["name"] for e in zones)
    load = [e for e in zones if e["name"] == "load"][0]
    assert load["args"]["url"].endswith("prog.py") and load["args"]["line"] == 7
    work = [e for e in zones if e["name"] == "work"][0]
    assert work["args"]["line"] == 4
    # speedscope takes file and line from these keys when the first event has them all
    assert set(events[0]["args"]) >= {"line", "column", "name", "category", "url", "params",
                                      "allocatedCategory", "allocatedName"}


# ---- In a browser --------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    from browser import Browser
    b = Browser()
    yield b
    b.close()


def settled(browser, expression):
    """The value of `expression` once two reads 0.5 s apart agree (drawing is
    animated)."""
    value = browser.eval(expression)
    for _ in range(60):
        time.sleep(0.5)
        value, last = browser.eval(expression), value
        if value == last:
            return value
    return value


LINES_PROGRAM = """\
def work(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


work(300)
work(20)
"""


@BROWSER
def test_html_line_view_and_rank_heat_map(tmp_path, browser):
    """The report's line view shows the -f lines figures with the source,
    hotter lines darker; the rank heat map a row per function and phase."""
    script = tmp_path / "lines.py"
    script.write_text(LINES_PROGRAM)
    trace = str(tmp_path / "lines.tracy")
    proc = subprocess.run([PYTHON, "-m", "tracy", "-l", "-o", trace, str(script)],
                          capture_output=True, text=True, env=env_for_tests(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    html = str(tmp_path / "lines.html")
    tool("tracy-export", "-o", html, trace)
    browser.errors.clear()
    browser.open("file://" + html, ready="document.body && document.body.dataset.ready === '1'")
    assert browser.errors == []
    assert browser.eval("document.getElementById('lines-section').hidden") is False
    assert browser.eval("document.getElementById('ranks-section').hidden") is True  # 1 process
    browser.eval("var f = document.getElementById('line-func');"
                 "f.value = Array.from(f.options).find(o => o.text.startsWith('work ')).value;"
                 "f.dispatchEvent(new Event('change'))")
    rows = browser.eval("Array.from(document.querySelectorAll('#lines tbody tr')).map(r => "
                        "[+r.cells[0].textContent, r.cells[1].textContent, "
                        "r.cells[5].textContent, r.style.background])")
    text = tool("tracy-export", "-f", "lines", "--function", "^work$", "-o", "-", trace).stdout
    want = [(int(l[:6]), l[7:16].strip()) for l in text.splitlines()
            if re.match(r"^ *\d+ ", l)]
    assert [(r[0], r[1]) for r in rows] == want
    assert [r[2] for r in rows] == LINES_PROGRAM.splitlines()[:len(rows)]
    assert [r[0] for r in rows if r[3]] == [n for n, hits in want if hits]
    # two processes: a row per function and phase, a column per rank
    gen = str(tmp_path / "gen.tracy")
    subprocess.run([os.path.join(BUILD, "tools", "tracegen"), "-o", gen, "-z", "3000", "-p",
                    "2", "-t", "2", "--signposts", "4"], check=True, timeout=60)
    html = str(tmp_path / "gen.html")
    tool("tracy-export", "-o", html, gen)
    browser.open("file://" + html, ready="document.body && document.body.dataset.ready === '1'")
    assert browser.errors == []
    head = browser.eval("Array.from(document.querySelectorAll('#ranks th'))"
                        ".map(h => h.textContent)")
    assert head == ["kind", "name", "rank 0", "rank 1", "imbalance"]
    cells = browser.eval("Array.from(document.querySelectorAll('#ranks tbody tr')).map(r => "
                         "[r.cells[1].textContent, +r.cells[2].textContent, "
                         "+r.cells[3].textContent, r.querySelectorAll('.slowest').length])")
    table = list(csv.DictReader(io.StringIO(tool("tracy-export", "-f", "ranks", "--csv", "-o",
                                                 "-", gen).stdout)))
    assert len(cells) == len(table)
    for c, t in zip(cells, table):
        assert c[0] == t["name"] and c[3] == 1
        assert abs(c[1] - int(t["rank 0 ns"]) / 1e6) < 1e-3
        assert abs(c[2] - int(t["rank 1 ns"]) / 1e6) < 1e-3


@BROWSER
def test_html_report_in_chromium(demo, browser):
    browser.errors.clear()
    browser.requests.clear()
    browser.open("file://" + demo["x.html"],
                 ready="document.body && document.body.dataset.ready === '1'")
    assert browser.errors == []
    assert [u for u in browser.requests if not u.startswith(("file:", "data:"))] == []
    by_self = sorted(demo["stats"].items(), key=lambda kv: (-kv[1][2], kv[0][0]))
    shown = browser.eval("Array.from(document.querySelectorAll('#functions tbody tr'))"
                         ".map(r => [r.cells[0].textContent, r.cells[3].textContent])")
    assert len(shown) == len(demo["stats"])
    assert [s[0] for s in shown[:5]] == [k[0] for k, _ in by_self[:5]]
    assert shown[0][1] == "{:,}".format(by_self[0][1][0])
    labels = browser.wait_for("Array.from(document.querySelectorAll("
                              "'#flame .d3-flame-graph-label')).map(e => e.textContent)"
                              ".filter(t => t === 'main').length && Array.from("
                              "document.querySelectorAll('#flame .d3-flame-graph-label'))"
                              ".map(e => e.textContent)")
    assert "main" in labels and "worker" in labels and "all threads" in labels
    # a click on main zooms it to the whole width; Reset zoom undoes it
    frame = ("Array.from(document.querySelectorAll('#flame g')).find(g => {"
             "var l = g.querySelector('.d3-flame-graph-label');"
             "return l && l.textContent === 'main'})")
    width = "+%s.querySelector('rect').getAttribute('width')" % frame
    full = browser.eval("+document.querySelector('#flame svg').getAttribute('width')")
    before = settled(browser, width)
    assert 0 < before < full
    browser.eval(frame + ".dispatchEvent(new MouseEvent('click', {bubbles: true}))")
    assert browser.wait_for("Math.abs(%s - %d) < 1" % (width, full))
    browser.eval("document.getElementById('reset').click()")
    assert browser.wait_for("Math.abs(%s - %f) < 1" % (width, before))
    summary = browser.eval("document.getElementById('summary').innerText")
    assert "zones" in summary and "{:,}".format(sum(v[0] for v in demo["stats"].values())) \
        in summary
    assert browser.eval("document.querySelectorAll('#timeline canvas').length") == 4
    assert browser.eval("document.querySelectorAll('#signposts span').length") == 3
    # sorting by calls, searching, and one thread only
    browser.eval("document.querySelector('#functions th[data-key=calls]').click()")
    first = browser.eval("document.querySelector('#functions tbody tr').cells[0].textContent")
    most_calls = max(demo["stats"].items(), key=lambda kv: kv[1][0])[0][0]
    assert first == most_calls
    browser.eval("var s = document.getElementById('search'); s.value = 'parse';"
                 "s.dispatchEvent(new Event('input'))")
    matches = browser.eval("Array.from(document.querySelectorAll('#functions tr.match'))"
                           ".map(r => r.cells[0].textContent)")
    assert "parse" in matches
    assert sorted(matches) == sorted(k[0] for k in demo["stats"] if "parse" in k[0].lower())
    assert browser.eval("document.querySelectorAll('#flame rect').length") > 0
    browser.eval("var f = document.getElementById('filter');"
                 "f.value = Array.from(f.options).find(o => o.text.includes('worker-1')).value;"
                 "f.dispatchEvent(new Event('change'))")
    names = browser.eval("Array.from(document.querySelectorAll('#functions tbody tr'))"
                         ".map(r => r.cells[0].textContent)")
    assert "worker" in names and "main" not in names
    assert browser.errors == []


@BROWSER
def test_speedscope_opens_the_export_in_chromium(demo, browser, tmp_path):
    speedscope_load(browser, tmp_path, demo["x.speedscope.json"], "demo.speedscope.json")
    assert re.search(r"demo\.py - speedscope$", browser.eval("document.title"))
    # its toolbar names the first profile: the main thread, 1 of 4
    text = browser.eval("document.body.innerText")
    assert re.search(r"demo\.py \d+: MainThread \d+ \(1/4\)", text), text[:500]
    assert browser.errors == []


def test_html_report_size_does_not_grow_with_zones(tmp_path):
    tracegen = os.path.join(BUILD, "tools", "tracegen")
    sizes = {}
    for zones in (20_000, 400_000):
        trace = str(tmp_path / ("%d.tracy" % zones))
        subprocess.run([tracegen, "-o", trace, "-z", str(zones), "-t", "4", "-d", "8",
                        "-l", "40", "--signposts", "50"], check=True, timeout=120)
        tool("tracy-export", trace, "-o", trace + ".html")
        sizes[zones] = os.path.getsize(trace + ".html")
    # 20x the zones: only the numbers get longer (every zone would add megabytes)
    assert sizes[400_000] < 1.10 * sizes[20_000], sizes


def test_python_m_tracy_r_writes_the_html_report(run_tracy, tmp_path):
    r = run_tracy(RECURSIVE, "-r")
    assert r.rc == 0, r.err
    html = r.path[:-len(".tracy")] + ".html"
    assert "HTML report written to %s" % html in r.err
    with open(html, encoding="utf-8") as f:
        page = f.read()
    assert '<script id="trace-data" type="application/json">' in page
    assert '"fib"' in page
    # no address but the links to a local tracy-serve (followed only when clicked)
    body = page.split("<body>")[1]
    assert "http://127.0.0.1:8791/" in body
    assert [u for u in re.findall(r"(?:https?:)?//[\w.-]+[:/][^\s\"'<>]*", body)
            if not u.startswith("http://127.0.0.1:8791/")] == []


def speedscope_load(browser, tmp_path, data_path, name):
    """Opens a profile file in speedscope's own page, as its command line does."""
    import base64
    with open(data_path, "rb") as f:
        b64 = base64.b64encode(f.read()).decode()
    loader = tmp_path / (name + ".js")
    loader.write_text("speedscope.loadFileFromBase64(%s, %s)" % (json.dumps(name),
                                                                  json.dumps(b64)))
    browser.open("about:blank", ready="document.title === ''")  # a new document, not a new hash
    browser.errors.clear()
    browser.open("file://%s/index.html#localProfilePath=%s" % (SPEEDSCOPE, loader),
                 ready="/ - speedscope$/.test(document.title)")


@BROWSER
def test_chrome_json_in_speedscope_shows_clean_names(run_tracy, browser, tmp_path):
    r = run_tracy(RECURSIVE)
    assert r.rc == 0, r.err
    out = str(tmp_path / "rec.json")
    tool("tracy-json", r.path, "-o", out)
    speedscope_load(browser, tmp_path, out, "rec.json")
    # the Sandwich view lists every frame's name as text
    browser.eval("Array.from(document.querySelectorAll('div')).find(d => "
                 "d.textContent.trim().endsWith('Sandwich') && d.children.length < 3).click()")
    # the table's rows are drawn after its header
    text = browser.wait_for("document.body.innerText.includes('Symbol Name') && "
                            "['fib', 'main', 'ping', 'pong'].every(n => document.body.innerText"
                            ".split('\\n').some(l => l.trim() === n)) && document.body.innerText")
    text = text or browser.eval("document.body.innerText")
    names = [ln.strip() for ln in text.splitlines()]
    for name in ("fib", "main", "ping", "pong"):
        assert name in names, text[:1000]
    assert not [n for n in names if "{" in n or "src_file" in n or "url" in n]
    assert browser.errors == []


@BROWSER
def test_html_report_of_an_empty_and_a_two_process_trace(browser, tmp_path):
    tracegen = os.path.join(BUILD, "tools", "tracegen")
    for fixed in ("empty", "small"):
        trace = str(tmp_path / (fixed + ".tracy"))
        subprocess.run([tracegen, "--fixed", fixed, "-o", trace], check=True, timeout=60)
        tool("tracy-export", trace, "-o", trace + ".html")
        browser.errors.clear()
        browser.open("file://" + trace + ".html",
                     ready="document.body && document.body.dataset.ready === '1'")
        rows = browser.eval("document.querySelectorAll('#functions tbody tr').length")
        assert browser.errors == [], fixed
        if fixed == "empty":
            assert rows == 0
            continue
        assert rows == 5
        # each process's end as tracy-info gives it, its reason included
        shown = browser.eval("Array.from(document.querySelectorAll('tr')).map(r => "
                             "r.textContent).find(t => t.startsWith('processes'))")
        assert "1001 rank 0 on node0: clean" in shown, shown
        assert "2001 rank 1 on node1: lost (connection reset)" in shown, shown
        # one process of the two: its functions only (numpy.dot is process 1's)
        browser.eval("var f = document.getElementById('filter'); f.value = Array.from("
                     "f.options).find(o => o.text.includes('2001')).value;"
                     "f.dispatchEvent(new Event('change'))")
        names = browser.eval("Array.from(document.querySelectorAll('#functions tbody tr'))"
                             ".map(r => r.cells[0].textContent)")
        assert sorted(names) == ["main", "step"]
        assert browser.errors == []
