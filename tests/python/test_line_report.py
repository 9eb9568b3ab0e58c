"""tracy-export -f lines on python -m tracy -l traces: the hits of every
line equal what a sys.settrace line counter sees on the same held-in
program (loops, branches, comprehensions, generators, exceptions, multi-line
statements, decorated and nested functions, a thread), under the
interpreter under test; Debian's line_profiler (kernprof) agrees with us
wherever it agrees with sys.settrace; the report's source handling (missing
source, source changed since the run) and its refusals."""
import collections
import os
import re
import subprocess

from conftest import PYTHON, READER_DIR, env_for_tests
from programs import tool

# Functions carry @profile for kernprof; under python -m tracy the fallback
# below makes it a no-op. A line whose line_profiler count is known to be
# off says so in an "lp:" comment, the reason the test prints.
PROGRAM = '''\
import threading

try:
    profile
except NameError:
    def profile(f):
        return f


def deco(f):
    def wrapper(*a, **k):
        return f(*a, **k)
    return wrapper


@deco
@profile
def work(n):
    total = 0
    for i in range(n):  # lp: misses loop-head hits under CPython 3.11
        if i % 3 == 0:  # lp: misses hits of the first line of a loop body
            total += i
        else:
            total -= 1
    squares = [i * i for i in range(n)]
    try:
        raise ValueError(n)
    except ValueError:
        total += 1
    x = (1 +
         2 +
         3)
    return total + sum(squares) + x


@profile
def gen(n):
    for i in range(n):  # lp: misses the generator's resumption hits
        yield i


@profile
def outer():
    @profile
    def inner(k):  # lp: misses a hit of the def under a decorator
        return k * 2
    return sum(inner(v) for v in gen(5))


@profile
def main():
    work(10)
    outer()
    t = threading.Thread(target=work, args=(4,))
    t.start()
    t.join()


main()
'''

# Runs a program under a sys.settrace line counter (threads too) and prints
# "FIRSTLINE LINE HITS" for the code of that file: hits per function (code
# object's first line) and line.
COUNTER = '''\
import collections, runpy, sys, threading
path = sys.argv[1]
hits = collections.Counter()
def local(frame, event, arg):
    if event == "line" and frame.f_code.co_filename == path:
        hits[frame.f_code.co_firstlineno, frame.f_lineno] += 1
    return local
def start(frame, event, arg):
    return local
threading.settrace(start)
sys.settrace(start)
sys.argv = [path]
try:
    runpy.run_path(path, run_name="__main__")
finally:
    sys.settrace(None)
    for (first, line), n in sorted(hits.items()):
        print(first, line, n)
'''


def report_hits(text, path):
    """{(first line, line): hits} of the functions of `path` in a line
    report (line_profiler's layout: ours or kernprof's)."""
    hits = collections.Counter()
    file = first = None
    for row in text.splitlines():
        if row.startswith("File: "):
            file = row[6:]
        m = re.match(r"Function: .* at line (\d+)$", row)
        if m:
            first = int(m.group(1))
        if file and os.path.basename(file) == os.path.basename(path) and \
                re.match(r"^ *\d+ ", row) and row[7:16].strip():
            hits[first, int(row[:6])] += int(row[7:16])
    return hits


