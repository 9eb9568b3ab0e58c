tracy-export small.tracy -o /dev/full -f html
