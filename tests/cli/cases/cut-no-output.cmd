tracy-cut small.tracy
