/* calltree.c -- outermost-activation tracking and the aggregated call tree
 * (see calltree.h). */
#include "convert/calltree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/strmap.h"

/* Grows a zeroed array of `elem`-byte items to hold index `want`. */
static int grow_slow(void **arr, uint32_t *n, uint32_t want, size_t elem) {
    uint32_t cap = *n ? *n : 4;
    while (cap <= want) cap *= 2;
    void *p = realloc(*arr, (size_t)cap * elem);
    if (!p) return -1;
    memset((char *)p + (size_t)*n * elem, 0, (size_t)(cap - *n) * elem);
    *arr = p;
    *n = cap;
    return 0;
}

static inline int grow(void **arr, uint32_t *n, uint32_t want, size_t elem) {
    return want < *n ? 0 : grow_slow(arr, n, want, elem);
}

static inline int push_u32(uint32_t **a, uint32_t *n, uint32_t *cap, uint32_t v) {
    if (*n == *cap) {
        uint32_t c = *cap ? *cap * 2 : 4;
        uint32_t *p = realloc(*a, (size_t)c * sizeof *p);
        if (!p) return -1;
        *a = p;
        *cap = c;
    }
    (*a)[(*n)++] = v;
    return 0;
}

static inline uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* ---- Outermost activations ---------------------------------------------- */

/* Per stream: the keys of its open zones and, in an open-addressing table,
 * how many of them have each key. */
typedef struct astream {
    uint32_t *stack;
    uint32_t n, cap;
    uint32_t *keys;   /* key + 1, 0 = empty slot */
    uint32_t *counts;
    uint32_t size, used;
} astream;

typedef struct aproc {
    astream *threads;
    uint32_t n;
} aproc;

struct ct_active {
    aproc *procs;
    uint32_t n;
};

ct_active *ct_active_new(void) { return calloc(1, sizeof(ct_active)); }

void ct_active_free(ct_active *a) {
    if (!a) return;
    for (uint32_t p = 0; p < a->n; p++) {
        for (uint32_t t = 0; t < a->procs[p].n; t++) {
            astream *s = &a->procs[p].threads[t];
            free(s->stack);
            free(s->keys);
            free(s->counts);
        }
        free(a->procs[p].threads);
    }
    free(a->procs);
    free(a);
}

static uint32_t *slot_of(astream *s, uint32_t key) {
    uint32_t mask = s->size - 1, i = (uint32_t)mix(key) & mask;
    while (s->keys[i] && s->keys[i] != key + 1) i = (i + 1) & mask;
    if (!s->keys[i]) {
        s->keys[i] = key + 1;
        s->used++;
    }
    return &s->counts[i];
}

static int rehash(astream *s) {
    uint32_t size = s->size ? s->size * 2 : 4; /* small: one per thread */
    uint32_t *keys = calloc(size, sizeof *keys), *counts = calloc(size, sizeof *counts);
    if (!keys || !counts) {
        free(keys);
        free(counts);
        return -1;
    }
    astream old = *s;
    s->keys = keys;
    s->counts = counts;
    s->size = size;
    s->used = 0;
    for (uint32_t i = 0; i < old.size; i++)
        if (old.keys[i] && old.counts[i]) *slot_of(s, old.keys[i] - 1) = old.counts[i];
    free(old.keys);
    free(old.counts);
    return 0;
}

int ct_active_begin(ct_active *a, uint32_t process, uint32_t thread, uint32_t key) {
    if (grow((void **)&a->procs, &a->n, process, sizeof(aproc))) return -1;
    aproc *p = &a->procs[process];
    if (grow((void **)&p->threads, &p->n, thread, sizeof(astream))) return -1;
    astream *s = &p->threads[thread];
    if (2 * (s->used + 1) > s->size && rehash(s)) return -1;
    if (push_u32(&s->stack, &s->n, &s->cap, key)) return -1;
    ++*slot_of(s, key);
    return 0;
}

