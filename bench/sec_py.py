"""sec_py.py -- section 7 of `make bench`: the Python hook on every
interpreter found (pyhook/pythons.sh). For each, the callgrind instruction
counts of bench/workloads/fib.py, mixed.py and gen.py (nested generators)
with no profiler, an empty PyEval_SetProfile callback, an empty PEP 523
frame-evaluation function (the floor of tracy's mechanism), cProfile and
`python -m tracy`, and on 3.12+ empty sys.monitoring callbacks (the floor of
a PEP 669 tracer, against which the frame-evaluation hook was chosen).
Called from bench/run.py."""
import os
import subprocess
import time

R = None  # bench/run.py (NA, run, callgrind, Daemon, log), set by its caller

TARGETS = {"fib": 1.6, "mixed": 1.10}
# mixed.py rounds here (section 1 runs 10): 7 interpreters x 5 configurations
# under callgrind must fit in the suite's time
MIXED_ROUNDS = int(os.environ.get("BENCH_PY_MIXED_ROUNDS", "2"))
WORKLOADS = ("fib", "mixed", "gen")
CONFIGS = [("none", "no profiler"), ("empty", "empty setprofile"),
           ("mon", "empty sys.monitoring"), ("eval", "empty PEP 523 hook"),
           ("cprofile", "cProfile"),
           ("tracy", "python -m tracy"),
           ("exact", "python -m tracy --mechanism exact"),
           ("listen", "start_server, idle")]
# BENCH_PY_CONFIGS=none,tracy,exact: only those (a quick comparison)
if os.environ.get("BENCH_PY_CONFIGS"):
    _only = os.environ["BENCH_PY_CONFIGS"].split(",")
    CONFIGS = [c for c in CONFIGS if c[0] in _only]

MON_RUNNER = """\
import os, runpy, sys
import emptymon
M = sys.monitoring
E = M.events
M.use_tool_id(2, "bench")
evs = (E.PY_START, E.PY_RESUME, E.PY_RETURN, E.PY_YIELD, E.PY_UNWIND, E.PY_THROW)
mask = 0
for e in evs:
    M.register_callback(2, e, emptymon.noop)
    mask |= e
target = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(target))  # as `python target` has it
M.set_events(2, mask)
runpy.run_path(target, run_name="__main__")
"""


def interpreters():
    p = subprocess.run(["sh", os.path.join(R.ROOT, "pyhook", "pythons.sh")],
                       capture_output=True, text=True)
    skipped = [l for l in p.stderr.splitlines() if l.startswith("skip")]
    return [l for l in p.stdout.splitlines() if l.strip()], skipped


def py_facts(py):
    code = ("import sys, sysconfig; print('%d.%d.%d' % sys.version_info[:3]); "
            "print(sysconfig.get_paths()['include']); print(sysconfig.get_config_var('EXT_SUFFIX'))")
    ver, inc, suffix = R.run([py, "-c", code], timeout=30).stdout.split()
    return ver, inc, suffix


def build_ext(ctx, name, inc, suffix, outdir):
    """bench/<name>.c as an extension of this interpreter in outdir."""
    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, name + suffix)
    src = os.path.join(R.BENCH, name + ".c")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        R.run(["cc", "-shared", "-fPIC", "-O2", "-I" + inc, "-o", out, src], what="cc " + name)


def command(py, config, target, out, work):
    if config == "none":
        return [py, target]
    if config in ("empty", "eval", "listen"):
        return [py, os.path.join(R.BENCH, "runwith.py"), config, target]
    if config == "mon":
        runner = os.path.join(work, "monrun.py")
        with open(runner, "w") as f:
            f.write(MON_RUNNER)
        return [py, runner, target]
    if config == "cprofile":
        return [py, "-m", "cProfile", "-o", out + ".prof", target]
    if config == "exact":
        return [py, "-m", "tracy", "--mechanism", "exact", "-o", out + ".own.tracy", target]
    return [py, "-m", "tracy", "--mechanism", "hook", "-o", out + ".own.tracy", target]


def measure(ctx, py, config, target, env, work):
    out = os.path.join(work, "%s-%s" % (os.path.basename(target)[:-3], config))
    cmd = command(py, config, target, out, work)
    if config not in ("tracy", "exact"):
        return R.callgrind(cmd, env, work)
    d = R.Daemon(ctx, out + ".tracy")
    env = dict(env, TRACY_PORT=d.port)
    try:
        ins = R.callgrind(cmd, env, work)
        d.wait(30)
    finally:
        d.kill()
    return ins


def one_interpreter(ctx, py, rep):
    ver, inc, suffix = py_facts(py)
    minor = tuple(int(x) for x in ver.split(".")[:2])
    work = os.path.join(ctx.work, "py-" + ver)
    os.makedirs(work, exist_ok=True)
    extdir = os.path.join(work, "ext")
    build_ext(ctx, "emptyprof", inc, suffix, extdir)
    build_ext(ctx, "emptyeval", inc, suffix, extdir)
    if minor >= (3, 12):
        build_ext(ctx, "emptymon", inc, suffix, extdir)
    if not os.path.exists(os.path.join(ctx.build, "python", "tracy", "_tracy" + suffix)):
        raise R.NA("tracy not built for %s (make python-all)" % ver)
    env = dict(ctx.env)
    env["BENCH_MIXED_ROUNDS"] = str(MIXED_ROUNDS)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ctx.build, "python"), extdir])
    # the workloads' bytecode for this interpreter (runs keep none)
    R.run([py, "-m", "compileall", "-q", "--invalidation-mode", "checked-hash",
           os.path.join(R.BENCH, "workloads")], what="compileall")
    res = {}
    for w in WORKLOADS:
        target = os.path.join(R.BENCH, "workloads", w + ".py")
        for config, _ in CONFIGS:
            if config == "mon" and minor < (3, 12):
                continue
            t0 = time.monotonic()
            try:
                res[w, config] = measure(ctx, py, config, target, env, work)
                R.log("py %s %s %s: %.1fM instr (%.0f s)" % (ver, w, config,
                      res[w, config] / 1e6, time.monotonic() - t0))
            except R.NA as e:
                res[w, config] = e
                R.log("py %s %s %s: n/a (%s)" % (ver, w, config, e))
    return ver, minor, res


