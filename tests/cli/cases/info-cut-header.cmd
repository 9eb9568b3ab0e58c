head -c 30 small.tracy > cut-header.tracy
tracy-info --json cut-header.tracy
