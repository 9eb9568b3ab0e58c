# -o given twice with different names is refused, nothing written (before,
# the last one won); the same name twice is accepted.
tracy-json -o a.json --output b.json small.tracy
echo "exit $?"
ls a.json b.json 2>/dev/null
tracy-json -o a.json --output a.json small.tracy && ls a.json && rm a.json
