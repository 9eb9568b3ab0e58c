"""A child that looks at atexit (test_atexit does): it counts the
callbacks, runs them early, clears them. The profiled child's own end of
recording is none of its callbacks, and its recording goes on to its real
exit: every call of f below is recorded (3 x 177 calls)."""
import subprocess
import sys

CHILD = '''
import atexit
def f(n): return n if n < 2 else f(n - 1) + f(n - 2)
def mine(): print("mine ran", flush=True)
print(atexit._ncallbacks())
atexit.register(mine)
print(atexit._ncallbacks())
f(10)
atexit._run_exitfuncs()
print(atexit._ncallbacks())
f(10)
atexit.register(mine)
atexit._clear()
print(atexit._ncallbacks())
atexit.register(mine)
atexit.unregister(mine)
print(atexit._ncallbacks())
atexit.register(mine)
f(10)
'''
p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
print(p.stdout, end="")
print(p.stderr, end="")
print("rc", p.returncode)
