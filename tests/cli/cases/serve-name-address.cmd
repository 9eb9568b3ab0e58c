tracy-serve -a example.org --cache cache small.tracy
