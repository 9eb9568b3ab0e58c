"""Shared machines: no other local user can read, feed or block a capture.

Two real local users, tracy-alice and tracy-mallory (created with useradd:
the tests need root, as make check has on CI), run the real programs: the
capture daemon, python -m tracy and a C program linked with libtrace.
mallory tries each attack of the shared-machines issue on alice's runs;
alice's traces must stay complete and exact, mallory's files must hold
nothing of hers, and every refusal is said in one line and counted.

The build is copied to a folder both users can read (the checkout may sit
under /root), and the users' programs run under Debian's python3 (the pyenv
interpreters live under /root too): what is tested is the transport, the
same for every interpreter.
"""
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

BUILD = os.environ.get("LT_BUILD") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
PY = "/usr/bin/python3"
FIB_CALLS = 1973  # fib(15)
SECRET = """\
def transfer_funds_to_account_12345(n):
    return n if n < 2 else (transfer_funds_to_account_12345(n - 1)
                            + transfer_funds_to_account_12345(n - 2))

print(transfer_funds_to_account_12345(15))
"""

if os.geteuid() != 0:
    pytest.skip("needs root to create the two local users (useradd); make check on CI "
                "runs as root", allow_module_level=True)


def _user(name):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "-m", "-s", "/bin/sh", name], check=True)
        return pwd.getpwnam(name)


@pytest.fixture(scope="module")
def world():
    """The two users, each with a private work folder, and the build copied
    where both can read it."""
    alice, mallory = _user("tracy-alice"), _user("tracy-mallory")
    top = tempfile.mkdtemp(prefix="tracy-shared-", dir="/tmp")
    os.chmod(top, 0o755)
    kit = os.path.join(top, "kit")
    os.makedirs(os.path.join(kit, "bin"))
    for tool in ("capture-release", "tracy-info", "tracy-sql", "tracy-json", "tracy-csv",
                 "tracy-export", "example_c"):
        shutil.copy2(os.path.join(BUILD, "bin", tool), os.path.join(kit, "bin", tool))
    shutil.copytree(os.path.join(BUILD, "python"), os.path.join(kit, "python"),
                    ignore=shutil.ignore_patterns("pytest*"))
    subprocess.run(["chmod", "-R", "a+rX", kit], check=True)
    homes = {}
    for u in (alice, mallory):
        d = os.path.join(top, u.pw_name)
        os.makedirs(os.path.join(d, "tmp"))
        subprocess.run(["chown", "-R", "%d:%d" % (u.pw_uid, u.pw_gid), d], check=True)
        os.chmod(d, 0o700)
        homes[u.pw_name] = d
    w = {"alice": alice, "mallory": mallory, "top": top, "kit": kit, "dir": homes}
    yield w
    shutil.rmtree(top, ignore_errors=True)


def env_of(w, who, **extra):
    u = w[who]
    env = {"PATH": os.path.join(w["kit"], "bin") + ":/usr/bin:/bin", "HOME": u.pw_dir,
           "USER": u.pw_name, "PYTHONPATH": os.path.join(w["kit"], "python"),
           "TMPDIR": os.path.join(w["dir"][u.pw_name], "tmp"), "LANG": "C.UTF-8"}
    env.update({k: v for k, v in extra.items() if v is not None})
    for k in [k for k, v in extra.items() if v is None]:
        env.pop(k, None)
    return env


def as_user(w, who, argv, background=False, **extra):
    """Runs argv as that user in their work folder."""
    u = w[who]
    kw = dict(user=u.pw_uid, group=u.pw_gid, extra_groups=[], cwd=w["dir"][u.pw_name],
              env=env_of(w, who, **extra), text=True, stdout=subprocess.PIPE,
              stderr=subprocess.PIPE)
    if background:
        return subprocess.Popen(argv, **kw)
    return subprocess.run(argv, timeout=120, **kw)


def rundir_of(w, who):
    """The run folder that user's tools pick with that environment."""
    return os.path.join(w["dir"][w[who].pw_name], "tmp", "tracy-%d" % w[who].pw_uid)


