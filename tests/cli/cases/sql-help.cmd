tracy-sql --help
