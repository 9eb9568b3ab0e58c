tracy-export notrace.txt -o x.html
