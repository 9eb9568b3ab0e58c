tracy-csv --min-duration 12x small.tracy
