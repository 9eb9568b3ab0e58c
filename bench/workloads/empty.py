"""empty.py -- does nothing: what a profiler's run costs before and after
the program (interpreter start, imports, daemon connection, exit), which
section 7 takes off the other workloads' runs to give per-call figures."""
