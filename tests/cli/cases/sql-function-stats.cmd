tracy-sql small.tracy "SELECT * FROM function_stats ORDER BY total DESC, name"
