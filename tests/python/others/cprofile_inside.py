"""cProfile run by the traced program: its own counts, as unprofiled."""
import cProfile
import pstats


def leaf(i):
    return i * 2


def branch(n):
    return sum(leaf(i) for i in range(n))


p = cProfile.Profile()
p.enable()
for _ in range(3):
    branch(5)
p.disable()
st = pstats.Stats(p).stats
for (file, line, name), (cc, nc, tt, ct, callers) in sorted(st.items(), key=lambda kv: kv[0][2]):
    if name in ("leaf", "branch"):
        print(name, cc, nc)
q = cProfile.Profile()
q.enable()
branch(2)
q.disable()
print("second", sum(v[1] for k, v in pstats.Stats(q).stats.items() if k[2] == "leaf"))
