"""sec_diff.py -- section 9 of `make bench`: tracy-diff's detection rate,
false positives and speed (issue 15).

Called from bench/run.py (which is __main__ and provides NA, run, time_v,
need and log). A generated workload of 200 Python functions runs under
`python -m tracy`; the "new" variant gives one of them 10% more loop
iterations. Each comparison takes fresh runs, interleaved base/new so that
the machine's drift falls on both sides.
"""
import json
import os
import re
import statistics
import subprocess

import __main__ as bench

NFUNCS = 200
SLOW = 137          # the function made slower in the new variant
SLOW_FACTOR = 1.10  # its loop iterations
REPS = 300          # calls of every function per run
COMPARISONS = 20
RUNS_PER_SIDE = 5


def workload_source(slow):
    out = []
    for k in range(NFUNCS):
        n = 60 + (k * 37) % 160
        if k == SLOW:
            n = 200
            if slow:
                n = round(n * SLOW_FACTOR)
        out.append(f"def w{k:03d}():\n    s = 0\n    for i in range({n}):\n"
                   f"        s += i * i\n    return s\n")
    out.append("FUNCS = [" + ", ".join(f"w{k:03d}" for k in range(NFUNCS)) + "]\n")
    out.append(f"def main():\n    for r in range({REPS}):\n        for f in FUNCS:\n"
               "            f()\n")
    out.append("main()\n")
    return "\n".join(out)


class Workload:
    """The workload at one path (as a CI job keeps its sources at one
    place), switched between its base and new variants."""

    def __init__(self, ctx):
        self.dir = os.path.join(ctx.work, "diff")
        os.makedirs(self.dir, exist_ok=True)
        self.path = os.path.join(self.dir, "work.py")
        self.src = {False: workload_source(False), True: workload_source(True)}
        self.env = dict(ctx.env)
        self.env["TRACY_PORT"] = "0"  # a daemon of its own per run
        self.n = 0

    def run(self, slow):
        with open(self.path, "w") as f:
            f.write(self.src[slow])
        self.n += 1
        out = os.path.join(self.dir, f"run{self.n}.tracy")
        if os.path.exists(out):
            os.unlink(out)
        bench.run([bench.PY, "-m", "tracy", "-o", out, self.path], env=self.env,
                  cwd=self.dir, timeout=300, what="workload under python -m tracy")
        return out


def diff(ctx, base, new):
    """tracy-diff's JSON report and exit code at the default settings."""
    cmd = [ctx.bin("tracy-diff"), "-f", "json"]
    for b in base:
        cmd += ["-b", b]
    for n in new:
        cmd += ["-n", n]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode not in (0, 1):
        raise bench.NA(f"tracy-diff exited {p.returncode}: {bench.last_line(p.stderr)}")
    rep = json.loads(p.stdout)
    if (p.returncode == 1) != (rep["summary"]["regressions"] > 0):
        raise bench.NA("tracy-diff's exit code disagrees with its report")
    return rep


def regressions(rep):
    return [r["name"] for r in rep["rows"] if r["status"] == "regression"]


def slow_row(rep):
    for r in rep["rows"]:
        if r["kind"] == "function" and r["name"] == f"w{SLOW:03d}":
            return r
    return None


def comparisons(ctx, w, slow):
    """COMPARISONS comparisons of fresh runs; each gives the report with
    RUNS_PER_SIDE runs a side and the one of the first run of each side."""
    out = []
    for i in range(COMPARISONS):
        base, new = [], []
        for _ in range(RUNS_PER_SIDE):
            base.append(w.run(False))
            new.append(w.run(slow))
        out.append((diff(ctx, base, new), diff(ctx, base[:1], new[:1])))
        for f in base + new:
            os.unlink(f)
        bench.log(f"diff: {'A/B' if slow else 'A/A'} comparison {i + 1}/{COMPARISONS}")
    return out


def detection_table(ctx, rep, w):
    ab = comparisons(ctx, w, True)
    aa = comparisons(ctx, w, False)
    name = f"w{SLOW:03d}"
    rows = []
    for k, label in ((0, f"{RUNS_PER_SIDE} runs a side (default test: Student's t on per-run "
                         "medians, Holm over the rows)"), (1, "1 run a side (Mann-Whitney on per-call durations)")):
        found = sum(name in regressions(r[k]) for r in ab)
        others = sum(len([n for n in regressions(r[k]) if n != name]) for r in ab)
        false_aa = sum(len(regressions(r[k])) for r in aa)
        changes = [slow_row(r[k])["p50_change_rel"] for r in ab if slow_row(r[k])]
        raw = [slow_row(r[k])["p50_change_rel_raw"] for r in ab if slow_row(r[k])]
        drift = [r[k]["drift"] for r in aa]
        pvals = [slow_row(r[k])["p_adjusted"] for r in ab if slow_row(r[k])]
        closest = max([abs(x["p50_change_rel"]) for r in aa for x in r[k]["rows"]
                       if x["kind"] == "function" and x.get("test") and x["p_adjusted"] < 0.05
                       and x["status"] == "unchanged"] or [0])
        target = k == 0
        st_found = rep.status(9, f"slowed function flagged in {found}/{COMPARISONS}",
                              found >= 19) if target else "-"
        st_aa = rep.status(9, f"{false_aa} regressions in {COMPARISONS} A/A comparisons",
                           false_aa == 0) if target else "-"
        rows.append([label, f"{found}/{COMPARISONS}", st_found, str(others),
                     f"{false_aa}", st_aa,
                     f"{statistics.median(changes) * 100:+.1f}% "
                     f"({min(changes) * 100:+.1f}..{max(changes) * 100:+.1f})",
                     f"{statistics.median(raw) * 100:+.1f}%",
                     f"{statistics.median(pvals):.1g} ({max(pvals):.1g})",
                     f"{closest * 100:.1f}%",
                     f"{(min(drift) - 1) * 100:+.1f}..{(max(drift) - 1) * 100:+.1f}%"])
    rep.table(["comparison", f"`{name}` flagged (target >= 19/20)", "status",
               "other rows flagged (A/B)", "regressions in 20 A/A (target 0)", "status",
               f"change of `{name}` against drift: median (range)", "raw change (median)",
               f"adjusted p-value of `{name}`: median (largest)",
               "A/A: largest change of a significant row not flagged", "drift seen in A/A"], rows)


