#!/bin/sh
# deps.sh -- the Debian packages the toolkit needs: checks for them, or
# installs the missing ones.
#
#   sh tools/deps.sh --missing   print the missing build packages on one line
#                                (nothing when all are there); changes nothing
#   sh tools/deps.sh --missing-test  the same with the Check library (the C
#                                test suites)
#   sh tools/deps.sh [--build]   install the missing build packages (make deps,
#                                make demo)
#   sh tools/deps.sh --test      the same plus the test-only ones (make check)
#
# DEPS_EXTRA adds packages to install (make bench, make fuzz). Quiet and
# quick when everything is there.
set -e
PKGS="libuv1-dev libzstd-dev libsqlite3-dev libcjson-dev pkg-config
python3-dev zlib1g-dev npm"
TEST_PKGS="check python3-pytest sqlite3 openmpi-bin python3-mpi4py"
# Debian's pytest also runs under CPython 3.8-3.10 with these (make check).
TEST_PKGS="$TEST_PKGS python3-exceptiongroup python3-tomli"
# tracy-export's tests: headless Chromium, speedscope's schema check,
# callgrind_annotate. (npm, a build package, installs the report's d3 into
# build/npm.)
TEST_PKGS="$TEST_PKGS chromium python3-jsonschema valgrind"
# Other tools in a traced process: NumPy's reference checks, coverage.
TEST_PKGS="$TEST_PKGS python3-numpy python3-coverage"
# tracy-export -f lines: its hits are compared with kernprof's.
TEST_PKGS="$TEST_PKGS python3-line-profiler"
# CPython's suites run each in a network namespace of its own (unshare,
# and ip to bring its loopback up): their ports cannot collide.
TEST_PKGS="$TEST_PKGS util-linux iproute2"

# pkg-config module of each build package; python3-dev is checked by its
# header, pkg-config by itself.
pc_of() {
    case "$1" in
    libuv1-dev) echo libuv ;;
    libzstd-dev) echo libzstd ;;
    libsqlite3-dev) echo sqlite3 ;;
    libcjson-dev) echo libcjson ;;
    zlib1g-dev) echo zlib ;;
    check) echo check ;;
    esac
}

has_python_headers() {
    "${PYTHON:-/usr/bin/python3}" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
        2>/dev/null
}

# The build packages (and CHECK_TOO's) missing, by pkg-config where it can.
list_missing() {
    have_pc=1
    command -v pkg-config >/dev/null 2>&1 || have_pc=0
    for p in $PKGS $CHECK_TOO; do
        case "$p" in
        pkg-config) [ $have_pc = 1 ] || printf '%s ' "$p" ;;
        npm) command -v npm >/dev/null 2>&1 || printf '%s ' "$p" ;;
        python3-dev) has_python_headers || printf '%s ' "$p" ;;
        *)
            if [ $have_pc = 1 ]; then
                pkg-config --exists "$(pc_of "$p")" || printf '%s ' "$p"
            else
                installed "$p" || printf '%s ' "$p"
            fi ;;
        esac
    done
}

installed() {
    s=$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null || true)
    case "$s" in ii*) return 0 ;; *) return 1 ;; esac
}

install_missing() {
    missing=""
    for p in "$@"; do
        case "$p" in
        npm) command -v npm >/dev/null 2>&1 && continue ;;
        esac
        installed "$p" || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    echo "deps: installing$missing" >&2
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq >/dev/null 2>&1 || $SUDO apt-get update
    $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
        $SUDO apt-get install -y --no-install-recommends $missing
}

case "${1:-}" in
--missing) list_missing | sed 's/ $//' ;;
--missing-test) CHECK_TOO=check; list_missing | sed 's/ $//' ;;
--test) install_missing $PKGS $TEST_PKGS $DEPS_EXTRA ;;
--build | "") install_missing $PKGS $DEPS_EXTRA ;;
*) echo "usage: sh tools/deps.sh [--missing | --missing-test | --build | --test]" >&2; exit 1 ;;
esac
