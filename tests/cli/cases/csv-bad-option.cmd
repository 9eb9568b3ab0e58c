tracy-csv --frobnicate small.tracy
