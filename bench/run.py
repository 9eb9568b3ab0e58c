#!/usr/bin/python3
"""run.py -- the benchmark suite behind `make bench`; writes BENCHMARKS.md.

    /usr/bin/python3 bench/run.py [--build build] [--out BENCHMARKS.md]
                                  [--quick] [--sections 1,2,3,4,5,6,8]

Sections (issue 6): 1 Python hook overhead, 2 client per-event cost,
3 daemon ingest, 4 file size, 5 converters, 6 reader. Every figure is
measured in this run; ratios compare runs made minutes apart on the same
machine. A component that is missing or fails becomes "n/a (reason)" in the
report instead of stopping the suite. --quick shrinks every size (for trying
the driver; its figures are not the ones to publish).
"""
import argparse
import datetime
import json
import os
import platform
import re
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
PY = "/usr/bin/python3"  # Debian's 3.11: yappi and line_profiler installed
STDLIB_TEST = os.environ.get("BENCH_STDLIB_TEST", "test_configparser")


class NA(Exception):
    """A figure that could not be measured; the message says why."""


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def last_line(text):
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    return lines[-1][:200] if lines else ""


def run(cmd, env=None, timeout=600, cwd=None, stdout=subprocess.PIPE, what=None):
    """Runs cmd; returns the CompletedProcess, raises NA on failure."""
    what = what or os.path.basename(cmd[0])
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, timeout=timeout, stdout=stdout,
                           stderr=subprocess.PIPE, text=True, errors="replace")
    except FileNotFoundError:
        raise NA(f"{what}: not found")
    except subprocess.TimeoutExpired:
        raise NA(f"{what}: timed out after {timeout} s")
    if p.returncode != 0:
        raise NA(f"{what} exited {p.returncode}: {last_line(p.stderr) or last_line(p.stdout)}")
    return p


def need(path, what=None):
    if not os.path.exists(path):
        raise NA(f"{what or os.path.relpath(path, ROOT)} not built")
    return path


def fmt_num(x, digits=3):
    if x is None:
        return "n/a"
    if abs(x) >= 1e9:
        return f"{x / 1e9:.{digits}g}G"
    if abs(x) >= 1e6:
        return f"{x / 1e6:.{digits}g}M"
    if abs(x) >= 1e3:
        return f"{x / 1e3:.{digits}g}k"
    return f"{x:.{digits}g}"


def mib(kib):
    return kib / 1024.0


# ---- measuring tools ------------------------------------------------------

def callgrind(cmd, env, cwd, timeout=900, out="/dev/null", opts=()):
    """Instructions executed by cmd's process (children not followed); the
    profile goes to `out`; `opts`: more callgrind options."""
    vg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + list(opts)
    p = run(vg + cmd, env=env, cwd=cwd, timeout=timeout, stdout=subprocess.DEVNULL,
            what="callgrind " + " ".join(os.path.basename(c) for c in cmd[:3]))
    m = re.search(r"Collected\s*:\s*(\d+)", p.stderr)
    if not m:
        raise NA("callgrind printed no instruction count")
    return int(m.group(1))


PARTS = [("tracy", "libtrace client and hook (`_tracy` extension)"),
         ("python", "interpreter (`python3.11` binary)"),
         ("libc", "C library"),
         ("other", "other (loader, other extensions)")]


def callgrind_parts(profile):
    """Instructions of a callgrind profile grouped by where they ran."""
    p = run(["callgrind_annotate", "--threshold=100", "--auto=no", profile], timeout=300)
    parts = dict.fromkeys(k for k, _ in PARTS)
    parts = {k: 0 for k in parts}
    for line in p.stdout.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        name = m.group(2)
        if re.search(r"libtrace/|pyhook/|_tracy", name):
            key = "tracy"
        elif "libc.so" in name:
            key = "libc"
        elif re.search(r"python3|libpython", name):
            key = "python"
        else:
            key = "other"
        parts[key] += int(m.group(1).replace(",", ""))
    return parts


def hyperfine(cmd, env, cwd, runs, warmup=1, prepare=None, timeout=900):
    """Median wall-clock seconds of cmd over `runs` runs."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    hf = ["hyperfine", "-N", "--style", "none", "--warmup", str(warmup),
          "--runs", str(runs), "--export-json", out]
    if prepare:
        hf += ["--prepare", shlex.join(prepare)]
    try:
        run(hf + [shlex.join(cmd)], env=env, cwd=cwd, timeout=timeout,
            stdout=subprocess.DEVNULL, what="hyperfine")
        with open(out) as f:
            return json.load(f)["results"][0]["median"]
    finally:
        os.unlink(out)


def time_v(cmd, env=None, stdout=subprocess.DEVNULL, timeout=900):
    """(wall seconds, peak RSS KiB) of cmd through /usr/bin/time -v."""
    p = run(["/usr/bin/time", "-v"] + cmd, env=env, stdout=stdout, timeout=timeout,
            what=os.path.basename(cmd[0]))
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", p.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    if not wall or not rss:
        raise NA("/usr/bin/time -v printed no figures")
    h, m, s = wall.groups()
    return int(h or 0) * 3600 + int(m) * 60 + float(s), int(rss.group(1))


class Daemon:
    """capture-release on an ephemeral loopback port."""

    def __init__(self, ctx, out, extra=()):
        exe = need(ctx.bin("capture-release"))
        cmd = [exe, "-o", out, "-f", "-p", "0", "-q"] + list(extra)
        self.out = out
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        self.started = time.monotonic_ns()
        ready, _, _ = select.select([self.p.stdout], [], [], 10)
        line = self.p.stdout.readline() if ready else ""
        m = re.search(r"(\d+)\s*$", line.strip())
        if not m:
            self.kill()
            err = last_line(self.p.stderr.read()) if self.p.poll() is not None else ""
            raise NA(f"capture-release printed no port ({err or 'no output in 10 s'})")
        self.port = m.group(1)
        self.rusage = None
        self.exited_ns = None

    def wait(self, timeout, sample=None):
        """Waits for the daemon to exit (SIGINT after `timeout` s); returns
        its exit code. `sample(pid)` is called every 20 ms meanwhile."""
        deadline = time.monotonic() + timeout
        interrupted = False
        while True:
            pid, status, ru = os.wait4(self.p.pid, os.WNOHANG)
            if pid:
                self.exited_ns = time.monotonic_ns()
                self.rusage = ru
                self.p.returncode = os.waitstatus_to_exitcode(status)
                return self.p.returncode
            if sample:
                sample(self.p.pid)
            if time.monotonic() > deadline:
                if interrupted:
                    self.kill()
                    raise NA("capture-release did not stop on SIGINT")
                self.p.send_signal(signal.SIGINT)
                interrupted = True
                deadline = time.monotonic() + 15
            time.sleep(0.02)

    def stop(self):
        if self.p.poll() is None and self.rusage is None:
            return self.wait(0)
        return self.p.returncode

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def proc_sample(pid):
    """(cpu seconds, VmHWM KiB) of a live process, from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        hwm = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
        return cpu, hwm
    except (OSError, IndexError, ValueError):
        return None


