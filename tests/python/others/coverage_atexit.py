"""coverage.py started by the program and stopped at exit (atexit), as
coverage's process_startup does: what the profiler does at the program's
end (threads joined, atexit callbacks run) shows no frame of its own."""
import atexit
import threading

import coverage

cov = coverage.Coverage()
cov.start()


def stop():
    cov.stop()
    cov.save()


atexit.register(stop)


def work(n):
    return n if n < 2 else work(n - 1) + work(n - 2)


t = threading.Thread(target=work, args=(8,))
t.start()
t.join()
print(work(10))
