# An output that names a trace being read, by any name, is refused and the
# trace is left as it was (before, the converters emptied it while reading it).
sum=$(cksum < small.tracy)
ln -s small.tracy link.tracy
ln small.tracy hard.tracy
cp small.tracy other.tracy
for c in "tracy-csv -o small.tracy small.tracy" "tracy-json -o link.tracy small.tracy" \
         "tracy-export -f folded -o hard.tracy small.tracy" "tracy-sql small.tracy -o link.tracy" \
         "tracy-diff -o other.tracy small.tracy other.tracy" \
         "tracy-merge -f -o link.tracy other.tracy small.tracy" "tracy-cut -f -o hard.tracy small.tracy"; do
    $c
    echo "exit $?"
done
[ "$(cksum < small.tracy)" = "$sum" ] && cmp -s small.tracy other.tracy && echo "inputs intact"
tracy-csv -o out.csv small.tracy && tracy-csv -o out.csv small.tracy && echo "an output that is no input: written again"
rm -f link.tracy hard.tracy other.tracy out.csv  # (nothing left for tests/identity)
