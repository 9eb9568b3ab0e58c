"""Generator workload: nested generators delegating with `yield from`, the
shape of json's encoder (_iterencode, _iterencode_list, _iterencode_dict):
every chunk the outermost generator hands out resumes each generator of
the chain, so resumes far outnumber calls. BENCH_GEN_ROUNDS rounds (20)."""
import os


def leaf(items):
    for x in items:
        yield str(x)


def level(items, depth):
    if depth == 0:
        yield from leaf(items)
        return
    yield "["
    for _ in range(3):
        yield from level(items, depth - 1)
        yield ","
    yield "]"


def main():
    rounds = int(os.environ.get("BENCH_GEN_ROUNDS", "20"))
    n = 0
    for _ in range(rounds):
        for chunk in level(range(6), 5):
            n += len(chunk)
    return n


if __name__ == "__main__":
    print(main())
