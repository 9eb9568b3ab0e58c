"""python -m tracy.top TRACE [N]: the N functions (default 10) with the most
self time in a trace, with their call counts. Uses tracy-sql when it is
installed next to the package or on PATH, else the extension's totals,
computed on the same call-tree model as the converters."""
import os
import sys

from tracy import _tracy

KINDS = {1: "python", 2: "c", 3: "line", 4: "user", 5: "internal"}


def top_zones(path, n):
    """[(name, kind, calls, self_ns, total_ns)] sorted by self time. total_ns
    counts a zone only when no enclosing zone of its thread is the same
    function (cProfile's cumulative time): the converters' own call-tree
    model, as tracy-sql's function_stats."""
    rows = [(name, KINDS.get(kind, "?"), calls, self_ns, cum_ns)
            for name, kind, _file, _line, calls, self_ns, cum_ns
            in _tracy._function_stats(path)]
    rows.sort(key=lambda r: (-r[3], r[0]))
    return rows[:n]


QUERY = ("SELECT name, category, calls, round(self / 1e6, 3) AS self_ms, "
         "round(total / 1e6, 3) AS total_ms FROM function_stats "
         "ORDER BY self DESC, name LIMIT %d")


def run_sql(path, n):
    """Prints the table through tracy-sql and returns its exit status (its
    error already printed), or None when tracy-sql is not installed."""
    from tracy._capture import find_tool
    sql = find_tool("tracy-sql")
    if sql is None:
        return None
    pid = os.posix_spawn(sql, [sql, "--table", path, QUERY % n], os.environ)
    _, status = os.waitpid(pid, 0)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(__doc__.split("\n\n")[0] + "\n")
        return 0 if argv else 2
    path = argv[0]
    try:
        n = int(argv[1]) if len(argv) > 1 else 10
    except ValueError:
        n = 0
    if n < 1:
        sys.stderr.write("tracy.top: N must be a number of at least 1, not %r\n" % argv[1])
        return 2
    sys.stdout.flush()
    status = run_sql(path, n)
    if status is not None:
        return status
    try:
        rows = top_zones(path, n)
    except (OSError, ValueError) as e:
        sys.stderr.write("tracy.top: %s\n" % e)
        return 1
    print("%-40s %-7s %10s %14s %14s" % ("function", "kind", "calls", "self ms", "total ms"))
    for name, kind, calls, self_ns, total_ns in rows:
        print("%-40.40s %-7s %10d %14.3f %14.3f"
              % (name, kind, calls, self_ns / 1e6, total_ns / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
