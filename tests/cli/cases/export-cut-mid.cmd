tracy-export cut-mid.tracy -f folded -o -
