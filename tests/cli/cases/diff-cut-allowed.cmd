tracy-diff --allow-truncated cut-trailer.tracy small.tracy
