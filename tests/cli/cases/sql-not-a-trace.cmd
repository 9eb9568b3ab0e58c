tracy-sql notrace.txt "SELECT 1"
