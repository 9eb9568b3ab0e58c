"""bench section 13: tracy-serve's level-of-detail index -- build rate, index
size per zone, viewport answer times over every zoom level, server RSS --
on synthetic traces (tracegen, 8 threads, depth 12) of 1M, 10M and (without
--quick, when the disk has room) 100M zones. Called by run.py, or alone:
    python3 bench/sec_serve.py --build build [--sizes 1000000,10000000]"""
import argparse
import http.client
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

BUILD_TARGET = 20e6      # zones/s
P95_TARGET = 50.0        # ms per viewport answer
RSS_TARGET = 256 << 10   # KiB
PX = 2000


def rss_kib(pid):
    vals = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                vals[k] = int(v.split()[0])
    return vals


def start_server(build, cache, trace):
    p = subprocess.Popen([os.path.join(build, "bin", "tracy-serve"), "-p", "0", "--cache", cache, trace],
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    port = int(line.rsplit(":", 1)[1].split("/")[0])
    return p, port


def get(conn, path):
    t = time.perf_counter()
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    dt = time.perf_counter() - t
    if r.status != 200:
        raise RuntimeError(f"{path}: {r.status} {body[:200]!r}")
    return body, dt


def measure(build, work, zones, rounds=20):
    trace = os.path.join(work, f"serve-{zones}.tracy")
    if not os.path.exists(trace):
        subprocess.run([os.path.join(build, "tools", "tracegen"), "-f", "-o", trace, "-z", str(zones),
                        "-t", "8", "-d", "12", "-l", "40", "--messages", str(max(1, zones // 10000))],
                       check=True, stdout=subprocess.DEVNULL)
    cache = tempfile.mkdtemp(dir=work, prefix="cache-")
    srv, port = start_server(build, cache, trace)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        body, build_s = get(conn, "/api/sessions")
        s = json.loads(body)["sessions"][0]
        if s["error"]:
            raise RuntimeError(s["error"])
        sid = s["id"]
        idx = sum(os.path.getsize(os.path.join(cache, f)) for f in os.listdir(cache))
        meta = json.loads(get(conn, f"/api/t/{sid}/meta")[0])
        dur = meta["duration_ns"]
        rng = random.Random(1)
        times, levels = [], []
        peak_anon = 0
        w = dur
        while True:
            lt = []
            for _ in range(rounds):
                t0 = rng.randrange(0, max(1, dur - w + 1))
                _, dt = get(conn, f"/api/t/{sid}/view?t0={t0}&t1={t0 + w}&px={PX}")
                lt.append(dt * 1e3)
                peak_anon = max(peak_anon, rss_kib(srv.pid).get("RssAnon", 0))
            times += lt
            levels.append((w, max(lt)))
            if w <= 1000:
                break
            w = max(1000, w // 10)
        times.sort()
        mem = rss_kib(srv.pid)
        return {"zones": meta["zones"], "build_s": build_s, "rate": meta["zones"] / build_s,
                "bytes_per_zone": idx / meta["zones"], "index_mib": idx / 2**20,
                "trace_mib": os.path.getsize(trace) / 2**20,
                "p50": times[len(times) // 2], "p95": times[int(len(times) * 0.95) - 1],
                "max": times[-1], "n": len(times), "levels": levels,
                "rss": mem.get("VmRSS", 0), "hwm": mem.get("VmHWM", 0),
                "anon": mem.get("RssAnon", 0), "peak_anon": peak_anon}
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(cache, ignore_errors=True)


def table(results):
    out = ["| zones | trace | index build | rate | index | bytes/zone | view p50 | view p95 | view max "
           "| RSS after | peak RSS (VmHWM) | anonymous RSS, peak |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        ok = ("" if r["rate"] >= BUILD_TARGET else " (below target)")
        out.append(f"| {r['zones']:,} | {r['trace_mib']:.1f} MiB | {r['build_s']:.2f} s | "
                   f"{r['rate'] / 1e6:.1f}M zones/s{ok} | {r['index_mib']:.0f} MiB | {r['bytes_per_zone']:.1f} | "
                   f"{r['p50']:.1f} ms | {r['p95']:.1f} ms | {r['max']:.1f} ms | "
                   f"{r['rss'] / 1024:.0f} MiB | {r['hwm'] / 1024:.0f} MiB | {r['peak_anon'] / 1024:.0f} MiB |")
    return "\n".join(out) + "\n"


def text(results):
    lines = ["## 13. tracy-serve: the level-of-detail index\n",
             "Synthetic traces (`tracegen -t 8 -d 12 -l 40`). Index build = the first "
             "`/api/sessions` on a cold cache (one pass with the reader, the index written to "
             "the cache folder); bytes/zone = the index file over the zones. View = "
             f"`/api/t/ID/view?t0&t1&px={PX}` over every track, answered over loopback on one "
             "kept-alive connection and timed at the client (JSON included: an upper bound of "
             "the server's time), 20 random windows per zoom level from the whole run down to "
             "1 us (each level a tenth of the one before). RSS of the server after the queries "
             "(VmRSS), its peak (VmHWM: the index's mapped pages a query touched count in it, "
             "they are page cache and dropped after each answer), and the peak of its "
             "anonymous memory (RssAnon, sampled after each answer). Targets: build >= {BUILD_TARGET / 1e6:.0f}M zones/s, view p95 "
             f"<= {P95_TARGET:.0f} ms, RSS <= {RSS_TARGET >> 10} MiB.\n", table(results)]
    for r in results:
        worst = ", ".join(f"{w / 1e6:g} ms: {t:.1f}" if w >= 1e6 else f"{w / 1e3:g} us: {t:.1f}"
                          for w, t in r["levels"])
        lines.append(f"- {r['zones']:,} zones, slowest answer per window width (ms): {worst}\n")
    return "\n".join(lines)


def section(ctx, rep, h):
    sizes = [1_000_000] if ctx.quick else [1_000_000, 10_000_000]
    if not ctx.quick and shutil.disk_usage(ctx.work).free > 12 << 30:
        sizes.append(100_000_000)
    rep.add(text([measure(ctx.build, ctx.work, z) for z in sizes]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="sec_serve-")
    os.makedirs(work, exist_ok=True)
    res = [measure(os.path.abspath(a.build), work, int(z)) for z in a.sizes.split(",")]
    sys.stdout.write(text(res))
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
