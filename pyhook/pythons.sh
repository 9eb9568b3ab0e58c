#!/bin/sh
# pythons.sh -- the CPython interpreters to build and test for, one path a
# line: $PYTHON (default /usr/bin/python3) first, then for each minor version
# 3.8 to 3.13 the newest $PYENV_ROOT/versions/3.X.*/bin/python3, else
# python3.X on PATH. Each version with no interpreter is said on stderr
# ("skip"); an interpreter already listed (same real path) is not repeated.
# Set PYTHONS to a space-separated list to choose them yourself.
if [ -n "$PYTHONS" ]; then
    for p in $PYTHONS; do echo "$p"; done
    exit 0
fi
root=${PYENV_ROOT:-$HOME/.pyenv}
seen=" "
emit() {
    real=$(readlink -f "$1" 2>/dev/null || echo "$1")
    case "$seen" in *" $real "*) return ;; esac
    seen="$seen$real "
    echo "$1"
}
first=${PYTHON:-/usr/bin/python3}
if command -v "$first" >/dev/null 2>&1; then emit "$(command -v "$first")"
else echo "skip: PYTHON=$first not found" >&2; fi
for minor in 8 9 10 11 12 13; do
    found=
    for d in $(ls -d "$root"/versions/3.$minor.* 2>/dev/null | sort -V -r); do
        if [ -x "$d/bin/python3" ]; then found=$d/bin/python3; break; fi
    done
    [ -n "$found" ] || found=$(command -v python3.$minor 2>/dev/null)
    if [ -n "$found" ]; then emit "$found"
    else echo "skip: no Python 3.$minor (not under $root/versions, no python3.$minor on PATH)" >&2; fi
done
