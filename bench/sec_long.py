"""Section 10 of make bench: long runs and many hosts (issue 16).

tracy-cut and tracy-merge throughput and memory on synthetic traces of 1M
and 10M zones; the flight recorder's memory and per-event cost when built.
Called from bench/run.py as section(ctx, rep, R), R being run.py itself.
"""
import os

CUT_MERGE_TARGET = 20e6  # events/s


def _events(R, exe_info, path):
    out = R.run([exe_info, "--json", path]).stdout
    import json
    return json.loads(out)["events"]


def _timed(R, cmd):
    """(wall, CPU) seconds of one run of cmd."""
    import resource
    import time
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    R.run(cmd)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def _splice_cases(ctx, R, trace, first_half):
    """(label, command) for one input trace."""
    out = os.path.join(ctx.work, "long-out.tracy")
    cut = R.need(ctx.bin("tracy-cut"))
    merge = R.need(ctx.bin("tracy-merge"))
    return out, [
        ("`tracy-cut` whole trace (blocks copied as they are)",
         [cut, "-q", "-f", "-o", out, trace]),
        ("`tracy-cut` a window of half the run, 2 threads of 4 (blocks rewritten)",
         [cut, "-q", "-f", "--from", first_half[0], "--to", first_half[1],
          "-t", "1:1,1:3", "-o", out, trace]),
        ("`tracy-merge` of two copies (every block recompressed)",
         [merge, "-q", "-f", "-o", out, trace, trace + ".copy.tracy"]),
    ]


def section_splice(ctx, rep, R):
    sizes = (100_000, 1_000_000) if ctx.quick else (1_000_000, 10_000_000)
    info = R.need(ctx.bin("tracy-info"))
    rep.add("### tracy-cut and tracy-merge\n")
    rep.add("Synthetic traces from `build/tools/tracegen -t 4 -d 8 -l 40` (as section 5; "
            "they compress far better than real traces, which makes zstd's share smaller "
            "than in real use). Events/s = events of the input(s) / wall time of the whole "
            "command (open, copy, write the output and fsync it; best of 3), and in brackets "
            "per CPU second of the command (user + system), which the load of a shared "
            "machine and the disk's sync do not change; peak RSS from "
            "`/usr/bin/time -v`. Memory is flat when the larger trace needs at most 1.25x "
            "the RSS of the smaller one plus 4 MiB.\n")
    traces, events = {}, {}
    for z in sizes:
        traces[z] = R.make_trace(ctx, z)
        R.run(["cp", traces[z], traces[z] + ".copy.tracy"])
        events[z] = _events(R, info, traces[z])
    rows = []
    labels = None
    results = {}
    for z in sizes:
        import json
        meta = json.loads(R.run([info, "--json", traces[z]]).stdout)
        span = meta["last_ts"] - meta["first_ts"]
        half = (f"{span // 4}ns", f"{3 * span // 4}ns")
        out, cases = _splice_cases(ctx, R, traces[z], half)
        labels = [c[0] for c in cases]
        for label, cmd in cases:
            R.log(f"long: {label} on {z:,} zones")
            n = events[z] * (2 if "merge" in cmd[0] else 1)
            _, rss = R.time_v(cmd)
            runs = [_timed(R, cmd) for _ in range(3)]
            wall = min(r[0] for r in runs)
            cpu = min(r[1] for r in runs)
            results[(label, z)] = (n / wall, rss, wall, n / max(cpu, 1e-3))
        os.unlink(out)
    for label in labels:
        cells = []
        for z in sizes:
            rate, rss, wall, cpu_rate = results[(label, z)]
            cells.append(f"{rate / 1e6:.1f}M events/s ({cpu_rate / 1e6:.0f}M per CPU s), "
                         f"{R.mib(rss):.1f} MiB ({wall:.3f} s)")
        rate = results[(label, sizes[-1])][0]
        small, big = results[(label, sizes[0])][1], results[(label, sizes[-1])][1]
        st = rep.status(10, f"{label}: {rate / 1e6:.1f}M events/s < 20M",
                        rate >= CUT_MERGE_TARGET)
        flat = rep.status(10, f"{label}: RSS {R.mib(small):.1f} -> {R.mib(big):.1f} MiB",
                          big <= 1.25 * small + 4096)
        rows.append([label] + cells + [">= 20M events/s", st, flat])
    rep.table(["command"] + [f"{z:,} zones" for z in sizes]
              + ["target", "speed", "memory flat"], rows)
    for z in sizes:
        for p in (traces[z], traces[z] + ".copy.tracy"):
            if os.path.exists(p):
                os.unlink(p)