# ---- context ----------------------------------------------------------------

class Ctx:
    def __init__(self, args):
        self.build = os.path.abspath(args.build)
        self.quick = args.quick
        self.workloads = set(args.workloads.split(","))
        self.work = os.path.join(self.build, "bench", "run")
        os.makedirs(self.work, exist_ok=True)
        self.env = dict(os.environ)
        for k in ("TRACY_PORT", "TRACY_ADDR", "TRACY_DROP", "PYTHONPATH", "PYTHONSTARTUP"):
            self.env.pop(k, None)
        self.env["PYTHONHASHSEED"] = "0"
        self.env["PYTHONDONTWRITEBYTECODE"] = "1"
        self.env["PYTHONPATH"] = os.pathsep.join(
            [os.path.join(self.build, "python"), os.path.join(self.build, "bench")])
        self.env["PATH"] = os.path.join(self.build, "bin") + os.pathsep + self.env.get("PATH", "")
        self.stdpy = self.find_stdlib_python()
        self.traces = {}  # workload -> {"tracy": path, "prof": path, ...}

    def bin(self, name):
        return os.path.join(self.build, "bin", name)

    def bench_bin(self, name):
        return os.path.join(self.build, "bench", name)

    def find_stdlib_python(self):
        """The real executable of a CPython 3.11 that ships the test suite
        (callgrind must not run a pyenv shim: it would not follow the exec)."""
        for cand in ("python3", PY):
            try:
                p = subprocess.run([cand, "-c", "import sys, test.libregrtest, test.%s\n"
                                    "print(sys.executable)" % STDLIB_TEST],
                                   capture_output=True, text=True, env=self.env, timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if p.returncode == 0 and p.stdout.strip():
                return os.path.realpath(p.stdout.strip())
        return None


# ---- report -----------------------------------------------------------------

class Report:
    def __init__(self):
        self.parts = []
        self.missed = []   # (section, figure, why)
        self.na = []       # (section, figure, reason)

    def add(self, text):
        self.parts.append(text)

    def table(self, header, rows):
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for r in rows:
            out.append("| " + " | ".join(str(c) for c in r) + " |")
        self.add("\n".join(out) + "\n")

    def status(self, section, figure, ok, why=""):
        if ok is None:
            return "-"
        if ok:
            return "met"
        self.missed.append((section, figure, why))
        return "**missed**"

    def not_available(self, section, figure, reason):
        self.na.append((section, figure, reason))
        return f"n/a ({reason})"


# ---- 1. Python hook overhead -------------------------------------------------

CONFIGS = [
    ("none", "no profiler"),
    ("empty", "empty `PyEval_SetProfile` callback"),
    ("cprofile", "`python -m cProfile -o`"),
    ("yappi", "yappi (wall clock, pstat saved)"),
    ("tracy", "`python -m tracy` (function level)"),
    ("tracy_c", "`python -m tracy --trace-c`"),
    ("tracy_pl", "`python -m tracy -p -l` (region)"),
]
HOOK_TARGETS = {("fib", "tracy"): 1.6, ("mixed", "tracy"): 1.10}


class Workload:
    def __init__(self, name, title, py, target):
        self.name, self.title, self.py, self.target = name, title, py, target

    def command(self, ctx, config, out):
        """The command line of one configuration; `out` prefix for files."""
        py, t = self.py, self.target
        if config == "none":
            return [py] + t
        if config in ("empty", "yappi"):
            return [py, os.path.join(BENCH, "runwith.py"), config] + t
        if config == "cprofile":
            return [py, "-m", "cProfile", "-o", out + ".prof"] + t
        flags = {"tracy": [], "tracy_c": ["--trace-c"], "tracy_pl": ["-p", "-l"]}[config]
        return [py, "-m", "tracy", "-o", out + ".own.tracy"] + flags + t


def compile_workloads():
    """Byte-compiles bench/workloads (region.py is imported by the others):
    the runs set PYTHONDONTWRITEBYTECODE, and compiling the module in every
    run would add the compiler's own start-up (the AST types) to every
    measured figure, with or without a profiler."""
    try:
        run([PY, "-m", "compileall", "-q", "--invalidation-mode", "checked-hash",
             os.path.join(BENCH, "workloads")], what="compileall")
    except NA as e:
        log(f"workloads not byte-compiled ({e}): their runs compile region.py")


def workloads(ctx):
    wl = [Workload("fib", "recursive fib(25)", PY,
                   [os.path.join(BENCH, "workloads", "fib.py")]),
          Workload("mixed", "mixed (JSON, regex, sorting, classes, generators)", PY,
                   [os.path.join(BENCH, "workloads", "mixed.py")])]
    if ctx.stdpy:
        wl.append(Workload("stdlib", f"stdlib `python -m test {STDLIB_TEST}`", ctx.stdpy,
                           ["-m", "test", "-q", STDLIB_TEST]))
    return [w for w in wl if w.name in ctx.workloads]


def tracy_available(ctx):
    if not os.path.isdir(os.path.join(ctx.build, "python", "tracy")):
        raise NA("Python hook not built (build/python/tracy)")
    need(ctx.bin("capture-release"))


def measure_config(ctx, w, config, runs):
    """(instructions, median seconds) of one workload under one config."""
    out = os.path.join(ctx.work, f"{w.name}-{config}")
    env = dict(ctx.env)
    if config == "yappi":
        env["BENCH_YAPPI_OUT"] = out + ".yappi.prof"
    if config == "empty":
        import glob
        if not glob.glob(os.path.join(ctx.build, "bench", "emptyprof*.so")):
            raise NA("build/bench/emptyprof not built")
    cmd = w.command(ctx, config, out)
    keep = out + ".callgrind" if config in ("none", "tracy") else "/dev/null"
    if not config.startswith("tracy"):
        ins = callgrind(cmd, env, ctx.work, out=keep)
        wall = hyperfine(cmd, env, ctx.work, runs)
        return ins, wall
    tracy_available(ctx)
    for f in (out + ".tracy", out + ".own.tracy"):
        if os.path.exists(f):
            os.unlink(f)
    # Callgrind follows no child: the daemon runs natively beside it.
    d = Daemon(ctx, out + ".tracy")
    env["TRACY_PORT"] = d.port
    try:
        ins = callgrind(cmd, env, ctx.work, out=keep)
        d.wait(30)
    finally:
        d.kill()
    # File size comes from a native run: under callgrind the program runs some
    # 50x slower, so its timestamp deltas, and the file, come out larger.
    native = out + ".native.tracy"
    d = Daemon(ctx, native)
    env["TRACY_PORT"] = d.port
    try:
        run(cmd, env=env, cwd=ctx.work, what=f"{w.name} {config} (native)")
        d.wait(30)
    finally:
        d.kill()
    ok = os.path.exists(native) and os.path.getsize(native) > 0
    ctx.traces.setdefault(w.name, {})[config] = native if ok else pick_trace(out)
    # Wall clock: one daemon for all runs, stopped by SIGINT afterwards.
    d = Daemon(ctx, out + ".hf.tracy", ["-n", "1000000"])
    env["TRACY_PORT"] = d.port
    try:
        wall = hyperfine(cmd, env, ctx.work, runs, prepare=["rm", "-f", out + ".own.tracy"])
        d.wait(0)
    finally:
        d.kill()
        if os.path.exists(out + ".hf.tracy"):
            os.unlink(out + ".hf.tracy")
    return ins, wall


def pick_trace(out):
    """The trace of the callgrind run: the daemon's file, or the one the hook
    wrote itself if it started its own daemon."""
    for f in (out + ".tracy", out + ".own.tracy"):
        if os.path.exists(f) and os.path.getsize(f) > 0:
            return f
    return None


def section_hook(ctx, rep):
    rep.add("## 1. Python hook overhead\n")
    runs = 3 if ctx.quick else 7
    rep.add(
        "Each configuration runs the same workload. *Instructions* are counted by "
        "`valgrind --tool=callgrind` for the traced Python process (repeatable whatever "
        "the load; the capture daemon runs outside callgrind, on its own core, as "
        "it would in real use; interpreter start included). *Wall* is the hyperfine "
        f"median of {runs} runs after one warm-up. Ratios: 1.00 = the same workload "
        "with no profiler, measured in this run. The tracy rows ship every event to "
        "a real `capture-release` on loopback. `-p -l` records line-level events only "
        "inside a small `with tracy.profile():` region of the workload (the stdlib "
        "test has no region: there `-p -l` records nothing and shows the cost of "
        "the idle hook).\n")
    if not ctx.stdpy:
        rep.add("stdlib workload: "
                + rep.not_available(1, "stdlib workload",
                                    "no CPython 3.11 with the test suite found") + "\n")
    compile_workloads()
    for w in workloads(ctx):
        log(f"hook overhead: {w.name}")
        rep.add(f"### {w.title}\n\nInterpreter: `{w.py}` "
                f"({python_version(w.py)}); command: `{' '.join(os.path.basename(a) if a.startswith(ROOT) else a for a in w.target)}`\n")
        results = {}
        for config, label in CONFIGS:
            t0 = time.monotonic()
            try:
                results[config] = measure_config(ctx, w, config, runs)
                ins, wall = results[config]
                log(f"  {config}: {ins / 1e6:.1f}M instr, {wall * 1e3:.1f} ms "
                    f"({time.monotonic() - t0:.0f} s)")
            except NA as e:
                results[config] = e
                log(f"  {config}: n/a ({e})")
        try:
            brk = hook_breakdown(ctx, w)
        except NA as e:
            brk = None
            log(f"  breakdown: n/a ({e})")
        hook_table(ctx, w, rep, results, brk)
        if brk:
            rep.add(f"Where the extra instructions of `python -m tracy` (function level) "
                    f"go, from the callgrind profiles of the two runs above "
                    f"({brk['events']:,} events in the trace; the producing thread and the "
                    f"client's sender thread both count):\n")
            rep.table(["part", "no profiler", "python -m tracy", "difference", "per event"],
                      brk["rows"])


def hook_table(ctx, w, rep, results, brk):
    base = results.get("none")
    base_i, base_w = base if isinstance(base, tuple) else (None, None)
    rows = []
    for config, label in CONFIGS:
        r = results[config]
        if isinstance(r, NA):
            rows.append([label, rep.not_available(1, f"{w.name}: {label}", str(r)),
                         "", "", "", target_cell(w.name, config), "n/a"])
            continue
        ins, wall = r
        ri = ins / base_i if base_i else None
        rw = wall / base_w if base_w else None
        tgt = HOOK_TARGETS.get((w.name, config))
        why = ""
        if brk:
            why = (f"per event, the hook and client cost {brk['tracy']:.0f} instructions "
                   f"(sender thread included) and the interpreter itself "
                   f"{brk['python']:+.0f} more than without a hook (breakdown under the "
                   f"{w.name} table)")
        st = "-" if tgt is None or ri is None else rep.status(
            1, f"{w.name}: {label} instruction ratio {ri:.3f} > {tgt}", ri <= tgt, why)
        rows.append([label, f"{ins / 1e6:,.1f}M", f"{ri:.3f}" if ri else "n/a",
                     f"{wall * 1e3:,.1f} ms", f"{rw:.2f}" if rw else "n/a",
                     target_cell(w.name, config), st])
    rep.table(["configuration", "instructions", "ratio (instr)", "wall median",
               "ratio (wall)", "target", "status"], rows)


def hook_breakdown(ctx, w):
    """Where the extra instructions of `python -m tracy` went, against the
    run with no profiler (both callgrind profiles of this run)."""
    base = os.path.join(ctx.work, f"{w.name}-none.callgrind")
    prof = os.path.join(ctx.work, f"{w.name}-tracy.callgrind")
    trace = ctx.traces.get(w.name, {}).get("tracy")
    if not (os.path.exists(base) and os.path.exists(prof) and trace):
        raise NA("no profiles")
    b, t = callgrind_parts(base), callgrind_parts(prof)
    events = trace_info(ctx, trace)["n_events"]
    if not events:
        raise NA("the trace holds no events")
    extra = sum(t.values()) - sum(b.values())
    rows = []
    for key, label in PARTS:
        d = t[key] - b[key]
        rows.append([label, f"{b[key] / 1e6:,.1f}M", f"{t[key] / 1e6:,.1f}M",
                     f"{d / 1e6:+,.1f}M", f"{d / events:+.1f}"])
    rows.append(["**total**", f"{sum(b.values()) / 1e6:,.1f}M", f"{sum(t.values()) / 1e6:,.1f}M",
                 f"{extra / 1e6:+,.1f}M", f"{extra / events:+.1f}"])
    return {"rows": rows, "events": events, "tracy": (t["tracy"] - b["tracy"]) / events,
            "python": (t["python"] - b["python"]) / events}


def target_cell(wname, config):
    t = HOOK_TARGETS.get((wname, config))
    return f"<= {t}" if t else ""


def python_version(py):
    try:
        return "Python " + run([py, "-c", "import platform; print(platform.python_version())"],
                               timeout=30).stdout.strip()
    except NA:
        return "unknown version"


# ---- 2. Client per-event cost -------------------------------------------------

def section_client(ctx, rep):
    rep.add("## 2. C client API: cost per event on the producing thread\n")
    rows = []
    exe = ctx.bench_bin("client_bench")
    try:
        need(exe)
        log("client per-event cost: client_bench")
        env = dict(ctx.env)
        d = Daemon(ctx, os.path.join(ctx.work, "client_bench.tracy"), ["-n", "1000000"])
        env["TRACY_PORT"] = d.port
        try:
            out = run([exe], env=env, timeout=300).stdout
        finally:
            d.stop()
            d.kill()
        ns = parse_ns_per_event(out)
        rows.append(["`bench/client_bench`: ns per event", f"{ns:.2f} ns", "<= 15 ns",
                     rep.status(2, f"client per-event cost {ns:.2f} ns > 15 ns", ns <= 15,
                                WHY.get("client", ""))])
        rep.add("Output of `build/bench/client_bench`:\n\n```\n" + out.strip()[:3000] + "\n```\n")
    except NA as e:
        rows.append(["`bench/client_bench`: ns per event",
                     rep.not_available(2, "client_bench", str(e)), "<= 15 ns", "n/a"])
    ing = ctx.__dict__.get("ingest1")
    if ing:
        rows.append(["`ingest_load`, 1 client: producer loop ns per event (waits for "
                     "the daemon included, so an upper bound)", f"{ing['ns_per_event']:.2f} ns",
                     "(context)", "-"])
    rep.table(["figure", "measured", "target", "status"], rows)


def parse_ns_per_event(out):
    """The figure client_bench reports: the first number before 'ns' on a
    line that mentions 'event' (or the first 'ns' figure at all)."""
    lines = out.splitlines()
    for pick in (lambda l: "event" in l.lower(), lambda l: True):
        for line in lines:
            if pick(line):
                m = re.search(r"([\d.]+)\s*ns\b", line)
                if m:
                    return float(m.group(1))
    raise NA("client_bench printed no 'N ns' figure")


# ---- 3. Daemon ingest ------------------------------------------------------------

INGEST_MEM_MIB = 64


def ingest_run(ctx, clients, total):
    per = max(2, (total // clients) // 2 * 2)
    out = os.path.join(ctx.work, f"ingest-{clients}.tracy")
    d = Daemon(ctx, out, ["-n", str(clients), "-m", str(INGEST_MEM_MIB)])
    env = dict(ctx.env)
    env["TRACY_PORT"] = d.port
    peak = {"hwm": 0, "cpu": 0.0}

    def sample(pid):
        s = proc_sample(pid)
        if s:
            peak["cpu"] = max(peak["cpu"], s[0])
            peak["hwm"] = max(peak["hwm"], s[1])
    try:
        load = subprocess.Popen([ctx.bench_bin("ingest_load"), str(clients), str(per)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        while load.poll() is None:
            sample(d.p.pid)
            time.sleep(0.02)
        lout, lerr = load.communicate()
        rc = d.wait(120, sample)
    finally:
        d.kill()
    if load.returncode != 0:
        raise NA(f"ingest_load exited {load.returncode}: {last_line(lerr) or last_line(lout)}")
    if rc != 0:
        raise NA(f"capture-release exited {rc}: {last_line(d.p.stderr.read())}")
    res = json.loads(lout.strip().splitlines()[-1])
    ru = d.rusage
    cpu = ru.ru_utime + ru.ru_stime
    secs = (d.exited_ns - res["start_ns"]) / 1e9
    produced = clients * (per // 2) * 2
    info = trace_info(ctx, out, decode=True)
    os.unlink(out)
    return {
        "clients": clients, "events": produced, "seconds": secs,
        "rate": produced / secs, "cpu": cpu, "cores": cpu / secs,
        "rss_kib": max(ru.ru_maxrss, peak["hwm"]), "sent": res["sent"], "lost": res["lost"],
        "in_file": info.get("user_zones", 0) * 2, "ns_per_event": res["ns_per_event"],
        "client_cores": res.get("client_cpu_s", 0.0) / secs,
        "file_bytes": info["file_size"],
    }


def section_ingest(ctx, rep):
    rep.add("## 3. Capture daemon ingest\n")
    total = 4_000_000 if ctx.quick else 100_000_000
    rep.add(
        f"`build/bench/ingest_load N E` forks N client processes (C client API, "
        f"loopback), which connect, wait at a common start line, then record E/2 zone "
        f"begin/end pairs each as fast as they can; {total / 1e6:.0f}M events in all "
        f"per row. `capture-release -p 0 -n N -m {INGEST_MEM_MIB}` writes the file. "
        "Events/s = events / (daemon exit - start line): everything written. Daemon CPU "
        "= utime+stime (wait4 rusage, cross-checked with /proc/PID/stat samples) over "
        "the same interval; clients' CPU is what all client processes used over it "
        "(getrusage of the children); peak RSS = VmHWM / ru_maxrss. *In file* "
        "counts the zones decoded from the file (x2) against the events recorded; "
        "*dropped* is what the clients counted as lost. The load generator and the "
        "daemon share this machine's 2 cores.\n")
    rows = []
    try:
        need(ctx.bench_bin("ingest_load"))
        need(ctx.bin("capture-release"))
        need(ctx.bench_bin("traceinfo"))
    except NA as e:
        rows.append(["all", rep.not_available(3, "ingest", str(e))] + [""] * 6)
        rep.table(["clients", "events/s", "daemon CPU (cores)", "clients' CPU (cores)",
                   "daemon peak RSS", "events recorded / in file", "dropped", "status"], rows)
        return
    for n in (1, 8, 64):
        log(f"ingest: {n} clients")
        try:
            r = ingest_run(ctx, n, total)
        except NA as e:
            rows.append([str(n), rep.not_available(3, f"ingest {n} clients", str(e))]
                        + [""] * 6)
            continue
        if n == 1:
            ctx.ingest1 = r
        limit = 64 + INGEST_MEM_MIB
        checks = []
        ok_lost = r["in_file"] == r["events"] and r["lost"] == 0
        checks.append("nothing lost: " + rep.status(
            3, f"{n} clients: events lost ({r['in_file']:,} of {r['events']:,} in the "
            f"file, {r['lost']:,} dropped)", ok_lost, WHY.get("lost", "")))
        checks.append("RSS: " + rep.status(
            3, f"{n} clients: daemon RSS {mib(r['rss_kib']):.1f} MiB >= {limit} MiB",
            mib(r["rss_kib"]) < limit, WHY.get("rss", "")))
        if n == 8:
            checks.append("events/s: " + rep.status(
                3, f"8 clients: {r['rate'] / 1e6:.2f}M events/s < 20M", r["rate"] >= 20e6,
                WHY.get("ingest_rate", "")))
            checks.append("daemon CPU: " + rep.status(
                3, f"8 clients: daemon used {r['cores']:.2f} cores > 1", r["cores"] <= 1.0,
                WHY.get("ingest_cpu", "")))
        rows.append([str(n), f"{r['rate'] / 1e6:.2f}M" + (" (target >= 20M)" if n == 8 else ""),
                     f"{r['cores']:.2f}" + (" (target <= 1)" if n == 8 else ""),
                     f"{r['client_cores']:.2f}",
                     f"{mib(r['rss_kib']):.1f} MiB (target < {limit})",
                     f"{r['events']:,} / {r['in_file']:,}", f"{r['lost']:,}",
                     "; ".join(checks)])
        log(f"  {r['rate'] / 1e6:.2f}M ev/s, {r['cores']:.2f} cores, "
            f"{mib(r['rss_kib']):.1f} MiB, in file {r['in_file']}/{r['events']}")
    rep.table(["clients", "events/s", "daemon CPU (cores)", "clients' CPU (cores)",
               "daemon peak RSS", "events recorded / in file", "dropped", "status"], rows)


# ---- 4. File size --------------------------------------------------------------

def trace_info(ctx, path, decode=False):
    exe = need(ctx.bench_bin("traceinfo"))
    p = run([exe] + (["--decode"] if decode else []) + [path], timeout=600)
    return json.loads(p.stdout.strip().splitlines()[-1])


def section_size(ctx, rep):
    rep.add("## 4. File size\n")
    rep.add(
        "The traces come from one native run of each workload (every event shipped "
        "to the daemon; the callgrind runs of section 1 are not used, because a "
        "program slowed down some 50x by callgrind has larger timestamp deltas). Events = records counted by the file's block "
        "descriptors (a zone is two events: begin and end). Chrome JSON is the same "
        "trace through `tracy-json`; `.prof` is what `python -m cProfile -o` wrote "
        "for the same workload (aggregates only, no timeline). Target: at most 2 bytes "
        "per event (issue 2 states it for the call-heavy fib trace; it is applied to "
        "every trace here).\n")
    rows = []
    for w in [x for x in ("fib", "mixed", "stdlib") if x in ctx.workloads]:
        for config, label in (("tracy", "function level"), ("tracy_c", "--trace-c")):
            name = f"{w}, {label}"
            tr = ctx.traces.get(w, {}).get(config)
            if not tr:
                rows.append([name, rep.not_available(4, name, "no trace from section 1")]
                            + [""] * 5)
                continue
            try:
                info = trace_info(ctx, tr)
                size, ev = info["file_size"], info["n_events"]
                if not ev:
                    raise NA("the trace holds no events")
                bpe = size / ev
                js = chrome_json_size(ctx, tr)
                prof = os.path.join(ctx.work, f"{w}-cprofile.prof")
                prof_s = f"{os.path.getsize(prof):,}" if os.path.exists(prof) else "n/a"
                st = rep.status(4, f"{name}: {bpe:.2f} bytes/event > 2", bpe <= 2.0,
                                "" if w == "fib" else WHY["size"])
                rows.append([name, f"{ev:,}", f"{size:,}", f"**{bpe:.2f}**",
                             js if isinstance(js, str) else f"{js:,} ({js / size:.0f}x)",
                             prof_s, "<= 2: " + st])
            except NA as e:
                rows.append([name, rep.not_available(4, name, str(e))] + [""] * 5)
    rep.table(["trace", "events", "bytes", "bytes/event", "Chrome JSON bytes (x larger)",
               "cProfile .prof bytes", "status"], rows)


def chrome_json_size(ctx, trace):
    try:
        exe = need(ctx.bin("tracy-json"))
        out = trace + ".json"
        run([exe, trace, "-o", out], timeout=600)
        size = os.path.getsize(out)
        os.unlink(out)
        return size
    except NA as e:
        return f"n/a ({e})"


# ---- 5. Converters -------------------------------------------------------------

CONVERTERS = [("tracy-csv", 3e6), ("tracy-json", 3e6), ("tracy-sql", 1e6)]


def make_trace(ctx, zones):
    """A synthetic trace of `zones` zones shaped like a profiled program:
    4 threads, nesting up to depth 8, 40 locations, a message per 10k zones."""
    path = os.path.join(ctx.work, f"synthetic-{zones}.tracy")
    exe = need(os.path.join(ctx.build, "tools", "tracegen"))
    run([exe, "-f", "-o", path, "-z", str(zones), "-t", "4", "-d", "8", "-l", "40",
         "--messages", str(max(1, zones // 10000))], timeout=900)
    return path


def convert_once(ctx, tool, trace, keep_db=False):
    exe = need(ctx.bin(tool))
    if tool == "tracy-csv":
        return time_v([exe, trace])
    if tool == "tracy-json":
        return time_v([exe, trace, "-o", "-"])
    db = trace + ".db"
    if os.path.exists(db):
        os.unlink(db)
    try:
        return time_v([exe, trace, "-o", db])
    finally:
        if os.path.exists(db) and not keep_db:
            os.unlink(db)


# Questions asked of the database of the largest trace, and the time each may
# take ("well under a second" for per-name and per-thread questions).
SQL_QUERIES = [
    ("one function by name: calls and total",
     "SELECT count(*), sum(dur) FROM slice WHERE name = 'func_7'", 0.5),
    ("one function by name: its 10 longest calls",
     "SELECT id, ts, dur FROM slice WHERE name = 'func_7' ORDER BY dur DESC LIMIT 10", 0.5),
    ("one thread by name, a 10 ms window",
     "SELECT count(*), sum(s.dur) FROM slice s JOIN thread_track tt ON s.track_id = tt.id"
     " JOIN thread USING(utid) WHERE thread.name = 'worker-2' AND s.ts BETWEEN"
     " (SELECT start_ts FROM trace_bounds) + 100000000 AND"
     " (SELECT start_ts FROM trace_bounds) + 110000000", 0.5),
    ("one thread by name, its top-level zones",
     "SELECT count(*), sum(s.dur) FROM slice s JOIN thread_track tt ON s.track_id = tt.id"
     " JOIN thread USING(utid) WHERE thread.name = 'worker-2' AND s.depth = 0", 1.0),
    ("one thread by name, all its zones",
     "SELECT count(*) FROM slice s JOIN thread_track tt ON s.track_id = tt.id"
     " JOIN thread USING(utid) WHERE thread.name = 'worker-2'", 1.0),
    ("`function_stats`, top 10 by self time",
     "SELECT name, calls, total, self FROM function_stats ORDER BY self DESC LIMIT 10", 0.5),
]


def section_sql_queries(ctx, rep, db, zones):
    import sqlite3
    rep.add(f"Queries on the `tracy-sql -o` database of the {zones:,}-zone trace "
            "(Python's `sqlite3` module, read-only, median of 3 after the export):\n")
    rows = []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        for what, q, limit in SQL_QUERIES:
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                res = con.execute(q).fetchall()
                times.append(time.perf_counter() - t0)
            t = sorted(times)[1]
            rows.append([what, f"{len(res)} rows", f"{t * 1000:.1f} ms", f"<= {limit:g} s",
                         rep.status(5, f"tracy-sql query '{what}' {t:.2f} s > {limit:g} s",
                                    t <= limit)])
    finally:
        con.close()
    rep.table(["query", "result", "time", "target", "status"], rows)


def section_convert(ctx, rep):
    rep.add("## 5. Converters\n")
    sizes = (100_000, 1_000_000) if ctx.quick else (1_000_000, 10_000_000)
    rep.add(
        "Synthetic traces from `build/tools/tracegen -t 4 -d 8 -l 40` (4 threads, zones "
        "nested up to depth 8 over 40 locations, a message per 10k zones). "
        "Zones/s = zones / wall time of the whole command (open, decode, convert, "
        "write); peak RSS from `/usr/bin/time -v`. `tracy-csv` and `tracy-json -o -` "
        "write to /dev/null, `tracy-sql -o` writes a real SQLite file. Memory is "
        "flat when the larger trace needs at most 1.25x the RSS of the smaller one "
        "plus 4 MiB.\n")
    traces = {}
    for z in sizes:
        try:
            log(f"converters: generating {z:,} zones")
            traces[z] = make_trace(ctx, z)
        except NA as e:
            traces[z] = e
    rows = []
    for tool, target in CONVERTERS:
        res = {}
        for z in sizes:
            if isinstance(traces[z], NA):
                res[z] = traces[z]
                continue
            log(f"converters: {tool} on {z:,} zones")
            try:
                res[z] = convert_once(ctx, tool, traces[z], keep_db=z == sizes[-1])
            except NA as e:
                res[z] = e
        cells = []
        for z in sizes:
            r = res[z]
            if isinstance(r, NA):
                cells.append(rep.not_available(5, f"{tool} {z:,} zones", str(r)))
            else:
                cells.append(f"{z / r[0] / 1e6:.2f}M zones/s, {mib(r[1]):.1f} MiB "
                             f"({r[0]:.2f} s)")
        big = res[sizes[-1]]
        small = res[sizes[0]]
        if isinstance(big, NA):
            st = "n/a"
        else:
            rate = sizes[-1] / big[0]
            st = rep.status(5, f"{tool}: {rate / 1e6:.2f}M zones/s < {target / 1e6:.0f}M",
                            rate >= target, WHY.get(tool, ""))
        if isinstance(big, NA) or isinstance(small, NA):
            flat = "n/a"
        else:
            flat = rep.status(5, f"{tool}: RSS {mib(small[1]):.1f} -> {mib(big[1]):.1f} MiB "
                              "is not flat", big[1] <= 1.25 * small[1] + 4096,
                              WHY.get("flat", ""))
        rows.append([f"`{tool}`"] + cells + [f">= {target / 1e6:.0f}M zones/s", st, flat])
    rep.table(["converter"] + [f"{z:,} zones" for z in sizes]
              + ["target", "speed", "memory flat"], rows)
    ctx.big_trace = traces[sizes[-1]] if not isinstance(traces[sizes[-1]], NA) else None
    ctx.big_zones = sizes[-1]
    if ctx.big_trace and os.path.exists(ctx.big_trace + ".db"):
        try:
            section_sql_queries(ctx, rep, ctx.big_trace + ".db", sizes[-1])
        finally:
            os.unlink(ctx.big_trace + ".db")


# ---- 6. Reader -----------------------------------------------------------------

def section_reader(ctx, rep):
    rep.add("## 6. Reader\n")
    rows = []
    trace = getattr(ctx, "big_trace", None)
    try:
        if not trace:
            log("reader: generating a trace")
            ctx.big_zones = 1_000_000 if ctx.quick else 10_000_000
            trace = ctx.big_trace = make_trace(ctx, ctx.big_zones)
        log("reader: traceinfo --decode")
        best = best_cpu = 0
        for _ in range(3):
            info = trace_info(ctx, trace, decode=True)
            best = max(best, info["decoded_events"] / info["decode_seconds"])
            best_cpu = max(best_cpu, info["decoded_events"] / info["decode_cpu_seconds"])
        rows.append([f"`lt_reader_next`, all streams merged ({info['decoded_events']:,} events, "
                     "best of 3, `bench/traceinfo --decode`)",
                     f"{best / 1e6:.1f}M events/s", f"{best_cpu / 1e6:.1f}M events/s",
                     ">= 50M/s (per CPU second)",
                     rep.status(6, f"reader {best_cpu / 1e6:.1f}M events per CPU second < 50M",
                                best_cpu >= 50e6, WHY.get("reader", ""))])
    except NA as e:
        rows.append(["`lt_reader_next` decode pass", rep.not_available(6, "reader", str(e)),
                     "", ">= 50M/s", "n/a"])
    exe = ctx.bench_bin("reader_bench")
    try:
        need(exe)
        log("reader: reader_bench")
        out = run([exe], timeout=600).stdout
        kv = dict(l.split(":", 1) for l in out.splitlines() if ":" in l)
        try:
            rate = float(kv["decode_events_per_s"])
            cpu_rate = float(kv["decode_events_per_cpu_s"])
        except (KeyError, ValueError):
            raise NA("reader_bench printed no decode_events_per_s / _per_cpu_s")
        rows.append([f"`bench/reader_bench` (its own fib-shaped trace, "
                     f"{int(kv.get('events', '0')):,} events)", f"{rate / 1e6:.1f}M events/s",
                     f"{cpu_rate / 1e6:.1f}M events/s", ">= 50M/s (per CPU second)",
                     rep.status(6, f"reader_bench {cpu_rate / 1e6:.1f}M events per CPU "
                                "second < 50M", cpu_rate >= 50e6, WHY.get("reader", ""))])
        rep.add("Output of `build/bench/reader_bench`:\n\n```\n" + out.strip()[:3000] + "\n```\n")
    except NA as e:
        rows.append(["`bench/reader_bench`", rep.not_available(6, "reader_bench", str(e)),
                     "", ">= 50M/s", "n/a"])
    rep.add("Events/s over wall time and over the reading process's CPU time (best of "
            "3 each); the target is judged on the CPU-time rate, which the load of this "
            "shared machine does not move as much (descheduling is left out; caches "
            "shared with other work still count).\n")
    rep.table(["figure", "wall", "CPU", "target", "status"], rows)


# ---- why a target can be missed (shown next to each miss) -----------------------

WHY = {
    "client": "",
    "lost": "the file does not hold every zone the clients recorded",
    "rss": "",
    "ingest_rate": "8 client processes and the daemon share the 2 cores of this "
                   "machine: the producers alone cannot run faster than 2 cores allow",
    "ingest_cpu": "",
    "size": "the 2-byte target is stated for fib's trace, where one location "
            "repeats at regular intervals; this trace has many locations and "
            "irregular gaps between events, which delta encoding and zstd compress less",
    "reader": "",
    "flat": "",
}


# ---- machine, versions, main ---------------------------------------------------

def machine_facts(ctx):
    def cmd(c):
        try:
            return run(c, timeout=30).stdout.strip().splitlines()[0]
        except (NA, IndexError):
            return "n/a"
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    try:
        with open("/etc/debian_version") as f:
            deb = "Debian " + f.read().strip()
    except OSError:
        deb = platform.platform()
    yappi = cmd([PY, "-c", "import importlib.metadata as m; print(m.version('yappi'))"])
    rev = cmd(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    dirty = cmd(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])
    return [
        ("date", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
        ("source", f"git {rev}" + (" (with local changes)" if dirty not in ("", "n/a") else "")),
        ("CPU", f"{cpu}, {os.cpu_count()} cores (shared with other work)"),
        ("memory", f"{mem:.1f} GiB"),
        ("system", f"{deb}, Linux {platform.release()}"),
        ("compiler", cmd(["cc", "--version"])),
        ("Python (fib, mixed)", f"{PY}: {python_version(PY)}"),
        ("Python (stdlib test)", f"{ctx.stdpy}: {python_version(ctx.stdpy)}"
         if ctx.stdpy else "n/a"),
        ("valgrind", cmd(["valgrind", "--version"])),
        ("hyperfine", cmd(["hyperfine", "--version"])),
        ("yappi", yappi),
        ("load average at start", " ".join(f"{x:.2f}" for x in os.getloadavg())),
    ]


SECTIONS = {"1": section_hook, "2": section_client, "3": section_ingest,
            "4": section_size, "5": section_convert, "6": section_reader}
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def section_py(ctx, rep):
    import sec_py  # section 7: the hook on every interpreter (bench/sec_py.py)
    sec_py.R = sys.modules[__name__]
    sec_py.section_py(ctx, rep)


def section_views(ctx, rep):
    import sec_views  # section 8: tracy-export's formats and report
    sec_views.section_views(ctx, rep, sys.modules[__name__])


def section_diff(ctx, rep):
    import sec_diff  # section 9: tracy-diff
    sec_diff.section_diff(ctx, rep)


def section_long(ctx, rep):
    import sec_long  # section 10: tracy-cut, tracy-merge, flight recorder
    sec_long.section(ctx, rep, sys.modules[__name__])


def section_drop(ctx, rep):
    import sec_drop  # section 11: Tracy's macros (libtrace/compat)
    sec_drop.section(ctx, rep, sys.modules[__name__])


def section_streams(ctx, rep):
    import sec_streams  # section 12: readers against the number of streams
    sec_streams.section(ctx, rep, sys.modules[__name__])


def section_serve(ctx, rep):
    import sec_serve  # section 13: tracy-serve's index and viewport answers
    sec_serve.section(ctx, rep, sys.modules[__name__])


def section_page(ctx, rep):
    import sec_page  # section 14: tracy-serve's page in headless Chromium
    sec_page.section(ctx, rep, sys.modules[__name__])


def section_startup(ctx, rep):
    import sec_startup  # section 16: python -m tracy's start-up
    sec_startup.R = sys.modules[__name__]
    sec_startup.section(ctx, rep)


def section_ondemand(ctx, rep):
    import sec_ondemand  # section 15: on-demand capture latency, idle listener
    sec_ondemand.section(ctx, rep, sys.modules[__name__])


SECTIONS.update({"7": section_py, "8": section_views, "9": section_diff,
                 "10": section_long, "11": section_drop, "12": section_streams,
                 "13": section_serve, "14": section_page, "15": section_ondemand,
                 "16": section_startup})
# Ingest runs before the client section, whose table shows a figure of it.
ORDER = ["1", "3", "2", "4", "5", "6", "7", "16", "8", "9", "10", "11", "12", "13", "14",
         "15"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "BENCHMARKS.md"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sections", default=",".join(ORDER))
    ap.add_argument("--workloads", default="fib,mixed,stdlib",
                    help="section 1 workloads to run (section 4 uses their traces)")
    ap.add_argument("--update", action="store_true",
                    help="replace only the chosen sections of --out (and their lines of "
                         "the summary), keep the others; the facts table says so")
    args = ap.parse_args()
    ctx = Ctx(args)
    chosen = set(args.sections.split(","))
    t_start = time.monotonic()
    facts = machine_facts(ctx)
    parts, durations = {}, {}
    rep = Report()
    for s in ORDER:
        if s not in chosen:
            continue
        sub = Report()
        t0 = time.monotonic()
        try:
            SECTIONS[s](ctx, sub)
        except NA as e:
            sub.add(sub.not_available(int(s), f"section {s}", str(e)) + "\n")
        except Exception as e:  # a driver bug must not lose the other sections
            sub.add(sub.not_available(int(s), f"section {s}",
                                      f"driver error: {type(e).__name__}: {e}") + "\n")
            log(f"section {s}: {type(e).__name__}: {e}")
        durations[s] = time.monotonic() - t0
        parts[s] = sub
        rep.missed += sub.missed
        rep.na += sub.na
    facts.append(("load average at end", " ".join(f"{x:.2f}" for x in os.getloadavg())))
    facts.append(("suite duration", f"{(time.monotonic() - t_start) / 60:.1f} min"
                  + (" (--quick: sizes reduced)" if ctx.quick else "")))
    if args.update and os.path.exists(args.out):
        facts, parts, durations, rep = merge_old(args.out, facts, parts, durations, rep)
    write_report(args.out, facts, parts, durations, rep)
    log(f"wrote {args.out}")


def merge_old(path, facts, parts, durations, rep):
    """--update: the report in `path` with the sections just measured in
    place of its own. Its facts stay (the run they describe), with a row
    per section replaced; its summary's lines of the other sections stay."""
    with open(path) as f:
        text = f.read()
    old_facts = re.findall(r"^\| ([^|\n]+) \| ([^\n]*) \|$",
                           text.split("## Summary", 1)[0], re.M)
    old_facts = [(k, v) for k, v in old_facts if k.strip() and not k.startswith("---")]
    new = dict(facts)
    merged = [(k, v) for k, v in old_facts if not (k.startswith("section ") and
                                                   k[8:] in parts)]
    for s in sorted(parts, key=int):
        merged.append((f"section {s}", "replaced by `bench/run.py --update --sections "
                       f"{s}` on {new.get('source', '?')} ({new.get('date', '?')}, same "
                       f"machine, load average {new.get('load average at start', '?')} at "
                       f"start, {new.get('load average at end', '?')} at end)"))
    out = Report()
    out.missed = list(rep.missed)
    out.na = list(rep.na)
    summary = text.split("## Summary", 1)[1].split("<!-- section", 1)[0] if "## Summary" in text else ""
    for m in re.finditer(r"^- section (\d+): (.*?)(?: -- (.*))?$", summary, re.M):
        if m.group(1) in parts:
            continue
        which = out.na if "Not measured" in summary[:m.start()].rsplit("Targets missed", 1)[-1] \
            else out.missed
        if which is out.na:
            fig, _, reason = m.group(2).rpartition(": ")
            out.na.append((int(m.group(1)), fig, reason))
        else:
            out.missed.append((int(m.group(1)), m.group(2), m.group(3) or ""))
    all_parts, all_durations = {}, {}
    for m in re.finditer(r"^<!-- section (\d+): (\d+) s -->\n(.*?)(?=^<!-- section |\Z)",
                         text, re.M | re.S):
        s = m.group(1)
        if s in parts:
            continue
        old = Report()
        old.add(m.group(3).rstrip("\n") + "\n")
        all_parts[s], all_durations[s] = old, float(m.group(2))
    all_parts.update(parts)
    all_durations.update(durations)
    out.missed.sort(key=lambda x: ORDER.index(str(x[0])) if str(x[0]) in ORDER else 99)
    return merged, all_parts, all_durations, out


def write_report(path, facts, parts, durations, rep):
    out = ["# Benchmarks\n",
           "Generated by `make bench` (`bench/run.py`); do not edit by hand. Every figure "
           "below was measured in the same run, on the machine described here. The "
           "machine is shared and noisy: compare ratios and instruction counts, not "
           "lone wall-clock times.\n",
           "| | |\n|---|---|"]
    out += [f"| {k} | {v} |" for k, v in facts]
    out.append("\n## Summary\n")
    if rep.missed:
        out.append("Targets missed in this run:\n")
        seen = set()
        for sec, fig, why in rep.missed:
            if why and why in seen:
                why = "(same reason as above)"
            seen.add(why)
            out.append(f"- section {sec}: {fig}" + (f" -- {why}" if why else ""))
    else:
        out.append("No measured target was missed in this run.")
    if rep.na:
        out.append("\nNot measured in this run (component missing or failing):\n")
        for sec, fig, reason in rep.na:
            out.append(f"- section {sec}: {fig}: {reason}")
    out.append("")
    for s in sorted(parts, key=int):
        out.append(f"<!-- section {s}: {durations[s]:.0f} s -->")
        out.extend(parts[s].parts)
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(out).rstrip() + "\n")
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
