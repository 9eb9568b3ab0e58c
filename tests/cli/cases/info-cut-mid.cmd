tracy-info --json cut-mid.tracy
