tracy-export small.tracy -f folded --period 0 -o -
