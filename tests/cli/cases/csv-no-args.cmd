tracy-csv
