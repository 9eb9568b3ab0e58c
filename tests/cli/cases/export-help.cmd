tracy-export --help
