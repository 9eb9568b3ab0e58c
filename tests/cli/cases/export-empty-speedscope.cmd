tracy-export empty.tracy -o empty.speedscope.json && cat empty.speedscope.json
