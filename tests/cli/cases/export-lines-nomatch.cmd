tracy-export -f lines --function "^nomatch$" -o - gen.tracy
