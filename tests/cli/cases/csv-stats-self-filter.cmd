tracy-csv --stats -e -f STEP small.tracy
