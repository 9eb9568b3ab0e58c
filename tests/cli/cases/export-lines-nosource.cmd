tracy-export -f lines --sort time --top 2 -o - gen.tracy
