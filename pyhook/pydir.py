"""pydir.py PREFIX -- where PYTHON (running this) finds packages installed
under PREFIX, for `make install`: the first of its sys.path entries under
PREFIX/lib named site-packages or dist-packages (Debian's python3 and
PREFIX=/usr/local: /usr/local/lib/python3.11/dist-packages), else its
posix_prefix platlib for PREFIX (PREFIX/lib/python3.X/site-packages), said on
stderr to be off its sys.path."""
import os
import sys
import sysconfig

prefix = os.path.normpath(os.path.abspath(sys.argv[1]))
for p in sys.path:
    p = os.path.normpath(p)
    if p.startswith(prefix + "/lib/") and os.path.basename(p) in ("site-packages",
                                                                "dist-packages"):
        print(p)
        sys.exit(0)
scheme = "posix_prefix" if "posix_prefix" in sysconfig.get_scheme_names() else None
path = sysconfig.get_path("platlib", scheme, vars={"base": prefix, "platbase": prefix})
sys.stderr.write("pydir: %s is not on %s's sys.path (set PYTHONPATH to use it)\n"
                 % (path, sys.executable))
print(path)
