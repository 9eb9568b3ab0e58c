# Signposts delimit phases: per-phase and per phase x op code rows.
tracegen -z 3000 --signposts 3 -o a.tracy && tracegen -z 3000 --signposts 3 --slow 3:300 -o b.tracy &&
tracy-diff -m 1us --all a.tracy b.tracy
