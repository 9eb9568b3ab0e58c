"""Daemon threads still running (blocked) when the program exits."""
import threading

done = threading.Semaphore(0)
never = threading.Event()


def work():
    pass


def loop():
    for _ in range(100):
        work()
    done.release()
    never.wait()


for _ in range(3):
    threading.Thread(target=loop, daemon=True).start()
for _ in range(3):
    done.acquire()
print("count work", 300)
