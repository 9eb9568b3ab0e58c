tracy-diff small.tracy missing.tracy
