tracy-info --verify corrupt-events.tracy
