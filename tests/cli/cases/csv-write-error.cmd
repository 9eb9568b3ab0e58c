tracy-csv small.tracy > /dev/full
