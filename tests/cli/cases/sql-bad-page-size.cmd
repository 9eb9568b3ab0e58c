tracy-sql --page-size 3000 small.tracy -o x.db
