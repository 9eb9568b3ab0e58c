#!/bin/sh
# pipinstall.sh BUILD -- README's `pip install .`, as a user runs it: for the
# oldest and the newest interpreter pyhook/pythons.sh finds (other than
# Debian's, which has no venv module here), a fresh virtual environment, then
# `pip install --no-index .` from this tree (nothing may come from a
# registry), then `python -m tracy` and the installed `tracy` command on a
# small program from another folder with a PATH that holds none of the build
# tree: each trace must hold exactly the calls the program made. Then the
# same environment's tracy-isolated.pth: a program whose Python children
# start with -I and -E (which read no PYTHONPATH) has them recorded, each
# seeing the environment and modules a child profiled through PYTHONPATH
# sees, its output as plain's; one started with -IS (no .pth read) runs
# unprofiled (seeing the variables tracy set for children) and is the only
# one the run reports. Both interpreters run at
# once. Exit 1 on any failure, with the step's output.
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
    isolated "$d" || return 1
    echo "check-pip $py: pip install . then python -m tracy and tracy: 1973 fib calls recorded;" \
        "-I and -E children recorded, -IS reported"
}

isolated() { # isolated DIR: the children of tracy-isolated.pth (see above)
    d=$1
    cat >"$d/run/iso.py" <<'PY'
import os, subprocess, sys
kid = ("import os, sys\n"
       "def kid(n):\n    return n if n < 2 else kid(n - 1) + kid(n - 2)\n"
       "kid(10)\n"
       "print(sys.argv[1], sorted(k for k in os.environ if k.startswith('TRACY')),\n"
       "      os.environ.get('PYTHONPATH'), 'sitecustomize' in sys.modules)\n")
for flags in (['-I'], ['-E'], [], ['-IS']):
    subprocess.run([sys.executable] + flags + ['-c', kid, ' '.join(flags) or '-'], check=True)
PY
    {
        (cd "$d/run" && env -u PYTHONPATH PATH=/usr/bin:/bin TRACY_PORT=0 \
            "$d/venv/bin/python" iso.py >"$d/iso-plain") &&
        (cd "$d/run" && env -u PYTHONPATH PATH=/usr/bin:/bin TRACY_PORT=0 \
            "$d/venv/bin/python" -m tracy -o iso.tracy iso.py >"$d/iso-out" 2>"$d/iso-err") &&
        "$B/bin/tracy-csv" --stats "$d/run/iso.tracy" >"$d/iso.csv"
    } >>"$d/log" 2>&1 || { echo "check-pip $d: the isolated children's run failed"; tail -n 30 "$d/log"; return 1; }
    # kid(10) makes 177 calls: recorded in the -I, -E and plain children
    calls=$(awk -F, '$1 == "kid" { print $6 }' "$d/iso.csv")
    said=$(grep -c "not profiled" "$d/iso-err")
    # (the unprofiled -IS child sees the variables tracy set for children)
    if [ "$calls" != 531 ] || [ "$(head -n 3 "$d/iso-plain")" != "$(head -n 3 "$d/iso-out")" ] ||
        [ "$(wc -l <"$d/iso-out")" != 4 ] || [ "$said" != 1 ] ||
        ! grep -q "not profiled (pid [0-9]*): started with -S: " "$d/iso-err"; then
        echo "check-pip $d: isolated children: kid calls '$calls' (want 531), reports $said" \
            "(want 1, for -S); output plain / traced / stderr:"
        cat "$d/iso-plain" "$d/iso-out" "$d/iso-err"; return 1
    fi
}

one "$first" a & pa=$!
rb=0
if [ "$last" != "$first" ]; then one "$last" b || rb=1; fi
wait $pa; ra=$?
[ $ra -eq 0 ] && [ $rb -eq 0 ]
