tracy-info small.tracy
