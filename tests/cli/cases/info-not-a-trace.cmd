tracy-info notrace.txt
