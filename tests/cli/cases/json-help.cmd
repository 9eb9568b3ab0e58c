tracy-json --help
