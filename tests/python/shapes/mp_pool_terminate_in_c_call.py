"""multiprocessing Pool (fork) whose workers are inside one long C call (sum
over a huge range) when the context manager ends it (terminate: SIGTERM to
each worker). Unprofiled the workers die at once; profiled they must too,
with the zones of their earlier tasks shipped, not when the sums end."""
import multiprocessing as mp
import time


def step(x):
    return x + 1


def crunch(n):
    return sum(range(n))


if __name__ == "__main__":
    mp.set_start_method("fork")
    with mp.Pool(2) as p:
        s = sum(p.map(step, range(300)))
        p.map_async(crunch, [3 * 10**9] * 2)
        time.sleep(0.5)
    print(s)
    print("count step", 300)
