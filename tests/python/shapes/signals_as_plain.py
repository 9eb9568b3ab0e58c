"""Signals as plain Python has them (issue: invisible to the program, item 3):
for SIGTERM, SIGINT, SIGHUP and the crash signals, signal.getsignal and
signal.signal round trips, signal.pthread_kill to a Python handler,
faulthandler.register / unregister, and a handler a C extension installs
with its own sigaction (ctypes; libc's getpid as a harmless handler) that
is called, read back and replaced as it would be unprofiled. Every line is
compared with the unprofiled run's."""
import ctypes
import faulthandler
import os
import signal
import tempfile
import threading


def work():
    pass


got = []


def handler(signum, frame):
    got.append(signum)


def shown(h):
    if h in (signal.SIG_DFL, signal.SIG_IGN):
        return signal.Handlers(h).name
    return getattr(h, "__name__", None) or type(h).__name__


class Sigaction(ctypes.Structure):  # struct sigaction (Linux, x86-64 / aarch64)
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16),
                ("flags", ctypes.c_int), ("restorer", ctypes.c_void_p)]


libc = ctypes.CDLL(None, use_errno=True)
libc.sigaction.argtypes = [ctypes.c_int, ctypes.POINTER(Sigaction), ctypes.POINTER(Sigaction)]


def c_install(sig, addr):
    """The extension's sigaction: returns the previous struct."""
    new, old = Sigaction(), Sigaction()
    new.handler = addr
    assert libc.sigaction(sig, ctypes.byref(new), ctypes.byref(old)) == 0
    return old


def c_handler(sig):
    cur = Sigaction()
    assert libc.sigaction(sig, None, ctypes.byref(cur)) == 0
    return cur.handler


COMMON = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP]
CRASH = [signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT]
main = threading.get_ident()
getpid = ctypes.cast(libc.getpid, ctypes.c_void_p).value
for _ in range(20):
    work()
print("count work", 20, flush=True)

for sig in COMMON + CRASH:
    name = signal.Signals(sig).name
    first = signal.getsignal(sig)
    old = signal.signal(sig, handler)
    mine = signal.getsignal(sig) is handler
    signal.pthread_kill(main, sig)
    back = signal.signal(sig, old)
    print(name, shown(first), shown(old), mine, shown(back), shown(signal.getsignal(sig)),
          "delivered" if got == [sig] else got, flush=True)
    got.clear()

for sig in COMMON:
    name = signal.Signals(sig).name
    with tempfile.TemporaryFile() as f:
        signal.signal(sig, handler)
        faulthandler.register(sig, file=f, chain=True)
        signal.pthread_kill(main, sig)
        f.seek(0)
        dumped = b"most recent call first" in f.read()
        print(name, "faulthandler dumped", dumped, "chained", got == [sig],
              "unregistered", faulthandler.unregister(sig), flush=True)
        got.clear()
        signal.signal(sig, signal.SIG_DFL)
    print(name, "after faulthandler", shown(signal.getsignal(sig)), flush=True)

for sig in (signal.SIGHUP, signal.SIGTERM):
    name = signal.Signals(sig).name
    saved = c_install(sig, getpid)
    print(name, "C handler read back", c_handler(sig) == getpid, flush=True)
    signal.pthread_kill(main, sig)  # getpid runs: the process goes on
    print(name, "survived the C handler", flush=True)
    assert libc.sigaction(sig, ctypes.byref(saved), None) == 0
    print(name, "restored:", shown(signal.getsignal(sig)), flush=True)
print("pid still", os.getpid() > 0)
