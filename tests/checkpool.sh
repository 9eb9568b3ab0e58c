#!/bin/sh
# checkpool.sh JOBS RUNNER SUITES_H -- runs each Check suite that SUITES_H
# lists (SUITE(name) lines: tests/build.mk's generated list) as a process of
# its own (CK_RUN_SUITE=name RUNNER), JOBS at a time, the longest first.
# Most suites wait on daemons, children and timeouts, so side by side they
# take little longer than the longest. Each suite's output is printed in
# one piece when it ends, then one line of totals. Exit status 1 when a
# suite failed or did not say how it went.
#
# The environment (LT_BUILD, CK_*, ASAN_OPTIONS, ...) is the runner's.
set -u
if [ "${1:-}" = "--one" ]; then
    # --one RUNNER NAME: one suite, its output printed in one write
    out=$(CK_RUN_SUITE=$3 "$2" 2>&1)
    rc=$?
    printf '%s\n' "$out"
    exit $rc
fi
if [ $# -ne 3 ]; then
    echo "usage: checkpool.sh JOBS RUNNER SUITES_H" >&2
    exit 2
fi
jobs=$1 runner=$2 list=$3
# The longest, under ASan and natively (in this order), go first; any suite
# not named here follows in the list's order.
LONGEST="capture view hostile_daemon hostile load faults client regress reader serve splice sound"
all=$(sed -n 's/^SUITE(\([a-z0-9_]*\))$/\1/p' "$list")
order=
for s in $LONGEST; do
    case " $(echo $all) " in *" $s "*) order="$order $s" ;; esac
done
for s in $all; do
    case " $order " in *" $s "*) ;; *) order="$order $s" ;; esac
done
log=$(mktemp "${TMPDIR:-/tmp}/checkpool.XXXXXX") || exit 1
{
    printf '%s\n' $order | xargs -P "$jobs" -n 1 sh "$0" --one "$runner"
    echo $? >"$log.rc"
} | tee "$log"
rc=$(cat "$log.rc")
# "100%: Checks: 40, Failures: 0, Errors: 0" once a suite
awk -v want="$(printf '%s\n' $order | wc -l)" '
    /^[0-9]+%: Checks: / { gsub(",", ""); n++; checks += $3; bad += $5 + $7 }
    END {
        printf "checks: %d in %d suites, %d failed or errors\n", checks, n, bad
        exit (n == want && bad == 0) ? 0 : 1
    }' "$log"
said=$?
rm -f "$log" "$log.rc"
[ $rc -eq 0 ] && [ $said -eq 0 ]
