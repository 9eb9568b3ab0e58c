tracy-export small.tracy -f folded --period 100 -o -
