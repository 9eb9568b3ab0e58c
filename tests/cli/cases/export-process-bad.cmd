tracy-export -f pstats -p 9 -o x.prof gen.tracy
