tracy-csv empty.tracy
