"""sec_drop.py -- section 11 of make bench: the cost of a zone through the
Tracy drop-in headers (tracy/Tracy.hpp, tracy/TracyC.h) against
LT_ZONE_SCOPED.

build/bench/drop_bench runs ZONES zones of one kind, connected to a
capture-release, under callgrind; each kind runs with two loop counts and the
difference in instructions divided by the difference in zones is the cost of
one zone (begin and end, the sender's share of shipping them included),
whatever the start-up costs. run.py calls section(ctx, rep, run)."""
import os

ZONES = (100000, 200000)
QUICK_ZONES = (20000, 40000)
TARGET = 1.01  # a drop-in zone may cost at most 1% more than LT_ZONE_SCOPED

# (mode, binary, what, reference mode: None for a reference row itself)
ROWS = [
    ("lt", "drop_bench", "`LT_ZONE_SCOPED(\"zone\")` (C++)", None),
    ("ZoneScoped", "drop_bench", "`ZoneScoped`", "lt"),
    ("ZoneScopedN", "drop_bench", "`ZoneScopedN(\"zone\")`", "lt"),
    ("ZoneNamedN", "drop_bench", "`ZoneNamedN(z, \"zone\", true)`", "lt"),
    ("lt_c", "drop_bench", "`LT_ZONE_SCOPED(\"zone\")` (C)", None),
    ("TracyCZoneN", "drop_bench", "`TracyCZoneN(ctx, \"zone\", 1)` ... `TracyCZoneEnd(ctx)` (C)",
     "lt_c"),
    ("ZoneScopedN", "drop_bench_off", "`ZoneScopedN(\"zone\")` without `TRACY_ENABLE`", None),
    ("empty", "drop_bench", "the loop and call alone (no zone)", None),
]


def per_zone(run, ctx, exe, mode, zones, port):
    env = dict(ctx.env, TRACY_PORT=port)
    env.pop("TRACY_ADDR", None)
    ins = [run.callgrind([exe, mode, str(n)], env, ctx.work) for n in zones]
    return (ins[1] - ins[0]) / (zones[1] - zones[0])


def section(ctx, rep, run):
    rep.add("## 11. Tracy drop-in headers: cost of a zone\n")
    rep.add("Instructions per zone (begin and end) under `valgrind --tool=callgrind`, "
            "connected to `capture-release`: `build/bench/drop_bench MODE N` for two "
            "values of N, the difference in instructions over the difference in zones "
            "(start-up and registration cancel out; the sender thread's work per zone "
            "is included). The loop's own cost is in the last row. `drop_bench_off` is "
            "the same program built without `TRACY_ENABLE`.\n")
    zones = QUICK_ZONES if ctx.quick else ZONES
    rows, got = [], {}
    d = run.Daemon(ctx, os.path.join(ctx.work, "drop_bench.tracy"), ["-n", "1000000"])
    try:
        for mode, binary, what, ref in ROWS:
            exe = ctx.bench_bin(binary)
            try:
                run.need(exe)
                run.log(f"drop-in zone cost: {binary} {mode}")
                ins = per_zone(run, ctx, exe, mode, zones, d.port)
            except run.NA as e:
                rows.append([what, rep.not_available(11, f"{binary} {mode}", str(e)), "-", "-"])
                continue
            if binary == "drop_bench":
                got[mode] = ins
            if ref is None:
                rows.append([what, f"{ins:.2f}", "(reference)" if mode.startswith("lt") else "-",
                             "-"])
                continue
            ratio = ins / got[ref] if got.get(ref) else None
            status = rep.status(11, f"{what}: {ratio:.3f}x {ref}", ratio <= TARGET, "") \
                if ratio else "n/a"
            rows.append([what, f"{ins:.2f}", f"{ratio:.3f}x" if ratio else "n/a", status])
    finally:
        d.stop()
        d.kill()
    rep.table(["zone through", "instructions per zone", "vs `LT_ZONE_SCOPED` in the same "
               f"language (target <= {TARGET:.2f}x)", "status"], rows)
