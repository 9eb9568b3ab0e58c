# tracy-sql's temporary database is gone however the run ends, here cut by a
# reader that stops early (SIGPIPE): before, each such run left a database in
# the temporary folder.
mkdir tmp
TMPDIR=$PWD/tmp tracy-sql --csv gen.tracy \
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 200000) SELECT x FROM c" | head -3
TMPDIR=$PWD/tmp tracy-sql --csv gen.tracy "SELECT count(*) AS n FROM slice"
echo "left in the temporary folder: $(ls tmp | wc -l)"
rmdir tmp
