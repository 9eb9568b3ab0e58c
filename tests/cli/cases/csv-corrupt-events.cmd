tracy-csv corrupt-events.tracy