def tool(w, name, *args):
    p = subprocess.run([os.path.join(w["kit"], "bin", name)] + list(args),
                       capture_output=True, text=True, timeout=120)
    return p


def calls(w, trace, func):
    p = tool(w, "tracy-sql", "--json", trace,
             "SELECT count(*) AS n FROM slice WHERE name = '%s'" % func)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)[0]["n"]


def processes(w, trace):
    p = tool(w, "tracy-sql", "--json", trace, "SELECT count(*) AS n FROM process")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)[0]["n"]


def stat_of(w, trace, name):
    p = tool(w, "tracy-info", "--json", trace)
    assert p.returncode in (0, 6), p.stderr
    return {s["name"]: s["value"] for s in json.loads(p.stdout)["stats"]}.get(name, 0)


def holds_nothing_of_alice(w, trace):
    """Nothing of alice's run in one of mallory's traces: no process, and
    none of her names anywhere in its decoded content."""
    assert processes(w, trace) == 0
    p = tool(w, "tracy-json", trace)
    assert p.returncode == 0, p.stderr
    for word in ("transfer_funds", "secret", "tracy-alice", w["dir"]["tracy-alice"]):
        assert word not in p.stdout


def write_secret(w):
    path = os.path.join(w["dir"]["tracy-alice"], "secret.py")
    with open(path, "w") as f:
        f.write(SECRET)
    os.chown(path, w["alice"].pw_uid, w["alice"].pw_gid)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def stop(d):
    if d.poll() is None:
        d.send_signal(signal.SIGINT)
    try:
        out, err = d.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        d.kill()
        out, err = d.communicate()
    return d.returncode, out, err


def wait_for(pred, what, limit=10.0):
    end = time.monotonic() + limit
    while not pred():
        assert time.monotonic() < end, what
        time.sleep(0.02)


def mallory_daemon(w, out, *args):
    d = as_user(w, "mallory", ["capture-release", "-o", out, "-s", "60"] + list(args),
                background=True)
    return d


def test_a_daemon_of_another_user_on_the_port_gets_nothing(world):
    """mallory's daemon holds the TCP port (8086, or another when that one is
    taken here); alice's python and C programs never send it a byte: by
    default they look for alice's own daemon on her Unix socket, and even
    when TRACY_ADDR names the loopback port they refuse another user's
    daemon in one line and record into a daemon of their own."""
    w = world
    write_secret(w)
    port = 8086
    try:
        free = socket.socket()
        free.bind(("127.0.0.1", port))
        free.close()
    except OSError:
        port = free_port()
    mout = os.path.join(w["dir"]["tracy-mallory"], "m.tracy")
    d = mallory_daemon(w, mout, "-a", "127.0.0.1", "-p", str(port))
    try:
        # (it listens on TCP before its socket is made)
        wait_for(lambda: os.path.exists(os.path.join(rundir_of(w, "mallory"),
                                                     "daemon-%d.sock" % port)),
                 "mallory's daemon did not listen")
        env = {"TRACY_PORT": str(port)}
        r = as_user(w, "alice", [PY, "-m", "tracy", "secret.py"], **env)
        assert r.returncode == 0 and r.stdout == "610\n", r.stderr
        assert r.stderr.splitlines()[-1].startswith("tracy: trace written to"), r.stderr
        trace = os.path.join(w["dir"]["tracy-alice"], "secret.tracy")
        assert calls(w, trace, "transfer_funds_to_account_12345") == FIB_CALLS

        r = as_user(w, "alice", [PY, "-m", "tracy", "-o", "named.tracy", "secret.py"],
                    TRACY_ADDR="127.0.0.1", **env)
        assert r.returncode == 0 and r.stdout == "610\n", r.stderr
        lines = r.stderr.splitlines()
        said = [x for x in lines if "not sending to the capture daemon at 127.0.0.1:%d" % port
                in x]
        assert len(said) == 1 and "another user (uid %d)" % w["mallory"].pw_uid in said[0], \
            r.stderr
        assert lines[-1].startswith("tracy: trace written to"), r.stderr
        named = os.path.join(w["dir"]["tracy-alice"], "named.tracy")
        assert calls(w, named, "transfer_funds_to_account_12345") == FIB_CALLS

        # A C program linked with libtrace: the same refusal, then unprofiled.
        r = as_user(w, "alice", ["example_c"], TRACY_ADDR="127.0.0.1", **env)
        assert r.returncode == 0, r.stderr
        assert r.stderr.count("\n") == 1 and "runs as another user" in r.stderr, r.stderr
        r = as_user(w, "alice", ["example_c"], **env)  # default: her own socket only
        assert r.returncode == 0, r.stderr
        assert "no capture daemon at %s/daemon-%d.sock" % (rundir_of(w, "alice"), port) \
            in r.stderr, r.stderr
    finally:
        rc, _, err = stop(d)
    assert rc == 0, err
    holds_nothing_of_alice(w, mout)


