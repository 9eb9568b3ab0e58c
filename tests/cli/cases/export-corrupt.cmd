tracy-export corrupt-events.tracy -o out.callgrind
