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
