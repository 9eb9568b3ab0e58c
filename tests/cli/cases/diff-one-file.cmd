tracy-diff small.tracy
