tracy-sql --json small.tracy "SELECT name, calls, mean FROM function_stats ORDER BY name" "SELECT header, body FROM signpost"
