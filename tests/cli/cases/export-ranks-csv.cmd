tracy-export -f ranks --csv --top 5 -o - gen.tracy
