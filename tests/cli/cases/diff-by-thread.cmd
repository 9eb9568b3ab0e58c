tracegen -z 3000 -t 2 -p 2 -o a.tracy && tracegen -z 3000 -t 2 -p 2 --slow 3:300 -o b.tracy &&
tracy-diff -m 1us --by-thread a.tracy b.tracy
