tracy-serve --help
