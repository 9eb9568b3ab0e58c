"""multiprocessing Pool with the spawn start method, close() and join()."""
import multiprocessing as mp


def work(x):
    return x * x


if __name__ == "__main__":
    mp.set_start_method("spawn")
    p = mp.Pool(2)
    print(sum(p.map(work, range(40))))
    p.close()
    p.join()
    print("count work", 40)
