/* lt_tracy.h -- what Tracy.hpp and TracyC.h share: call-site caches of
 * location and plot ids, the location table of source locations passed by
 * address and of transient zones, and the memory pools that turn
 * TracyAlloc/TracyFree into a plot of the bytes in use per pool. Internal to the compatibility
 * headers (names lt__tracy_*); include <tracy/Tracy.hpp> or <tracy/TracyC.h>.
 *
 * The location and pool tables are process-wide state in a header-only
 * library: their functions are weak definitions, so that the linker keeps one
 * copy however many C and C++ files include this header. */
#ifndef LT_TRACY_H
#define LT_TRACY_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../libtrace/trace_client.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Process-wide tables are weak definitions: one copy survives linking. */
#define LT__TRACY_WEAK __attribute__((weak, noinline))

/* Tracy's source location: zone name (NULL: the function's), function, file,
 * line and colour (ignored). */
struct ___tracy_source_location_data {
    const char *name;
    const char *function;
    const char *file;
    uint32_t line;
    uint32_t color;
};

/* The location id of a call site, registered on first use into `*slot` (the
 * same cost as LT_ZONE_SCOPED). Zones are named `name`, else `function`. */
static inline uint32_t lt__tracy_loc(uint32_t *slot, const char *name,
                                     const char *function, const char *file,
                                     uint32_t line) {
    uint32_t id = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (__builtin_expect(id == 0, 0)) {
        id = lt_loc_register(LT_LOC_USER, name ? name : function, file, line);
        __atomic_store_n(slot, id, __ATOMIC_RELAXED);
    }
    return id;
}

/* A plot call site: the id of the first name seen there is kept (set once:
 * `*id` is written before `*name` is published); another name at the same site
 * is looked up by the library each time. */
