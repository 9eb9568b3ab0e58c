"""tracy-serve's page, continued: the Capture dialog against a real program
run with `python -m tracy --listen`, the line heat of a function recorded
with `python -m tracy -l` in the zone details (against `tracy-export -f
lines`, source included), and the `#t=PATH&find=NAME` links `tracy-export -f html` writes.
A real tracy-serve (-p 0) and Debian's headless Chromium, as in
test_serve_page.py; every test checks that the page logged no error
(but the error statuses a test provokes) and asked nothing of another
origin."""
import json
import os
import re
import socket
import subprocess
import urllib.error
import urllib.parse
import urllib.request

import pytest

from chrome import Page
from test_serve_page import PYTHON, py_env, serving, shot, tool

STEADY = """
import sys, time
def leaf(i):
    return sum(range(100 + i % 50))
def step(i):
    return leaf(i) + leaf(i + 1)
print("ready", flush=True)
deadline = time.monotonic() + 120
i = 0
while time.monotonic() < deadline:
    step(i)
    i += 1
    time.sleep(0.0005)
"""

LINES = """
def work(n):
    s = 0
    for i in range(n):
        if i % 3:
            s += i
        else:
            s -= 1
    return s

def outer(n):
    return sum(work(k) for k in range(n))

outer(40)
work(700)
import tracy
with tracy.zone("phase"):
    work(10)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The served folder: a trace recorded with -l (captures land here too)."""
    root = os.path.realpath(str(tmp_path_factory.mktemp("served2")))
    src = os.path.join(root, "src")
    os.makedirs(src)
    with open(os.path.join(src, "lp.py"), "w") as f:
        f.write(LINES)
    r = subprocess.run([PYTHON, "-m", "tracy", "-l", "-o", os.path.join(root, "lp.tracy"),
                        os.path.join(src, "lp.py")], env=py_env(), capture_output=True,
                       timeout=120, cwd=root)
    assert r.returncode == 0, r.stderr
    return root


@pytest.fixture(scope="module")
def server(folder, tmp_path_factory):
    yield from serving(folder, str(tmp_path_factory.mktemp("cache2")))


@pytest.fixture(scope="module")
def page():
    p = Page()
    yield p
    p.close()


def clean(log, allowed=()):
    """No error but a status a test asked for; no request outside."""
    assert [e for e in log["errors"] if not any(a in e for a in allowed)] == [], log
    assert log["outside"] == []


@pytest.fixture(autouse=True)
def clean_log(page):
    page.log()
    yield
    clean(page.log())


def sessions(page, server):
    page.open("about:blank")
    page.open(server, ready="window.__tracy && __tracy.sessionsLoaded > 0")
    return page.eval("__tracy.sessions")


# ---- Capture ------------------------------------------------------------------

