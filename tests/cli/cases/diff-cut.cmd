tracy-diff cut-trailer.tracy small.tracy
