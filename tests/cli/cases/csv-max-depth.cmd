tracy-csv --max-depth 1 small.tracy
