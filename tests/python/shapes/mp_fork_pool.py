"""multiprocessing Pool (fork), ended by its context manager (terminate)."""
import multiprocessing as mp


def work(x):
    return x + 1


if __name__ == "__main__":
    mp.set_start_method("fork")
    with mp.Pool(2) as p:
        s = sum(p.map(work, range(500)))
    print(s)
    print("count work", 500)