int ct_active_end(ct_active *a, uint32_t process, uint32_t thread) {
    if (process >= a->n || thread >= a->procs[process].n) return -1;
    astream *s = &a->procs[process].threads[thread];
    if (s->n == 0) return -1;
    uint32_t *count = slot_of(s, s->stack[--s->n]);
    return --*count == 0;
}

/* ---- Call tree ----------------------------------------------------------- */

typedef struct tstream {
    uint32_t index;   /* ct stream index + 1, 0 = not seen yet */
    uint32_t *stack;  /* open zones' nodes */
    uint32_t n, cap;
} tstream;

typedef struct tproc {
    tstream *threads;
    uint32_t nthreads;
    uint32_t *funcs;  /* loc -> func + 1 */
    uint32_t nfuncs;
} tproc;

struct ct_tree {
    lt_reader *r;
    int merged;
    cv_map *func_keys;
    ct_func *funcs;
    size_t nfuncs, funcs_cap;
    ct_node *nodes;
    size_t nnodes, nodes_cap;
    uint64_t *child_keys; /* (parent << 32 | func) + 1, 0 = empty */
    uint32_t *child_vals;
    size_t child_size, child_used;
    tproc *procs;
    uint32_t nprocs;
    ct_stream *streams;
    size_t nstreams, streams_cap;
};

static long new_node(ct_tree *t, uint32_t func, uint32_t parent, uint32_t stream) {
    if (t->nnodes == t->nodes_cap) {
        size_t cap = t->nodes_cap ? t->nodes_cap * 2 : 256;
        ct_node *n = realloc(t->nodes, cap * sizeof *n);
        if (!n) return -1;
        t->nodes = n;
        t->nodes_cap = cap;
    }
    ct_node *n = &t->nodes[t->nnodes];
    memset(n, 0, sizeof *n);
    n->func = func;
    n->parent = parent == CT_ROOT ? (uint32_t)t->nnodes : parent;
    n->stream = stream;
    n->depth = parent == CT_ROOT ? 0 : t->nodes[parent].depth + 1;
    return (long)t->nnodes++;
}

ct_tree *ct_tree_new(lt_reader *r, int merged) {
    ct_tree *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->r = r;
    t->merged = merged;
    t->func_keys = cv_map_new();
    if (!t->func_keys || (merged && new_node(t, CT_ROOT, CT_ROOT, 0) < 0)) {
        ct_tree_free(t);
        return NULL;
    }
    return t;
}

void ct_tree_free(ct_tree *t) {
    if (!t) return;
    for (size_t f = 0; f < t->nfuncs; f++) {
        free((char *)t->funcs[f].name);
        free((char *)t->funcs[f].file);
    }
    for (uint32_t p = 0; p < t->nprocs; p++) {
        for (uint32_t i = 0; i < t->procs[p].nthreads; i++) free(t->procs[p].threads[i].stack);
        free(t->procs[p].threads);
        free(t->procs[p].funcs);
    }
    cv_map_free(t->func_keys);
    free(t->procs);
    free(t->funcs);
    free(t->nodes);
    free(t->child_keys);
    free(t->child_vals);
    free(t->streams);
    free(t);
}

static long add_func(ct_tree *t, const lt_loc *loc) {
    const char *name = loc && loc->name ? loc->name : "?";
    const char *file = loc && loc->file ? loc->file : "";
    uint32_t line = loc ? loc->line : 0;
    uint8_t kind = loc ? loc->kind : 0;
    size_t nlen = strnlen(name, LT_MAX_STRING), flen = strnlen(file, LT_MAX_STRING);
    char *key = malloc(nlen + flen + 32);
    if (!key) return -1;
    size_t klen = (size_t)snprintf(key, 32, "%u:%u:", (unsigned)kind, (unsigned)line);
    memcpy(key + klen, name, nlen);
    key[klen + nlen] = '\0';
    memcpy(key + klen + nlen + 1, file, flen);
    klen += nlen + 1 + flen;
    int added;
    long f = cv_map_get(t->func_keys, key, klen, &added);
    free(key);
    if (f < 0 || !added) return f;
    if (t->nfuncs == t->funcs_cap) {
        size_t cap = t->funcs_cap ? t->funcs_cap * 2 : 64;
        ct_func *p = realloc(t->funcs, cap * sizeof *p);
        if (!p) return -1;
        t->funcs = p;
        t->funcs_cap = cap;
    }
    ct_func *fn = &t->funcs[t->nfuncs];
    fn->name = strndup(name, nlen);
    fn->file = strndup(file, flen);
    fn->line = line;
    fn->kind = kind;
    if (!fn->name || !fn->file) return -1;
    t->nfuncs++;
    return f;
}

