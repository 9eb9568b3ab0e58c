head -c 30 small.tracy > cut-header.tracy
tracy-csv cut-header.tracy
