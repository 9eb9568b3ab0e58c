tracy-sql cut-trailer.tracy "SELECT count(*) FROM slice" "SELECT int_value FROM metadata WHERE name = 'trace_complete'"
