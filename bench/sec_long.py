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
    import time
    t0 = time.monotonic()
    R.run(cmd)
    return time.monotonic() - t0


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
            "command (open, copy, write the output to disk; best of 3); peak RSS from "
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
            wall = min(_timed(R, cmd) for _ in range(3))
            results[(label, z)] = (n / wall, rss, wall)
        os.unlink(out)
    for label in labels:
        cells = []
        for z in sizes:
            rate, rss, wall = results[(label, z)]
            cells.append(f"{rate / 1e6:.1f}M events/s, {R.mib(rss):.1f} MiB ({wall:.3f} s)")
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


def section(ctx, rep, R):
    rep.add("## 10. Long runs: tracy-cut, tracy-merge, flight recorder\n")
    try:
        section_splice(ctx, rep, R)
    except R.NA as e:
        rep.add(rep.not_available(10, "tracy-cut/tracy-merge", str(e)) + "\n")
    try:
        import sec_long_flight
    except ImportError:
        sec_long_flight = None
    if sec_long_flight:
        sec_long_flight.section(ctx, rep, R)
