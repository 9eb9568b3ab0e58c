tracy-sql small.tracy "DELETE FROM slice_data"
