/* sql_btree.h -- bulk loading of SQLite b-trees: writes the pages of a table
 * and of its indexes straight into a database file, from rows that arrive
 * already in key order (the page layout of https://www.sqlite.org/fileformat.html).
 *
 * Use: let SQLite create the database with the empty table and indexes and
 * close it; open the file with sqb_file_open(), fill one sqb_tree per
 * b-tree (its root page is the one SQLite gave the empty tree), finish the
 * trees, and sqb_file_close() to record the new page count. SQLite then
 * opens the file as usual, and `PRAGMA integrity_check` holds. */
#ifndef CONVERT_SQL_BTREE_H
#define CONVERT_SQL_BTREE_H

#include <stddef.h>
#include <stdint.h>

typedef struct sqb_file sqb_file;
typedef struct sqb_tree sqb_tree;

/* Largest record sqb_record() makes: 1 + 31 header bytes, 8 per value. */
#define SQB_MAX_COLS 31
#define SQB_RECORD_MAX (1 + SQB_MAX_COLS + 8 * SQB_MAX_COLS)

/* Opens the database at `path` (closed by SQLite, not in WAL mode, no
 * auto-vacuum) for page writes. Returns NULL after printing a one-line
 * error. */
sqb_file *sqb_file_open(const char *path);

/* Writes the new page count into the header and closes the file. Returns 0,
 * or -1 after printing an error; `f` is freed either way. */
int sqb_file_close(sqb_file *f);

/* Encodes `n` integer columns (n <= SQB_MAX_COLS) as a SQLite record into
 * `out` (at least SQB_RECORD_MAX bytes); bit i of `nulls` makes column i
 * NULL. Returns the record's length. */
size_t sqb_record(const sqb_file *f, uint8_t *out, const int64_t *v, uint32_t nulls, int n);

/* A builder for the table b-tree (is_index 0) or index b-tree (1) whose
 * root page is `root`. NULL when out of memory. */
sqb_tree *sqb_tree_new(sqb_file *f, uint32_t root, int is_index);

/* Adds a row to a table tree; rowids must increase strictly. */
int sqb_table_add(sqb_tree *t, int64_t rowid, const uint8_t *rec, size_t len);

/* Adds a key (the record of the index columns then the rowid) to an index
 * tree; keys must arrive in increasing order. Records are at most 64 bytes. */
int sqb_index_add(sqb_tree *t, const uint8_t *rec, size_t len);

/* Writes the remaining pages, the interior levels and the root, and frees
 * the builder. Returns 0, or -1 after printing an error. */
int sqb_tree_finish(sqb_tree *t);

/* Frees a builder without finishing it (after an error). */
void sqb_tree_free(sqb_tree *t);

#endif /* CONVERT_SQL_BTREE_H */
