tracy-csv -s ";" small.tracy
