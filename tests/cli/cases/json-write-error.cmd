tracy-json small.tracy -o /dev/full
