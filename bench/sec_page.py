"""bench section 14: tracy-serve's page in Debian's headless Chromium (driven
by puppeteer-core, tests/browser/driver.js) on the synthetic traces of
section 13 (tracegen, 8 threads, depth 12): first paint of the timeline once
indexed, the time a zoom takes to settle, the page's JavaScript heap; and the
anchor: the same trace exported for speedscope (`tracy-export -f speedscope`)
opened in speedscope's own page in the same browser. Called by run.py, or
alone:
    python3 bench/sec_page.py --build build [--sizes 1000000,10000000]"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import sec_serve  # its traces and its way of starting tracy-serve

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "browser"))

PAINT_TARGET = 1.0  # s, first paint once indexed
RSS_TARGET = 256    # MiB, tracy-serve's
WIDTH = 2000        # px, as section 13's viewport answers
ROUNDS = 5
# V8's longest string (64-bit): a JSON text past it cannot be read by any page
V8_MAX_STRING = (1 << 29) - 24


def trace_of(build, work, zones):
    """The trace section 13 measures (made here when it is not there)."""
    path = os.path.join(work, f"serve-{zones}.tracy")
    if not os.path.exists(path):
        subprocess.run([os.path.join(build, "tools", "tracegen"), "-f", "-o", path, "-z", str(zones),
                        "-t", "8", "-d", "12", "-l", "40", "--messages", str(max(1, zones // 10000))],
                       check=True, stdout=subprocess.DEVNULL)
    return path


def heap_mib(page):
    v = page.eval("performance.memory ? performance.memory.usedJSHeapSize : null")
    return v / 2**20 if v else None


def timeline(page, build, work, trace, shots=None):
    """First paint (ms from navigation, in the page) over ROUNDS fresh loads,
    then 12 wheel steps at the middle until the view settles again; the
    server's peak RSS over it all. A screenshot of the zoomed view into
    the folder `shots` when given."""
    cache = tempfile.mkdtemp(dir=work, prefix="page-cache-")
    srv, port = sec_serve.start_server(build, cache, trace)
    url = f"http://127.0.0.1:{port}/"
    page.call("allow", prefix=url)  # each trace has its own server (and port)
    try:
        t = time.perf_counter()
        sessions = json.load(urllib.request.urlopen(url + "api/sessions", timeout=600))["sessions"]
        index_s = time.perf_counter() - t
        sid = sessions[0]["id"]
        # the list comes from the file's header and trailer: the index is
        # built by the first question about the timeline, timed apart
        json.load(urllib.request.urlopen(url + f"api/t/{sid}/meta", timeout=1800))
        index_s = time.perf_counter() - t
        paints = []
        for _ in range(ROUNDS):
            page.open("about:blank")
            page.open(url + "#/t/" + sid, ready="window.__tracy && __tracy.settled()", timeout=120)
            paints.append(page.eval("__tracy.paintedAt") / 1e3)
        box = page.eval("(() => { const r = document.getElementById('tl-scroll')"
                        ".getBoundingClientRect(); return [r.left + r.width / 2, r.top + 150]; })()")
        t = time.perf_counter()
        page.mouse(*[{"wheel": [box[0], box[1], -240]} for _ in range(12)])
        page.wait("__tracy.settled()", timeout=120)
        zoom_s = time.perf_counter() - t
        log = page.log()
        if log["errors"] or log["outside"]:
            raise RuntimeError(f"the page complained: {log}")
        if shots:
            page.screenshot(os.path.join(shots, f"page-{os.path.basename(trace)}.png"))
        paints.sort()
        mem = sec_serve.rss_kib(srv.pid)
        return {"index_s": index_s, "paint_p50": paints[len(paints) // 2], "paint_max": paints[-1],
                "zoom_s": zoom_s, "heap": heap_mib(page), "srv_hwm": mem["VmHWM"] / 1024,
                "srv_anon": mem["RssAnon"] / 1024}
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(cache, ignore_errors=True)


def speedscope(page, build, work, trace):
    """The anchor: tracy-export's speedscope file opened by speedscope's own
    page (the way its command line opens a file: a script handing it the
    file's bytes in base64)."""
    out = trace + ".speedscope.json"
    t = time.perf_counter()
    subprocess.run([os.path.join(build, "bin", "tracy-export"), "-f", "speedscope", "-o", out, trace],
                   check=True, capture_output=True, timeout=1800)
    export_s = time.perf_counter() - t
    size = os.path.getsize(out)
    r = {"export_s": export_s, "mib": size / 2**20}
    try:
        if size > V8_MAX_STRING:
            r["fails"] = (f"{size / 2**20:,.0f} MiB of JSON is longer than V8's longest string "
                          f"({V8_MAX_STRING / 2**20:.0f} Mi characters): no page can read it")
            return r
        viewer = os.path.join(build, "npm", "node_modules", "speedscope", "dist", "release")
        loader = out + ".js"
        with open(out, "rb") as f, open(loader, "w") as js:
            js.write("speedscope.loadFileFromBase64(%s, %s)" % (
                json.dumps(os.path.basename(out)), json.dumps(base64.b64encode(f.read()).decode())))
        page.call("allow", prefix="file://")
        page.open("about:blank")
        t = time.perf_counter()
        try:
            page.open("file://%s/index.html#localProfilePath=%s" % (viewer, loader),
                      ready="/ - speedscope$/.test(document.title)", timeout=600)
            r["open_s"] = time.perf_counter() - t
            r["heap"] = heap_mib(page)
        except Exception as e:  # a crash or a timeout is the figure
            r["fails"] = f"did not open in {time.perf_counter() - t:.0f} s: {str(e)[:120]}"
        page.log()
        return r
    finally:
        for p in (out, out + ".js"):
            if os.path.exists(p):
                os.remove(p)


def measure(build, work, sizes, shots=None, anchor=True):
    os.environ.setdefault("LT_BUILD", build)  # where chrome.py finds puppeteer-core
    from chrome import Page
    page = Page(width=WIDTH, height=1000, timeout=900)
    try:
        rows = []
        too_long = None  # the zones of a smaller trace whose file no page could read
        for z in sizes:
            trace = trace_of(build, work, z)
            row = {"zones": z}
            row.update(timeline(page, build, work, trace, shots))
            if not anchor:
                row["speedscope"] = {"fails": "not run (--no-anchor)"}
            elif too_long:  # its file only grows with the zones: not exported again
                row["speedscope"] = {"fails": f"not exported: at {too_long:,} zones the file was "
                                              "already longer than V8's longest string"}
            else:
                row["speedscope"] = speedscope(page, build, work, trace)
                if row["speedscope"].get("mib", 0) * 2**20 > V8_MAX_STRING:
                    too_long = z
            rows.append(row)
            if z >= 100_000_000:  # ~1 GB of trace and index: not kept
                os.remove(trace)
        return rows
    finally:
        page.close()


def text(rows):
    out = ["## 14. tracy-serve's page in a browser\n",
           f"Debian's headless Chromium ({WIDTH} px wide) driven by puppeteer-core, on section 13's "
           "traces. First paint = from the navigation to the first frame drawn from a viewport answer "
           f"covering the view, read in the page (`__tracy.paintedAt`), the index already built; "
           f"{ROUNDS} fresh loads, median and worst. Index built = the server's list of sessions and "
           "its first `/meta` on a cold cache (wall time, the machine shared). Zoom = 12 wheel steps at the middle until the "
           "view is drawn from answers covering it again. Heap = the page's used JavaScript heap. "
           "Anchor: `tracy-export -f speedscope` of the same trace opened in speedscope's page in the "
           f"same browser. Server peak = tracy-serve's VmHWM over the loads and the zoom (the "
           "index's mapped pages it touched count in it: page cache), and its anonymous RSS after. "
           f"Targets: first paint <= {PAINT_TARGET:.0f} s, server RSS <= {RSS_TARGET} MiB.\n",
           "| zones | index built | first paint p50 | worst | zoom settles | page heap | server peak RSS "
           "| server anon RSS | speedscope file | speedscope opens | speedscope heap |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        s = r["speedscope"]
        ok = "" if r["paint_max"] <= PAINT_TARGET else " (above target)"
        opens = f"{s['open_s']:.1f} s" if "open_s" in s else "fails"
        heap = f"{s['heap']:.0f} MiB" if s.get("heap") else "-"
        page_heap = f"{r['heap']:.0f} MiB" if r["heap"] else "-"
        rss_ok = "" if r["srv_hwm"] <= RSS_TARGET else " (above target)"
        file = f"{s['mib']:,.0f} MiB ({s['export_s']:.1f} s)" if "mib" in s else "-"
        out.append(f"| {r['zones']:,} | {r['index_s']:.1f} s | {r['paint_p50'] * 1e3:.0f} ms | {r['paint_max'] * 1e3:.0f} ms{ok} | "
                   f"{r['zoom_s'] * 1e3:.0f} ms | {page_heap} | {r['srv_hwm']:.0f} MiB{rss_ok} | "
                   f"{r['srv_anon']:.0f} MiB | {file} | {opens} | {heap} |")
    out.append("")
    for r in rows:
        if "fails" in r["speedscope"]:
            out.append(f"- speedscope, {r['zones']:,} zones: {r['speedscope']['fails']}")
    return "\n".join(out) + "\n"


def section(ctx, rep, h):
    sizes = [1_000_000] if ctx.quick else [1_000_000, 10_000_000]
    if not ctx.quick and shutil.disk_usage(ctx.work).free > 12 << 30:  # as section 13
        sizes.append(100_000_000)
    rows = measure(ctx.build, ctx.work, sizes, shots=ctx.work)
    for r in rows:
        if r["paint_max"] > PAINT_TARGET:
            rep.missed.append((14, f"first paint of {r['zones']:,} zones {r['paint_max']:.2f} s "
                               f"> {PAINT_TARGET:.0f} s", ""))
        if r["srv_hwm"] > RSS_TARGET:
            rep.missed.append((14, f"tracy-serve peak RSS with the page on {r['zones']:,} zones "
                               f"{r['srv_hwm']:.0f} MiB > {RSS_TARGET} MiB", ""))
    rep.add(text(rows))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--work", default=None)
    ap.add_argument("--shots", default=None, help="a folder for a screenshot per trace")
    ap.add_argument("--no-anchor", action="store_true", help="without speedscope's page")
    a = ap.parse_args()
    os.environ.setdefault("LT_BUILD", os.path.abspath(a.build))
    work = a.work or tempfile.mkdtemp(prefix="bench-page-")
    print(text(measure(os.path.abspath(a.build), work, [int(x) for x in a.sizes.split(",")], a.shots,
                     not a.no_anchor)))


if __name__ == "__main__":
    main()
