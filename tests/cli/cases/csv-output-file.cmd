tracy-csv -o ops.csv small.tracy && cat ops.csv