def test_a_planted_run_folder_is_passed_over(world):
    """mallory creates /tmp/tracy-<alice's uid> first (the name is public);
    alice's run says so in one line and uses a private folder of hers."""
    w = world
    write_secret(w)
    planted = "/tmp/tracy-%d" % w["alice"].pw_uid
    if os.path.lexists(planted):
        shutil.rmtree(planted) if os.path.isdir(planted) and not os.path.islink(planted) \
            else os.unlink(planted)
    as_user(w, "mallory", ["sh", "-c", "mkdir -m 777 %s && chmod 777 %s" % (planted, planted)])
    try:
        assert os.stat(planted).st_uid == w["mallory"].pw_uid
        r = as_user(w, "alice", [PY, "-m", "tracy", "-o", "p.tracy", "secret.py"],
                    TMPDIR=None, XDG_RUNTIME_DIR=None)
        assert r.returncode == 0 and r.stdout == "610\n", r.stderr
        lines = r.stderr.splitlines()
        note = [x for x in lines if planted in x]
        assert len(note) == 1, r.stderr
        assert "owned by uid %d" % w["mallory"].pw_uid in note[0], r.stderr
        assert len(lines) == 2 and lines[1].startswith("tracy: trace written to"), r.stderr
        trace = os.path.join(w["dir"]["tracy-alice"], "p.tracy")
        assert calls(w, trace, "transfer_funds_to_account_12345") == FIB_CALLS
        assert os.listdir(planted) == []  # nothing of alice's went there
    finally:
        shutil.rmtree(planted, ignore_errors=True)


def _plant(w, kind, path, evil_pid, evil_sock, job):
    """A rendezvous file at path, as mallory would have it."""
    m = w["mallory"]
    rec = "pid=%d\naddr=unix:%s\njob=%s\nsize=0\njoined=1\n" % (evil_pid, evil_sock, job)
    if kind == "fifo":
        os.mkfifo(path, 0o666)
        os.chown(path, m.pw_uid, m.pw_gid)
        return
    if kind == "symlink":
        target = os.path.join(w["top"], "mallory-target.run")
        with open(target, "w") as f:
            f.write(rec)
        os.chown(target, m.pw_uid, m.pw_gid)
        os.chmod(target, 0o666)
        os.symlink(target, path)
        return
    with open(path, "w") as f:
        f.write(rec)
    if kind == "names her process":  # alice's own file, naming mallory's process
        os.chown(path, w["alice"].pw_uid, w["alice"].pw_gid)
        os.chmod(path, 0o600)
        return
    os.chown(path, m.pw_uid, m.pw_gid)
    os.chmod(path, 0o666 if kind == "0666" else 0o600)


