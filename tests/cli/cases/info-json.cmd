tracy-info --json small.tracy
