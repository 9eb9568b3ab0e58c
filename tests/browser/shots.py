"""shots.py OUT_DIR -- the screenshots of tracy-serve's page in docs/: the
demo (examples/demo.py under python -m tracy, twice) served by a real
tracy-serve and shown in Debian's headless Chromium (make serve-shots).
Not a test: the tests (test_serve_page.py) check what these pictures show."""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import urllib.request

from chrome import BUILD, Page

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(BUILD, "bin")


def demo_runs(folder):
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"), TRACY_PORT="0",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    for name in ("demo-1.tracy", "demo-2.tracy"):
        subprocess.run([sys.executable, "-m", "tracy", "-o", os.path.join(folder, name),
                        os.path.join(ROOT, "examples", "demo.py")], env=env, check=True,
                       capture_output=True, timeout=120)


# a service that works steadily until killed (python -m tracy --listen)
SERVICE = """
import time
def handle(i):
    return sum(range(200 + i % 100))
print("ready", flush=True)
i = 0
while True:
    handle(i)
    i += 1
    time.sleep(0.001)
"""


def capture_shot(page, url, tmp, path):
    """The Capture dialog over the sessions list while it records a
    listening program for 2 s."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    prog = os.path.join(tmp, "service.py")
    with open(prog, "w") as f:
        f.write(SERVICE)
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"),
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    svc = subprocess.Popen([sys.executable, "-m", "tracy", "--listen", "127.0.0.1:%d" % port,
                            prog], env=env, stdout=subprocess.PIPE, text=True)
    try:
        svc.stdout.readline()
        page.open(url, ready="window.__tracy && __tracy.sessionsLoaded > 0")
        page.click("#capture-open")
        page.type("#cap-addr", "127.0.0.1:%d" % port)
        page.type("#cap-dur", "2")
        page.click("#cap-go")
        page.wait("__tracy.captured.length && document.querySelector("
                  "'#sessions tbody tr.captured')", timeout=30)
        page.screenshot(path)
        page.wait("__tracy.meta && __tracy.settled()", timeout=60)
    finally:
        svc.kill()
        svc.wait()


def main(out):
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tracy-shots.") as tmp:
        served = os.path.join(tmp, "runs")
        os.makedirs(served)
        demo_runs(served)
        serve = subprocess.Popen([os.path.join(BIN, "tracy-serve"), "-p", "0", "--cache",
                                  os.path.join(tmp, "cache"), served],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        page = None
        try:
            url = re.search(r"http://\S+", serve.stdout.readline()).group(0).rstrip("/") + "/"
            sessions = json.load(urllib.request.urlopen(url + "api/sessions"))["sessions"]
            ids = {s["path"]: s["id"] for s in sessions}
            page = Page(width=1400, height=900)
            page.open(url, ready="window.__tracy && __tracy.sessionsLoaded > 0")
            page.screenshot(os.path.join(out, "serve-sessions.png"))
            page.open(url + "#/t/" + ids["demo-2.tracy"], ready="__tracy.settled()")
            box = page.eval("(() => { const r = document.getElementById('tl-scroll')"
                            ".getBoundingClientRect(); return [r.left, r.top, r.width]; })()")
            # fold the main thread (its imports are 25 deep): the workers show
            head = [box[0] + 60, box[1] + page.eval("__tracy.headY(0)")]
            page.mouse({"down": head}, {"up": head})
            page.wait("__tracy.settled()")
            page.screenshot(os.path.join(out, "serve-timeline.png"))
            # zoom on a worker's parse() (the 40th) and click it
            sid = ids["demo-2.tracy"]
            z = None
            for _ in range(40):
                z = json.load(urllib.request.urlopen(
                    url + "api/t/%s/find?q=parse&track=1" % sid +
                    ("&after=%d" % z["start"] if z else "")))["zone"]
            page.eval("__tracy.setView(%d, %d)" % (z["start"] - 3 * z["dur"],
                                                      z["start"] + 6 * z["dur"]))
            page.wait("__tracy.settled()")
            pt = page.eval("__tracy.pointOf(%d)" % z["id"])
            page.mouse({"down": pt}, {"up": pt}, {"move": [pt[0] + 40, pt[1] + 30]})
            page.wait("__tracy.selected && __tracy.settled()")
            page.screenshot(os.path.join(out, "serve-zoom.png"))
            # a range of the whole run's middle: table and flame graph
            page.click("#whole")
            page.wait("__tracy.settled()")
            page.mouse({"keydown": "Shift"}, {"down": [box[0] + 0.35 * box[2], box[1] + 200]},
                       {"up": [box[0] + 0.6 * box[2], box[1] + 200]}, {"keyup": "Shift"},
                       {"move": [box[0] + 0.99 * box[2], box[1] + 5]})
            page.wait("__tracy.range && __tracy.flameBoxes > 0")
            page.screenshot(os.path.join(out, "serve-range.png"))
            page.open(url + "#/diff/%s/%s" % (ids["demo-1.tracy"], ids["demo-2.tracy"]),
                      ready="document.querySelectorAll('#compare-body tbody tr').length > 0")
            page.screenshot(os.path.join(out, "serve-compare.png"))
            capture_shot(page, url, tmp, os.path.join(out, "serve-capture.png"))
            log = page.log()
            if log["errors"] or log["outside"]:
                sys.exit("shots: the page complained: %s" % log)
        finally:
            if page:
                page.close()
            serve.terminate()
            serve.wait()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs"))
