tracy-serve -p 70000 small.tracy
