tracy-export small.tracy -o small.folded && cat small.folded
