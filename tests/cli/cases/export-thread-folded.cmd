tracy-export -f folded --per-thread -t 2:3,1:1 -o - gen.tracy
