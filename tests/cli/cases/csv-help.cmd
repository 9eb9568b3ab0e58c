tracy-csv --help