@pytest.mark.parametrize("kind", ["0666", "0600", "symlink", "fifo", "names her process"])
def test_a_planted_rendezvous_file_never_redirects_a_run(world, kind):
    """A rendezvous file mallory made (or one that names a process of hers
    posing as alice's daemon) is never followed: alice's run reports the
    file in one line (or sees the process is not hers) and records into a
    daemon of its own; mallory's listener gets nothing."""
    w = world
    write_secret(w)
    sys.path.insert(0, os.path.join(w["kit"], "python"))
    from tracy import _capture
    out = os.path.join(w["dir"]["tracy-alice"], "rv.tracy")
    if os.path.exists(out):
        os.unlink(out)
    rundir = rundir_of(w, "alice")
    os.makedirs(rundir, exist_ok=True)
    os.chown(rundir, w["alice"].pw_uid, w["alice"].pw_gid)
    os.chmod(rundir, 0o700)
    path = os.path.join(rundir, "run-%s.run" % _capture._fnv(out))
    pub = os.path.join(w["top"], "mallory-public")  # hers, open to all
    os.makedirs(pub, exist_ok=True)
    os.chown(pub, w["mallory"].pw_uid, w["mallory"].pw_gid)
    os.chmod(pub, 0o755)
    evil_sock = os.path.join(pub, "evil.sock")
    mout = os.path.join(w["dir"]["tracy-mallory"], "evil.tracy")
    for p in (path, evil_sock, mout):
        if os.path.lexists(p):
            os.unlink(p)
    # mallory: a real daemon on a socket anyone can reach, and a process
    # posing as alice's capture-release (its argv holds alice's trace path)
    d = mallory_daemon(w, mout, "--socket", evil_sock)
    pose = as_user(w, "mallory", [PY, "-c", "import time; time.sleep(60)", "-o", out],
                   background=True)
    try:
        wait_for(lambda: os.path.exists(evil_sock), "mallory's daemon did not listen")
        os.chmod(evil_sock, 0o777)
        # alice's job key is public: the parent pid of her python -m tracy
        _plant(w, kind, path, pose.pid, evil_sock, "ppid=%d" % os.getpid())
        r = as_user(w, "alice", [PY, "-m", "tracy", "-o", out, "secret.py"])
        assert r.returncode == 0 and r.stdout == "610\n", r.stderr
        lines = r.stderr.splitlines()
        assert lines[-1].startswith("tracy: trace written to %s" % out), r.stderr
        if kind == "names her process":
            assert len(lines) == 1, r.stderr  # not hers: a stale record, replaced
        else:
            assert len(lines) == 2 and "not using the rendezvous file %s" % path in lines[0], \
                r.stderr
        assert calls(w, out, "transfer_funds_to_account_12345") == FIB_CALLS
    finally:
        pose.kill()
        pose.communicate()
        rc, _, err = stop(d)
        for p in (path, evil_sock):
            if os.path.lexists(p):
                os.unlink(p)
    assert rc == 0, err
    holds_nothing_of_alice(w, mout)
    assert processes(w, mout) == 0


RAW_HELLO_CLIENT = r"""
import socket, struct, sys
if sys.argv[1].isdigit():
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
else:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(sys.argv[1])
body = b"TRCYWIRE" + struct.pack("<HH", 1, 0)
try:
    s.sendall(struct.pack("<IB", len(body) + 1, 1) + body)
except OSError:  # refused and closed first: the answer is still there to read
    pass
h = b""
while len(h) < 5:
    c = s.recv(5 - len(h))
    if not c:
        break
    h += c
print(h[4] if len(h) == 5 else -1)
"""


