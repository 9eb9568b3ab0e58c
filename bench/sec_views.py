"""bench section 8: tracy-export's formats and HTML report on the synthetic
traces of section 5 (1M and 10M zones): speed, peak memory, output size.
Called by run.py with its module (helpers: make_trace, time_v, need, ...)."""
import os
import subprocess

FORMATS = ["pstats", "callgrind", "folded", "speedscope", "html", "lines", "ranks"]
TARGET = 3_000_000        # zones/s, every format
REPORT_LIMIT = 10 << 20   # bytes: the HTML report of 10M zones


def export_once(h, ctx, trace, fmt):
    """(wall s, peak RSS KiB, output bytes) of one export to a real file;
    speedscope (every zone, 75 bytes each) is timed to /dev/null, as section
    5 times tracy-json, and its size counted by a second, untimed run."""
    exe = h.need(ctx.bin("tracy-export"))
    if fmt == "speedscope":
        wall, rss = h.time_v([exe, "-f", fmt, "-o", "/dev/null", trace])
        p = subprocess.Popen([exe, "-f", fmt, "-o", "-", trace], stdout=subprocess.PIPE)
        size = sum(len(chunk) for chunk in iter(lambda: p.stdout.read(1 << 20), b""))
        if p.wait() != 0:
            raise h.NA("tracy-export -f speedscope failed")
        return wall, rss, size
    out = os.path.join(ctx.work, "export." + fmt)
    try:
        wall, rss = h.time_v([exe, "-f", fmt, "-o", out, trace])
        return wall, rss, os.path.getsize(out)
    finally:
        if os.path.exists(out):
            os.unlink(out)


def cell(z, r):
    size = r[2] / (1 << 20)
    return (f"{z / r[0] / 1e6:.2f}M zones/s, {h_mib(r[1]):.1f} MiB RSS, "
            f"{size:.2f} MiB out ({r[0]:.2f} s)")


def h_mib(kib):
    return kib / 1024


def ranks_trace(h, ctx, zones):
    """A trace of `zones` zones from 4 processes (ranks 0..3) with signposts,
    or h.NA."""
    path = os.path.join(ctx.work, f"ranks-{zones}.tracy")
    try:
        exe = h.need(os.path.join(ctx.build, "tools", "tracegen"))
        h.log(f"exports: generating {zones:,} zones of 4 processes")
        h.run([exe, "-f", "-o", path, "-z", str(zones), "-p", "4", "-t", "2", "-d", "8",
               "-l", "40", "--signposts", "200"], timeout=900)
        return path
    except h.NA as e:
        return e


def section_views(ctx, rep, h):
    rep.add("## 8. Exports and the HTML report\n")
    sizes = (100_000, 1_000_000) if ctx.quick else (1_000_000, 10_000_000)
    rep.add(
        "`tracy-export -f FORMAT -o FILE` on the synthetic traces of section 5 "
        "(`tracegen -t 4 -d 8 -l 40`; its locations include line zones, which `-f lines` "
        "reports); `-f ranks` on traces of the same sizes from 4 processes with 200 "
        "signposts (`tracegen -p 4 -t 2 -d 8 -l 40 --signposts 200`), each function and "
        "phase a row with a column per rank. Zones/s = zones / wall time of the whole command "
        "(open, decode, aggregate, write a real file; speedscope, whose output holds "
        "every zone, writes to /dev/null as tracy-json does in section 5); peak RSS from "
        "`/usr/bin/time -v`; out = the file's size. pstats, callgrind, folded, lines, ranks and the report hold "
        "aggregates (their size does not grow with the zones); speedscope holds every "
        "zone (an open and a close event). Memory is flat when the larger trace needs "
        "at most 1.25x the RSS of the smaller one plus 4 MiB. The report must stay "
        f"under {REPORT_LIMIT >> 20} MiB on {sizes[-1]:,} zones.\n")
    traces = {}
    for z in sizes:
        try:
            path = os.path.join(ctx.work, f"synthetic-{z}.tracy")
            if os.path.exists(path):  # section 5's, when it ran
                traces[z] = path
                continue
            h.log(f"exports: generating {z:,} zones")
            traces[z] = h.make_trace(ctx, z)
        except h.NA as e:
            traces[z] = e
    ranked = {z: ranks_trace(h, ctx, z) for z in sizes}
    rows = []
    for fmt in FORMATS:
        res = {}
        for z in sizes:
            trace = (ranked if fmt == "ranks" else traces)[z]
            if isinstance(trace, h.NA):
                res[z] = trace
                continue
            h.log(f"exports: {fmt} on {z:,} zones")
            try:
                res[z] = export_once(h, ctx, trace, fmt)
            except h.NA as e:
                res[z] = e
        cells = [rep.not_available(8, f"{fmt} {z:,} zones", str(res[z]))
                 if isinstance(res[z], h.NA) else cell(z, res[z]) for z in sizes]
        small, big = res[sizes[0]], res[sizes[-1]]
        if isinstance(big, h.NA):
            speed = flat = size_ok = "n/a"
        else:
            rate = sizes[-1] / big[0]
            speed = rep.status(8, f"tracy-export -f {fmt}: {rate / 1e6:.2f}M zones/s < 3M",
                               rate >= TARGET)
            flat = "n/a" if isinstance(small, h.NA) else rep.status(
                8, f"tracy-export -f {fmt}: RSS {h_mib(small[1]):.1f} -> "
                f"{h_mib(big[1]):.1f} MiB is not flat", big[1] <= 1.25 * small[1] + 4096)
            size_ok = "-"
            if fmt == "html":
                size_ok = rep.status(8, f"HTML report of {sizes[-1]:,} zones: "
                                     f"{big[2] / (1 << 20):.2f} MiB > 10 MiB",
                                     big[2] <= REPORT_LIMIT)
        rows.append([f"`{fmt}`"] + cells + [speed, flat, size_ok])
    rep.table(["format"] + [f"{z:,} zones" for z in sizes]
              + [">= 3M zones/s", "memory flat", "report <= 10 MiB"], rows)
    for z in sizes:
        if not isinstance(ranked[z], h.NA) and os.path.exists(ranked[z]):
            os.unlink(ranked[z])
        keep = getattr(ctx, "big_trace", None)
        if not isinstance(traces[z], h.NA) and traces[z] != keep and os.path.exists(traces[z]):
            os.unlink(traces[z])
