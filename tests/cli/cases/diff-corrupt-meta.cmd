tracy-diff small.tracy corrupt-meta.tracy
