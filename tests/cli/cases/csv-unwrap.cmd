tracy-csv -u small.tracy
