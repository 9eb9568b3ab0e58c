"""SIGTERM taken by another thread while the main thread waits on a
multiprocessing semaphore: the main thread is never interrupted (the state
of a Pool worker terminated just before it blocked on its task queue). First
in a forked child, whose parent must see it end by SIGTERM, then in the
program itself. With the default action each dies of it; profiled, each must
too, with its zones shipped, not wait for ever."""
import multiprocessing as mp
import os
import signal
import threading
import time


def work():
    pass


def take_it():
    time.sleep(0.3)
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
    time.sleep(30)


def wait_for_ever(n):
    for _ in range(n):
        work()
    print("count work", n, flush=True)
    threading.Thread(target=take_it, daemon=True).start()
    mp.Semaphore(0).acquire()


pid = os.fork()
if pid == 0:
    wait_for_ever(150)
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("child signal", os.WTERMSIG(status) if os.WIFSIGNALED(status) else None, flush=True)
wait_for_ever(200)
print("not reached")
