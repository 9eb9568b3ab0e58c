"""On-demand capture: a running program records for a while when asked.

    tracy.start_server(9999)                 # or python -m tracy --listen 9999
    $ capture-release --connect localhost:9999 --duration 2s -o run.tracy

The program runs unprofiled (no hook installed; the listener is a thread
blocked in accept) until a capture is asked for; the capture is a trace
window (tracy.start_trace) into a private file, sent back to the asker when
it ends. Protocol (one TCP connection per capture, lines of ASCII):

    asker:    TRACY-CAPTURE 1 <milliseconds> <token or ->\\n
    program:  OK\\n                       (recording)   or  ERR <reason>\\n
    asker:    STOP\\n                     (optional: end before the time)
    program:  DONE <bytes> <events> <time|stop|exit>\\n, the file's bytes
              or ERR <reason>\\n

One capture at a time: another asker meanwhile gets `ERR busy`. An asker
that hangs up ends its capture early (the file is dropped). A request
longer than 512 bytes, or not complete within 5 s, gets `ERR bad request`.
A listener on an address other than the loopback requires the token
(TRACY_TOKEN or token=), as capture-release does.
"""
import os
import sys

# While idle only the interpreter's own _socket and _thread are used (no
# import of socket, threading, selectors): a program that is never captured
# pays a blocked thread and little more at its start. A connection imports
# what serving it needs.
import _socket
import _thread

import tracy

_MAX_LINE = 512
_REQUEST_S = 5.0
# busy: held by the capture under way; idle: held while one records or ends
_srv = {"sock": None, "token": None, "busy": _thread.allocate_lock(),
        "current": None, "idle": _thread.allocate_lock()}


def _loopback(addr):
    """Names a loopback address literally (a name other than localhost
    counts as remote: the token is asked for)."""
    return addr in ("localhost", "::1") or addr.startswith("127.")


def parse_listen(spec):
    """[ADDR:]PORT or [ADDR:]PORT+rank (PORT plus the MPI rank: one port
    per rank of a job) -> (addr, port); ValueError (one line) when
    malformed."""
    addr, _, port = str(spec).rpartition(":")
    addr = addr.strip("[]") or "127.0.0.1"
    rank = 0
    if port.endswith("+rank"):
        port = port[:-5]
        from tracy import _capture
        rank = _capture._job()[2]
        if rank is None:
            raise ValueError("tracy: --listen %s needs an MPI rank (OMPI_COMM_WORLD_RANK, "
                             "PMI_RANK, PMIX_RANK or SLURM_PROCID)" % spec)
    if not port.isdigit() or len(port) > 5 or not 0 <= int(port) + rank < 65536:
        raise ValueError("tracy: --listen takes [ADDR:]PORT or [ADDR:]PORT+rank giving a "
                         "port in 0..65535 (0: any free port), not %r" % spec)
    return addr, int(port) + rank


def start_server(port, addr="127.0.0.1", token=None):
    """Listens on addr:port for capture requests (capture-release
    --connect). Returns the port (useful with port 0). RuntimeError (one
    line) when already listening, the port is in use, or a non-loopback
    address is given without a token."""
    if _srv["sock"] is not None:
        raise RuntimeError("tracy: already listening for captures on port %d"
                           % _srv["sock"].getsockname()[1])
    token = token if token is not None else os.environ.get("TRACY_TOKEN") or None
    if not _loopback(addr) and not token:
        raise RuntimeError("tracy: listening on %s (not the loopback) needs a token "
                           "(TRACY_TOKEN or token=)" % addr)
    s = None
    try:
        fam = _socket.AF_INET6 if ":" in addr else _socket.AF_INET
        s = _socket.socket(fam, _socket.SOCK_STREAM)
        s.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        s.bind((addr, int(port)))
        s.listen(4)
    except OSError as e:
        if s is not None:
            s.close()
        raise RuntimeError("tracy: cannot listen for captures on %s:%s: %s"
                           % (addr, port, e.strerror or e))
    _srv.update(sock=s, token=token)
    from tracy import _tracy
    if not _tracy.active():
        # outside captures the client stays off: an event of the program
        # (tracy.message, a zone) reaches no daemon and says nothing
        _tracy.stop()
    if not _srv.get("at_exit"):
        import atexit
        atexit.register(end_capture)
        _srv["at_exit"] = True
    _thread.start_new_thread(_serve, (s,))
    from tracy import _runtime
    if not _runtime.signals_installed():
        # SIGTERM/SIGHUP with the default action: a capture under way is
        # sent before the program ends by the signal (python -m tracy's own
        # finish, when it records, stays the one that runs)
        _runtime.install_signals(None)
    # the private files of captures that a program's end cut short
    _tracy._sweep_captures()
    return s.getsockname()[1]


