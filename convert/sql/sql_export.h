/* sql_export.h -- writes a trace into a SQLite database with the schema of
 * schema/schema.sql (used by tracy-sql). */
#ifndef CONVERT_SQL_EXPORT_H
#define CONVERT_SQL_EXPORT_H

#include <sqlite3.h>
#include <stdint.h>

#include "trace.h"

/* Version of the schema (metadata `schema_version`): a cached database of
 * another version is made again. */
#define SQLX_SCHEMA_VERSION 4

/* Identity of the source file, stored in `metadata` so that a cached
 * database can be matched with its trace, and the new database's page size
 * (0: 65536). */
typedef struct sqlx_source {
    const char *path;
    uint64_t size;
    int64_t mtime_ns;
    uint32_t page_size;
} sqlx_source;

/* Creates the schema in the new, empty database file `path` and fills it
 * from `r` (all streams, from the first event; the reader is read twice),
 * with the indexes; the database is closed on return. Messages
 * go to stderr. Returns 0 when the database is usable: *read_exit then holds
 * 0, or CV_EXIT_CORRUPT when the trace had a bad unit (everything before it
 * is in the database). Returns -1 on a database error (exit CV_EXIT_OUTPUT)
 * or out-of-memory after printing it. */
int sqlx_export(lt_reader *r, const char *path, const sqlx_source *src, int *read_exit);

#endif /* CONVERT_SQL_EXPORT_H */
