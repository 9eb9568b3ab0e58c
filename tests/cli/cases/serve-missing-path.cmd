tracy-serve --cache cache missing.tracy
