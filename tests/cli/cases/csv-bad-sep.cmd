tracy-csv --sep ab small.tracy
