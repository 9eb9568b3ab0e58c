tracy-serve small.tracy -p
