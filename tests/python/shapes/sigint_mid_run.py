"""SIGINT in the middle of the run: KeyboardInterrupt, then death by SIGINT."""
import os
import signal
import time


def work():
    pass


def main():
    for _ in range(80):
        work()
    print("count work", 80, flush=True)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(10)


main()
