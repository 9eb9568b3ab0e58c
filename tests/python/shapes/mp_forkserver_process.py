"""multiprocessing Process with the forkserver start method."""
import multiprocessing as mp


def work(i):
    return -i


def child(n):
    for i in range(n):
        work(i)


if __name__ == "__main__":
    mp.set_start_method("forkserver")
    p = mp.Process(target=child, args=(30,))
    p.start()
    p.join()
    print("exit", p.exitcode)
    print("count work", 30)
