tracy-export small.tracy --per-thread -f folded -o -
