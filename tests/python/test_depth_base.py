"""--max-depth means the same in python -m tracy (what is recorded) and in
tracy-csv (what is kept from a full recording): N levels, the top level
being 1."""
import collections
import csv
import io
import os
import subprocess

from conftest import BIN

PROGRAM = """
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
fib(12)
"""


def csv_zones(trace, *options):
    out = subprocess.run([os.path.join(BIN, "tracy-csv")] + list(options) + [trace],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = list(csv.reader(io.StringIO(out.stdout)))[1:]
    return [(r[0], int(r[9])) for r in rows if r[1] not in ("signpost", "message")]


def test_max_depth_counts_levels_from_the_same_base(run_tracy, tmp_path):
    full = run_tracy(PROGRAM, output=str(tmp_path / "full.tracy"))
    assert full.rc == 0, full.err
    for n in (1, 3):
        recorded = run_tracy(PROGRAM, "--max-depth", str(n),
                             output=str(tmp_path / f"max{n}.tracy"))
        assert recorded.rc == 0, recorded.err
        kept = csv_zones(full.path, "--max-depth", str(n))
        assert max(d for _, d in kept) == n - 1
        assert max(z.depth for z in recorded.zones) == n - 1
        # The same calls either way: recorded down to N levels, or recorded
        # in full and cut to N levels by tracy-csv.
        assert collections.Counter(name for name, _ in kept) == \
            collections.Counter(z.name for z in recorded.zones)
    # 0: no limit, as in python -m tracy.
    assert len(csv_zones(full.path, "--max-depth", "0")) == len(full.zones)
