/* sql_sort.h -- sorting of (a, b, id) integer keys in bounded memory:
 * runs of a fixed number of keys are sorted in memory; when there is more
 * than one, they go to an unlinked temporary file and are merged at the
 * end. Keys added in increasing `id` order with `b` following it within
 * each `a` (the usual case for tracy-sql) sort in linear time. */
#ifndef CONVERT_SQL_SORT_H
#define CONVERT_SQL_SORT_H

#include <stddef.h>
#include <stdint.h>

typedef struct sqs_key {
    int64_t a, b, id;
} sqs_key;

typedef struct sqs_sorter sqs_sorter;

/* Receives the keys in order; a non-zero return stops the sort with it. */
typedef int (*sqs_emit)(void *ctx, const sqs_key *k);

/* A sorter holding up to `run_keys` keys in memory. NULL when out of
 * memory. */
sqs_sorter *sqs_new(size_t run_keys);

/* Adds a key. Returns 0, or -1 after printing an error. */
int sqs_add(sqs_sorter *s, int64_t a, int64_t b, int64_t id);

/* Calls `emit` for every key in (a, b, id) order. Returns 0, -1 after
 * printing an error, or what `emit` returned. */
int sqs_finish(sqs_sorter *s, sqs_emit emit, void *ctx);

void sqs_free(sqs_sorter *s);

#endif /* CONVERT_SQL_SORT_H */
