# Options that contradict each other are refused in one line, exit 1, and
# nothing is written (before, the last one won or one was ignored): two
# output kinds, a value given twice, an option the output kind does not use.
# The same option with the same value again, and --stats -e, stay accepted.
for a in "--stats -u" "-u --messages" "-o a.csv -o b.csv" "--thread 1 --thread 2" \
         "-e" "-m --self" "-c" "-m --min-duration 5" "-m --max-depth 2"; do
    tracy-csv $a small.tracy
    echo "exit $?"
done
ls a.csv b.csv 2>/dev/null
tracy-csv -u --unwrap -o a.csv --output a.csv small.tracy && echo "same value twice: accepted"
tracy-csv --stats -e -c -f step small.tracy > /dev/null && echo "--stats -e -c -f: accepted"
rm -f a.csv
