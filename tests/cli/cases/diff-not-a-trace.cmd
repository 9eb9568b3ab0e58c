tracy-diff small.tracy notrace.txt
