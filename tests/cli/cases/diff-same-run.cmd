# A trace against itself: nothing changed, exit 0.
tracegen -z 3000 -o a.tracy && tracy-diff a.tracy a.tracy