def speed_table(ctx, rep):
    gen = bench.need(os.path.join(ctx.build, "tools", "tracegen"))
    exe = bench.need(ctx.bin("tracy-diff"))
    sizes = (1_000_000, 10_000_000) if not ctx.quick else (100_000, 1_000_000)
    res = {}
    for z in sizes:
        base = os.path.join(ctx.work, f"diff-base-{z}.tracy")
        new = os.path.join(ctx.work, f"diff-new-{z}.tracy")
        shape = ["-z", str(z), "-t", "4", "-d", "8", "-l", "40"]
        bench.log(f"diff: generating two traces of {z:,} zones")
        bench.run([gen, "-f", "-o", base] + shape, timeout=900)
        bench.run([gen, "-f", "-o", new, "--slow", "7:30"] + shape, timeout=900)
        best = None
        for _ in range(3):
            wall, rss = time_v_any(base, new, exe)
            best = (wall, rss) if best is None or wall < best[0] else best
        res[z] = best
        os.unlink(base)
        os.unlink(new)
    small, big = res[sizes[0]], res[sizes[-1]]
    ok_t = rep.status(9, f"two {sizes[-1]:,}-zone traces diffed in {big[0]:.2f} s", big[0] <= 5)
    ok_m = rep.status(9, f"RSS {bench.mib(small[1]):.1f} -> {bench.mib(big[1]):.1f} MiB is not flat",
                      big[1] <= 1.25 * small[1] + 4096)
    rows = [[f"{z:,} zones each", f"{res[z][0]:.2f} s", f"{bench.mib(res[z][1]):.1f} MiB"]
            for z in sizes]
    rep.table(["inputs", "wall (best of 3)", "peak RSS"], rows)
    rep.add(f"Target: {sizes[-1]:,} zones a side in at most 5 s: {ok_t}; memory flat "
            f"(at most 1.25x the smaller pair's RSS + 4 MiB): {ok_m}.\n")


def time_v_any(base, new, exe):
    """(wall, peak RSS KiB) of tracy-diff, which exits 1 on a regression."""
    p = subprocess.run(["/usr/bin/time", "-v", exe, "-m", "1us", base, new],
                       capture_output=True, text=True, timeout=600)
    if p.returncode not in (0, 1):
        raise bench.NA(f"tracy-diff exited {p.returncode}: {bench.last_line(p.stderr)}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", p.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    if not wall or not rss:
        raise bench.NA("/usr/bin/time -v printed no figures")
    h, m, s = wall.groups()
    return int(h or 0) * 3600 + int(m) * 60 + float(s), int(rss.group(1))


def section_diff(ctx, rep):
    rep.add("## 9. tracy-diff\n")
    bench.need(ctx.bin("tracy-diff"))
    bench.need(os.path.join(ctx.build, "python", "tracy"), "Python hook (build/python/tracy)")
    w = Workload(ctx)
    rep.add(
        f"A generated workload of {NFUNCS} Python functions (each a loop of 60 to 220 "
        f"iterations, called {REPS} times per run, about 0.3 s) runs under "
        f"`python -m tracy`; the new variant gives `w{SLOW:03d}` {SLOW_FACTOR - 1:.0%} more "
        f"loop iterations. Each of the {COMPARISONS} A/B and {COMPARISONS} A/A comparisons "
        f"takes {RUNS_PER_SIDE} fresh runs a side (interleaved base/new) and is diffed at "
        "the default settings (threshold 5%, min-time 100us, alpha 0.05 for the whole "
        "report, Holm over its rows); the second row "
        "diffs only the first run of each side, for comparison (a single run cannot tell "
        "a process-wide shift of one function, seen on this machine at up to +20% in about "
        "one function per run, from a change). Drift: the whole run faster or slower, "
        "which tracy-diff measures and divides out.\n")
    detection_table(ctx, rep, w)
    rep.add("Speed: `tracy-diff -m 1us BASE NEW` on two synthetic traces "
            "(`tracegen -t 4 -d 8 -l 40`, the new one with `--slow 7:30`), wall time and "
            "peak RSS from `/usr/bin/time -v`.\n")
    speed_table(ctx, rep)
