"""demo.py -- a small but realistic program to profile with python -m tracy:
a producer thread and worker threads, a generator pipeline, JSON, regular
expressions, sorting, classes, an exception that is handled, and signposts
that mark the phases."""
import json
import queue
import re
import threading

import tracy

WORD = re.compile(r"[a-z]+")


class Order:
    def __init__(self, oid, items):
        self.oid = oid
        self.items = items

    def total(self):
        return sum(price * qty for _, price, qty in self.items)


def make_orders(n):
    """Generator: yields orders as JSON documents."""
    for i in range(n):
        items = [("item%d" % (j % 7), 1.5 + j % 5, 1 + (i + j) % 3) for j in range(i % 9 + 1)]
        yield json.dumps({"id": i, "items": items, "note": "order number %d for alpha" % i})


def parse(doc):
    d = json.loads(doc)
    if d["id"] % 97 == 13:
        raise ValueError("order %d is damaged" % d["id"])
    return Order(d["id"], [tuple(x) for x in d["items"]]), WORD.findall(d["note"])


def worker(inbox, results, lock):
    while True:
        doc = inbox.get()
        if doc is None:
            return
        try:
            order, words = parse(doc)
        except ValueError as e:
            tracy.message(str(e))
            continue
        with lock:
            results.append((order.total(), order.oid, len(words)))


def main():
    tracy.signpost("start", "demo run")
    inbox, results, lock = queue.Queue(maxsize=64), [], threading.Lock()
    workers = [threading.Thread(target=worker, args=(inbox, results, lock),
                                name="worker-%d" % i) for i in range(3)]
    for w in workers:
        w.start()
    with tracy.zone("produce"):
        for doc in make_orders(3000):
            inbox.put(doc)
    for _ in workers:
        inbox.put(None)
    for w in workers:
        w.join()
    tracy.signpost("workers done", "%d orders" % len(results))
    with tracy.zone("report"):
        best = sorted(results, reverse=True)[:5]
        tracy.plot("orders", len(results))
    tracy.signpost("end")
    print("processed %d orders; best totals: %s"
          % (len(results), ", ".join("%.1f" % b[0] for b in best)))


if __name__ == "__main__":
    main()
