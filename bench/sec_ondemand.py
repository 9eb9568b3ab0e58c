"""Section 15 of make bench: on-demand capture (issue 25).

- Latency: a busy Python program under `python -m tracy --listen` is asked
  for 20 captures of 200 ms over the capture protocol (schema/PROTOCOL.md,
  "On-demand capture"); for each, from the request sent to the first event
  recorded (the trace's first timestamp: both CLOCK_MONOTONIC on this host),
  and from the window's end (the trace's last timestamp: the busy program
  records until its window ends) to the last byte of the complete file
  received. Medians against the targets.
- Idle listener: callgrind instructions of fib and mixed.py with
  `tracy.start_server(0)` and no capture against plain, per round (what a
  larger run adds over a smaller one: the start's costs cancel out), and
  the fixed cost (the import of the tracy package and the listener's start,
  on an empty script) apart.
Called from bench/run.py as section(ctx, rep, R), R being run.py itself.
"""
import json
import os
import socket
import statistics
import subprocess
import time

CAPTURES = 20
WINDOW_MS = 200
FIRST_EVENT_MS = 50  # targets
FILE_S = 1.0
IDLE_RATIO = 1.01

BUSY = """\
def f(x):
    return x + 1


def main():
    print("ready", flush=True)
    x = 0
    while True:
        for _ in range(1000):
            x = f(x)


main()
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _one_capture(R, ctx, port, out):
    """(ms from the request to the first event, s from the window's end to
    the complete file)."""
    t0 = time.monotonic_ns()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"TRACY-CAPTURE 1 %d -\n" % WINDOW_MS)
        f = s.makefile("rb")
        if f.readline().strip() != b"OK":
            raise R.NA("the listener refused a capture")
        done = f.readline().split()
        if len(done) != 4 or done[0] != b"DONE":
            raise R.NA("no trace sent: %r" % b" ".join(done)[:80])
        data = f.read(int(done[1]))
        t_file = time.monotonic_ns()
    with open(out, "wb") as o:
        o.write(data)
    info = json.loads(R.run([ctx.bin("tracy-info"), "--json", out]).stdout)
    return (info["first_ts"] - t0) / 1e6, (t_file - info["last_ts"]) / 1e9


def _latency(ctx, rep, R):
    work = os.path.join(ctx.work, "ondemand")
    os.makedirs(work, exist_ok=True)
    prog = os.path.join(work, "busy.py")
    with open(prog, "w") as f:
        f.write(BUSY)
    port = _free_port()
    p = subprocess.Popen([R.PY, "-m", "tracy", "--listen", "127.0.0.1:%d" % port, prog],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         env=ctx.env)
    try:
        if p.stdout.readline().strip() != "ready":
            raise R.NA("the busy program did not start")
        firsts, files = [], []
        for i in range(CAPTURES):
            a, b = _one_capture(R, ctx, port, os.path.join(work, "c%d.tracy" % i))
            firsts.append(a)
            files.append(b)
    finally:
        p.kill()
        p.wait()
    m1, m2 = statistics.median(firsts), statistics.median(files)
    rep.table(["figure (median of %d captures of %d ms)" % (CAPTURES, WINDOW_MS), "value",
               "range", "target"],
              [["capture request -> first recorded event", "%.1f ms" % m1,
                "%.1f-%.1f ms" % (min(firsts), max(firsts)),
                "<= %d ms (%s)" % (FIRST_EVENT_MS, rep.status(
                    15, "request to first event %.1f ms" % m1, m1 <= FIRST_EVENT_MS))],
               ["end of the window -> complete file received", "%.3f s" % m2,
                "%.3f-%.3f s" % (min(files), max(files)),
                "<= %.0f s (%s)" % (FILE_S, rep.status(
                    15, "window end to complete file %.3f s" % m2, m2 <= FILE_S))]])


FIB_N = """\
import os, sys
sys.path.insert(0, %r)
from fib import fib
fib(int(os.environ["BENCH_FIB_N"]))
"""


def _idle(ctx, rep, R):
    """Per round: the ratio of what a larger run adds over a smaller one
    (fib(25) over fib(20); 3 rounds of mixed.py over 1), with and without
    the listener: the fixed costs cancel out. The fixed cost itself: an
    empty script with and without it."""
    work = os.path.join(ctx.work, "ondemand")
    os.makedirs(work, exist_ok=True)
    empty, fibn = os.path.join(work, "empty.py"), os.path.join(work, "fibn.py")
    with open(empty, "w") as f:
        f.write("")
    with open(fibn, "w") as f:
        f.write(FIB_N % os.path.join(R.BENCH, "workloads"))
    runwith = os.path.join(R.BENCH, "runwith.py")

    def ins(target, listen, **env):
        cmd = [R.PY, runwith, "listen", target] if listen else [R.PY, target]
        return R.callgrind(cmd, dict(ctx.env, **env), work)
    fixed = ins(empty, True) - ins(empty, False)
    mixed = os.path.join(R.BENCH, "workloads", "mixed.py")
    cases = [("fib (fib(25) over fib(20))", fibn, "BENCH_FIB_N", "20", "25"),
             ("mixed (3 rounds over 1)", mixed, "BENCH_MIXED_ROUNDS", "1", "3")]
    rows = []
    for name, target, var, small, big in cases:
        plain = ins(target, False, **{var: big}) - ins(target, False, **{var: small})
        listen = ins(target, True, **{var: big}) - ins(target, True, **{var: small})
        ratio = listen / plain
        rows.append([name, "%.1fM" % (plain / 1e6), "%.1fM" % (listen / 1e6), "%.4f" % ratio,
                     rep.status(15, "idle listener %s %.4f" % (name, ratio),
                                ratio <= IDLE_RATIO)])
    rep.add("Idle listener (`tracy.start_server(0)`, never asked; /usr/bin/python3, "
            "callgrind). Paid once at the start (the import of the tracy package and "
            "the listener's thread, an empty script with and without it): %.2fM "
            "instructions. Per round: the instructions a larger run adds over a smaller "
            "one, with the listener against without (the start's costs cancel out), "
            "target <= %.2f.\n" % (fixed / 1e6, IDLE_RATIO))
    rep.table(["workload", "added, plain", "added, listening", "ratio", "target"], rows)


def section(ctx, rep, R):
    rep.add("## 15. On-demand capture\n")
    R.need(ctx.bin("capture-release"))
    R.need(ctx.bin("tracy-info"))
    for part in (_latency, _idle):
        try:
            part(ctx, rep, R)
        except R.NA as e:
            rep.add(rep.not_available(15, part.__name__.strip("_"), str(e)) + "\n")
