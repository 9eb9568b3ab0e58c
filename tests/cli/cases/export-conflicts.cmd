# Options that contradict each other are refused in one line, exit 1, and
# nothing is written (before, the last one won or the option was ignored):
# a value given twice, and an option the format does not use, whether -f,
# the output's name or --split chose the format.
for a in "-f folded -f pstats -o -" "-o a.prof -o b.prof" "-p 1 -p 2 -o a.prof" \
         "-f pstats --period 100 -o a.prof" "-o a.prof --period 100" \
         "--split process --per-thread -o dir" "-f speedscope --per-thread -o -" \
         "-f html --function step -o a.html" "-f ranks --sort time -o -" \
         "-f folded --top 3 -o -" "-f lines --csv -o -" "-f ranks --all-functions -o -" \
         "-f ranks --top 3 --top 4 -o -"; do
    tracy-export $a small.tracy
    echo "exit $?"
done
ls a.prof b.prof a.html dir 2>/dev/null
tracy-export -f folded --format folded --per-thread --per-thread --period 100 -o - small.tracy \
    > /dev/null && echo "the same value twice: accepted"
