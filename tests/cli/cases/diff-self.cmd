# --self: only func_3, whose own time grew, is slower; its callers are not.
tracegen -z 3000 -o a.tracy && tracegen -z 3000 --slow 3:300 -o b.tracy &&
tracy-diff -m 1us --self a.tracy b.tracy
