/* sql_sort.h -- sorting of integer keys in bounded memory: runs of a fixed
 * number of keys are sorted in memory; when there is more than one, they go
 * to an unlinked temporary file (each integer as a varint of its difference
 * from the key before) and are merged at the end. Keys that arrive already
 * in order within each value of their first integer (the usual case for
 * tracy-sql) sort in linear time. */
#ifndef CONVERT_SQL_SORT_H
#define CONVERT_SQL_SORT_H

#include <stddef.h>
#include <stdint.h>

/* A key is `width` integers, compared one by one from the first: an index's
 * columns then the rowid, so that no two keys are equal. */
#define SQS_MIN_WIDTH 3
#define SQS_MAX_WIDTH 8

typedef struct sqs_sorter sqs_sorter;

/* Receives the keys in order; a non-zero return stops the sort with it. */
typedef int (*sqs_emit)(void *ctx, const int64_t *k);

/* A sorter of keys of `width` integers (SQS_MIN_WIDTH..SQS_MAX_WIDTH),
 * holding up to `run_keys` keys in memory. NULL when out of memory or for a
 * width out of range. */
sqs_sorter *sqs_new(size_t run_keys, unsigned width);

/* Adds a key (`width` integers, copied). Returns 0, or -1 after printing an
 * error. */
int sqs_add(sqs_sorter *s, const int64_t *k);

/* Calls `emit` for every key in increasing order. Returns 0, -1 after
 * printing an error, or what `emit` returned. */
int sqs_finish(sqs_sorter *s, sqs_emit emit, void *ctx);

void sqs_free(sqs_sorter *s);

#endif /* CONVERT_SQL_SORT_H */
