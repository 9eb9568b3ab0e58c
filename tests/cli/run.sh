#!/bin/sh
# run.sh -- golden tests of the command-line converters (make check-cli).
#
# Usage: sh tests/cli/run.sh BUILD_DIR [CASE...]
#
# Each tests/cli/cases/NAME.cmd is a shell snippet run in a fresh scratch
# directory that holds the fixed traces (small.tracy, empty.tracy, cut and
# corrupted copies, a file that is not a trace), with the converters and
# tracegen on PATH. Its exit code, standard output and standard error must
# equal NAME.exit (default 0), NAME.out and NAME.err (missing: empty).
# NAME.sed / NAME.errsed, when present, are sed scripts applied to stdout /
# stderr first: they blank what legitimately varies (wall-clock time,
# compressed sizes that depend on the zstd version). Cases that share a
# filter link to one file (info-small.sed -> info.sed).
# UPDATE=1 rewrites the expected files from the current output (review the
# diff before committing it).
set -u
B=${1:?usage: run.sh BUILD_DIR [CASE...]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "$B" && pwd)
PATH="$B/bin:$B/tools:$PATH"
export PATH LC_ALL=C TZ=UTC
unset TMPDIR

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tracy-cli.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM

# Flips one byte of file $1 at offset $2.
flip() {
    printf '\377' | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

make_traces() {
    d=$1
    tracegen --fixed small -o "$d/small.tracy" &&
    tracegen --fixed empty -o "$d/empty.tracy" &&
    tracegen -z 5000 -p 2 -t 3 --messages 7 --signposts 5 --plots 11 --frames 3 --lost 2 \
        -o "$d/gen.tracy" || return 1
    size=$(wc -c < "$d/small.tracy")
    # Cut inside the trailer: every unit complete, no trailer.
    head -c $((size - 10)) "$d/small.tracy" > "$d/cut-trailer.tracy"
    # Cut inside the data: only the first units survive.
    head -c 600 "$d/small.tracy" > "$d/cut-mid.tracy"
    # A byte flipped in the first metadata block (decoded when opening) and
    # in the last event block (met while converting).
    cp "$d/small.tracy" "$d/corrupt-meta.tracy" && flip "$d/corrupt-meta.tracy" 150
    cp "$d/small.tracy" "$d/corrupt-events.tracy" && flip "$d/corrupt-events.tracy" 850
    printf 'time,value\n1,2\n' > "$d/notrace.txt"
    : > "$d/zero.tracy"
}

if ! make_traces "$WORK"; then
    echo "cli: cannot generate the test traces" >&2
    exit 1
fi

pass=0
fail=0
if [ $# -eq 0 ]; then
    set -- $(cd "$HERE/cases" && ls *.cmd | sed 's/\.cmd$//')
fi
for name in "$@"; do
    c="$HERE/cases/$name"
    run="$WORK/run-$name"
    mkdir "$run" && cp "$WORK"/*.tracy "$WORK/notrace.txt" "$run/"
    (cd "$run" && sh "$c.cmd" > "$WORK/out" 2> "$WORK/err")
    code=$?
    if [ -f "$c.sed" ]; then sed -f "$c.sed" "$WORK/out" > "$WORK/out2" && mv "$WORK/out2" "$WORK/out"; fi
    if [ -f "$c.errsed" ]; then sed -f "$c.errsed" "$WORK/err" > "$WORK/err2" && mv "$WORK/err2" "$WORK/err"; fi
    if [ "${UPDATE:-0}" = 1 ]; then
        if [ "$code" -ne 0 ]; then echo "$code" > "$c.exit"; else rm -f "$c.exit"; fi
        if [ -s "$WORK/out" ]; then cp "$WORK/out" "$c.out"; else rm -f "$c.out"; fi
        if [ -s "$WORK/err" ]; then cp "$WORK/err" "$c.err"; else rm -f "$c.err"; fi
    fi
    want=0
    [ -f "$c.exit" ] && want=$(cat "$c.exit")
    ok=1
    if [ "$code" != "$want" ]; then
        echo "FAIL $name: exit code $code, expected $want"
        ok=0
    fi
    for s in out err; do
        exp="$c.$s"
        [ -f "$exp" ] || exp=/dev/null
        if ! cmp -s "$exp" "$WORK/$s"; then
            echo "FAIL $name: std$s differs (expected $exp):"
            diff "$exp" "$WORK/$s" | head -20
            ok=0
        fi
    done
    if [ $ok = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
    rm -rf "$run"
done
echo "cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
