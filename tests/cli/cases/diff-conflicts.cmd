# Options that contradict each other are refused in one line with the usage
# exit code, 6, and nothing is written (before, the last one won or the
# option was ignored): a value given twice, --all with JSON or CSV (which
# always hold every row). --base and --new add runs: they stay repeatable.
for a in "-f json -f csv" "-o a.txt --output b.txt" "-t 5 -t 10" "--test runs --test calls" \
         "-f json -a" "-f csv --all"; do
    tracy-diff $a small.tracy small.tracy
    echo "exit $?"
done
ls a.txt b.txt 2>/dev/null
tracy-diff -t 5 --threshold 5 -a --all -b small.tracy -b small.tracy -n small.tracy \
    -n small.tracy > /dev/null && echo "the same value twice, several runs: accepted"
