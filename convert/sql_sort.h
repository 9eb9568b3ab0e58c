/* sql_sort.h -- sorting of (a, b, id) integer keys in bounded memory:
 * runs of a fixed number of keys are sorted in memory; when there is more
 * than one, they go to an unlinked temporary file (each integer as a varint
 * of its difference from the key before) and are merged at the end. Keys added in increasing `id` order with `b` following it within
 * each `a` (the usual case for tracy-sql) sort in linear time. */
#ifndef CONVERT_SQL_SORT_H
#define CONVERT_SQL_SORT_H

#include <stddef.h>
#include <stdint.h>

/* A key is `width` integers: k[0] = a, k[1] = b, k[2] = id, then
 * width - 3 values carried along with it (an index's other columns), not
 * compared. */
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

/* Calls `emit` for every key in (a, b, id) order. Returns 0, -1 after
 * printing an error, or what `emit` returned. */
int sqs_finish(sqs_sorter *s, sqs_emit emit, void *ctx);

void sqs_free(sqs_sorter *s);

#endif /* CONVERT_SQL_SORT_H */
