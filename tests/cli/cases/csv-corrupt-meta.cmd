tracy-csv corrupt-meta.tracy
