/* convert.c -- shared by the converters: names, zone numbering
 * (convert.h). */
#include "convert/convert.h"

#include <stdlib.h>
#include <string.h>

/* ---- Names -------------------------------------------------------------- */

const char *cv_kind_name(uint8_t kind) {
    switch (kind) {
    case LT_LOC_PYTHON: return "python";
    case LT_LOC_C: return "c";
    case LT_LOC_LINE: return "line";
    case LT_LOC_USER: return "user";
    case LT_LOC_INTERNAL: return "internal";
    default: return "unknown";
    }
}

const char *cv_status_name(int status) {
    switch (status) {
    case LT_PROC_RUNNING: return "running";
    case LT_PROC_CLEAN: return "clean";
    case LT_PROC_LOST: return "lost";
    case LT_PROC_REJECTED: return "rejected";
    case LT_PROC_STOPPED: return "stopped";
    case LT_PROC_CRASHED: return "crashed";
    default: return "unknown";
    }
}

void cv_zone_name(const lt_event *ev, const lt_loc *loc, const char **s,
                  size_t *len) {
    if (ev->name) {
        *s = ev->name;
        *len = ev->name_len;
    } else if (loc && loc->name) {
        *s = loc->name;
        *len = strlen(loc->name);
    } else {
        *s = "?";
        *len = 1;
    }
}

/* ---- Zone numbering ----------------------------------------------------- */

typedef struct zstack {
    uint64_t *ids;
    uint32_t n, cap;
} zstack;

typedef struct zproc {
    zstack *threads;
    uint32_t n;
} zproc;

struct cv_zones {
    zproc *procs;
    uint32_t n;
    uint64_t next;
};

cv_zones *cv_zones_new(void) { return calloc(1, sizeof(cv_zones)); }

void cv_zones_free(cv_zones *z) {
    if (!z) return;
    for (uint32_t p = 0; p < z->n; p++) {
        for (uint32_t t = 0; t < z->procs[p].n; t++) free(z->procs[p].threads[t].ids);
        free(z->procs[p].threads);
    }
    free(z->procs);
    free(z);
}

static int grow(void **arr, uint32_t *n, uint32_t want, size_t elem) {
    uint32_t cap = *n ? *n : 4;
    while (cap < want) cap *= 2;
    void *p = realloc(*arr, cap * elem);
    if (!p) return -1;
    memset((char *)p + *n * elem, 0, (cap - *n) * elem);
    *arr = p;
    *n = cap;
    return 0;
}

static zstack *stack_of(cv_zones *z, uint32_t process, uint32_t thread) {
    if (process >= z->n && grow((void **)&z->procs, &z->n, process + 1, sizeof(zproc)))
        return NULL;
    zproc *p = &z->procs[process];
    if (thread >= p->n && grow((void **)&p->threads, &p->n, thread + 1, sizeof(zstack)))
        return NULL;
    return &p->threads[thread];
}

uint64_t cv_zones_begin(cv_zones *z, uint32_t process, uint32_t thread) {
    zstack *s = stack_of(z, process, thread);
    if (!s) return 0;
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 4; /* small: one per thread */
        uint64_t *ids = realloc(s->ids, cap * sizeof *ids);
        if (!ids) return 0;
        s->ids = ids;
        s->cap = cap;
    }
    s->ids[s->n++] = ++z->next;
    return z->next;
}

int cv_zones_end(cv_zones *z, uint32_t process, uint32_t thread, uint64_t *id,
                 uint64_t *parent) {
    if (process >= z->n || thread >= z->procs[process].n) return -1;
    zstack *s = &z->procs[process].threads[thread];
    if (s->n == 0) return -1;
    *id = s->ids[--s->n];
    *parent = s->n ? s->ids[s->n - 1] : 0;
    return 0;
}

uint64_t cv_zones_count(const cv_zones *z) { return z->next; }
