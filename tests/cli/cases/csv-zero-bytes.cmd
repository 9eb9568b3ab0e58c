tracy-csv zero.tracy
