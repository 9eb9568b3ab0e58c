tracy-csv cut-trailer.tracy
