"""Section 15 of make bench: on-demand capture (issue 25).

- Latency: a busy Python program under `python -m tracy --listen` is asked
  for 20 captures of 200 ms over the capture protocol (schema/PROTOCOL.md,
  "On-demand capture"); for each, from the request sent to the first event
  recorded (the trace's first timestamp: both CLOCK_MONOTONIC on this host),
  and from the window's end (the OK received plus the duration) to the last
  byte of the complete file received. Medians against the targets.
- Idle listener: callgrind instructions of fib.py and mixed.py with
  `tracy.start_server(0)` and no capture against plain, with the fixed cost
  (the import of the tracy package and the listener's start, measured on an
  empty script) taken apart: the per-round ratio is (listen - fixed) / plain.
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
        end = time.monotonic_ns() + WINDOW_MS * 1000000
        done = f.readline().split()
        if len(done) != 4 or done[0] != b"DONE":
            raise R.NA("no trace sent: %r" % b" ".join(done)[:80])
        data = f.read(int(done[1]))
        t_file = time.monotonic_ns()
    with open(out, "wb") as o:
        o.write(data)
    info = json.loads(R.run([ctx.bin("tracy-info"), "--json", out]).stdout)
    return (info["first_ts"] - t0) / 1e6, (t_file - end) / 1e9


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


def _idle(ctx, rep, R):
    work = os.path.join(ctx.work, "ondemand")
    os.makedirs(work, exist_ok=True)
    empty = os.path.join(work, "empty.py")
    with open(empty, "w") as f:
        f.write("")
    env = dict(ctx.env, BENCH_MIXED_ROUNDS="2")
    runwith = os.path.join(R.BENCH, "runwith.py")

    def ins(target, listen):
        cmd = [R.PY, runwith, "listen", target] if listen else [R.PY, target]
        return R.callgrind(cmd, env, work)
    fixed = ins(empty, True) - ins(empty, False)
    rows = []
    for w in ("fib", "mixed"):
        target = os.path.join(R.BENCH, "workloads", w + ".py")
        plain, listen = ins(target, False), ins(target, True)
        ratio = (listen - fixed) / plain
        rows.append([w, "%.1fM" % (plain / 1e6), "%.1fM" % (listen / 1e6),
                     "%.4f" % ratio, "%.4f" % (listen / plain),
                     rep.status(15, "idle listener %s %.4f" % (w, ratio), ratio <= IDLE_RATIO)])
    rep.add("Idle listener (`tracy.start_server(0)`, never asked; /usr/bin/python3, "
            "callgrind). Fixed cost, paid once at the start (the import of the tracy "
            "package and the listener's thread): %.2fM instructions. *per round*: "
            "(listen - fixed) / plain, target <= %.2f; *whole run*: listen / plain.\n"
            % (fixed / 1e6, IDLE_RATIO))
    rep.table(["workload", "plain", "listen", "per round", "whole run", "target"], rows)


def section(ctx, rep, R):
    rep.add("## 15. On-demand capture\n")
    R.need(ctx.bin("capture-release"))
    R.need(ctx.bin("tracy-info"))
    for part in (_latency, _idle):
        try:
            part(ctx, rep, R)
        except R.NA as e:
            rep.add(rep.not_available(15, part.__name__.strip("_"), str(e)) + "\n")
