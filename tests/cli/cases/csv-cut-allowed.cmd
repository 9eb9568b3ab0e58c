tracy-csv --allow-truncated cut-trailer.tracy
