tracy-json notrace.txt
