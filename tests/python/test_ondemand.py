"""On-demand capture: an HTTP server run with python -m tracy --listen
records nothing until capture-release --connect asks; each capture holds
every request handled in its window exactly once and nothing else; bad
requests, a busy listener, a wrong token, an asker that hangs up, a program
that exits or is killed during a capture: one line each, no hang."""
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

from conftest import BIN, PYTHON, env_for_tests
from tracy import _tracy

SERVER = r"""
import http.server, socketserver, sys, time, tracy
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        rid = self.path.strip("/")
        if rid == "quit":
            self.send_response(200); self.end_headers()
            threading.Thread(target=srv.shutdown).start()
            return
        t0 = time.monotonic_ns()
        tracy.message("req " + rid)
        work(rid)
        t1 = time.monotonic_ns()
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
        # one write: handlers of two requests may print at once
        sys.stdout.write("req %s %d %d\n" % (rid, t0, t1)); sys.stdout.flush()
    def log_message(self, *a): pass
def work(rid):
    return sum(range(200))
import threading
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
srv = S(("127.0.0.1", 0), H)
print("port %d" % srv.server_address[1], flush=True)
srv.serve_forever()
if len(sys.argv) > 1 and sys.argv[1] == "linger":
    time.sleep(30)
sys.exit(7)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A program that listens by the API under plain python: what it sees of
# SIGTERM's action is what it would see without tracy.
BY_THE_API = r"""
import signal, sys, tracy
tracy.start_server(%d)
if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
    sys.exit("SIGTERM's action is not the default one")