long ct_tree_func_of(ct_tree *t, uint32_t process, uint32_t loc) {
    if (process < t->nprocs && loc < t->procs[process].nfuncs && t->procs[process].funcs[loc])
        return (long)t->procs[process].funcs[loc] - 1;
    if (grow((void **)&t->procs, &t->nprocs, process, sizeof(tproc))) return -1;
    tproc *p = &t->procs[process];
    if (grow((void **)&p->funcs, &p->nfuncs, loc, sizeof(uint32_t))) return -1;
    if (!p->funcs[loc]) {
        long f = add_func(t, lt_reader_loc(t->r, process, loc));
        if (f < 0) return -1;
        p->funcs[loc] = (uint32_t)f + 1;
    }
    return (long)p->funcs[loc] - 1;
}

static int child_rehash(ct_tree *t) {
    size_t size = t->child_size ? t->child_size * 2 : 1024;
    uint64_t *keys = calloc(size, sizeof *keys);
    uint32_t *vals = calloc(size, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < t->child_size; i++) {
        if (!t->child_keys[i]) continue;
        size_t j = mix(t->child_keys[i]) & (size - 1);
        while (keys[j]) j = (j + 1) & (size - 1);
        keys[j] = t->child_keys[i];
        vals[j] = t->child_vals[i];
    }
    free(t->child_keys);
    free(t->child_vals);
    t->child_keys = keys;
    t->child_vals = vals;
    t->child_size = size;
    return 0;
}

/* The child of `parent` for `func`, made when new. */
static long child_of(ct_tree *t, uint32_t parent, uint32_t func) {
    if (2 * (t->child_used + 1) > t->child_size && child_rehash(t)) return -1;
    uint64_t key = ((uint64_t)parent << 32 | func) + 1;
    size_t mask = t->child_size - 1, i = mix(key) & mask;
    while (t->child_keys[i]) {
        if (t->child_keys[i] == key) return t->child_vals[i];
        i = (i + 1) & mask;
    }
    long n = new_node(t, func, parent, t->nodes[parent].stream);
    if (n < 0) return -1;
    t->child_keys[i] = key;
    t->child_vals[i] = (uint32_t)n;
    t->child_used++;
    return n;
}

static tstream *stream_of(ct_tree *t, const lt_event *ev) {
    if (ev->process < t->nprocs && ev->thread < t->procs[ev->process].nthreads &&
        t->procs[ev->process].threads[ev->thread].index)
        return &t->procs[ev->process].threads[ev->thread];
    if (grow((void **)&t->procs, &t->nprocs, ev->process, sizeof(tproc))) return NULL;
    tproc *p = &t->procs[ev->process];
    if (grow((void **)&p->threads, &p->nthreads, ev->thread, sizeof(tstream))) return NULL;
    tstream *s = &p->threads[ev->thread];
    if (s->index) return s;
    if (t->nstreams == t->streams_cap) {
        size_t cap = t->streams_cap ? t->streams_cap * 2 : 16;
        ct_stream *n = realloc(t->streams, cap * sizeof *n);
        if (!n) return NULL;
        t->streams = n;
        t->streams_cap = cap;
    }
    ct_stream *cs = &t->streams[t->nstreams];
    memset(cs, 0, sizeof *cs);
    cs->process = ev->process;
    cs->thread = ev->thread;
    cs->first_ts = ev->ts;
    if (!t->merged) {
        long root = new_node(t, CT_ROOT, CT_ROOT, (uint32_t)t->nstreams);
        if (root < 0) return NULL;
        cs->root = (uint32_t)root;
    }
    s->index = (uint32_t)++t->nstreams;
    return s;
}