def test_capture_dialog_records_a_running_program(page, server, folder, tmp_path):
    port = free_port()
    (tmp_path / "steady.py").write_text(STEADY)
    env = py_env()
    env.pop("TRACY_PORT", None)
    prog = subprocess.Popen([PYTHON, "-m", "tracy", "--listen", "127.0.0.1:%d" % port,
                             str(tmp_path / "steady.py")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert prog.stdout.readline() == "ready\n", prog.stderr.read()
        before = {s["id"] for s in sessions(page, server)}
        page.click("#capture-open")
        page.type("#cap-addr", "127.0.0.1:%d" % port)
        page.type("#cap-dur", "1")
        page.click("#cap-go")
        # the new session is listed at once, marked, while the program records
        sid = page.wait("__tracy.captured[0]", timeout=30)
        assert sid not in before
        page.wait("document.querySelector('#sessions tbody tr.captured[data-id=\"%s\"]')" % sid)
        shot(page, "serve-capture.png")
        # written, then opened by itself (the dialog's "open it when it is written")
        page.wait("__tracy.meta && __tracy.meta.id === %s && __tracy.settled()" % json.dumps(sid),
                  timeout=60)
        assert page.eval("document.getElementById('capture-dlg').open") is False
        meta = page.eval("__tracy.meta")
        assert meta["state"] == "complete"
        row = next(s for s in page.eval("__tracy.sessions") if s["id"] == sid)
        path = os.path.join(folder, row["path"])
        info = json.loads(tool("tracy-info", "--json", path))
        assert info["zones"] > 0
        assert meta["zones"] == info["zones"] == row["zones"]
        assert page.eval("__tracy.drawn.reduce((s, d) => s + d.count, 0)") == info["zones"]
        assert [p["program"] for p in info["processes"]] == ["steady.py"]
    finally:
        prog.kill()
        prog.wait()


def test_capture_errors_are_text_in_the_dialog(page, server):
    sessions(page, server)
    page.click("#capture-open")
    # malformed: said by the page, nothing asked of the server
    page.type("#cap-addr", "no port here")
    page.click("#cap-go")
    assert "HOST:PORT" in page.wait("document.querySelector('#cap-status.error')"
                                    " && document.getElementById('cap-status').textContent")
    # nothing listens there: the server's one-line reason, as text
    page.type("#cap-addr", "127.0.0.1:%d" % free_port())
    page.type("#cap-dur", "0.5")
    page.eval("document.getElementById('cap-status').textContent = ''")
    page.click("#cap-go")
    text = page.wait("document.querySelector('#cap-status.error') && "
                     "document.getElementById('cap-status').textContent", timeout=30)
    assert text.startswith("Capture failed: ") and len(text) > len("Capture failed: ") + 5, text
    assert page.eval("__tracy.captured.length") == 0
    clean(page.log(), allowed=("status of 502",))


# ---- Line heat and the report's links --------------------------------------------

def export_lines(path, func):
    """tracy-export -f lines' rows of one function: line -> (hits, time, per
    hit, %, source text), the figures "" on a line without hits."""
    out = tool("tracy-export", "-f", "lines", "--function", "^%s$" % func, "-o", "-", path)
    assert out.count("Function: ") == 1, out
    table = out.split("=\n", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for l in table.split("\n"):
        # "%6u %9s %12s %8s %8s  TEXT"
        rows[int(l[:6])] = (l[7:16].strip(), l[17:29].strip(), l[30:38].strip(),
                            l[39:47].strip(), l[49:])
    assert any(r[0] for r in rows.values()), out
    return rows


def shown_lines(page):
    return page.eval("Array.from(document.querySelectorAll('#lines-view tbody tr')).map(r => "
                     "[+r.dataset.line, +r.dataset.hits, +r.dataset.ns, r.style.background,"
                     " Array.from(r.cells).map(c => c.textContent)])")


def check_lines(page, want):
    rows = shown_lines(page)
    total = sum(ns for _, _, ns, _, _ in rows)
    got = {}
    for line, hits, ns, _, cells in rows:
        fig = (str(hits), "%.1f" % (ns / 1e3), "%.1f" % (ns / 1e3 / hits),
               "%.1f" % (100.0 * ns / total)) if hits else ("", "", "", "")
        got[line] = fig + (cells[5],)
    assert got == want
    # the figures shown are those, the hottest line the darkest
    hit = [r for r in rows if r[1]]
    for line, hits, ns, bg, cells in hit:
        assert cells[0] == str(line) and cells[1] == "{:,}".format(hits) and bg
    if len({r[2] for r in hit}) > 1:
        hottest = max(hit, key=lambda r: r[2])
        coolest = min(hit, key=lambda r: r[2])
        assert sum(rgb(hottest[3])) < sum(rgb(coolest[3]))


def rgb(css):
    return [int(x) for x in re.findall(r"\d+", css)][:3]


def test_fragment_opens_by_path_finds_and_shows_line_heat(page, server, folder):
    path = os.path.join(folder, "lp.tracy")
    sid = next(s["id"] for s in sessions(page, server) if s["path"] == "lp.tracy")
    page.open("about:blank")
    page.open(server + "#t=" + urllib.parse.quote(path, safe="") + "&find=work",
              ready="__tracy.meta && __tracy.meta.id === %s && __tracy.selected" % json.dumps(sid))
    assert page.eval("document.getElementById('find').value") == "work"
    # the function's lines, as tracy-export -f lines counts them
    page.wait("document.querySelectorAll('#lines-view tbody tr').length > 0")
    check_lines(page, export_lines(path, "work"))
    shot(page, "serve-lines.png")
    # a path tracy-serve does not serve: said, with the command that would
    page.open("about:blank")
    page.open(server + "#t=" + urllib.parse.quote("/nowhere/x.tracy", safe=""),
              ready="!document.getElementById('error').hidden")
    assert page.eval("document.getElementById('error').textContent") == \
        "tracy-serve serves no trace /nowhere/x.tracy (start it with: tracy-serve /nowhere)"


def test_report_links_open_the_function_in_the_page(page, server, folder, tmp_path):
    path = os.path.join(folder, "lp.tracy")
    html = os.path.realpath(str(tmp_path / "lp.html"))
    tool("tracy-export", "-f", "html", "-o", html, path)
    page.call("allow", prefix="file://" + os.path.dirname(html))
    page.open("file://" + html, ready="document.body && document.body.dataset.ready === '1'")
    links = page.eval("Object.fromEntries(Array.from(document.querySelectorAll("
                      "'#functions tbody tr')).map(r => [r.cells[0].textContent, "
                      "r.querySelector('a.serve') && r.querySelector('a.serve').href]))")
    note = page.eval("document.getElementById('serve-note').textContent")
    assert "tracy-serve " + folder in note
    assert page.eval("document.querySelector('#timeline-serve a.serve').href") == \
        "http://127.0.0.1:8791/#t=" + urllib.parse.quote(path, safe="")
    href = links["outer"]
    assert href.startswith("http://127.0.0.1:8791/#t=")
    # the same fragment on this test's server
    page.open("about:blank")
    page.open(server + href[len("http://127.0.0.1:8791/"):],
              ready="__tracy.meta && __tracy.find && __tracy.selected")
    assert page.eval("__tracy.meta.path") == "lp.tracy"
    assert page.eval("__tracy.selected.name") == "outer"
    assert page.eval("document.getElementById('find').value") == "outer"
    check_lines(page, export_lines(path, "outer"))


def test_lines_endpoint_checks_its_parameter(server, folder):
    """GET /api/t/ID/lines?func=F: 400 for a malformed id, 404 for an unknown
    one or a function without line zones, 200 with the source otherwise."""
    sid = next(s["id"] for s in json.load(urllib.request.urlopen(server + "api/sessions"))
               ["sessions"] if s["path"] == "lp.tracy")
    funcs = json.load(urllib.request.urlopen(server + "api/t/%s/functions" % sid))["functions"]
    work = next(f["func"] for f in funcs if f["name"] == "work" and f["kind"] == "python")
    d = json.load(urllib.request.urlopen(server + "api/t/%s/lines?func=%d" % (sid, work)))
    assert d["name"] == "work" and d["note"] == "" and d["rows"][0][3] == "def work(n):"
    assert d["total"] == sum(r[2] for r in d["rows"])
    # a user zone has no lines
    phase = next(f["func"] for f in funcs if f["name"] == "phase")
    for q, status in [("func=x", 400), ("func=-1", 400), ("", 400), ("func=1" + "0" * 20, 400),
                      ("func=%d" % len(funcs), 404), ("func=%d" % phase, 404)]:
        try:
            urllib.request.urlopen(server + "api/t/%s/lines?%s" % (sid, q))
            raise AssertionError("no error for " + q)
        except urllib.error.HTTPError as e:
            assert e.code == status, (q, e.code)
            assert set(json.load(e)) == {"error", "code"}
