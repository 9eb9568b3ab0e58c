"""C code calling back into Python: sorted(key=), json hooks, map."""
import json


def key(x):
    return -x


def hook(d):
    return d


def default(o):
    return sorted(o)


data = sorted(range(200), key=key)
obj = json.loads(json.dumps([{"a": i} for i in range(30)]), object_hook=hook)
text = json.dumps({"s": {3, 1, 2}}, default=default)
print(data[0], len(obj), text)
print("count key", 200)
print("count hook", 30)
print("count default", 1)
