tracy-sql -o run.db small.tracy "SELECT count(*) AS zones FROM slice" && tracy-sql -o run.db small.tracy && ls run.db*
