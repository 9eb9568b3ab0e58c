tracy-info corrupt-meta.tracy
