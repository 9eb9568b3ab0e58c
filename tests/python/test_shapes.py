"""The corpus of program shapes (tests/python/shapes/): each program runs
once unprofiled and once under python -m tracy. Both runs must print the
same and end with the same status, within a bounded time, and the trace must
hold exactly as many zones of each counted function as the program counted
itself (its `count NAME N` lines), or report the difference as lost.

Set TRACY_SHAPES_LOG=FILE to append one line of measurements per shape."""
import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import BIN, PYTHON, Run, env_for_tests

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = os.path.join(HERE, "shapes")
LIMIT = 90  # seconds per run: a hang fails, it does not block the suite

# shape -> extra python -m tracy options
OPTIONS = {"threads_before_tracing.py": ["-p"]}
# shapes whose stderr must be the unprofiled one too (python -m tracy's
# "trace written" line apart), and whose processes all end clean: the
# profiler's descriptor and exec (PROTOCOL.md, The daemon's socket; exec)
STRICT = ("fd_", "exec_", "signals_")
CORPUS = sorted(f for f in os.listdir(SHAPES) if f.endswith(".py") and f != "mpi_ranks.py")


def counted(stdout):
    """{name: n} from the program's `count NAME N` lines."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "count":
            out[parts[1]] = out.get(parts[1], 0) + int(parts[2])
    return out


def file_info(path):
    p = subprocess.run([os.path.join(BIN, "tracy-info"), "--json", path],
                       capture_output=True, text=True, timeout=60)
    return json.loads(p.stdout)


def log(shape, **facts):
    path = os.environ.get("TRACY_SHAPES_LOG")
    if path:
        with open(path, "a") as f:
            f.write("%s %s\n" % (shape, json.dumps(facts, sort_keys=True)))


def check_counts(shape, run, want, seconds):
    t = file_info(run.path)
    assert t["complete"], t
    lost = t["lost_events"]
    got = {name: run.count(name) for name in want}
    for name, n in want.items():
        # each zone is two events: a zone missing from the trace must be
        # counted in the file's lost events
        assert got[name] == n or (got[name] < n and lost >= 2 * (n - got[name])), \
            (shape, name, got[name], n, lost)
    log(shape, expected=want, recorded=got, lost_events=lost, processes=len(t["processes"]),
        seconds=round(seconds, 2), python=PYTHON)
    return t


def complete_info(path):
    """tracy-info --json of the trace once it is complete: a program that
    replaced python -m tracy by exec leaves the daemon to finish the file
    after the program's end (a hang fails at the bound)."""
    end = time.monotonic() + LIMIT
    while True:
        t = file_info(path)
        if t["complete"] or time.monotonic() > end:
            return t
        time.sleep(0.1)


def check_strict(shape, plain, proc, t):
    err = [ln for ln in proc.stderr.splitlines(True)
           if not ln.startswith("tracy: trace written")]
    assert "".join(err) == plain.stderr, (shape, proc.stderr)
    for p in t["processes"]:
        assert p["status"] == "clean" and p["events_received"] == p["events_sent"], (shape, p)
    if shape.startswith("exec_new"):  # the new program: a process of the same pid
        (a, b) = t["processes"]
        assert (a["end_reason"], a["pid"]) == ("exec", b["pid"]), t["processes"]


def run_plain(path, tmp_path):
    return subprocess.run([PYTHON, path], capture_output=True, text=True, timeout=LIMIT,
                          env=env_for_tests(), cwd=str(tmp_path))


@pytest.mark.parametrize("shape", CORPUS)
def test_shape(shape, tmp_path):
    src = os.path.join(SHAPES, shape)
    path = str(tmp_path / shape)
    shutil.copy(src, path)
    plain = run_plain(path, tmp_path)
    out = str(tmp_path / "trace.tracy")
    t0 = time.monotonic()
    proc = subprocess.run([PYTHON, "-m", "tracy", "-o", out] + OPTIONS.get(shape, []) + [path],
                          capture_output=True, text=True, timeout=LIMIT, env=env_for_tests(),
                          cwd=str(tmp_path))
    seconds = time.monotonic() - t0
    assert (proc.returncode, proc.stdout) == (plain.returncode, plain.stdout), proc.stderr
    want = counted(plain.stdout)
    assert want, "the shape prints no count"
    complete_info(out)
    t = check_counts(shape, Run(proc, out), want, seconds)
    if shape.startswith(STRICT):
        check_strict(shape, plain, proc, t)


def _mpirun(n, cmd, tmp_path, env):
    exe = shutil.which("mpirun")
    assert exe, "mpirun missing: tools/deps.sh installs openmpi-bin"
    fwd = []
    for v in ("TRACY_PORT", "PYTHONPATH", "PATH"):
        fwd += ["-x", v]
    return subprocess.run([exe, "--allow-run-as-root", "--oversubscribe", "-n", str(n)] + fwd
                          + cmd, capture_output=True, text=True, timeout=300, env=env,
                          cwd=str(tmp_path))


@pytest.mark.parametrize("daemon", ["without", "with"])
def test_shape_mpi_four_ranks(daemon, tmp_path):
    path = str(tmp_path / "mpi_ranks.py")
    shutil.copy(os.path.join(SHAPES, "mpi_ranks.py"), path)
    env = env_for_tests(OMPI_MCA_rmaps_base_oversubscribe="1")
    out = str(tmp_path / "mpi_ranks.tracy")
    d = None
    if daemon == "with":
        d = subprocess.Popen([os.path.join(BIN, "capture-release"), "-o", out, "-p", "0",
                              "-q", "-n", "4"], stdout=subprocess.PIPE, text=True)
        env["TRACY_PORT"] = d.stdout.readline().strip()
    try:
        plain = _mpirun(4, [PYTHON, path], tmp_path, env_for_tests())
        t0 = time.monotonic()
        job = _mpirun(4, [PYTHON, "-m", "tracy", path], tmp_path, env)
        seconds = time.monotonic() - t0
        if d is not None:
            assert d.wait(timeout=60) == 0
    finally:
        if d is not None:
            if d.poll() is None:
                d.kill()
                d.wait()
            d.stdout.close()
    assert job.returncode == plain.returncode == 0, job.stderr
    assert sorted(job.stdout.splitlines()) == sorted(plain.stdout.splitlines())
    want = counted(plain.stdout)
    assert want == {"work": 10}
    t = check_counts("mpi_ranks.py (%s daemon)" % daemon, Run(job, out), want, seconds)
    assert sorted(p["rank"] for p in t["processes"]) == [0, 1, 2, 3]
