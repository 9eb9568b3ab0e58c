tracy-serve --cache cache
