"""pdb.set_trace() in a simple __init__ (CPython 3.13 calls it inline): it
stops on its own line, as unprofiled (test_pdb's gh-65052)."""
import io
import pdb
import sys


class A:
    def __init__(self):
        pdb.Pdb(stdin=io.StringIO("args\nnext\ncontinue\n"), stdout=sys.stdout,
                nosigint=True, readrc=False).set_trace()
        self.a = 1

    def __repr__(self):
        return "A()"


for _ in range(2):
    A()
print("done")
