# Three runs a side: Student's t on the per-run medians, Holm over the rows.
tracegen -z 3000 -o a.tracy && tracegen -z 3000 --slow 3:300 -o b.tracy &&
tracy-diff -m 1us -f csv -o out.csv -b a.tracy -b a.tracy -b a.tracy -n b.tracy -n b.tracy -n b.tracy
echo "exit $?"
cut -d, -f1-7,28- out.csv