def test_a_client_of_another_user_is_refused_and_counted(world):
    """alice's daemon listens on her Unix socket and, asked to, on loopback
    TCP. mallory's clients (a C program with a token, so that it does try;
    a raw HELLO) and root's raw HELLO on alice's Unix socket are refused before
    anything is stored, counted in clients_refused and logged; alice's own
    client is recorded exactly."""
    w = world
    write_secret(w)
    out = os.path.join(w["dir"]["tracy-alice"], "served.tracy")
    if os.path.exists(out):
        os.unlink(out)
    d = as_user(w, "alice", ["capture-release", "-o", out, "-a", "127.0.0.1", "-p", "0",
                             "-s", "60"], background=True)
    try:
        port = int(d.stdout.readline())
        sock = os.path.join(rundir_of(w, "alice"), "daemon-%d.sock" % port)
        assert os.path.exists(sock)
        r = as_user(w, "mallory", ["example_c"], TRACY_ADDR="127.0.0.1", TRACY_PORT=str(port),
                    TRACY_TOKEN="guess")
        assert r.returncode == 0, r.stderr
        assert r.stderr.count("\n") == 2 and "refused the connection" in r.stderr, r.stderr
        r = as_user(w, "mallory", [PY, "-c", RAW_HELLO_CLIENT, str(port)])
        assert r.stdout.strip() == str(0x82), r.stderr  # REFUSE
        r = as_user(w, "mallory", ["example_c"], TRACY_ADDR="unix:" + sock)
        assert r.returncode == 0 and "Permission denied" in r.stderr, r.stderr
        # root may enter alice's folder, but is not alice: root's client will
        # not send to her daemon, and her daemon refuses root's raw HELLO
        env = dict(env_of(w, "alice"), TRACY_ADDR="unix:" + sock, HOME="/root")
        r = subprocess.run([os.path.join(w["kit"], "bin", "example_c")], env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "runs as another user (uid %d)" % w["alice"].pw_uid \
            in r.stderr, r.stderr
        r = subprocess.run([PY, "-c", RAW_HELLO_CLIENT, sock], capture_output=True, text=True,
                           timeout=60)
        assert r.stdout.strip() == str(0x82), r.stderr  # REFUSE
        r = as_user(w, "alice", [PY, "-m", "tracy", "secret.py"], TRACY_ADDR="unix:" + sock)
        assert r.returncode == 0 and r.stdout == "610\n", r.stderr
    finally:
        rc, _, err = stop(d)
    assert rc == 0, err
    assert calls(w, out, "transfer_funds_to_account_12345") == FIB_CALLS
    assert processes(w, out) == 1
    # mallory's C program and raw HELLO over TCP, root's C program (which
    # connects, then will not send) and raw HELLO on the Unix socket
    assert stat_of(w, out, "clients_refused") == 4
    refusals = [x for x in err.splitlines() if "another user" in x]
    assert 1 <= len(refusals) <= 4, err
    assert not os.path.exists(sock)  # removed at the end


def test_a_link_planted_in_a_shared_folder_is_not_written_through(world):
    """A folder the group (here everyone) can write, without the sticky bit
    that makes the kernel refuse such links: mallory plants links where
    alice's trace and report will go, pointing at a file of alice's. The
    run is refused while the trace's name is taken; then the report is
    refused in one line; alice's file is untouched."""
    w = world
    write_secret(w)
    proj = os.path.join(w["top"], "project")
    os.makedirs(proj, exist_ok=True)
    os.chmod(proj, 0o777)
    precious = os.path.join(w["dir"]["tracy-alice"], "precious.txt")
    with open(precious, "w") as f:
        f.write("alice's work\n")
    os.chown(precious, w["alice"].pw_uid, w["alice"].pw_gid)
    for name in ("run.tracy", "run.csv"):
        as_user(w, "mallory", ["ln", "-sf", precious, os.path.join(proj, name)])
        assert os.lstat(os.path.join(proj, name)).st_uid == w["mallory"].pw_uid
    argv = [PY, "-m", "tracy", "-r", "-o", os.path.join(proj, "run.tracy"), "secret.py"]
    r = as_user(w, "alice", argv)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "refusing to overwrite" in r.stderr, r.stderr
    os.unlink(os.path.join(proj, "run.tracy"))
    r = as_user(w, "alice", argv)
    assert r.returncode == 0 and r.stdout == "610\n", r.stderr
    assert "run.csv: cannot create: a link made by another user (not followed)" in r.stderr, \
        r.stderr
    with open(precious) as f:
        assert f.read() == "alice's work\n"
    trace = os.path.join(proj, "run.tracy")
    assert not os.path.islink(trace) and os.stat(trace).st_uid == w["alice"].pw_uid
    assert calls(w, trace, "transfer_funds_to_account_12345") == FIB_CALLS
