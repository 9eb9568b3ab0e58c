tracy-diff --help
