"""concurrent.futures.ProcessPoolExecutor with spawn."""
import concurrent.futures as cf
import multiprocessing as mp


def work(x):
    return x + 3


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(2, mp_context=ctx) as ex:
        print(sum(ex.map(work, range(25))))
    print("count work", 25)
