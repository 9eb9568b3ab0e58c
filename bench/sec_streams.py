"""Section 12 of make bench: readers against the number of streams.

A trace with one zone on each of N threads (`tracegen -t N -z N -d 1`), for
N = 16384, 65536, 262144 and 1048576: every reader's wall time (best of 3)
and peak RSS (`/usr/bin/time -v`), and the ratio from one size to the next
(4x the streams). Target: no ratio above 5 (linear, with room for caches).
Called from bench/run.py as section(ctx, rep, R), R being run.py itself.
"""
import os
import time

SIZES = (16384, 65536, 262144, 1048576)
QUICK_SIZES = (16384, 65536, 262144)
RATIO_TARGET = 5.0
RUNS = 3


def _commands(ctx, R, trace, out):
    b = ctx.bin
    return [
        ("`tracy-info`", [R.need(b("tracy-info")), trace]),
        ("`tracy-info --verify`", [b("tracy-info"), "--verify", trace]),
        ("`tracy-json`", [R.need(b("tracy-json")), "-o", out + ".json", trace]),
        ("`tracy-csv`", [R.need(b("tracy-csv")), "-o", out + ".csv", trace]),
        ("`tracy-csv --stats`", [b("tracy-csv"), "--stats", "-o", out + ".csv", trace]),
        ("`tracy-sql -o`", [R.need(b("tracy-sql")), "-o", out + ".sqlite", trace]),
        ("`tracy-export -f folded`", [R.need(b("tracy-export")), "-f", "folded",
                                      "-o", out + ".folded", trace]),
        ("`tracy-export -f html`", [b("tracy-export"), "-f", "html", "-o", out + ".html",
                                    trace]),
        ("`tracy-diff` (the trace against itself)", [R.need(b("tracy-diff")), "-o",
                                                      out + ".diff", trace, trace]),
        ("`tracy-cut`", [R.need(b("tracy-cut")), "-q", "-f", "-o", out + ".cut.tracy",
                         trace]),
        ("`tracy-merge`", [R.need(b("tracy-merge")), "-q", "-f", "-o",
                           out + ".merge.tracy", trace]),
    ]


def _best_wall(R, cmd):
    best = None
    for _ in range(RUNS):
        t0 = time.monotonic()
        R.run(cmd, timeout=900)
        w = time.monotonic() - t0
        best = w if best is None or w < best else best
    return best


def section(ctx, rep, R):
    sizes = QUICK_SIZES if ctx.quick else SIZES
    gen = R.need(os.path.join(ctx.build, "tools", "tracegen"))
    out = os.path.join(ctx.work, "streams-out")
    traces = {}
    for n in sizes:
        traces[n] = os.path.join(ctx.work, f"streams-{n}.tracy")
        R.run([gen, "-f", "-t", str(n), "-z", str(n), "-d", "1", "-o", traces[n]],
              timeout=900, what="tracegen")
    rep.add("## 12. Readers and the number of streams\n")
    rep.add("A long-running server that starts a thread per request writes a trace of "
            "many streams. `build/tools/tracegen -t N -z N -d 1`: one zone on each of N "
            "threads of one process (" + ", ".join(
                f"{n:,} threads: {os.path.getsize(traces[n]) / 1048576:.1f} MiB"
                for n in sizes) + "). Wall time best of 3, peak RSS from "
            "`/usr/bin/time -v`; `x4` is the ratio of a size's figure to the previous "
            "size's (4 times the streams): linear is 4, quadratic 16. Target: every "
            "ratio at most 5 (time and memory). What a reader holds per stream is "
            "documented in FORMAT.md (*Limits*).\n")
    header = ["reader"] + [f"{n:,} streams" for n in sizes] + [
        "largest x4 (time)", "largest x4 (memory)", "status"]
    rows = []
    for k, (label, _) in enumerate(_commands(ctx, R, traces[sizes[0]], out)):
        times, rss = [], []
        for n in sizes:
            cmd = _commands(ctx, R, traces[n], out)[k][1]
            R.log(f"section 12: {label} {n}")
            _, kib = R.time_v(cmd)
            times.append(_best_wall(R, cmd))
            rss.append(kib)
        tr = max(times[i + 1] / max(times[i], 1e-3) for i in range(len(sizes) - 1))
        mr = max(rss[i + 1] / rss[i] for i in range(len(sizes) - 1))
        ok = tr <= RATIO_TARGET and mr <= RATIO_TARGET
        why = (f"{label}: time x{tr:.1f}, memory x{mr:.1f} per 4x streams"
               if not ok else "")
        cells = [f"{t:.2f} s, {R.mib(m):.1f} MiB" for t, m in zip(times, rss)]
        rows.append([label] + cells + [f"{tr:.1f}", f"{mr:.1f}",
                                       rep.status(12, label + " x4 ratio", ok, why)])
    rep.table(header, rows)
    for n in sizes:
        os.unlink(traces[n])
    for ext in (".json", ".csv", ".sqlite", ".folded", ".html", ".diff", ".cut.tracy",
                ".merge.tracy"):
        if os.path.exists(out + ext):
            os.unlink(out + ext)
