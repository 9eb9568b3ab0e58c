# Messages but no signpost: no phase rows (they would repeat the functions).
tracegen -z 2000 --messages 9 -o a.tracy && tracy-diff -f csv a.tracy a.tracy | cut -d, -f1-3 | sort | uniq -c
