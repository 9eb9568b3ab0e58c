tracy-export small.tracy -f speedscope -o -
