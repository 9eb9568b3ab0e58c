tracy-csv --min-duration 300 --max-depth 2 --process 1001 small.tracy
