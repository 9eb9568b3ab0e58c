tracy-csv notrace.txt
