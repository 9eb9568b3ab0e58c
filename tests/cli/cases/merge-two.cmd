tracy-merge -o m.tracy small.tracy gen.tracy && tracy-info m.tracy | grep -E "^(events|zones|processes):|clock_|merge_inputs"
