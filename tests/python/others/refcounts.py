"""Reference counts the program sees: an argument, self, a method
descriptor's self (CPython before 3.12 binds it for a profile function)."""
import sys
import weakref


class O:
    def m(self):
        return sys.getrefcount(self)


def arg(o):
    return sys.getrefcount(o)


def kw(*, o):
    return sys.getrefcount(o)


o = O()
print("arg", arg(o), "kw", kw(o=o), "self", o.m())
lst = [1, 2]
lst.append(3)
lst.pop()
print("list", sys.getrefcount(lst))
gone = []
x = O()
r = weakref.ref(x, lambda _: gone.append(1))
del x
print("weakref", r() is None, gone)


# The shapes a call's arguments come in, and what the caller's stack holds
# around the call: each count as plain Python gives it.
class Noisy:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def __del__(self):
        self.log.append(self.name)


def drop(o, log):
    del o                     # plain: the last reference, freed here
    log.append("after del")


def star(*rest):
    return [sys.getrefcount(v) for v in rest]


_DEFAULT = O()


def mixed(a, b=_DEFAULT, *rest, k=_DEFAULT, **more):
    return (sys.getrefcount(a), sys.getrefcount(b), sys.getrefcount(k),
            [sys.getrefcount(v) for v in rest], [sys.getrefcount(v) for v in more.values()])


def closure(o):
    def inner():
        return o
    return sys.getrefcount(o), inner() is o


def gen(o):
    yield sys.getrefcount(o)


def pair(x, y):
    return (x, y)


def shapes():
    log = []
    drop(Noisy(log, "freed"), log)
    a, b, c = O(), O(), O()
    out = [log, star(a, b), mixed(a, b, c, k=c), mixed(a, b=b), mixed(b=a, a=c, x=b), closure(a),
           next(gen(a)), [arg(v) for v in (a, b)], sorted([a, b], key=arg) == [a, b] or True,
           list(map(arg, [a]))]
    # the outer call's arguments stay its own while the inner call runs
    p = pair(arg, pair(a, arg(a)))
    out.append((p[0] is arg, p[1][0] is a, p[1][1]))
    bound = a.m
    out.append(bound())
    try:
        out.append(arg(b))
        raise ValueError
    except ValueError:
        out.append(arg(c))
    with open(__file__) as f:
        out.append(arg(f))
    out.append(sum(arg(O()) for _ in range(3)))
    return out


print("shapes", shapes())
