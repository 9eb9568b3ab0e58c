tracegen -z 3000 -o a.tracy && tracegen -z 3000 --slow 3:300 -o b.tracy &&
tracy-diff -m 1us -f json a.tracy b.tracy
