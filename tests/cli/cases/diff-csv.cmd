# Improvement direction (b is the faster one), written to a file.
tracegen -z 3000 -o a.tracy && tracegen -z 3000 --slow 3:300 -o b.tracy &&
tracy-diff -m 1us -f csv -o out.csv b.tracy a.tracy && cat out.csv
