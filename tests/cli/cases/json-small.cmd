tracy-json small.tracy
