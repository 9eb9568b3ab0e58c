"""mixed.py -- a mixed workload: JSON, regular expressions, sorting, small
classes and generators, about 0.3-0.5 s with no profiler. Deterministic.

A short extra round runs inside a profiled region when the tracy package is
loaded (`python -m tracy -p -l`); otherwise the region costs nothing."""
import json
import os
import random
import re

from region import region

WORD = re.compile(r"[a-z]+(?:-[a-z]+)?")
KV = re.compile(r"(\w+)=(\d+)")


class Record:
    __slots__ = ("name", "size", "tags")

    def __init__(self, name, size, tags):
        self.name = name
        self.size = size
        self.tags = tags

    def weight(self):
        return self.size * len(self.tags) + len(self.name)

    def to_dict(self):
        return {"name": self.name, "size": self.size, "tags": list(self.tags)}


class Inventory:
    def __init__(self):
        self.records = []

    def add(self, rec):
        self.records.append(rec)

    def heaviest(self, n):
        return sorted(self.records, key=Record.weight, reverse=True)[:n]


def words(rng, n):
    letters = "abcdefghijklmnopqrstuvwxyz"
    for _ in range(n):
        yield "".join(rng.choice(letters) for _ in range(rng.randint(3, 9)))


def parse_line(line):
    found = dict((k, int(v)) for k, v in KV.findall(line))
    return found, WORD.findall(line)


def make_lines(rng, n):
    for i, w in enumerate(words(rng, n)):
        yield f"{w} size={rng.randint(1, 999)} count={i % 17} tag-{w[:2]} end"


def round_trip(inv):
    text = json.dumps([r.to_dict() for r in inv.records])
    back = json.loads(text)
    return sum(d["size"] for d in back), len(text)


def run(rng, n):
    inv = Inventory()
    for line in make_lines(rng, n):
        kv, ws = parse_line(line)
        inv.add(Record(ws[0], kv["size"], tuple(ws[1:])))
    top = inv.heaviest(10)
    total, nbytes = round_trip(inv)
    ordered = sorted(inv.records, key=lambda r: (r.name, r.size))
    return top[0].weight(), total, nbytes, ordered[0].name


def main():
    rng = random.Random(42)
    # rounds: 10 (section 1); section 7 runs fewer on each of its interpreters
    rounds = int(os.environ.get("BENCH_MIXED_ROUNDS", "10"))
    results = [run(rng, 3000) for _ in range(rounds)]
    with region():
        results.append(run(rng, 200))
    print(results[-1])


if __name__ == "__main__":
    main()
