#!/bin/sh
# deps.sh -- installs the Debian packages the toolkit needs, when missing.
# Quiet and quick (one dpkg-query) when everything is there.
set -e
PKGS="libuv1-dev libzstd-dev libsqlite3-dev libcjson-dev check pkg-config
python3-dev python3-pytest sqlite3 zlib1g-dev openmpi-bin python3-mpi4py"
# tracy-export's tests: headless Chromium, speedscope's schema check,
# callgrind_annotate; npm installs the report's d3 into build/npm.
PKGS="$PKGS chromium python3-jsonschema valgrind"
command -v npm >/dev/null 2>&1 || PKGS="$PKGS npm"
[ -n "$DEPS_EXTRA" ] && PKGS="$PKGS $DEPS_EXTRA"
missing=""
for p in $PKGS; do
    s=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
    case "$s" in ii*) ;; *) missing="$missing $p" ;; esac
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null 2>&1 || $SUDO apt-get update
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null || \
    $SUDO apt-get install -y --no-install-recommends $missing
