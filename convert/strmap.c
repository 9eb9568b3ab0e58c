/* strmap.c -- string key -> index map (strmap.h). */
#include "convert/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- String map --------------------------------------------------------- */

typedef struct map_ent {
    char *key;
    size_t len;
} map_ent;

struct cv_map {
    map_ent *ents; /* insertion order */
    size_t n, cap;
    long *slots;   /* index + 1, 0 when empty */
    size_t nslots;
};

static uint64_t hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

cv_map *cv_map_new(void) {
    cv_map *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->nslots = 64;
    m->slots = calloc(m->nslots, sizeof *m->slots);
    if (!m->slots) {
        free(m);
        return NULL;
    }
    return m;
}

void cv_map_free(cv_map *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) free(m->ents[i].key);
    free(m->ents);
    free(m->slots);
    free(m);
}

static int rehash(cv_map *m) {
    size_t ns = m->nslots * 2;
    long *slots = calloc(ns, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < m->n; i++) {
        size_t h = hash(m->ents[i].key, m->ents[i].len) & (ns - 1);
        while (slots[h]) h = (h + 1) & (ns - 1);
        slots[h] = (long)i + 1;
    }
    free(m->slots);
    m->slots = slots;
    m->nslots = ns;
    return 0;
}

long cv_map_get(cv_map *m, const char *key, size_t len, int *added) {
    size_t h = hash(key, len) & (m->nslots - 1);
    *added = 0;
    while (m->slots[h]) {
        map_ent *e = &m->ents[m->slots[h] - 1];
        if (e->len == len && memcmp(e->key, key, len) == 0) return m->slots[h] - 1;
        h = (h + 1) & (m->nslots - 1);
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 32;
        map_ent *e = realloc(m->ents, cap * sizeof *e);
        if (!e) return -1;
        m->ents = e;
        m->cap = cap;
    }
    char *k = malloc(len + 1);
    if (!k) return -1;
    memcpy(k, key, len);
    k[len] = '\0';
    m->ents[m->n].key = k;
    m->ents[m->n].len = len;
    m->slots[h] = (long)m->n + 1;
    m->n++;
    *added = 1;
    if (m->n * 2 > m->nslots && rehash(m)) return -1;
    return (long)m->n - 1;
}

size_t cv_map_size(const cv_map *m) { return m->n; }

const char *cv_map_key(const cv_map *m, size_t idx, size_t *len) {
    if (len) *len = m->ents[idx].len;
    return m->ents[idx].key;
}