"""


class Server:
    def __init__(self, tmp_path, *args, env=None, listen=None, api=False, prelude=""):
        # listen: (the --listen spec, the port it gives)
        if listen is None:
            port = free_port()
            listen = ("127.0.0.1:%d" % port, port)
        spec, self.listen = listen
        (tmp_path / "server.py").write_text((BY_THE_API % self.listen if api else "") + prelude +
                                            SERVER)
        e = env_for_tests(**(env or {}))
        e.pop("TRACY_PORT", None)
        run = [PYTHON] if api else [PYTHON, "-m", "tracy", "--listen", spec]
        self.proc = subprocess.Popen(
            run + [str(tmp_path / "server.py")] + list(args),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e,
            cwd=str(tmp_path))
        self.http = int(self.proc.stdout.readline().split()[1])
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def get(self, rid):
        urllib.request.urlopen("http://127.0.0.1:%d/%s" % (self.http, rid), timeout=30).read()

    def finish(self):
        self.get("quit")
        rc = self.proc.wait(timeout=60)
        self.reader.join(timeout=10)
        return rc, self.proc.stderr.read()


def ask(port, tmp_path, name, *extra, env=None):
    out = str(tmp_path / name)
    return subprocess.run([os.path.join(BIN, "capture-release"), "--connect",
                           "127.0.0.1:%d" % port, "-o", out] + list(extra),
                          capture_output=True, text=True, timeout=120,
                          env=env or env_for_tests()), out


def traced_ids(path):
    t = _tracy._read_trace(path)
    assert t["complete"], path
    return [m.text.split()[1] for m in t["messages"] if m.text.startswith("req ")]


# end flags of a zone (trace.h LT_EVF_*)
UNCLOSED, CUT = 0x2, 0x4


def assert_serve_forever_encloses(path):
    """The capture opened while the main thread was in serve_forever: that
    call and its callers are cut zones open from the capture's start to its
    end, at depths 0.., and each request accepted in the window lies under
    it, one level down."""
    zs = _tracy._read_trace(path)["zones"]
    sf = [z for z in zs if z.name == "BaseServer.serve_forever"]
    assert len(sf) == 1 and sf[0].flags == CUT | UNCLOSED, sf
    sf = sf.pop()
    same = (sf.process, sf.thread)
    outer = sorted((z for z in zs if (z.process, z.thread) == same and z.depth < sf.depth),
                   key=lambda z: z.depth)
    assert [z.depth for z in outer] == list(range(sf.depth))
    assert all(z.flags == CUT | UNCLOSED and z.begin_ts == sf.begin_ts for z in outer)
    assert [z.file.endswith("server.py") for z in outer if z.name == "<module>"] == [True]
    assert all(z.begin_ts > sf.begin_ts for z in zs if not z.flags & CUT)
    accepted = [z for z in zs if z.name == "BaseServer._handle_request_noblock"]
    # (one may be under way when the capture starts, or when it ends)
    assert accepted
    bad = [z for z in accepted if not ((z.process, z.thread) == same and z.depth == sf.depth + 1 and
                                       z.flags & ~(CUT | UNCLOSED) == 0 and
                                       sf.begin_ts <= z.begin_ts <= z.end_ts <= sf.end_ts)]
    assert not bad, (sf, bad)


def while_requested(srv, act):
    """Returns act() run while a client sends srv a request every 5 ms
    (from 0.3 s before it)."""
    stop = threading.Event()

    def client():
        i = 0
        while not stop.is_set():
            srv.get(str(i))
            i += 1
            time.sleep(0.005)
    c = threading.Thread(target=client)
    c.start()
    try:
        time.sleep(0.3)
        return act()
    finally:
        stop.set()
        c.join()


def test_two_captures_hold_each_request_of_their_window_once(tmp_path):
    srv = Server(tmp_path)

    def two():
        first = ask(srv.listen, tmp_path, "a.tracy", "--duration", "1s")
        time.sleep(0.2)
        second = ask(srv.listen, tmp_path, "b.tracy", "--duration", "1s")
        time.sleep(0.2)
        return first + second
    first, a, second, b = while_requested(srv, two)
    rc, err = srv.finish()
    assert first.returncode == 0 and second.returncode == 0, (first.stderr, second.stderr)
    assert rc == 7 and err == ""
    log = [ln.split() for ln in srv.lines]
    assert all(x[0] == "req" for x in log)
    order = [x[1] for x in sorted(log, key=lambda x: int(x[2]))]
    assert len(set(order)) == len(order)
    seen = set()
    for path in (a, b):
        ids = traced_ids(path)
        assert_serve_forever_encloses(path)
        assert len(ids) == len(set(ids)), "a request traced twice"
        assert ids and not (set(ids) & seen), "a request in two captures"
        seen |= set(ids)
        pos = sorted(order.index(i) for i in ids)
        # the traced requests are every request handled over an interval:
        # none missing in between (handled concurrently at the edges aside)
        inner = order[pos[0] + 2:pos[-1] - 1]
        assert set(inner) <= set(ids), sorted(set(inner) - set(ids))[:5]
        # a second of requests every 5 ms: how many depends on the machine's
        # load; a few are enough for the check above to say something
        assert len(ids) >= 5, len(ids)


def test_a_capture_records_calls_in_a_profiler_region_open_before_it(tmp_path):
    """A program listening by the API that runs its server inside a
    tracy.Profiler() region opened while no capture was under way: a
    capture records the requests' calls (the window hooks the region)."""
    srv = Server(tmp_path, api=True, prelude="tracy.Profiler().enable()\n")
    done, out = while_requested(
        srv, lambda: ask(srv.listen, tmp_path, "r.tracy", "--duration", "1s"))
    rc, err = srv.finish()
    assert done.returncode == 0 and rc == 7 and err == "", (done.stderr, err)
    ids = traced_ids(out)
    works = [z for z in _tracy._read_trace(out)["zones"] if z.name == "work"]
    assert len(ids) >= 5 and len(works) >= len(ids) - 2, (len(ids), len(works))


