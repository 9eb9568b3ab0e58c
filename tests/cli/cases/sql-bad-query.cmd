tracy-sql small.tracy "SELECT nope FROM slice"