def mechanism(minor):
    if minor >= (3, 11):
        return "PEP 523 hook (_PyInterpreterFrame)"
    if minor >= (3, 9):
        return "PEP 523 hook (PyFrameObject)"
    return "PEP 523 hook (interp->eval_frame)"


def cell(rep, res, w, config, ver, minor):
    r = res.get((w, config))
    if r is None:
        return "-"
    if isinstance(r, R.NA):
        return rep.not_available(7, "%s %s %s" % (ver, w, config), str(r))
    base = res.get((w, "none"))
    if not isinstance(base, int) or not base:
        return "%.1fM" % (r / 1e6)
    ratio = r / base
    text = "%.3f" % ratio
    if config == "tracy" and w in TARGETS:
        tgt = TARGETS[w]
        if minor >= (3, 9):
            st = rep.status(7, "Python %s %s: python -m tracy %.3f > %s" % (ver, w, ratio, tgt),
                            ratio <= tgt)
            text += " (%s)" % st
        else:
            text += " (target applies to 3.9+; %s)" % ("within it" if ratio <= tgt else "above it")
    return text


def section_py(ctx, rep):
    rep.add("## 7. Python hook on every interpreter\n")
    rep.add("Instruction ratios (callgrind, the traced process only; 1.000 = the same "
            "workload on the same interpreter with no profiler; interpreter start "
            "included) of `bench/workloads/fib.py` (recursive fib(25)) and `mixed.py` "
            "(%d of its 10 rounds, `BENCH_MIXED_ROUNDS`). " % MIXED_ROUNDS +
            "*empty setprofile*: a C profile function that does nothing; *empty "
            "sys.monitoring* (3.12+): a C callback that does nothing for PY_START, "
            "PY_RESUME, PY_RETURN, PY_YIELD, PY_UNWIND and PY_THROW -- the floor of a "
            "PEP 669 tracer of the same zones; the hook (`python -m tracy`, which also "
            "writes every zone to a real capture daemon) is shipped where it costs "
            "less than that floor. *empty PEP 523 hook*: a frame-evaluation function "
            "that only calls CPython's own evaluator (bench/emptyeval.c), the floor of "
            "the hook's mechanism (from 3.11 any such function makes every Python-to-"
            "Python call a C-level evaluation). `gen.py`: generators nested 6 deep "
            "delegating with `yield from`, as json's encoder does (every chunk "
            "resumes each generator of the chain); it has no target. Targets for `python -m tracy` on 3.9-3.13: fib <= "
            "1.6, mixed <= 1.10; 3.8 is reported as measured. *start_server, idle*: "
            "`tracy.start_server(0)` listening for on-demand captures that never come "
            "(no hook installed); what it adds is the import of the tracy package and "
            "the listener's start, paid once (target 1.01 for what the workload adds: "
            "see the CHANGELOG's figures). *--mechanism exact*: the same zones "
            "without a frame-evaluation function (sys.monitoring callbacks in C on "
            "3.12+, the profile function before; tracy(1)), so that CPython runs the "
            "program as unprofiled.\n")
    pys, skipped = interpreters()
    for s in skipped:
        rep.add("- " + s)
    # three interpreters at a time (callgrind is single-threaded)
    from concurrent.futures import ThreadPoolExecutor

    def job(py):
        R.log("section 7: %s" % py)
        try:
            return one_interpreter(ctx, py, rep)
        except R.NA as e:
            return e
    with ThreadPoolExecutor(max_workers=int(os.environ.get("BENCH_PY_JOBS", "3"))) as ex:
        results = list(ex.map(job, pys))
    rows, raw = [], {}
    for py, r in zip(pys, results):
        if isinstance(r, R.NA):
            rows.append([py, rep.not_available(7, py, str(r))] + [""] * (1 + len(CONFIGS)))
            continue
        ver, minor, res = r
        raw[ver] = {"%s/%s" % k: (v if isinstance(v, int) else str(v)) for k, v in res.items()}
        for w in WORKLOADS:
            base = res.get((w, "none"))
            row = ["%s (`%s`)" % (ver, py), mechanism(minor), w,
                   "%.1fM" % (base / 1e6) if isinstance(base, int) else "n/a"]
            row += [cell(rep, res, w, config, ver, minor) for config, _ in CONFIGS[1:]]
            rows.append(row)
    rep.table(["Python", "mechanism", "workload", "no profiler (instr)"]
              + [label for _, label in CONFIGS[1:]], rows)
    import json
    with open(os.path.join(ctx.work, "sec_py.json"), "w") as f:
        json.dump(raw, f, indent=1)
