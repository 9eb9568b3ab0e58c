"""An MPI job under the profiler: mpirun -n 4 python3 -m tracy script.py into
one capture-release started first (as for ranks on several hosts; without
one, the ranks share the daemon the first of them starts:
test_run_lifecycle.py and test_shapes.py), then tracy-sql comparing the
ranks."""
import csv
import io
import json
import os
import re
import shutil
import subprocess
import textwrap

import pytest

from conftest import BIN, PYDIR, PYTHON, env_for_tests

SCRIPT = """\
from mpi4py import MPI


def compute(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def main():
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    for _ in range(5):
        compute(20000 * (rank + 1))
    comm.Barrier()
    assert comm.allreduce(rank) == 6


main()
"""

# Total time of one function per rank, then its spread across ranks (what
# TAU's paraprof shows); also in schema/SQL.md's examples.
RANK_SPREAD = """\
WITH per_rank AS (
  SELECT p.rank AS rank, count(*) AS calls, sum(s.dur) AS total
  FROM slice s JOIN thread_track tt ON s.track_id = tt.id
  JOIN thread USING (utid) JOIN process p USING (upid)
  WHERE s.name = 'compute' GROUP BY p.rank)
SELECT count(*) AS ranks, sum(calls) AS calls, min(total) AS min_ns,
       max(total) AS max_ns, avg(total) AS mean_ns,
       sqrt(avg(total * total) - avg(total) * avg(total)) AS stddev_ns
FROM per_rank
"""


