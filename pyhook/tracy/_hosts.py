"""A job whose ranks run on several hosts (_capture.spread() says when):
each host's daemon writes a part of the trace, named after the host, and
rank 0 merges the parts into the trace asked for. Imported only for such a
job."""
import os
import sys

from tracy._capture import _fnv, find_tool, tell


def host_name():
    import socket
    return os.environ.get("TRACY_HOST") or socket.gethostname() or "host"


def part_pattern(out, job):
    """The parts of `out` written by the hosts of `job`: (prefix, suffix);
    a part is prefix + host + suffix."""
    stem = out[:-6] if out.endswith(".tracy") else out
    return "%s.%s." % (stem, _fnv(job)[:8]), ".tracy"


def part_path(out, job):
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in host_name())
    pre, suf = part_pattern(out, job)
    return pre + safe + suf


def _part_facts(info_exe, path):
    """(complete, ranks) of a part, from tracy-info --json."""
    import json
    import subprocess
    try:
        p = subprocess.run([info_exe, "--json", path], capture_output=True, text=True,
                           timeout=60)
        d = json.loads(p.stdout)
    except (OSError, ValueError, subprocess.SubprocessError):
        return False, set()
    return bool(d.get("complete")), {q.get("rank") for q in d.get("processes", [])}


def _parts(out, job):
    pre, suf = part_pattern(out, job)
    d = os.path.dirname(pre) or "."
    base = os.path.basename(pre)
    try:
        names = os.listdir(d)
    except OSError:
        return []
    return sorted(os.path.join(d, n) for n in names if n.startswith(base) and n.endswith(suf))


def gather_parts(out, job, world, tools, say, limit=120.0):
    """Rank 0 of a job on several hosts: waits until finished parts hold
    every rank (at most `limit` seconds without one more finished), merges
    them into `out` and removes them. Returns (ranks merged, hosts, missing
    ranks), or None when there was nothing to merge or the merge failed (the
    parts are then kept, and the reason said on stderr)."""
    import subprocess
    import time
    info_exe, merge_exe = tools
    done, ranks, seen = {}, set(), {}
    last = time.monotonic()
    while True:
        for path in _parts(out, job):
            try:
                st = os.stat(path)
            except OSError:
                continue
            if path not in done and seen.get(path) != (st.st_size, st.st_mtime_ns):
                seen[path] = (st.st_size, st.st_mtime_ns)
                complete, r = _part_facts(info_exe, path)
                if complete:
                    done[path] = r
                    ranks |= r
                    last = time.monotonic()
        if ranks >= set(range(world)) or time.monotonic() - last > limit:
            break
        time.sleep(0.2)
    if not done:
        tell("tracy: no finished part of %s to merge\n" % out)
        return None
    parts = sorted(done)
    p = subprocess.run([merge_exe, "-q", "-f", "-o", out] + parts, capture_output=True,
                       text=True)
    if p.returncode not in (0, 3):
        tell("tracy: merging the hosts' parts failed (tracy-merge status %d: %s);"
                         " they are kept: %s\n" % (p.returncode, p.stderr.strip(),
                                                   " ".join(parts)))
        return None
    for path in parts:
        try:
            os.unlink(path)
        except OSError:
            pass
    missing = sorted(set(range(world)) - ranks)
    say("merged %d parts into %s" % (len(parts), out))
    return len(ranks & set(range(world))), len(parts), missing


def gather(final, job, world, say):
    """Rank 0: merges the hosts' parts into `final`, says so on stderr.
    Returns its path, or None (no merge)."""
    tools = (find_tool("tracy-info"), find_tool("tracy-merge"))
    if None in tools:
        tell("tracy: tracy-info or tracy-merge not found: the hosts' parts "
                         "stay as they are\n")
        return None
    try:
        got = gather_parts(final, job, world, tools, say)
    except KeyboardInterrupt:
        tell("tracy: interrupted; the hosts' parts of %s are not merged\n"
                         % final)
        return None
    if got is None:
        return None
    ranks, hosts, missing = got
    tell("tracy: trace written to %s (%d of %d ranks from %d hosts)\n"
                     % (final, ranks, world, hosts))
    if missing:
        tell("tracy: ranks missing from the trace (their host's part never "
                         "finished): %s\n" % " ".join(map(str, missing[:50])))
    return final
