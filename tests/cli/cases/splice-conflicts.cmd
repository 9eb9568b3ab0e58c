# tracy-merge and tracy-cut refuse, in one line, exit 1, an option given
# twice with different values and --absolute without a window (before, the
# last one won or the option was ignored); no trace is written. The same
# value twice is accepted. (No .tracy file is left for tests/identity.)
for c in "tracy-merge -o a.tracy --output b.tracy small.tracy gen.tracy" \
         "tracy-merge --level 3 --level 9 -o a.tracy small.tracy gen.tracy" \
         "tracy-cut -o a.tracy -o b.tracy small.tracy" "tracy-cut -p 1 -p 2 -o a.tracy gen.tracy" \
         "tracy-cut -t 1:1 --thread 1:2 -o a.tracy gen.tracy" \
         "tracy-cut --from 1us --from 2us -o a.tracy small.tracy" \
         "tracy-cut --to 1us --to 2us -o a.tracy small.tracy" \
         "tracy-cut --absolute -o a.tracy small.tracy"; do
    $c
    echo "exit $?"
done
ls a.tracy b.tracy 2>/dev/null
tracy-cut -q -o a.tracy --output a.tracy -p 1 -p 1 --level 3 --level 3 small.tracy && echo "the same value twice: accepted"
rm -f a.tracy
