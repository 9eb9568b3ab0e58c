tracy-info cut-trailer.tracy