def stop_server():
    """Stops listening (a capture under way goes on to its end)."""
    s = _srv["sock"]
    if s is None:
        return
    _srv["sock"] = None
    try:
        s.shutdown(_socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()


def _serve(s):
    while True:
        try:
            fd, _ = s._accept()
        except OSError:
            if _srv["sock"] is not s:
                return  # closed by stop_server
            continue
        import socket
        import threading
        conn = socket.socket(fileno=fd)
        threading.Thread(target=_handle, args=(conn,), name="tracy-capture",
                         daemon=True).start()


def _read_line(conn, limit, timeout):
    """One line (without its newline), or None when malformed, too long,
    not complete in time or the peer hung up."""
    conn.settimeout(timeout)
    data = b""
    try:
        while b"\n" not in data:
            chunk = conn.recv(limit + 1 - len(data))
            if not chunk:
                return None
            data += chunk
            if len(data) > limit:
                return None
    except OSError:
        return None
    line = data.split(b"\n", 1)[0]
    try:
        return line.decode("ascii")
    except UnicodeDecodeError:
        return None


def _send(conn, text):
    try:
        conn.sendall(text.encode("ascii", "replace"))
        return True
    except OSError:
        return False


def _request(conn):
    """The capture's length in seconds, or None after answering ERR."""
    line = _read_line(conn, _MAX_LINE, _REQUEST_S)
    parts = line.split(" ") if line is not None else []
    if len(parts) != 4 or parts[0] != "TRACY-CAPTURE" or not parts[2].isdigit():
        _send(conn, "ERR bad request\n")
        return None
    if parts[1] != "1":
        _send(conn, "ERR protocol %s not spoken (this program speaks 1)\n" % parts[1][:16])
        return None
    want = _srv["token"]
    if want and parts[3] != want:
        _send(conn, "ERR wrong token\n")
        return None
    ms = int(parts[2])
    if not 0 < ms <= 24 * 3600 * 1000:
        _send(conn, "ERR duration out of range (1 ms to 24 h)\n")
        return None
    return ms / 1000.0


def _private_path():
    from tracy import _capture
    import time
    name = "capture-%d-%d.tracy" % (os.getpid(), int(time.monotonic() * 1e6))
    return os.path.join(_capture.rundir(), name)


def _handle(conn):
    with conn:
        seconds = _request(conn)
        if seconds is None:
            return
        # a capture that is only being finished (its asker gone, or its
        # time up) is waited for; one still recording is not
        if not _srv["busy"].acquire(blocking=False) and \
                not (_srv.get("ending") and _srv["busy"].acquire(timeout=30)):
            _send(conn, "ERR busy: a capture is already under way\n")
            return
        try:
            _capture_for(conn, seconds)
        finally:
            _srv["busy"].release()


def _wait_end(conn, seconds):
    """Until the time is up ("time"), STOP ("stop"), the program's exit
    ("exit"), or the asker hangs up (None)."""
    import select
    import time
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return "time"
        try:
            r, _, _ = select.select([conn], [], [], min(left, 0.05))
        except (OSError, ValueError):
            return None
        if _srv.get("exiting"):
            return "exit"
        if r:
            try:
                got = conn.recv(64)
            except OSError:
                return None
            return "stop" if got else None  # STOP (or anything): end now


def _capture_for(conn, seconds):
    try:
        path = _private_path()
        tracy.start_trace(path, quiet=True)
    except (RuntimeError, ValueError, OSError) as e:
        _send(conn, "ERR %s\n" % str(e).replace("\n", " ")[:300])
        return
    _srv["current"] = (conn, path)
    _srv["idle"].acquire()
    try:
        why = _wait_end(conn, seconds) if _send(conn, "OK\n") else None
        _srv["ending"] = True
        _finish(conn, path, why)
    finally:
        _srv["ending"] = False
        _srv["idle"].release()


def _finish(conn, path, why):
    """Ends the window and sends the file, saying why it ended, or drops
    it (why None: the asker is gone)."""
    _srv["current"] = None
    try:
        written = tracy.stop_trace()
    except RuntimeError as e:
        _send(conn, "ERR %s\n" % e)
        written = None
    try:
        if written is not None and why:
            size = os.path.getsize(path)
            if _send(conn, "DONE %d %d %s\n" % (size, written.events or 0, why)):
                with open(path, "rb") as f:
                    try:
                        conn.sendfile(f)
                    except OSError:
                        pass
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


def end_capture():
    """The program ends (its exit, or SIGTERM/SIGHUP under python -m tracy)
    during a capture: the capture ends now and the trace up to here is sent
    (by the capture's thread; waited for, at most a minute)."""
    _srv["exiting"] = True
    if _srv["idle"].acquire(timeout=60):
        _srv["idle"].release()




def from_environment():
    """TRACY_LISTEN=[ADDR:]PORT: listen from the start (one line on stderr
    when it cannot). Taken out of the environment: the program's children
    do not listen on the same port."""
    spec = os.environ.pop("TRACY_LISTEN", None)  # not for its children
    if not spec:
        return
    try:
        addr, port = parse_listen(spec)
        start_server(port, addr)
    except (ValueError, RuntimeError) as e:
        sys.stderr.write("%s\n" % e)
