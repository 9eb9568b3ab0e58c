# The output name tells the format in either case.
tracy-export -o REPORT.PROF small.tracy && python3 -c "import pstats, sys; sys.stdout = open(\"/dev/null\", \"w\"); pstats.Stats(\"REPORT.PROF\")" && echo pstats
tracy-export -o Report.HTML small.tracy && grep -c "<html" Report.HTML
