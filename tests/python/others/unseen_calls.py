"""A tracer and a profiler see no frame of the profiler's: every function
called (Python 'call', C 'c_call', with its module) in each thread of a
program that starts threads, forks, fails an exec, starts a subprocess with
a preexec_fn and sets signal handlers is what it is unprofiled."""
import itertools
import gc  # noqa: F401 (3.8-3.9's fork_exec imports it: not a difference to see)
import os
import signal
import subprocess
import sys
import threading

seen = []
local = threading.local()  # C: a thread's number in order of appearance
numbers = itertools.count()


def thread_no():
    n = getattr(local, "n", None)
    if n is None:
        n = local.n = next(numbers)
    return n


def name_of(frame, event, arg):
    if event == "c_call":
        return "C %s.%s" % (getattr(arg, "__module__", None), getattr(arg, "__name__", None))
    code = frame.f_code
    return "%s:%s" % (os.path.basename(code.co_filename), code.co_name)


# Thread.start() waits for the new thread in Condition.wait only when the
# thread has not started yet: a race, unprofiled too, left out
WAIT = threading.Condition.wait.__code__


def in_wait(frame):
    while frame is not None:
        if frame.f_code is WAIT:
            return True
        frame = frame.f_back
    return False


def tracer(frame, event, arg):
    if event == "call" and not in_wait(frame):
        seen.append((thread_no(), "T " + name_of(frame, event, arg)))
    return None


def profiler(frame, event, arg):
    if event in ("call", "c_call") and not in_wait(frame):
        seen.append((thread_no(), "P " + name_of(frame, event, arg)))


def work(n):
    return n if n < 2 else work(n - 1) + work(n - 2)


def in_thread():
    work(5)


def preexec():
    work(3)


def handler(signum, frame):
    pass


def shown(h):
    return getattr(h, "__name__", None) or repr(h)


def program():
    threads = [threading.Thread(target=in_thread, name="w%d" % i) for i in range(2)]
    for t in threads:
        t.start()
        t.join()
    try:
        os.execv("/nonexistent/program", ["program"])
    except OSError as e:
        print("exec failed:", e.errno, flush=True)
    p = subprocess.run([sys.executable, "-c", "print('child')"], preexec_fn=preexec,
                       stdout=subprocess.PIPE)
    print("subprocess:", p.returncode, p.stdout.decode().strip(), flush=True)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        old = signal.signal(sig, handler)
        print(signal.Signals(sig).name, shown(old), signal.getsignal(sig) is handler,
              shown(signal.signal(sig, old)), shown(signal.getsignal(sig)), flush=True)
    mark = len(seen)
    pid = os.fork()
    if pid == 0:
        work(4)
        # sorted: threading's after-fork work visits threads in a set's order
        report(sorted(seen[mark:]), "fork child")
        os._exit(5)
    _, status = os.waitpid(pid, 0)
    print("fork child status:", status >> 8, flush=True)


def report(events, title):
    order = []
    by = {}
    for ident, what in events:
        if ident not in by:
            order.append(ident)
            by[ident] = []
        by[ident].append(what)
    print("--", title, flush=True)
    for ident in order:
        print("thread %d:" % ident, flush=True)
        for what in by[ident]:
            print("  " + what, flush=True)


threading.settrace(tracer)
threading.setprofile(profiler)
sys.settrace(tracer)
sys.setprofile(profiler)
program()
sys.setprofile(None)
sys.settrace(None)
report(seen, "parent")