static inline uint32_t lt__tracy_plot_id(const char **site_name, uint32_t *site_id,
                                         const char *name) {
    if (__atomic_load_n(site_name, __ATOMIC_ACQUIRE) == name && name)
        return __atomic_load_n(site_id, __ATOMIC_RELAXED);
    uint32_t id = lt_plot_register(name);
    const char *none = NULL;
    if (id && __atomic_load_n(site_name, __ATOMIC_RELAXED) == NULL) {
        uint32_t zero = 0;
        if (__atomic_compare_exchange_n(site_id, &zero, id, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            __atomic_compare_exchange_n(site_name, &none, name, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED);
    }
    return id;
}

/* TracyAppInfo: a signpost with the header "app info" and the text as body. */
static inline void lt__tracy_app_info(const char *text, size_t len) {
    char *body = (char *)malloc(len + 1);
    if (!body) return;
    memcpy(body, text, len);
    body[len] = '\0';
    lt_signpost("app info", body);
    free(body);
}

/* ---- locations by key --------------------------------------------------------- */

/* The location id for a key of `klen` bytes (a source location's address, or
 * the name, function, file and line of a transient zone), registered as
 * `name`, `file`, `line` the first time the key is seen; 0 when out of memory.
 * Thread-safe; the table lives as long as the process. */
uint32_t lt__tracy_loc_by_key(const void *key, size_t klen, const char *name,
                              const char *file, uint32_t line);

struct lt__tracy_kent { char *key; size_t klen; uint64_t hash; uint32_t id; };
struct lt__tracy_keys {
    pthread_mutex_t mu;
    struct lt__tracy_kent *ents; /* open addressing; key NULL = free slot */
    size_t cap, used;
};

static inline uint64_t lt__tracy_fnv(const void *key, size_t n) {
    const unsigned char *p = (const unsigned char *)key;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static inline size_t lt__tracy_kfind(const struct lt__tracy_keys *t, const void *key,
                                     size_t klen, uint64_t h) {
    size_t i = (size_t)h & (t->cap - 1);
    while (t->ents[i].key && !(t->ents[i].hash == h && t->ents[i].klen == klen &&
                                memcmp(t->ents[i].key, key, klen) == 0))
        i = (i + 1) & (t->cap - 1);
    return i;
}

static inline int lt__tracy_kgrow(struct lt__tracy_keys *t) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    struct lt__tracy_keys n = *t;
    n.ents = (struct lt__tracy_kent *)calloc(cap, sizeof *n.ents);
    if (!n.ents) return -1;
    n.cap = cap;
    for (size_t i = 0; i < t->cap; i++) {
        const struct lt__tracy_kent *e = &t->ents[i];
        if (e->key) n.ents[lt__tracy_kfind(&n, e->key, e->klen, e->hash)] = *e;
    }
    free(t->ents);
    t->ents = n.ents;
    t->cap = cap;
    return 0;
}

LT__TRACY_WEAK uint32_t lt__tracy_loc_by_key(const void *key, size_t klen, const char *name,
                                             const char *file, uint32_t line) {
    static struct lt__tracy_keys t = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};
    uint64_t h = lt__tracy_fnv(key, klen);
    uint32_t id = 0;
    pthread_mutex_lock(&t.mu);
    if (t.used * 2 < t.cap || lt__tracy_kgrow(&t) == 0) {
        size_t i = lt__tracy_kfind(&t, key, klen, h);
        if (t.ents[i].key) {
            id = t.ents[i].id;
        } else if ((t.ents[i].key = (char *)malloc(klen ? klen : 1)) != NULL) {
            memcpy(t.ents[i].key, key, klen);
            t.ents[i].klen = klen;
            t.ents[i].hash = h;
            t.ents[i].id = id = lt_loc_register(LT_LOC_USER, name, file, line);
            t.used++;
        }
    }
    pthread_mutex_unlock(&t.mu);
    return id;
}

/* The location of a source location passed by address (one per address). */
static inline uint32_t lt__tracy_srcloc_id(const struct ___tracy_source_location_data *s) {
    return lt__tracy_loc_by_key(&s, sizeof s, s->name ? s->name : s->function, s->file,
                                s->line);
}

/* The location of a transient zone: one per name (or function), file, line. */
static inline uint32_t lt__tracy_transient_id(uint32_t line, const char *file, size_t filelen,
                                              const char *function, size_t flen,
                                              const char *name, size_t nlen) {
    const char *n = name ? name : function;
    size_t nl = name ? nlen : flen;
    size_t klen = nl + filelen + 2 + sizeof line;
    char *key = (char *)malloc(klen + nl + filelen + 2);
    if (!key) return 0;
    /* key: name \0 file \0 line; then the name and the file as C strings */
    memcpy(key, n, nl);
    key[nl] = '\0';
    memcpy(key + nl + 1, file, filelen);
    key[nl + 1 + filelen] = '\0';
    memcpy(key + nl + filelen + 2, &line, sizeof line);
    char *cn = key + klen, *cf = cn + nl + 1;
    memcpy(cn, n, nl);
    cn[nl] = '\0';
    memcpy(cf, file, filelen);
    cf[filelen] = '\0';
    uint32_t id = lt__tracy_loc_by_key(key, klen, cn, cf, line);
    free(key);
    return id;
}

/* ---- memory pools ---------------------------------------------------------- */

/* The address of a pointer, as the pool table keys it (an integer, so that
 * the compiler does not take the call for a read of the memory). */
#define LT__TRACY_PTR(ptr) ((uintptr_t)(const void *)(ptr))

/* Records an allocation (op 0), a free (op 1) or the discard of everything
 * (op 2) in pool `pool` (NULL: the default pool). Each change of a pool's bytes
 * in use is one sample of the plot "memory" (default pool) or "memory: NAME".
 * A free of a pointer the pool does not hold is ignored. Thread-safe. */
void lt__tracy_mem(int op, uintptr_t ptr, size_t size, const char *pool);

struct lt__tracy_ent { uintptr_t ptr; size_t size; uint32_t pool; };
struct lt__tracy_pool { char *name; uint32_t plot; uint64_t bytes; };
struct lt__tracy_heap {
    pthread_mutex_t mu;
    struct lt__tracy_ent *ents; /* open addressing; ptr 0 = free slot */
    size_t cap, used;
    struct lt__tracy_pool *pools;
    uint32_t npools;
};

static inline size_t lt__tracy_hash(uintptr_t p, uint32_t pool, size_t cap) {
    uint64_t h = ((uint64_t)p ^ ((uint64_t)pool << 48)) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (cap - 1);
}

static inline size_t lt__tracy_find(const struct lt__tracy_heap *h, uintptr_t p,
                                    uint32_t pool) {
    size_t i = lt__tracy_hash(p, pool, h->cap);
    while (h->ents[i].ptr && !(h->ents[i].ptr == p && h->ents[i].pool == pool))
        i = (i + 1) & (h->cap - 1);
    return i;
}

static inline int lt__tracy_grow(struct lt__tracy_heap *h) {
    size_t cap = h->cap ? h->cap * 2 : 1024;
    struct lt__tracy_heap n = *h;
    n.ents = (struct lt__tracy_ent *)calloc(cap, sizeof *n.ents);
    if (!n.ents) return -1;
    n.cap = cap;
    for (size_t i = 0; i < h->cap; i++)
        if (h->ents[i].ptr) n.ents[lt__tracy_find(&n, h->ents[i].ptr, h->ents[i].pool)] = h->ents[i];
    free(h->ents);
    h->ents = n.ents;
    h->cap = cap;
    return 0;
}

/* Removes slot i, moving later entries of its run back (no tombstones). */
static inline void lt__tracy_remove(struct lt__tracy_heap *h, size_t i) {
    size_t j = i;
    h->ents[i].ptr = 0;
    h->used--;
    for (;;) {
        j = (j + 1) & (h->cap - 1);
        if (!h->ents[j].ptr) return;
        size_t k = lt__tracy_hash(h->ents[j].ptr, h->ents[j].pool, h->cap);
        /* Entry j may move to i when its home k is not in (i, j]. */
        if ((i <= j) ? (i < k && k <= j) : (i < k || k <= j)) continue;
        h->ents[i] = h->ents[j];
        h->ents[j].ptr = 0;
        i = j;
    }
}

static inline uint32_t lt__tracy_pool_index(struct lt__tracy_heap *h, const char *name) {
    for (uint32_t i = 0; i < h->npools; i++)
        if ((!name && !h->pools[i].name) ||
            (name && h->pools[i].name && strcmp(name, h->pools[i].name) == 0))
            return i;
    struct lt__tracy_pool *p = (struct lt__tracy_pool *)realloc(
        h->pools, (h->npools + 1) * sizeof *p);
    if (!p) return UINT32_MAX;
    h->pools = p;
    char plot[256];
    snprintf(plot, sizeof plot, name ? "memory: %s" : "memory", name);
    p[h->npools].name = NULL;
    if (name) { /* strdup is not in ISO C */
        size_t n = strlen(name) + 1;
        p[h->npools].name = (char *)malloc(n);
        if (!p[h->npools].name) return UINT32_MAX;
        memcpy(p[h->npools].name, name, n);
    }
    p[h->npools].plot = lt_plot_register(plot);
    p[h->npools].bytes = 0;
    return h->npools++;
}

static inline void lt__tracy_discard(struct lt__tracy_heap *h, uint32_t pool) {
    for (size_t i = 0; i < h->cap;) {
        if (h->ents[i].ptr && h->ents[i].pool == pool)
            lt__tracy_remove(h, i); /* slot i may now hold a moved entry */
        else
            i++;
    }
    h->pools[pool].bytes = 0;
}

LT__TRACY_WEAK void lt__tracy_mem(int op, uintptr_t p, size_t size, const char *pool) {
    static struct lt__tracy_heap h = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, NULL, 0};
    if (!p && op != 2) return;
    pthread_mutex_lock(&h.mu);
    uint32_t pi = lt__tracy_pool_index(&h, pool);
    if (pi == UINT32_MAX || (op == 0 && h.used * 2 >= h.cap && lt__tracy_grow(&h) < 0)) {
        pthread_mutex_unlock(&h.mu);
        return;
    }
    struct lt__tracy_pool *pl = &h.pools[pi];
    size_t i = h.cap ? lt__tracy_find(&h, p, pi) : 0;
    if (op == 0) {
        if (h.ents[i].ptr) pl->bytes -= h.ents[i].size; /* allocated again */
        else h.used++;
        h.ents[i].ptr = p;
        h.ents[i].size = size;
        h.ents[i].pool = pi;
        pl->bytes += size;
    } else if (op == 1 && h.cap && h.ents[i].ptr) {
        pl->bytes -= h.ents[i].size;
        lt__tracy_remove(&h, i);
    } else if (op == 2 && h.cap) {
        lt__tracy_discard(&h, pi);
    } else {
        pthread_mutex_unlock(&h.mu);
        return;
    }
    lt_plot(pl->plot, (double)pl->bytes); /* under the lock: samples stay in order */
    pthread_mutex_unlock(&h.mu);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LT_TRACY_H */
