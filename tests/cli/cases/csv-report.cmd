tracy-csv small.tracy