def test_bad_requests_and_a_busy_listener_get_one_line(tmp_path):
    srv = Server(tmp_path, env={"TRACY_TOKEN": "secret"})

    def raw(data):
        with socket.create_connection(("127.0.0.1", srv.listen), timeout=30) as s:
            s.sendall(data)
            return s.makefile().readline().strip()
    assert raw(b"hello\n") == "ERR bad request"
    assert raw(b"x" * 100000) == "ERR bad request"
    assert raw(b"TRACY-CAPTURE 1 1000 wrong\n") == "ERR wrong token"
    assert raw(b"TRACY-CAPTURE 9 1000 secret\n").startswith("ERR protocol 9 not spoken")
    good = env_for_tests(TRACY_TOKEN="secret")
    wrong, _ = ask(srv.listen, tmp_path, "w.tracy", env=env_for_tests(TRACY_TOKEN="nope"))
    assert wrong.returncode == 5
    assert wrong.stderr == "capture-release: the program refused the capture: wrong token\n"
    # an asker that hangs up mid-capture: the program goes on, the next works
    with socket.create_connection(("127.0.0.1", srv.listen), timeout=30) as s:
        s.sendall(b"TRACY-CAPTURE 1 60000 secret\n")
        assert s.makefile().readline().strip() == "OK"
        busy, _ = ask(srv.listen, tmp_path, "busy.tracy", env=good)
        assert busy.returncode == 5
        assert busy.stderr == ("capture-release: the program refused the capture: busy: "
                               "a capture is already under way\n")
    srv.get("1")
    for _ in range(200):  # until the program has seen the hang-up (within 50 ms)
        done, out = ask(srv.listen, tmp_path, "ok.tracy", "--duration", "200ms", env=good)
        if done.returncode == 0 or "busy" not in done.stderr:
            break
    assert done.returncode == 0, done.stderr
    assert _tracy._read_trace(out)["complete"]
    rc, err = srv.finish()
    assert rc == 7 and err == ""


def test_port_in_use_is_one_line(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        (tmp_path / "p.py").write_text("print('ran')\n")
        e = env_for_tests()
        e.pop("TRACY_PORT", None)
        p = subprocess.run([PYTHON, "-m", "tracy", "--listen", str(s.getsockname()[1]),
                            str(tmp_path / "p.py")], capture_output=True, text=True,
                           env=e, timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("tracy: cannot listen for captures on 127.0.0.1:")
    assert len(p.stderr.splitlines()) == 1


def long_capture(srv, out):
    """A capture of 60 s of srv under way (the asker has said so)."""
    asker = subprocess.Popen([os.path.join(BIN, "capture-release"), "--connect",
                              "127.0.0.1:%d" % srv.listen, "--duration", "60s", "-o",
                              str(out)], stderr=subprocess.PIPE, text=True,
                             env=env_for_tests())
    assert "recording" in asker.stderr.readline()
    return asker


def test_a_program_ending_during_a_capture(tmp_path):
    srv = Server(tmp_path)
    asker = long_capture(srv, tmp_path / "exit.tracy")
    srv.get("5")
    rc, err = srv.finish()
    assert rc == 7 and err == ""
    assert asker.wait(timeout=60) == 0
    assert "the program exited during the capture" in asker.stderr.read()
    assert traced_ids(str(tmp_path / "exit.tracy")) == ["5"]


@pytest.mark.parametrize("api", [False, True], ids=["listen", "start_server"])
def test_sigterm_during_a_capture(tmp_path, api):
    """SIGTERM, whose action the program left the default one: the capture
    under way is sent first, then the program ends by the signal. The same
    for a program that calls tracy.start_server under plain python."""
    srv = Server(tmp_path, api=api)
    asker = long_capture(srv, tmp_path / "term.tracy")
    srv.get("1")
    srv.proc.send_signal(signal.SIGTERM)
    assert srv.proc.wait(timeout=60) == -signal.SIGTERM
    assert asker.wait(timeout=60) == 0
    assert "the program exited during the capture" in asker.stderr.read()
    assert traced_ids(str(tmp_path / "term.tracy")) == ["1"]


def test_sigkill_during_a_capture(tmp_path):
    srv = Server(tmp_path)
    asker = long_capture(srv, tmp_path / "kill.tracy")
    srv.get("1")
    srv.proc.kill()
    assert srv.proc.wait(timeout=60) == -signal.SIGKILL
    assert asker.wait(timeout=60) == 5
    assert asker.stderr.read() == ("capture-release: the program at 127.0.0.1:%d ended "
                                   "during the capture without sending the trace\n"
                                   % srv.listen)
    assert not os.path.exists(str(tmp_path / "kill.tracy"))
    sweep_left_capture(srv.proc.pid)


def sweep_left_capture(dead):
    """The private file of the capture that the end of process `dead` cut
    short is left in the run folder; the next listener to start removes it
    once a minute old, and nothing else: not a younger one, not one of a live
    process, not a name of another form."""
    env = env_for_tests()
    rundir = subprocess.run([PYTHON, "-c", "from tracy import _tracy; print(_tracy._rundir())"],
                            capture_output=True, text=True, timeout=60, env=env).stdout.strip()
    left = [n for n in os.listdir(rundir) if n.startswith("capture-%d-" % dead)]
    assert len(left) == 1 and left[0].endswith(".tracy"), left
    # the program's private daemon finishes the file after the program's
    # end; the minute is counted from that
    for _ in range(600):
        info = subprocess.run([os.path.join(BIN, "tracy-info"), os.path.join(rundir, left[0])],
                              capture_output=True, text=True, timeout=60)
        if "state:            complete" in info.stdout:
            break
        time.sleep(0.05)
    assert "state:            complete" in info.stdout, info.stdout + info.stderr
    old = time.time() - 120
    kept = ["capture-%d-1.tracy" % os.getpid(), "capture-%d-1.tracy.part" % dead,
            "capture-%d-x.tracy" % dead, "capture-+%d-1.tracy" % dead,
            "capture-%d-2.tracy" % dead]
    for name in kept:
        with open(os.path.join(rundir, name), "w"):
            pass
    for name in [left[0]] + kept[:4]:
        os.utime(os.path.join(rundir, name), (old, old))
    try:
        subprocess.run([PYTHON, "-c", "import tracy; tracy.start_server(0)"], env=env,
                       timeout=60, check=True)
        assert not os.path.exists(os.path.join(rundir, left[0]))
        assert all(os.path.exists(os.path.join(rundir, n)) for n in kept)
    finally:
        for name in kept + left:
            if os.path.exists(os.path.join(rundir, name)):
                os.unlink(os.path.join(rundir, name))


def free_pair():
    """A port p with p + 1 free too (at the time of asking)."""
    for _ in range(50):
        p = free_port()
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p + 1))
                return p
            except OSError:
                continue
    raise AssertionError("no two free ports in a row")


