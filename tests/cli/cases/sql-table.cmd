tracy-sql --table small.tracy "SELECT name, calls, total, self FROM function_stats ORDER BY name"
