#!/bin/sh
# pymatrix.sh BUILD -- runs the Python suite (tests/python) once per
# interpreter pyhook/pythons.sh finds, two at a time, the longest first.
# pytest itself always runs under $PYTEST_PYTHON (default /usr/bin/python3)
# and reads traces with BUILD/python; the traced programs run under each
# interpreter (TRACY_TEST_PYTHON) with the package in BUILD/python, which
# holds the extension of every interpreter built (make python-all). An
# interpreter without pytest of its own gets Debian's (BUILD/pytest-path)
# for the tests that trace a pytest run. Prints one line per interpreter
# (and each skipped version); exit status 1 when any run failed.
set -u
if [ "${1:-}" = "--one" ]; then
    # --one BUILD N PYTHON: one run, its summary printed in one write
    B=$2 n=$3 py=$4
    ver=$("$py" -c 'import sys;print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null)
    if [ -z "$ver" ]; then echo "python $py: does not run"; exit 1; fi
    extra=
    if ! "$py" -c 'import pytest' >/dev/null 2>&1; then extra=$B/pytest-path; fi
    log=$B/pytest-logs/$n-$ver.log
    start=$(date +%s)
    LT_BUILD=$B TRACY_TEST_PYTHON=$py TRACY_TEST_PYDIR=$B/python TRACY_TEST_PYTHONPATH=$extra \
        ${PYTEST_PYTHON:-/usr/bin/python3} -m pytest -q -rs -p no:cacheprovider \
        --basetemp="$B/pytest-tmp/$n" tests/python >"$log" 2>&1
    rc=$?
    sum=$(grep -E '^(=+ )?[0-9]+ (passed|failed|error)' "$log" | tail -n 1 | tr -d '=' | sed 's/^ *//;s/ *$//')
    skips=$(grep '^SKIPPED' "$log")
    msg="python $ver ($py): ${sum:-no summary} [$(($(date +%s) - start)) s]"
    [ -n "$skips" ] && msg="$msg
$skips"
    if [ $rc -ne 0 ]; then msg="$msg
---- $log (tail) ----
$(tail -n 60 "$log")"; fi
    printf '%s\n' "$msg"
    exit $rc
fi

B=${1:-build}
case "$B" in /*) ;; *) B=$(pwd)/$B ;; esac
here=$(dirname "$0")
pythons=$(sh "$here/../pyhook/pythons.sh") # skipped versions: said on stderr
rm -rf "$B/pytest-logs" "$B/pytest-tmp" "$B/pytest-path"
mkdir -p "$B/pytest-logs" "$B/pytest-tmp" "$B/pytest-path"
# Debian's pytest and what it imports, for interpreters without pytest.
${PYTEST_PYTHON:-/usr/bin/python3} - "$B/pytest-path" <<'PY'
import importlib.util, os, sys
for name in ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py", "attr",
             "attrs", "exceptiongroup", "tomli"):
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        continue
    src = spec.origin
    if os.path.basename(src) == "__init__.py":
        src = os.path.dirname(src)
    os.symlink(src, os.path.join(sys.argv[1], os.path.basename(src)))
PY
# The runs that also compare CPython's regression suites (3.11 and 3.13
# with their whole test package, tests/python/test_cpython_suites.py; not
# Debian's, which has test.support but no suites) take about twice as long
# as the others: they start first, the others fill in beside them, and the
# matrix ends sooner.
first= rest=
for p in $pythons; do
    if "$p" -c 'import os, sys, test
d = os.path.join(os.path.dirname(test.__file__), "test_os")
sys.exit(sys.version_info[:2] not in ((3, 11), (3, 13))
         or not (os.path.exists(d + ".py") or os.path.isdir(d)))' 2>/dev/null; then
        first="$first $p"
    else
        rest="$rest $p"
    fi
done
n=0
for p in $first $rest; do n=$((n + 1)); echo "$n $p"; done |
    xargs -P "${PYMATRIX_JOBS:-2}" -n 2 sh "$0" --one "$B"
rc=$?
[ $rc -eq 0 ] || { echo "check-python: failures above" >&2; exit 1; }
