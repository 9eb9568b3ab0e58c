# A --thread or --process that names nothing in the trace is refused (it
# gave a header alone and exit 0), as tracy-export refuses it.
tracy-csv --thread nosuch gen.tracy
echo "exit $?"
tracy-csv --process app1 --thread nosuch gen.tracy
echo "exit $?"
tracy-csv --process nosuch -o out.csv gen.tracy
echo "exit $?"
ls out.csv 2>/dev/null
