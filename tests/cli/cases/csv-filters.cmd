tracy-csv --min-duration 300 --max-depth 1 --process 1001 small.tracy
