tracy-csv --version