def section_splice_real(ctx, rep, R):
    """The same commands on a real trace: python -m tracy on bench's mixed.py."""
    import json
    trace = os.path.join(ctx.work, "long-mixed.tracy")
    if os.path.exists(trace):
        os.unlink(trace)
    d = R.Daemon(ctx, trace)
    env = dict(ctx.env, TRACY_PORT=d.port)
    try:
        R.run([R.PY, "-m", "tracy", "-o", trace, os.path.join(R.BENCH, "workloads", "mixed.py")],
              env=env, cwd=ctx.work)
        d.wait(30)
    finally:
        d.kill()
    info = R.need(ctx.bin("tracy-info"))
    meta = json.loads(R.run([info, "--json", trace]).stdout)
    ev, span = meta["events"], meta["last_ts"] - meta["first_ts"]
    copies = [trace + f".{i}.tracy" for i in range(4)]
    for c in copies:
        R.run(["cp", trace, c])
    out = os.path.join(ctx.work, "long-out.tracy")
    cases = [("`tracy-cut` whole trace", ev,
              [R.need(ctx.bin("tracy-cut")), "-q", "-f", "-o", out, trace]),
             ("`tracy-cut` the middle half", ev,
              [R.need(ctx.bin("tracy-cut")), "-q", "-f", "--from", f"{span // 4}ns",
               "--to", f"{3 * span // 4}ns", "-o", out, trace]),
             ("`tracy-merge` of four copies", 4 * ev,
              [R.need(ctx.bin("tracy-merge")), "-q", "-f", "-o", out] + copies)]
    rows = []
    for label, n, cmd in cases:
        R.log(f"long: {label} on the mixed.py trace")
        runs = [_timed(R, cmd) for _ in range(3)]
        wall, cpu = min(r[0] for r in runs), min(r[1] for r in runs)
        st = rep.status(10, f"{label} on a real trace: {n / wall / 1e6:.1f}M events/s < 20M",
                        n / wall >= CUT_MERGE_TARGET,
                        "wall time includes writing and fsyncing the output on a loaded "
                        "machine; see the per-CPU-second figure")
        rows.append([label, f"{n:,}", f"{n / wall / 1e6:.1f}M events/s ({wall:.3f} s)",
                     f"{n / max(cpu, 1e-3) / 1e6:.0f}M events/s", ">= 20M events/s", st])
    rep.add(f"\nThe same on a real trace, `python -m tracy` of `bench/workloads/mixed.py` "
            f"({ev:,} events, {os.path.getsize(trace):,} bytes):\n")
    rep.table(["command", "events in", "wall", "per CPU second", "target", "status"], rows)
    for p in copies + [trace, out]:
        if os.path.exists(p):
            os.unlink(p)


LOOP = """import sys, time
def leaf(i): return i
def mid(i): return leaf(i) + leaf(i)
T = float(sys.argv[1])
t0 = time.time()
while time.time() - t0 < T:
    for i in range(20000): mid(i)
"""

FLIGHT_MIB = 64


def section_flight_memory(ctx, rep, R):
    secs = 10 if ctx.quick else 60
    prog = os.path.join(ctx.work, "long-loop.py")
    with open(prog, "w") as f:
        f.write(LOOP)
    out = os.path.join(ctx.work, "long-flight.tracy")
    for p in (out, out[:-6] + ".1.tracy"):
        if os.path.exists(p):
            os.unlink(p)
    rep.add("### Flight recorder: memory\n")
    rep.add(f"`python -m tracy --flight {FLIGHT_MIB}M` on a loop of Python calls "
            f"(about 13M events/s here) for {secs} s; the ring is full after a few "
            "seconds and from then on drops its oldest data. Peak RSS of the whole "
            "process from `/usr/bin/time -v`, the exit dump included; the same loop "
            "without a profiler for comparison.\n")
    base_wall, base_rss = R.time_v([R.PY, prog, "2"], env=ctx.env)
    wall, rss = R.time_v([R.PY, "-m", "tracy", "--flight", f"{FLIGHT_MIB}M", "-o", out,
                          prog, str(secs)], env=ctx.env, timeout=secs + 300)
    import json
    info = json.loads(R.run([R.need(ctx.bin("tracy-info")), "--json", out]).stdout)
    dropped = next((s["value"] for s in info.get("stats", [])
                    if s.get("name") == "flight_events_dropped"), None)
    limit = FLIGHT_MIB * 1024 + 32 * 1024
    st = rep.status(10, f"flight recorder peak RSS {R.mib(rss):.1f} MiB > "
                    f"{FLIGHT_MIB} + 32 MiB", rss <= limit)
    rep.table(["run", "peak RSS", "events in the dump", "events dropped from the window",
               "target", "status"],
              [["no profiler", f"{R.mib(base_rss):.1f} MiB", "", "", "", "-"],
               [f"`--flight {FLIGHT_MIB}M`, {secs} s", f"{R.mib(rss):.1f} MiB",
                f"{info['events']:,}", f"{dropped:,}" if dropped is not None else "?",
                f"<= {FLIGHT_MIB + 32} MiB", st]])
    os.unlink(out)


CALLS = """import sys
def leaf(i): return i
def mid(i): return leaf(i) + leaf(i)
for i in range(int(sys.argv[1])): mid(i)
"""


