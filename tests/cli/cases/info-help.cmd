tracy-info --help
