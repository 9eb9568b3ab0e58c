# func_3 takes 300% longer per call in b.tracy: a regression (exit 1).
tracegen -z 3000 -o a.tracy && tracegen -z 3000 --slow 3:300 -o b.tracy &&
tracy-diff --min-time 1us a.tracy b.tracy
