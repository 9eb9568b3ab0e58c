tracy-json corrupt-events.tracy -o /dev/null