def _callgrind_threads(R, cmd, env, cwd):
    """(all threads, first thread) instructions of cmd's process."""
    import glob
    import re
    import subprocess
    base = os.path.join(cwd, "long-cg.out")
    for f in glob.glob(base + "*"):
        os.unlink(f)
    p = R.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
               "--callgrind-out-file=" + base] + cmd, env=env, cwd=cwd, timeout=900,
              stdout=subprocess.DEVNULL, what="callgrind " + os.path.basename(cmd[-2]))
    m = re.search(r"Collected\s*:\s*(\d+)", p.stderr)
    first = None
    for f in sorted(glob.glob(base + "*")):
        with open(f) as fh:
            for line in fh:
                if line.startswith("totals:") or line.startswith("summary:"):
                    if f.endswith("-01"):
                        first = int(line.split()[1])
        os.unlink(f)
    if not m or first is None:
        raise R.NA("callgrind printed no instruction count")
    return int(m.group(1)), first


def section_flight_cost(ctx, rep, R):
    prog = os.path.join(ctx.work, "long-calls.py")
    with open(prog, "w") as f:
        f.write(CALLS)
    n1, n2 = 50_000, 200_000  # calls of mid: 6 events each
    rep.add("### Flight recorder: cost per event\n")
    rep.add("Instructions counted by callgrind (`--separate-threads=yes`) for the traced "
            "process, all its threads and its recording (main) thread alone, running a "
            "loop of Python calls twice, "
            f"{n1:,} and {n2:,} iterations of 3 calls (6 events each); cost per event = "
            "difference of instructions / difference of events, which leaves out what is "
            "paid once (start-up, the exit dump: `TRACY_FLIGHT_NO_EXIT_DUMP=1`). "
            "Streaming sends to a native `capture-release`; the flight recorder keeps "
            "everything (64 MiB) or 1 MiB, where nearly every event is dropped again: "
            "whole copies, none of their events read (each thread notes its open zones "
            "where a chunk starts). Under callgrind the program runs some 50x slower, so "
            "its time deltas take more bytes than in a native run.\n")
    env = dict(ctx.env)

    def stream_run(n):
        d = R.Daemon(ctx, os.path.join(ctx.work, "long-stream.tracy"))
        e = dict(env, TRACY_PORT=d.port)
        try:
            ins = _callgrind_threads(R, [R.PY, "-m", "tracy", "-o",
                                         os.path.join(ctx.work, "ls.tracy"), prog, str(n)],
                                     e, ctx.work)
            d.wait(30)
        finally:
            d.kill()
        return ins

    def flight_run(n, size):
        e = dict(env, TRACY_FLIGHT_NO_EXIT_DUMP="1")
        return _callgrind_threads(R, [R.PY, "-m", "tracy", "--flight", size, "-o",
                                      os.path.join(ctx.work, "lf.tracy"), prog, str(n)],
                                  e, ctx.work)

    def per_event(run, *a):
        hi, lo = run(n2, *a), run(n1, *a)
        return ((hi[0] - lo[0]) / ev, (hi[1] - lo[1]) / ev)

    ev = 6 * (n2 - n1)
    none = per_event(lambda n: _callgrind_threads(R, [R.PY, prog, str(n)], env, ctx.work))
    stream = per_event(stream_run)
    cost = lambda x: (x[0] - none[0], x[1] - none[1])  # noqa: E731
    sc = cost(stream)
    rows = [["streaming", f"{sc[0]:.1f}", "1.000", f"{sc[1]:.1f}", "1.000", "", "-"]]
    for size in ("64M", "1M"):
        fc = cost(per_event(flight_run, size))
        ratio, rec = fc[0] / sc[0], fc[1] / sc[1]
        st = rep.status(10, f"flight recorder ({size}): {ratio:.3f}x the streaming cost "
                        f"per event (whole process), {rec:.3f}x (recording thread)",
                        ratio <= 1.05 and rec <= 1.02,
                        "the sender thread reads dropped events again" if ratio > 1.05
                        else "the recording thread pays more than when streaming")
        rows.append([f"`--flight {size}`", f"{fc[0]:.1f}", f"{ratio:.3f}", f"{fc[1]:.1f}",
                     f"{rec:.3f}", "<= 1.05 (whole process), <= 1.02 (recording thread)",
                     st])
    rep.add(f"The interpreter's own work, with no profiler: {none[0]:.1f} instructions per "
            "event. Profiler instructions per event:\n")
    rep.table(["run", "whole process", "ratio", "recording thread", "ratio", "target",
               "status"], rows)
    for p in ("long-stream.tracy", "ls.tracy", "lf.tracy"):
        if os.path.exists(os.path.join(ctx.work, p)):
            os.unlink(os.path.join(ctx.work, p))


def section(ctx, rep, R):
    rep.add("## 10. Long runs: tracy-cut, tracy-merge, flight recorder\n")
    try:
        section_splice(ctx, rep, R)
        section_splice_real(ctx, rep, R)
    except R.NA as e:
        rep.add(rep.not_available(10, "tracy-cut/tracy-merge", str(e)) + "\n")
    try:
        section_flight_memory(ctx, rep, R)
    except R.NA as e:
        rep.add(rep.not_available(10, "flight recorder memory", str(e)) + "\n")
    try:
        section_flight_cost(ctx, rep, R)
    except R.NA as e:
        rep.add(rep.not_available(10, "flight recorder cost", str(e)) + "\n")
