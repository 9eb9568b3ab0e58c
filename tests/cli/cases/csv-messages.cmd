tracy-csv -m small.tracy