/* Pushes the node of `func` under the stream's innermost open zone. */
static int begin_func(ct_tree *t, tstream *s, const ct_stream *cs, uint32_t func) {
    uint32_t top = s->n ? s->stack[s->n - 1] : cs->root;
    long n = child_of(t, top, func);
    if (n < 0) return -1;
    return push_u32(&s->stack, &s->n, &s->cap, (uint32_t)n);
}

long ct_tree_add_func(ct_tree *t, const lt_loc *loc) { return add_func(t, loc); }

int ct_tree_begin(ct_tree *t, uint32_t process, uint32_t thread, uint32_t func, uint64_t ts) {
    lt_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = LT_EV_ZONE_BEGIN;
    ev.process = process;
    ev.thread = thread;
    ev.ts = ts;
    tstream *s = stream_of(t, &ev);
    if (!s || func >= t->nfuncs) return -1;
    ct_stream *cs = &t->streams[s->index - 1];
    if (ts > cs->last_ts) cs->last_ts = ts;
    return begin_func(t, s, cs, func);
}

int ct_tree_event(ct_tree *t, const lt_event *ev) {
    if (ev->type != LT_EV_ZONE_BEGIN && ev->type != LT_EV_ZONE_END) return 0;
    tstream *s = stream_of(t, ev);
    if (!s) return -1;
    ct_stream *cs = &t->streams[s->index - 1];
    if (ev->ts > cs->last_ts) cs->last_ts = ev->ts;
    if (ev->type == LT_EV_ZONE_BEGIN) {
        long f = ct_tree_func_of(t, ev->process, ev->loc);
        if (f < 0) return -1;
        return begin_func(t, s, cs, (uint32_t)f);
    }
    if (s->n == 0) return 0;
    ct_node *n = &t->nodes[s->stack[--s->n]];
    uint64_t dur = ev->ts - ev->begin_ts;
    n->calls++;
    n->total += dur;
    n->self += dur >= ev->child_ns ? dur - ev->child_ns : 0;
    cs->zones++;
    return 0;
}

void ct_tree_finish(ct_tree *t) {
    for (size_t i = 0; i < t->nnodes; i++) {
        ct_node *n = &t->nodes[i];
        n->outer = n->outer_edge = 1;
        if (n->func == CT_ROOT) continue;
        uint32_t caller = t->nodes[n->parent].func;
        for (uint32_t m = n->parent; t->nodes[m].func != CT_ROOT; m = t->nodes[m].parent) {
            if (t->nodes[m].func != n->func) continue;
            n->outer = 0;
            if (t->nodes[t->nodes[m].parent].func == caller) {
                n->outer_edge = 0;
                break;
            }
        }
    }
}

size_t ct_tree_nnodes(const ct_tree *t) { return t->nnodes; }
const ct_node *ct_tree_node(const ct_tree *t, size_t i) { return &t->nodes[i]; }
size_t ct_tree_nfuncs(const ct_tree *t) { return t->nfuncs; }
const ct_func *ct_tree_func(const ct_tree *t, size_t i) { return &t->funcs[i]; }
size_t ct_tree_nstreams(const ct_tree *t) { return t->nstreams; }
const ct_stream *ct_tree_stream(const ct_tree *t, size_t i) { return &t->streams[i]; }

void ct_tree_totals(const ct_tree *t, ct_total *out) {
    memset(out, 0, t->nfuncs * sizeof *out);
    for (size_t i = 0; i < t->nnodes; i++) {
        const ct_node *n = &t->nodes[i];
        if (n->func == CT_ROOT) continue;
        ct_total *o = &out[n->func];
        o->calls += n->calls;
        o->self += n->self;
        if (n->outer) {
            o->prim += n->calls;
            o->cum += n->total;
        }
    }
}
