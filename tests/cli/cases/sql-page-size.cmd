tracy-sql --page-size 512 gen.tracy -o small-pages.db &&
sqlite3 small-pages.db "PRAGMA page_size; PRAGMA integrity_check; SELECT count(*), count(parent_id), sum(dur) FROM slice_data;" &&
tracy-sql gen.tracy -o big-pages.db &&
sqlite3 big-pages.db "PRAGMA page_size; PRAGMA integrity_check; SELECT count(*), count(parent_id), sum(dur) FROM slice_data;"
