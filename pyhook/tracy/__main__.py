"""python -m tracy: runs a Python program under the tracy profiler
(tracy(1); python -m tracy -h).

Its start-up is part of every profiled run: the run's common path is C,
tracy._tracy._main (pyhook/run.c); what only some runs need is Python,
in tracy/_cli.py, imported then."""
from tracy._tracy import _main as command  # (the tracy command's: pyhook/cmd/tracy)

if __name__ == "__main__":
    command()
