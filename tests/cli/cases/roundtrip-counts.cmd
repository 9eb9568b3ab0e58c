csv=$(tracy-csv gen.tracy | grep -vc ",signpost,\|,message,\|^OP CODE")
csv_u=$(tracy-csv -u gen.tracy | tail -n +2 | wc -l)
csv_s=$(tracy-csv --stats gen.tracy | awk -F, "NR > 1 { n += \$6 } END { print n }")
sql=$(tracy-sql gen.tracy "SELECT count(*) FROM slice" | tail -n 1)
sql_f=$(tracy-sql gen.tracy "SELECT sum(calls) FROM function_stats" | tail -n 1)
json=$(tracy-json gen.tracy | grep -c "\"ph\":\"X\"")
info=$(tracy-info --json gen.tracy | sed "s/.*\"zones\":\([0-9]*\).*/\1/")
info_v=$(tracy-info --verify --json gen.tracy | sed "s/.*\"zones\":\([0-9]*\).*/\1/")
echo "$csv $csv_u $csv_s $sql $sql_f $json $info $info_v"
msg_csv=$(tracy-csv -m gen.tracy | tail -n +2 | wc -l)
msg_sql=$(tracy-sql gen.tracy "SELECT count(*) FROM message" | tail -n 1)
msg_json=$(tracy-json gen.tracy | grep -c "\"cat\":\"message\"")
echo "$msg_csv $msg_sql $msg_json"
