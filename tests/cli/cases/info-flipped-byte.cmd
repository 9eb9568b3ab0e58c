tracy-info corrupt-events.tracy > /dev/null
