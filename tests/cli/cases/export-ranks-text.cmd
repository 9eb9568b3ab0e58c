tracy-export -f ranks --function "^func_(1|2)$" -o - gen.tracy
