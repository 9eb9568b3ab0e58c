tracy-csv --thread worker small.tracy && tracy-csv --thread 2001 --process /usr/bin/python3 small.tracy
