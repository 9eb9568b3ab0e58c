#!/bin/sh
# pipinstall.sh BUILD -- README's `pip install .`, as a user runs it: for the
# oldest and the newest interpreter pyhook/pythons.sh finds (other than
# Debian's, which has no venv module here), a fresh virtual environment, then
# `pip install --no-index .` from this tree (nothing may come from a
# registry), then `python -m tracy` and the installed `tracy` command on a
# small program from another folder with a PATH that holds none of the build
# tree: each trace must hold exactly the calls the program made. Both interpreters run at once. Exit 1 on any
# failure, with the step's output.
set -u
B=${1:-build}
case "$B" in /*) ;; *) B=$(pwd)/$B ;; esac
SRC=$(pwd)
W=$B/pip-check
rm -rf "$W"
mkdir -p "$W"
pys=$(sh pyhook/pythons.sh 2>/dev/null | grep -v '^/usr/bin/python3$')
first=$(echo "$pys" | head -n 1)
last=$(echo "$pys" | tail -n 1)
[ -n "$first" ] || { echo "check-pip: no interpreter with venv found"; exit 1; }

one() { # one PYTHON TAG
    py=$1 d=$W/$2
    mkdir -p "$d/run"
    cat >"$d/run/fib.py" <<'PY'
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
print(fib(15))
PY
    {
        "$py" -m venv "$d/venv" &&
        "$d/venv/bin/python" -m pip install --no-index -q "$SRC" &&
        (cd "$d/run" && env -u PYTHONPATH PATH=/usr/bin:/bin TRACY_PORT=0 \
            "$d/venv/bin/python" -m tracy fib.py >"$d/out") &&
        "$B/bin/tracy-csv" --stats "$d/run/fib.tracy" >"$d/stats.csv" &&
        (cd "$d/run" && env -u PYTHONPATH PATH="$d/venv/bin:/usr/bin:/bin" TRACY_PORT=0 \
            tracy -o cmd.tracy fib.py >"$d/out-cmd") &&
        "$B/bin/tracy-csv" --stats "$d/run/cmd.tracy" >"$d/stats-cmd.csv"
    } >"$d/log" 2>&1 || { echo "check-pip $py: failed"; tail -n 30 "$d/log"; return 1; }
    # fib(15) makes 1973 calls, under python -m tracy and under the tracy command
    for how in "" -cmd; do
        calls=$(awk -F, '$1 == "fib" { print $6 }' "$d/stats$how.csv")
        if [ "$calls" != 1973 ] || [ "$(cat "$d/out$how")" != 610 ]; then
            echo "check-pip $py${how:+ (tracy command)}: fib calls '$calls' (want 1973)," \
                "output '$(cat "$d/out$how")' (want 610); log:"
            cat "$d/log"; return 1
        fi
    done
    echo "check-pip $py: pip install . then python -m tracy and tracy: 1973 fib calls recorded"
}

one "$first" a & pa=$!
rb=0
if [ "$last" != "$first" ]; then one "$last" b || rb=1; fi
wait $pa; ra=$?
[ $ra -eq 0 ] && [ $rb -eq 0 ]
