# A selection that selects no thread is refused, as tracy-export refuses it
# (tracy-cut wrote an empty trace and exited 0); nothing is written.
tracy-cut -p '' -o a.tracy gen.tracy
echo "exit $?"
tracy-cut -t 1:1 -p 2 -o b.tracy gen.tracy
echo "exit $?"
tracy-export -t '' -o c.prof gen.tracy
echo "exit $?"
ls a.tracy b.tracy c.prof 2>/dev/null
tracy-cut -q -t 1:1 -p 1 -o d.tracy gen.tracy && tracy-info d.tracy 2>/dev/null | grep "^processes\|^threads"
rm -f d.tracy  # (nothing left for tests/identity)
