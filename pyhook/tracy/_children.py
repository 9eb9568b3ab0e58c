"""The processes of a run as /proc shows them: the profiled children a run
waits for before it ends (_capture.wait_for_children), and the processes
still recording into its capture once the program has ended
(_capture.wait_daemon). Loaded only when there are some to look at: most
runs start no child."""
import os
import sys

from tracy import _capture


def _is_python(pid, me_exe):
    try:
        exe = os.readlink("/proc/%d/exe" % pid)
    except OSError:
        return False
    return exe == me_exe or os.path.basename(exe).startswith("python")


def _profiled(pid):
    """True when `pid` runs with TRACY_PY_OPTS in its environment, False
    when it does not, None when that cannot be read now (a process in the
    middle of exec shows an empty environment for a moment)."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            env = f.read()
    except OSError:
        return None
    return (b"\0TRACY_PY_OPTS=" in b"\0" + env) if env else None


def _descendants():
    """{pid: session id} of the live descendants of this process, from
    /proc."""
    parent, session = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d, "rb") as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rfind(b")") + 2:].split()
        if len(fields) > 3 and fields[0] != b"Z":
            parent[int(d)], session[int(d)] = int(fields[1]), int(fields[3])
    me, found = os.getpid(), {}
    for pid in parent:
        p, seen = parent.get(pid), 0
        while p and p != me and seen < 64:
            p, seen = parent.get(p), seen + 1
        if p == me:
            found[pid] = session[pid]
    return found


def _python_descendants():
    """{pid: _profiled(pid)} of the live descendants of this process that
    run a Python interpreter."""
    if not _capture._has_children():
        return {}
    me_exe = os.path.realpath(sys.executable)
    return {pid: _profiled(pid) for pid in _descendants() if _is_python(pid, me_exe)}


def _mp_helper(pid):
    """Whether `pid` is multiprocessing's resource tracker or fork server:
    they live until their parent exits, not to be waited for."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read()
    except OSError:
        return False
    return (b"from multiprocessing.resource_tracker import" in argv
            or b"from multiprocessing.forkserver import" in argv)


def wait_for_children(say, limit=10.0):
    """A child started by the program connects to the daemon as it starts,
    maybe just after the program has ended: this process stays connected (so
    that the daemon does not end) while the profiled descendants alive now
    are, at most `limit` seconds (a child connected by then keeps the daemon
    open itself). Descendants started later (by a daemon thread still
    running) are not waited for: the capture drains once this process has
    stopped (see _capture.drain_daemon)."""
    import time
    # a child whose environment cannot be read yet (in exec) is kept until
    # it can: a child missed here would be refused by the drained capture
    kids = {k for k, prof in _python_descendants().items()
            if prof is not False and not _mp_helper(k)}
    if not kids:
        return
    say("waiting for %d profiled child process(es): %s"
        % (len(kids), " ".join(map(str, sorted(kids)[:10]))))
    end = time.monotonic() + limit
    while time.monotonic() < end:
        time.sleep(0.05)
        now = _python_descendants()
        kids = {k for k in kids if k in now and now[k] is not False}
        if not kids:
            return


def _daemon_pids(addr):
    """The pids the draining daemon lists as still recording (connected,
    or held for: a child a process forked, a program after exec), from
    daemon-N.pids beside its socket daemon-N.sock; empty when it has none
    (an older daemon)."""
    path = addr[5:] if addr.startswith("unix:") else ""
    if not path.endswith(".sock"):
        return set()
    try:
        with open(path[:-5] + ".pids", "rb") as f:
            return {int(x) for x in f.read().split() if x.isdigit()}
    except OSError:
        return set()


def _recording(addr):
    """The processes recording into the capture at addr: those the daemon
    lists, and those whose environment names its address (started with it:
    not yet connected, maybe). A forked child's /proc environment is its
    parent's first one, without the address: the daemon's list has it."""
    key = b"\0TRACY_ADDR=" + os.fsencode(addr) + b"\0"
    found = _daemon_pids(addr)
    for d in os.listdir("/proc"):
        pid = int(d) if d.isdigit() else 0
        if pid == 0 or pid in found:
            continue
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                if key in b"\0" + f.read() + b"\0":
                    found.add(pid)
        except OSError:
            continue
    return found


def detached_only(daemon, addr, sid):
    """Whether the processes recording into this run's capture are all in
    sessions other than this one, and none of this process's descendants
    is left in it: services the program started (a daemon's double fork,
    start_new_session), which outlive it unprofiled."""
    me, clients = os.getpid(), 0
    for pid in _recording(addr) - {me, daemon}:
        try:
            if os.getsid(pid) == sid:
                return False
        except OSError:
            continue
        clients += 1
    return clients > 0 and not any(s == sid and k != daemon
                                   for k, s in _descendants().items())
