tracy-diff small.tracy small.tracy > /dev/full
