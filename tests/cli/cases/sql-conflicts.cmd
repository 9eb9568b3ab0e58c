# Options that contradict each other are refused in one line, exit 1, and
# no database is written (before, the last one won): two result formats, -o
# twice, -o with --cache, a result format with no query to print.
for a in "--csv --json" "--table --csv" "-o a.db -o b.db" "--page-size 512 --page-size 1024" \
         "--cache -o a.db"; do
    tracy-sql $a small.tracy "SELECT 1 AS one"
    echo "exit $?"
done
tracy-sql --json -o a.db small.tracy
echo "exit $?"
ls a.db b.db small.tracy.sqlite 2>/dev/null
tracy-sql --json --json small.tracy "SELECT 1 AS one"
