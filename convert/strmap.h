/* strmap.h -- a small growable hash map, string key -> index, used for
 * per-function aggregates (calltree.c and the converters); memory grows
 * with distinct keys only. */
#ifndef CONVERT_STRMAP_H
#define CONVERT_STRMAP_H

#include <stddef.h>

typedef struct cv_map cv_map;
cv_map *cv_map_new(void);
void cv_map_free(cv_map *m);
/* Returns the index (0-based, in insertion order) of key, inserting it when
 * new (*added = 1). -1 on out-of-memory. */
long cv_map_get(cv_map *m, const char *key, size_t len, int *added);
size_t cv_map_size(const cv_map *m);
const char *cv_map_key(const cv_map *m, size_t idx, size_t *len);

#endif /* CONVERT_STRMAP_H */