def settrace_hits(python, path, env):
    proc = subprocess.run([python, "-c", COUNTER, path], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return collections.Counter({(int(a), int(b)): int(n) for a, b, n in
                                (r.split() for r in proc.stdout.splitlines())})


def traced(python, tmp_path, env, *options):
    script = tmp_path / "prog.py"
    if not script.exists():
        script.write_text(PROGRAM)
    trace = str(tmp_path / "lines.tracy")
    proc = subprocess.run([python, "-m", "tracy", "-l", "-o", trace] + list(options) +
                          [str(script)], capture_output=True, text=True, timeout=120, env=env,
                          cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    return str(script), trace


def test_line_hits_equal_settrace_counter(tmp_path):
    script, trace = traced(PYTHON, tmp_path, env_for_tests())
    report = tool("tracy-export", "-f", "lines", "-o", "-", trace).stdout
    ours = report_hits(report, script)
    want = settrace_hits(PYTHON, script, env_for_tests())
    assert ours == want
    # every kind of line is there: loop body, both branches, the handler,
    # a generator's body, a nested function, the thread's second call
    assert sum(n for (f, _), n in want.items()) > 60
    # The source is beside the figures, the function's header above them.
    assert re.search(r"Function: work at line \d+\n", report)
    assert "    for i in range(n):" in report
    assert "(source not" not in report.split("File: " + script)[1].split("Total time")[0]


def test_per_thread_split_sums_to_the_merged_report(tmp_path):
    script, trace = traced(PYTHON, tmp_path, env_for_tests())
    merged = report_hits(tool("tracy-export", "-f", "lines", "-o", "-", trace).stdout, script)
    split = tool("tracy-export", "-f", "lines", "--per-thread", "-o", "-", trace).stdout
    assert len(set(re.findall(r"^Thread: (\d+:\d+)", split, re.M))) == 2
    assert report_hits(split, script) == merged


def test_line_profiler_agrees_where_settrace_does(tmp_path):
    """kernprof (Debian's python3-line-profiler, /usr/bin/python3) against
    our report of the same program under the same interpreter. Every line
    where line_profiler's count differs from ours must be one where
    sys.settrace sides with us and the program says why line_profiler is
    off; everywhere else the counts are equal."""
    py = "/usr/bin/python3"
    env = env_for_tests(PYTHONPATH=READER_DIR)
    script, trace = traced(py, tmp_path, env)
    ours = report_hits(tool("tracy-export", "-f", "lines", "-o", "-", trace).stdout, script)
    truth = settrace_hits(py, script, env)
    assert ours == truth
    lprof = str(tmp_path / "prog.lprof")
    run = subprocess.run([py, "-m", "kernprof", "-l", "-o", lprof, script], capture_output=True,
                         text=True, timeout=120, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    shown = subprocess.run([py, "-m", "line_profiler", lprof], capture_output=True, text=True,
                           timeout=60)
    assert shown.returncode == 0, shown.stderr
    theirs = report_hits(shown.stdout, script)
    source = PROGRAM.splitlines()
    agreed, explained = 0, []
    for key, hits in sorted(theirs.items()):
        if hits == ours[key]:
            agreed += 1
            continue
        line = key[1]
        why = source[line - 1].partition("# lp: ")[2]
        assert why, "line %d: line_profiler %d hits, ours %d, settrace %d, and no reason" % (
            line, hits, ours[key], truth[key])
        assert ours[key] == truth[key]
        explained.append("line %d: line_profiler %d, ours and settrace %d (%s)"
                         % (line, hits, ours[key], why))
    print("\n".join(explained))
    assert agreed >= 15, (agreed, explained)


DECORATED = """\
import tracy


def helper(k):
    return k + 1


@tracy.profile
def hot(n):
    s = 0
    for i in range(n):
        s += helper(i)
    return s


def cold():
    return sum(range(10))


cold()
hot(3)
cold()
"""


def test_decorated_functions_only(tmp_path):
    """kernprof's habit: with @tracy.profile on some functions, -l's report
    shows those only (--all-functions: every one); -pl records only while
    they run."""
    script = tmp_path / "dec.py"
    script.write_text(DECORATED)
    hot = {(8, 10): 1, (8, 11): 4, (8, 12): 3, (8, 13): 1}
    # (--label file,line renames the function zones, not the line zones)
    for n, options in enumerate((["-l"], ["-pl"], ["-l", "--label", "file,line"])):
        trace = str(tmp_path / ("dec%d.tracy" % n))
        proc = subprocess.run([PYTHON, "-m", "tracy"] + options + ["-o", trace, str(script)],
                              capture_output=True, text=True, timeout=120, env=env_for_tests(),
                              cwd=str(tmp_path))
        assert proc.returncode == 0, proc.stderr
        report = tool("tracy-export", "-f", "lines", "-o", "-", trace).stdout
        assert re.findall(r"^Function: (\S+) at line", report, re.M) == ["hot"]
        assert "(functions decorated with @tracy.profile only;" in report
        assert report_hits(report, str(script)) == hot
        every = tool("tracy-export", "-f", "lines", "--all-functions", "-o", "-", trace).stdout
        names = set(re.findall(r"^Function: (\S+) at line", every, re.M))
        assert {"hot", "helper"} <= names
        # -l records the rest of the program too; -pl only hot and its callees
        assert ({"cold", "<module>"} <= names) == (options[0] == "-l")
        r = tool("tracy-export", "-f", "lines", "--function", "cold", "-o", "-", trace,
                 check=False)
        assert r.returncode == 1 and "decorated with @tracy.profile" in r.stderr


def test_sort_and_top(tmp_path):
    script, trace = traced(PYTHON, tmp_path, env_for_tests())
    out = tool("tracy-export", "-f", "lines", "--sort", "time", "--top", "3", "-o", "-",
               trace).stdout
    totals = [float(t) for t in re.findall(r"^Total time: (\S+) s$", out, re.M)]
    assert len(totals) == 3 and totals == sorted(totals, reverse=True)
    # <module> holds every other line of the program: it comes first.
    assert re.findall(r"^Function: (\S+)", out, re.M)[0] == "<module>"


def test_missing_and_changed_sources(tmp_path):
    script, trace = traced(PYTHON, tmp_path, env_for_tests())
    want = report_hits(tool("tracy-export", "-f", "lines", "-o", "-", trace).stdout, script)
    # Edited since the run, same size: the mtime tells.
    st = os.stat(script)
    text = PROGRAM.replace("total = 0", "total = 1")
    with open(script, "w") as f:
        f.write(text)
    os.utime(script, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
    out = tool("tracy-export", "-f", "lines", "-o", "-", trace).stdout
    assert "changed since the run (its modification time differs" in out
    assert "total = 1" not in out
    assert report_hits(out, script) == want  # figures still there
    # Longer: the size tells.
    with open(script, "a") as f:
        f.write("# one more line\n")
    out = tool("tracy-export", "-f", "lines", "-o", "-", trace).stdout
    assert "changed since the run (its size differs" in out
    # Gone: said, figures without text.
    os.unlink(script)
    out = tool("tracy-export", "-f", "lines", "-o", "-", trace).stdout
    assert "source not shown: %s: No such file or directory" % script in out
    assert report_hits(out, script) == want
    # Unreadable (a folder where the file was).
    os.mkdir(script)
    out = tool("tracy-export", "-f", "lines", "-o", "-", trace).stdout
    assert "source not shown: %s" % script in out
    assert report_hits(out, script) == want


def test_refusals(tmp_path):
    plain = str(tmp_path / "plain.tracy")
    script = tmp_path / "p.py"
    script.write_text("def f():\n    return 1\n\nf()\n")
    proc = subprocess.run([PYTHON, "-m", "tracy", "-o", plain, str(script)],
                          capture_output=True, text=True, timeout=120, env=env_for_tests())
    assert proc.returncode == 0, proc.stderr
    out = str(tmp_path / "r.txt")
    r = tool("tracy-export", "-f", "lines", "-o", out, plain, check=False)
    assert r.returncode == 2
    assert r.stderr == ("tracy-export: %s: no line zones in the trace (record with python -m "
                        "tracy -l)\n" % plain)
    assert not os.path.exists(out)
    _, trace = traced(PYTHON, tmp_path, env_for_tests())
    r = tool("tracy-export", "-f", "lines", "--function", "^nothing$", "-o", "-", trace,
             check=False)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr.count("\n") == 1 and "matches no function" in r.stderr
