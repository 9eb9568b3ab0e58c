"""pdb driven by commands from a file object: stops, steps and prints as
unprofiled."""
import io
import pdb
import sys


def target(a, b):
    c = a + b
    pdb.Pdb(stdin=io.StringIO("p a, b\nnext\np c\nstep\ncontinue\n"), stdout=sys.stdout,
            nosigint=True, readrc=False).set_trace()
    d = c * 2
    return helper(d)


def helper(x):
    return x + 1


print("result", target(1, 2))
