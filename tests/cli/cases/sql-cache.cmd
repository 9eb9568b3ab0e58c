tracy-sql --cache small.tracy "SELECT count(*) FROM slice" && ls small.tracy.sqlite &&
sqlite3 small.tracy.sqlite "INSERT INTO metadata(name, str_value) VALUES ('marker', 'kept')" &&
tracy-sql --cache small.tracy "SELECT str_value FROM metadata WHERE name = 'marker'" &&
touch -d "2001-02-03 04:05:06" small.tracy &&
tracy-sql --cache small.tracy "SELECT count(*) AS markers FROM metadata WHERE name = 'marker'"
