#!/bin/sh
# run.sh -- the files the writers make stay the same (make check-identity).
#
# Usage: sh tests/identity/run.sh BUILD_DIR          compare with `expected`
#        sh tests/identity/run.sh BUILD_DIR --write  rewrite `expected`
#
# Builds a set of traces with BUILD_DIR's programs -- tracegen's (the
# builder), tracy-merge's and tracy-cut's (splice: renumbering, clock
# shifts, windows with cut zones, cut blocks copied), tracerotate's (the
# rotation capture-release --rotate does), and from them the ones the CLI
# golden cases (tests/cli/cases) write -- and compares each one's
# tracecanon form (everything the writer decided, without the clock's
# readings and the compressor's bytes) with the hash in `expected`; each
# must also be sound for tracy-info (exit 0, 3 when cut short on purpose,
# 6 for recorded losses; never 4, a trailer that contradicts the file).
# inputs/ holds a capture by capture-release and a flight recorder's dump,
# both written by 0.1.0's code (commit f3f76b8), fed to the tools above.
#
# `expected`: the hashes of the traces of commit f3f76b8's programs, from
# before the writer summed the descriptors itself (CANON and ROTATE, when
# set, name the tracecanon and tracerotate to use: tracerotate came later),
# but for the rot-* files: their `threads` total, which f3f76b8 gave as the
# number of threads with a block in the file where readers count every
# thread declared too (they refused the file), is the one difference.
set -u
B=${1:?usage: run.sh BUILD_DIR [--write]}
MODE=${2:-check}
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "$B" && pwd)
CANON=${CANON:-$B/tools/tracecanon}
ROTATE=${ROTATE:-$B/tools/tracerotate}
PATH="$B/bin:$B/tools:$PATH"
export PATH LC_ALL=C TZ=UTC

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tracy-identity.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
OUT="$WORK/out"
mkdir "$OUT"

fail() {
    echo "identity: $*" >&2
    exit 1
}

# Runs a command that must succeed (exit 0, or 3 for a truncated input).
run() {
    "$@" > "$WORK/log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 3 ] || { cat "$WORK/log" >&2; fail "exit $rc: $*"; }
}

make_inputs() {
    cd "$OUT" || exit 1
    run tracegen --fixed small -o small.tracy
    run tracegen --fixed empty -o empty.tracy
    run tracegen -z 5000 -p 2 -t 3 --messages 7 --signposts 5 --plots 11 --frames 3 \
        --lost 2 -o gen.tracy
    run tracegen -z 300000 -p 3 -t 4 -d 12 --messages 500 --signposts 50 --plots 2000 \
        --frames 300 --lost 20 -o big.tracy
    run tracegen -z 3000 -p 1 -t 2 --no-trailer -o notrailer.tracy
    cp "$HERE/inputs/capture.tracy" "$HERE/inputs/flight.tracy" .
    head -c 600 small.tracy > cut-mid.tracy
    # splice: merges, windows (cut zones), cuts of cuts (cut blocks copied)
    run tracy-merge -q -o merge-gen.tracy small.tracy gen.tracy big.tracy
    run tracy-merge -q --no-align --level 5 -o merge-noalign.tracy gen.tracy capture.tracy
    run tracy-merge -q -o merge-cutmid.tracy small.tracy cut-mid.tracy
    run tracy-cut -q --from 1ms --to 2500us -o cut-big.tracy big.tracy
    run tracy-cut -q --from 1200us --to 2ms -o cut-cut.tracy cut-big.tracy
    run tracy-cut -q -p 2 -t 2:2,2:4 --from 500us -o cut-threads.tracy big.tracy
    run tracy-cut -q --from 300us --to 1500us -o cut-capture.tracy capture.tracy
    run tracy-cut -q --from 100us -o cut-flight.tracy flight.tracy
    run tracy-merge -q -o merge-cuts.tracy cut-big.tracy cut-cut.tracy cut-capture.tracy
    # rotation: numbered files, each with its metadata, cut zones, trailer
    mkdir rot-big rot-cap rot-cuts
    run "$ROTATE" --max-size 30000 -o rot-big/r.tracy big.tracy
    run "$ROTATE" --max-size 3000 -o rot-cap/r.tracy capture.tracy
    run "$ROTATE" --max-size 20000 -o rot-cuts/r.tracy merge-cuts.tracy
}

# The traces the CLI golden cases that write traces leave behind.
cli_outputs() {
    for c in "$HERE"/../cli/cases/*.cmd; do
        name=$(basename "$c" .cmd)
        grep -qE 'tracy-(merge|cut)' "$c" || continue
        d="$OUT/cli-$name"
        mkdir "$d" && cp "$OUT/small.tracy" "$OUT/empty.tracy" "$OUT/gen.tracy" \
            "$OUT/cut-mid.tracy" "$d/"
        (cd "$d" && sh "$c" > /dev/null 2>&1)
        for f in small empty gen cut-mid; do rm -f "$d/$f.tracy"; done
    done
}

make_inputs
cli_outputs
cd "$OUT" || exit 1
find . -name '*.tracy' | sed 's|^\./||' | sort > "$WORK/names"
[ -s "$WORK/names" ] || fail "no trace written"
: > "$WORK/got"
while read -r f; do
    "$CANON" "$f" > "$WORK/canon" || fail "tracecanon failed on $f"
    tracy-info "$f" > /dev/null 2> "$WORK/info"
    rc=$?
    case $rc in 0|3|6) ;; *) cat "$WORK/info" >&2; fail "$f: tracy-info exit $rc" ;; esac
    h=$(sha256sum < "$WORK/canon" | cut -d' ' -f1)
    echo "$h  $f" >> "$WORK/got"
done < "$WORK/names"

if [ "$MODE" = --write ]; then
    cp "$WORK/got" "$HERE/expected"
    echo "identity: wrote $(wc -l < "$WORK/got") hashes"
    exit 0
fi
if ! diff -u "$HERE/expected" "$WORK/got" > "$WORK/diff"; then
    cat "$WORK/diff"
    fail "FAIL: traces differ from the reference (lines - expected, + written)"
fi
echo "identity: $(wc -l < "$WORK/got") traces identical to the reference"
