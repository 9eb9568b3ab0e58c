tracy-export small.tracy -o x.bin
