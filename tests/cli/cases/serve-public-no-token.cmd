tracy-serve -a 0.0.0.0 --cache cache small.tracy
