tracy-export small.tracy -f flame -o x