def sql(trace, query):
    out = subprocess.run([os.path.join(BIN, "tracy-sql"), "--json", trace, query],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def mpirun_traced(tmp_path, source):
    """Runs `source` as mpirun -n 4 python3 -m tracy into one daemon; returns
    the trace's path."""
    mpirun = shutil.which("mpirun")
    assert mpirun, "mpirun missing: tools/deps.sh installs openmpi-bin"
    if subprocess.run([PYTHON, "-c", "import mpi4py"], env=env_for_tests(),
                      capture_output=True).returncode != 0:
        pytest.skip("mpi4py (Debian's python3-mpi4py) does not import under %s" % PYTHON)
    script = tmp_path / "script.py"
    script.write_text(source)
    trace = str(tmp_path / "run.tracy")
    daemon = subprocess.Popen(
        [os.path.join(BIN, "capture-release"), "-o", trace, "-p", "0", "-q", "-n", "4"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = daemon.stdout.readline().strip()
        assert port.isdigit(), daemon.stderr.read()
        env = dict(os.environ)
        env.update(TRACY_PORT=port, PYTHONPATH=PYDIR,
                   PATH=BIN + os.pathsep + env.get("PATH", ""),
                   OMPI_MCA_rmaps_base_oversubscribe="1")
        env.pop("TRACY_ADDR", None)
        job = subprocess.run(
            [mpirun, "--allow-run-as-root", "--oversubscribe", "-n", "4",
             "-x", "TRACY_PORT", "-x", "PYTHONPATH", "-x", "PATH",
             PYTHON, "-m", "tracy", str(script)],
            capture_output=True, text=True, timeout=300, env=env, cwd=str(tmp_path))
        assert job.returncode == 0, job.stdout + job.stderr
        assert daemon.wait(timeout=60) == 0, daemon.stderr.read()
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        daemon.stdout.close()
        daemon.stderr.close()
    return trace


def test_mpirun_four_ranks_one_trace(tmp_path):
    trace = mpirun_traced(tmp_path, SCRIPT)

    # One trace, four process streams, labelled by rank 0..3, all clean.
    procs = sql(trace, "SELECT upid, pid, rank, status, events_received, events_sent "
                       "FROM process ORDER BY rank")
    assert [p["rank"] for p in procs] == [0, 1, 2, 3]
    assert len({p["pid"] for p in procs}) == 4
    for p in procs:
        assert p["status"] == "clean"
        assert p["events_received"] == p["events_sent"] > 0

    per_rank = sql(trace, textwrap.dedent("""\
        SELECT p.rank AS rank, count(*) AS calls FROM slice s
        JOIN thread_track tt ON s.track_id = tt.id JOIN thread USING (utid)
        JOIN process p USING (upid) WHERE s.name = 'compute'
        GROUP BY p.rank ORDER BY p.rank"""))
    assert per_rank == [{"rank": r, "calls": 5} for r in range(4)]

    (spread,) = sql(trace, RANK_SPREAD)
    assert spread["ranks"] == 4 and spread["calls"] == 20
    assert 0 < spread["min_ns"] <= spread["mean_ns"] <= spread["max_ns"]
    assert spread["stddev_ns"] >= 0

    # tracy-info lists the four ranks too.
    info = subprocess.run([os.path.join(BIN, "tracy-info"), "--json", trace],
                          capture_output=True, text=True, timeout=60)
    assert info.returncode == 0, info.stderr
    ranks = sorted(p["rank"] for p in json.loads(info.stdout)["processes"])
    assert ranks == [0, 1, 2, 3]


RANK_SCRIPT = """\
import os
import time


def compute(n):
    return sum(i * i for i in range(n))


rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
time.sleep(0.2 * (3 - rank))  # rank 0 ends last but others end at other times
for _ in range(5):
    compute(1000 * (rank + 1))
print("rank", rank)
"""


def test_ranks_on_two_hosts_one_trace_without_a_daemon(tmp_path):
    """An Open MPI job of 4 ranks on two hosts (2 a host), as its environment
    says it: each host's first rank starts a daemon its ranks share (the
    rendezvous is in the host's own TMPDIR, as /tmp is on real hosts); each
    writes a part of the trace in the shared folder; rank 0 merges them into
    the one trace asked for and removes the parts."""
    script = tmp_path / "app.py"
    script.write_text(RANK_SCRIPT)
    trace = tmp_path / "run.tracy"
    job = "tracytest%d" % os.getpid()
    procs = []
    for rank in range(4):
        host = "host%s" % "AB"[rank // 2]
        tmp = tmp_path / ("tmp-" + host)
        tmp.mkdir(exist_ok=True)
        env = env_for_tests(OMPI_COMM_WORLD_SIZE="4", OMPI_COMM_WORLD_LOCAL_SIZE="2",
                            OMPI_COMM_WORLD_RANK=str(rank), OMPI_MCA_ess_base_jobid=job,
                            TRACY_HOST=host, TMPDIR=str(tmp))
        procs.append(subprocess.Popen([PYTHON, "-m", "tracy", "-o", str(trace), str(script)],
                                      env=env, cwd=str(tmp_path), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        outs.append((p.returncode, out, err))
    for rank, (rc, out, err) in enumerate(outs):
        assert rc == 0, err
        assert out == "rank %d\n" % rank
    assert "(4 of 4 ranks from 2 hosts)" in outs[0][2], outs[0][2]
    assert sorted(os.listdir(tmp_path)) == ["app.py", "run.tracy", "tmp-hostA", "tmp-hostB"]
    info = json.loads(subprocess.run([os.path.join(BIN, "tracy-info"), "--json", str(trace)],
                                     capture_output=True, text=True, timeout=60).stdout)
    assert info["complete"] and info["lost_events"] == 0
    procs = info["processes"]
    assert sorted(p["rank"] for p in procs) == [0, 1, 2, 3]
    assert {p["rank"]: p["hostname"] for p in procs} == {0: "hostA", 1: "hostA",
                                                         2: "hostB", 3: "hostB"}
    assert all(p["status"] == "clean" for p in procs), procs
    calls = sql(str(trace), "SELECT p.rank AS rank, count(*) AS n FROM slice s JOIN thread_track "
                "tt ON s.track_id = tt.id JOIN thread USING (utid) JOIN process p USING (upid) "
                "WHERE s.name = 'compute' GROUP BY p.rank ORDER BY p.rank")
    assert [(r["rank"], r["n"]) for r in calls] == [(0, 5), (1, 5), (2, 5), (3, 5)]


# Rank r does r + 1 units of work in the phase "compute" (a unit waits a
# fixed time, so that the ranks' ratio does not depend on how the shared
# cores are scheduled), then all meet in "exchange".
IMBALANCED = """\
import time

import tracy
from mpi4py import MPI


def unit():
    time.sleep(0.02)


def work(units):
    for _ in range(units * 5):
        unit()


def main():
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    comm.Barrier()
    tracy.signpost("compute")
    work(rank + 1)
    tracy.signpost("exchange")
    comm.Barrier()


main()
"""


def export(*args):
    out = subprocess.run([os.path.join(BIN, "tracy-export")] + list(args),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_rank_table_and_split_per_rank(tmp_path):
    trace = mpirun_traced(tmp_path, IMBALANCED)
    rows = list(csv.DictReader(io.StringIO(export("-f", "ranks", "--csv", "-o", "-", trace))))
    cols = ["rank %d ns" % r for r in range(4)]
    assert list(rows[0])[4:8] == cols
    lost = [float(r["lost ns"]) for r in rows]
    assert lost == sorted(lost, reverse=True)
    for kind, name in (("phase", "compute"), ("function", "unit"), ("function", "work")):
        (row,) = [r for r in rows if r["kind"] == kind and r["name"] == name]
        t = [int(row[c]) for c in cols]
        for r in range(4):  # in the ratio 1 : 2 : 3 : 4, within 10%
            assert abs(t[r] / t[0] - (r + 1)) <= 0.1 * (r + 1), (name, t)
        assert row["slowest"] == "rank 3"
        mean = sum(t) / 4
        assert (int(row["min ns"]), int(row["max ns"])) == (min(t), max(t))
        assert abs(float(row["mean ns"]) - mean) < 1
        assert abs(float(row["imbalance"]) - (max(t) - mean) / max(t)) < 1e-5
        assert abs(float(row["imbalance"]) - 0.375) < 0.04  # (4 - 2.5) / 4
    # The exchange phase is the mirror image: rank 0 waits longest.
    (ex,) = [r for r in rows if r["name"] == "exchange"]
    assert ex["slowest"] == "rank 0"
    # The text table says the same.
    text = export("-f", "ranks", "--function", "^(compute|unit)$", "-o", "-", trace)
    lines = [l for l in text.splitlines() if l.endswith(" compute")]
    (compute,) = [r for r in rows if r["kind"] == "phase" and r["name"] == "compute"]
    pct = re.search(r" (\d+\.\d)% ", lines[0]) if len(lines) == 1 else None
    assert pct and " rank 3 " in lines[0], lines
    # the CSV's imbalance, to the text's one decimal (whatever the load made it)
    assert abs(float(pct.group(1)) - 100 * float(compute["imbalance"])) <= 0.05 + 1e-9, lines

    # The HTML report's heat map holds the same row.
    page = str(tmp_path / "run.html")
    export("-o", page, trace)
    data = open(page).read().split('<script id="trace-data" type="application/json">')[1]
    ranks = json.loads(data.split("</script>")[0])["ranks"]
    assert ranks["cols"] == ["rank %d" % r for r in range(4)]
    (heat,) = [r for r in ranks["rows"] if r["name"] == "compute"]
    assert heat["slowest"] == 3 and abs(heat["imbalance"] - 0.375) < 0.04

    # One pstats file per rank, each with that rank's counts.
    out = tmp_path / "per-rank"
    export("--split", "process", "-o", str(out) + "/", trace)
    assert sorted(os.listdir(out)) == ["run.rank%d.prof" % r for r in range(4)]
    for r in range(4):
        code = ("import pstats, sys; s = pstats.Stats(sys.argv[1]); "
                "print([v[1] for k, v in s.stats.items() if k[2] == 'unit'])")
        got = subprocess.run([PYTHON, "-c", code, str(out / ("run.rank%d.prof" % r))],
                             capture_output=True, text=True, timeout=60)
        assert got.returncode == 0, got.stderr
        assert got.stdout.strip() == "[%d]" % (5 * (r + 1))
    # --process picks one rank in every format; a process the trace lacks
    # is refused in one line.
    one = export("-f", "ranks", "--csv", "--process", "2", "-o", "-", trace)
    head = list(csv.DictReader(io.StringIO(one)))[0]
    assert len([k for k in head if re.match(r"rank \d ns$", k)]) == 1
    bad = subprocess.run([os.path.join(BIN, "tracy-export"), "--process", "7", "-o", "-",
                          "-f", "ranks", trace], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr.startswith("tracy-export: --process: '7' is not a process of the trace")
