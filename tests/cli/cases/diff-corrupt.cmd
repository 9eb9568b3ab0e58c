tracy-diff small.tracy corrupt-events.tracy
