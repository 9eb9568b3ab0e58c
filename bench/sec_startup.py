"""sec_startup.py -- section 16 of `make bench`: what `python -m tracy` adds
to the start and end of a run, on every interpreter found (pyhook/pythons.sh).

Instructions (callgrind, the Python process only; the daemon it starts runs
natively) of an empty script run these ways: `python3 empty.py`, `python3 -m
emptymod` (an empty module: what any `python -m` costs, runpy and the import
machinery it loads), `python3 -c "import tracy"`, `python3 -c "import
tracy.__main__"` (the code every run loads, not run), `python3 -m tracy -t 0
empty.py` (a daemon of its own, the trace written and summarized), and the
same through the `tracy` command (build/bin/tracy: no runpy). Bytecode
caches are warm (compileall first, then one run of each command before it is
measured); the runs have a run folder of their own (XDG_RUNTIME_DIR).
Called from bench/run.py."""
import os

R = None  # bench/run.py (NA, run, callgrind, log), set by its caller

TARGET = 8e6  # instructions python -m tracy may add to an empty script's run
RUNS = 3  # callgrind runs of each command; the median is reported

COMMANDS = [("plain", "`python3 empty.py`"),
            ("m", "`python3 -m emptymod`"),
            ("import", "`python3 -c \"import tracy\"`"),
            ("load", "`python3 -c \"import tracy.__main__\"`"),
            ("tracy", "`python3 -m tracy -t 0 empty.py`"),
            ("cmd", "`python3 build/bin/tracy -t 0 empty.py`")]


def command(py, key, work, build):
    if key == "plain":
        return [py, "empty.py"]
    if key == "m":
        return [py, "-m", "emptymod"]
    if key == "import":
        return [py, "-c", "import tracy"]
    if key == "load":  # the code every run loads, without running it
        return [py, "-c", "import tracy.__main__"]
    out = ["-t", "0", "-o", os.path.join(work, "empty.tracy"), "empty.py"]
    if key == "cmd":
        return [py, os.path.join(build, "bin", "tracy")] + out
    return [py, "-m", "tracy"] + out


def one(ctx, py):
    import sec_py
    sec_py.R = R
    ver, _, suffix = sec_py.py_facts(py)
    if not os.path.exists(os.path.join(ctx.build, "python", "tracy", "_tracy" + suffix)):
        raise R.NA("tracy not built for %s (make python-all)" % ver)
    work = os.path.join(ctx.work, "startup-" + ver)
    os.makedirs(work, exist_ok=True)
    for name in ("empty.py", "emptymod.py"):
        open(os.path.join(work, name), "w").close()
    env = dict(ctx.env)
    # A run folder of the section's own (daemon sockets, rendezvous files):
    # each run sweeps the files that other runs left in it (their number
    # moves the figures), and other users of this machine's run folder
    # (a test suite) leave some.
    run_dir = os.path.join(work, "xdg")
    os.makedirs(run_dir, mode=0o700, exist_ok=True)
    env["XDG_RUNTIME_DIR"] = run_dir
    R.run([py, "-m", "compileall", "-q", os.path.join(ctx.build, "python", "tracy"),
           os.path.join(work, "emptymod.py")], env=env, what="compileall")
    res = {}
    for key, _ in COMMANDS:
        cmd = command(py, key, work, ctx.build)
        R.run(cmd, env=env, cwd=work, timeout=120)  # the caches of what it reads
        # the median of RUNS: a run waits for the daemon (its port, its
        # acknowledgments) in loops whose rounds vary by some 0.1M
        res[key] = sorted(R.callgrind(cmd, env, work) for _ in range(RUNS))[RUNS // 2]
        R.log("startup %s %s: %.1fM instr" % (ver, key, res[key] / 1e6))
    return ver, res


def section(ctx, rep):
    import sec_py
    sec_py.R = R
    rep.add("## 16. Start-up: what `python -m tracy` adds to a run\n")
    rep.add("Instructions counted by callgrind for the Python process of an empty script's "
            "run (the capture daemon it starts runs natively and is not counted; the median of "
            "%d runs: waiting for the daemon varies by some 0.1M), bytecode "
            "caches warm, in a run folder of the section's own (each run sweeps the "
            "files other runs left there): " % RUNS
            + ", ".join(label for _, label in COMMANDS) + ". `python3 -m "
            "emptymod` runs an empty module: what any `python -m` pays (runpy and the "
            "modules it imports), which `python -m tracy` pays too. Target: "
            "`python -m tracy` adds at most %.0fM instructions to `python3 empty.py`. "
            "*Own*: what it adds to `python3 -m emptymod`, in two parts: *loading* the "
            "package's code (`import tracy.__main__` over `python3 empty.py`: the extension, "
            "`tracy` and `tracy.__main__`, loaded and run, and freed at exit) and *the run* "
            "(the rest: argv, the daemon's start and end, the signals and the wrappers of "
            "os, the summary read from the trace: C, `tracy._tracy._main`, with no module "
            "of Python but those two). The `tracy` command runs the same main without "
            "runpy: what it adds to `python3 empty.py` is the run's whole cost on every "
            "interpreter.\n\n"
            "runpy is the rest of what `python -m tracy` adds: on 3.12 and 3.13 it "
            "adds some 4M-5M (importlib.util, importlib.machinery, types, warnings) "
            "before tracy's code runs, which leaves some 3M-4M for tracy's own "
            "part; on 3.8 to 3.10 `python -m` alone adds 20M-50M (3.9's importlib.util "
            "imports importlib.abc, which imports typing, re and enum): there the target "
            "cannot be met by tracy, and the `tracy` command, which pays none of it, is "
            "the way to a start within it. A "
            ".pth file of an interpreter's site-packages that imports modules at every "
            "start (certifi's, with importlib.resources) raises its `python3 "
            "empty.py` and lowers what `python -m` adds to it: it loads much of what "
            "runpy needs.\n" % (TARGET / 1e6))
    pys, skipped = sec_py.interpreters()
    for s in skipped:
        rep.add("- " + s)
    rows = []
    for py in pys:
        try:
            ver, res = one(ctx, py)
        except R.NA as e:
            rows.append([py, rep.not_available(16, py, str(e))] + [""] * (len(COMMANDS) + 5))
            continue
        added = res["tracy"] - res["plain"]
        own = res["tracy"] - res["m"]
        load = res["load"] - res["plain"]
        floor = res["m"] - res["plain"]
        why = ("`python -m` of an empty module alone adds %.1fM here" % (floor / 1e6)
               if floor > TARGET else "")
        st = rep.status(16, "Python %s: python -m tracy adds %.1fM instructions > %.0fM"
                        % (ver, added / 1e6, TARGET / 1e6), added <= TARGET, why)
        rows.append(["%s (`%s`)" % (ver, py)]
                    + ["%.1fM" % (res[k] / 1e6) for k, _ in COMMANDS]
                    + ["%+.1fM" % (added / 1e6), st, "%+.1fM" % (own / 1e6),
                       "%+.1fM" % (load / 1e6), "%+.1fM" % ((own - load) / 1e6),
                       "%+.1fM" % ((res["cmd"] - res["plain"]) / 1e6)])
    rep.table(["Python"] + [label for _, label in COMMANDS]
              + ["python -m tracy over plain (target <= %.0fM)" % (TARGET / 1e6), "status",
                 "own (over `python -m emptymod`)", "own: loading", "own: the run",
                 "`tracy` command over plain"], rows)
