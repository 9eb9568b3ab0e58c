tracy-export small.tracy -o callgrind.out.small && cat callgrind.out.small
