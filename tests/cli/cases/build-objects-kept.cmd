# Objects of chained rules stay after a build: `make demo` (or any make) does
# not delete what the next make would rebuild.
B=$(dirname "$(command -v tracy-csv)")/..
for o in obj/convert/csv.o obj/convert/convert.o obj/tools/tracegen.o obj/capture/server.o; do
    test -f "$B/$o" && echo "kept $o" || echo "missing $o"
done
