tracy-csv cut-mid.tracy
