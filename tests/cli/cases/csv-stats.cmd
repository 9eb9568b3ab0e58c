tracy-csv --stats small.tracy