def test_ranks_listening_on_port_plus_rank_are_captured_into_one_trace(tmp_path):
    base = free_pair()
    spec = "127.0.0.1:%d+rank" % base
    srv = [Server(tmp_path, env={"PMI_RANK": str(r)}, listen=(spec, base + r))
           for r in (0, 1)]
    for i, s in enumerate(srv):
        s.get("warm%d" % i)
    with subprocess.Popen([os.path.join(BIN, "capture-release"), "--connect",
                           "127.0.0.1:%d" % base, "--connect", "127.0.0.1:%d" % (base + 1),
                           "--duration", "60s", "-o", str(tmp_path / "ranks.tracy")],
                          stderr=subprocess.PIPE, text=True, env=env_for_tests()) as asker:
        for _ in range(2):
            assert "recording" in asker.stderr.readline()
        srv[0].get("r0")
        srv[1].get("r1")
        asker.send_signal(signal.SIGINT)  # Ctrl-C: both captures end now
        assert asker.wait(timeout=60) == 0
        assert "from 2 programs" in asker.stderr.read()
    for s in srv:
        rc, err = s.finish()
        assert rc == 7 and err == ""
    t = _tracy._read_trace(str(tmp_path / "ranks.tracy"))
    assert t["complete"]
    by_proc = sorted((m.process, m.text) for m in t["messages"] if m.text.startswith("req "))
    assert [m for _, m in by_proc] == ["req r0", "req r1"]
    assert by_proc[0][0] != by_proc[1][0]


def test_port_plus_rank_without_a_rank_is_one_line(tmp_path):
    (tmp_path / "p.py").write_text("print('ran')\n")
    e = env_for_tests()
    for v in ("TRACY_PORT", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"):
        e.pop(v, None)
    p = subprocess.run([PYTHON, "-m", "tracy", "--listen", "9000+rank", str(tmp_path / "p.py")],
                       capture_output=True, text=True, env=e, timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == ("tracy: --listen 9000+rank needs an MPI rank (OMPI_COMM_WORLD_RANK, "
                        "PMI_RANK, PMIX_RANK or SLURM_PROCID)\n")
