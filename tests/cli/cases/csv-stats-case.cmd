tracy-csv --stats -c -f STEP small.tracy
