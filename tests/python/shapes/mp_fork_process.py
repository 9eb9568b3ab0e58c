"""multiprocessing Process with the fork start method."""
import multiprocessing as mp


def work(i):
    return i * 2


def child(q, n):
    for i in range(n):
        work(i)
    q.put(n)


if __name__ == "__main__":
    mp.set_start_method("fork")
    q = mp.Queue()
    ps = [mp.Process(target=child, args=(q, 50 + k)) for k in range(2)]
    for p in ps:
        p.start()
    total = sum(q.get() for _ in ps)
    for p in ps:
        p.join()
    print("count work", total)
