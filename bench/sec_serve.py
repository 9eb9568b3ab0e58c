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


def cpu_s(pid):
    """User + system CPU time of a process so far (its threads included)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


FIB = """import threading
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
ts = [threading.Thread(target=fib, args=(29,)) for _ in range(3)]
for t in ts: t.start()
fib(32)
for t in ts: t.join()
"""


def python_trace(build, work, python="/usr/bin/python3"):
    """A real `python -m tracy` trace of about 12M zones (fib on 4 threads)."""
    trace = os.path.join(work, "serve-python-fib.tracy")
    if not os.path.exists(trace):
        script = os.path.join(work, "serve_fib.py")
        with open(script, "w") as f:
            f.write(FIB)
        env = dict(os.environ, PATH=os.path.join(build, "bin") + ":" + os.environ.get("PATH", ""),
                   PYTHONPATH=os.path.join(build, "python"), TRACY_PORT="0")
        subprocess.run([python, "-m", "tracy", "-o", trace, script], check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
    return trace


def measure(build, work, zones, rounds=20, trace=None):
    label = "python -m tracy fib" if trace else None
    trace = trace or os.path.join(work, f"serve-{zones}.tracy")
    if not os.path.exists(trace):
        subprocess.run([os.path.join(build, "tools", "tracegen"), "-f", "-o", trace, "-z", str(zones),
                        "-t", "8", "-d", "12", "-l", "40", "--messages", str(max(1, zones // 10000))],
                       check=True, stdout=subprocess.DEVNULL)
    cache = tempfile.mkdtemp(dir=work, prefix="cache-")
    srv, port = start_server(build, cache, trace)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        body, _ = get(conn, "/api/sessions")
        s = json.loads(body)["sessions"][0]
        if s["error"]:
            raise RuntimeError(s["error"])
        sid = s["id"]
        cpu0, load = cpu_s(srv.pid), os.getloadavg()[0]
        body, build_s = get(conn, f"/api/t/{sid}/meta")  # builds the index
        build_cpu = cpu_s(srv.pid) - cpu0
        meta = json.loads(body)
        idx = sum(os.path.getsize(os.path.join(cache, f)) for f in os.listdir(cache))
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
        return {"label": label, "zones": meta["zones"], "build_s": build_s, "rate": meta["zones"] / build_s,
                "build_cpu": build_cpu, "rate_cpu": meta["zones"] / max(build_cpu, 1e-3), "load": load,
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


def measure_growth(build, work, zones, steps=5, part=0.01):
    """A trace being written: the server indexes 90% of it, then the rest
    arrives 1% at a time (whole bytes of the finished file appended, as the
    daemon appends blocks); each update's server CPU and the wall time until
    the page's meta shows it (the index extended), against the first build."""
    full = os.path.join(work, f"serve-{zones}.tracy")
    if not os.path.exists(full):
        subprocess.run([os.path.join(build, "tools", "tracegen"), "-f", "-o", full, "-z", str(zones),
                        "-t", "8", "-d", "12", "-l", "40", "--messages", str(max(1, zones // 10000))],
                       check=True, stdout=subprocess.DEVNULL)
    with open(full, "rb") as f:
        data = f.read()
    folder = tempfile.mkdtemp(dir=work, prefix="live-")
    trace = os.path.join(folder, "live.tracy")
    have = int(len(data) * (1 - part * steps)) - 1
    with open(trace, "wb") as f:
        f.write(data[:have])
    cache = tempfile.mkdtemp(dir=work, prefix="cache-")
    srv, port = start_server(build, cache, folder)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        cpu0, t0 = cpu_s(srv.pid), time.perf_counter()  # the list indexes a trace being written
        sid = json.loads(get(conn, "/api/sessions")[0])["sessions"][0]["id"]
        meta, _ = get(conn, f"/api/t/{sid}/meta")
        first_cpu, first_s = cpu_s(srv.pid) - cpu0, time.perf_counter() - t0
        meta = json.loads(meta)
        ups = []
        for k in range(steps):
            to = len(data) if k == steps - 1 else have + int(len(data) * part)
            with open(trace, "ab") as f:
                f.write(data[have:to])
            have = to
            gen, cpu0, t0 = meta["generation"], cpu_s(srv.pid), time.perf_counter()
            while meta["generation"] == gen:
                meta = json.loads(get(conn, f"/api/t/{sid}/meta")[0])
                if meta["generation"] == gen:
                    time.sleep(0.005)
            ups.append((cpu_s(srv.pid) - cpu0, time.perf_counter() - t0, meta["zones"]))
        return {"zones": meta["zones"], "first_s": first_s, "first_cpu": first_cpu, "updates": ups}
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)


def growth_text(g):
    cpus = sorted(u[0] for u in g["updates"])
    walls = sorted(u[1] for u in g["updates"])
    return (f"- Live growth, {g['zones']:,} zones (tracegen as above): 90% of the file indexed first "
            f"({g['first_cpu']:.2f} s CPU, {g['first_s']:.2f} s wall), then {len(cpus)} appends of 1% each: "
            f"each index update (an extension) took {cpus[0] * 1e3:.0f}-{cpus[-1] * 1e3:.0f} ms of server "
            f"CPU (median {cpus[len(cpus) // 2] * 1e3:.0f} ms) and showed in the meta "
            f"{walls[0]:.2f}-{walls[-1]:.2f} s after the append (polled every 5 ms), against "
            f"{g['first_cpu'] / 0.9:.2f} s CPU for a whole build of the same trace.\n")


def table(results):
    out = ["| zones | trace | index build | rate | build CPU (rate) | load | index | bytes/zone | view p50 "
           "| view p95 | view max | RSS after | peak RSS (VmHWM) | anonymous RSS, peak |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        ok = ("" if r["rate"] >= BUILD_TARGET else " (below target)")
        name = f"{r['zones']:,}" + (f" ({r['label']})" if r.get("label") else "")
        out.append(f"| {name} | {r['trace_mib']:.1f} MiB | {r['build_s']:.2f} s | "
                   f"{r['rate'] / 1e6:.1f}M zones/s{ok} | {r['build_cpu']:.2f} s ({r['rate_cpu'] / 1e6:.1f}M/s) | "
                   f"{r['load']:.1f} | {r['index_mib']:.0f} MiB | {r['bytes_per_zone']:.1f} | "
                   f"{r['p50']:.1f} ms | {r['p95']:.1f} ms | {r['max']:.1f} ms | "
                   f"{r['rss'] / 1024:.0f} MiB | {r['hwm'] / 1024:.0f} MiB | {r['peak_anon'] / 1024:.0f} MiB |")
    return "\n".join(out) + "\n"


def text(results):
    lines = ["## 13. tracy-serve: the level-of-detail index\n",
             "Synthetic traces (`tracegen -t 8 -d 12 -l 40`) and a real one (`python -m tracy` "
             "on a recursive fib in 4 threads, about 12M zones, depth up to 32). Index build = the first "
             "`/api/t/ID/meta` on a cold cache (one pass with the reader, the index written to "
             "the cache folder), timed at the client (wall) and as the server's CPU time "
             "(user + system, read from /proc around the request: what the build costs when "
             "other programs share the cores; load = the 1-minute load average before it); "
             "bytes/zone = the index file over the zones. View = "
             f"`/api/t/ID/view?t0&t1&px={PX}` over every track, answered over loopback on one "
             "kept-alive connection and timed at the client (JSON included: an upper bound of "
             "the server's time), 20 random windows per zoom level from the whole run down to "
             "1 us (each level a tenth of the one before). RSS of the server after the queries "
             "(VmRSS), its peak (VmHWM: the index's mapped pages a query touched count in it, "
             "they are page cache and dropped after each answer), and the peak of its "
             "anonymous memory (RssAnon, sampled after each answer). "
             f"Targets: build >= {BUILD_TARGET / 1e6:.0f}M zones/s, view p95 "
             f"<= {P95_TARGET:.0f} ms, RSS <= {RSS_TARGET >> 10} MiB.\n", table(results)]
    for r in results:
        worst = ", ".join(f"{w / 1e6:g} ms: {t:.1f}" if w >= 1e6 else f"{w / 1e3:g} us: {t:.1f}"
                          for w, t in r["levels"])
        lines.append(f"- {r['zones']:,} zones{' (' + r['label'] + ')' if r.get('label') else ''}, slowest answer per window width (ms): {worst}\n")
    return "\n".join(lines)


def section(ctx, rep, h):
    sizes = [1_000_000] if ctx.quick else [1_000_000, 10_000_000]
    if not ctx.quick and shutil.disk_usage(ctx.work).free > 12 << 30:
        sizes.append(100_000_000)
    results = [measure(ctx.build, ctx.work, z) for z in sizes]
    if not ctx.quick:
        results.append(measure(ctx.build, ctx.work, 0, trace=python_trace(ctx.build, ctx.work)))
    for r in results:  # the build's CPU rate: what the target is about
        if r["rate_cpu"] < BUILD_TARGET:
            rep.missed.append((13, f"tracy-serve index build of {r['zones']:,} zones "
                               f"{r['rate_cpu'] / 1e6:.1f}M zones/s of CPU < {BUILD_TARGET / 1e6:.0f}M",
                               f"1-minute load {r['load']:.1f}"))
    growth = measure_growth(ctx.build, ctx.work, sizes[-1])
    rep.add(text(results) + "\n" + growth_text(growth))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--work", default=None)
    ap.add_argument("--python", action="store_true", help="also a real python -m tracy trace")
    ap.add_argument("--growth", type=int, default=0, help="only the live growth of a trace of N zones")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="sec_serve-")
    os.makedirs(work, exist_ok=True)
    build = os.path.abspath(a.build)
    if a.growth:
        sys.stdout.write(growth_text(measure_growth(build, work, a.growth)))
        return
    res = [measure(build, work, int(z)) for z in a.sizes.split(",") if z]
    if a.python:
        res.append(measure(build, work, 0, trace=python_trace(build, work)))
    sys.stdout.write(text(res))
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
