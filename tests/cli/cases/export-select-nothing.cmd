tracy-export -f folded -p 1 -t 2:1 -o - gen.tracy
