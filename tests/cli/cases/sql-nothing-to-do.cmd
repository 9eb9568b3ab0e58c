tracy-sql small.tracy
