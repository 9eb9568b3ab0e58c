tracy-sql --cache small.tracy "SELECT int_value AS version FROM metadata WHERE name = 'schema_version'" &&
sqlite3 small.tracy.sqlite "INSERT INTO metadata(name, str_value) VALUES ('marker', 'kept'); UPDATE metadata SET int_value = int_value - 1 WHERE name = 'schema_version'" &&
tracy-sql --cache small.tracy "SELECT count(*) AS markers FROM metadata WHERE name = 'marker'"
