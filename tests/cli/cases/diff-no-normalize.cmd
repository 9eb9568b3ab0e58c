# Raw times, and the per-call test forced on three runs a side.
tracegen -z 3000 -o a.tracy && tracegen -z 3000 --slow 3:300 -o b.tracy &&
tracy-diff -m 1us --no-normalize --test calls -f markdown -b a.tracy -b a.tracy -b a.tracy -n b.tracy -n b.tracy -n b.tracy
