/* resume.c -- a stream read from one of its blocks on, with the zones open
 * there (resume.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader_int.h"
#include "resume.h"

static lt__rstream *lt__stream_of(const lt_reader *r, uint32_t process, uint32_t thread) {
    if (process == 0 || process >= r->nprocs || !r->procs[process]) return NULL;
    const lt__rproc *p = r->procs[process];
    return thread >= 1 && thread <= p->nthreads ? p->threads[thread - 1] : NULL;
}

uint32_t lt__stream_nblocks(const lt_reader *r, uint32_t process, uint32_t thread) {
    const lt__rstream *s = lt__stream_of(r, process, thread);
    uint32_t n = 0;
    for (uint32_t b = s ? s->first_blk : LT__NONE; b != LT__NONE; b = r->blks[b].next) n++;
    return n;
}

/* Block k of the stream, or LT__NONE. */
static uint32_t lt__nth_block(const lt_reader *r, const lt__rstream *s, uint32_t k) {
    uint32_t b = s->first_blk;
    while (b != LT__NONE && k--) b = r->blks[b].next;
    return b;
}

int lt__stream_block(const lt_reader *r, uint32_t process, uint32_t thread, uint32_t k,
                     uint64_t *off, uint64_t *last_ts) {
    const lt__rstream *s = lt__stream_of(r, process, thread);
    uint32_t b = s ? lt__nth_block(r, s, k) : LT__NONE;
    if (b == LT__NONE) return LT_EINVAL;
    *off = r->blks[b].off;
    *last_ts = r->blks[b].last_ts;
    return 0;
}

void lt__resume_free(lt__rstream *s) {
    for (uint32_t i = 0; s->rzs && i < s->nrz; i++) {
        free(s->rzs[i].name);
        free(s->rzs[i].text);
    }
    free(s->rz);
    free(s->rzs);
    s->rz = NULL;
    s->rzs = NULL;
    s->nrz = 0;
    s->resumed = 0;
}

static char *lt__dup(const char *p, size_t len) {
    char *c = malloc(len + 1);
    if (c) {
        if (len) memcpy(c, p, len);
        c[len] = '\0';
    }
    return c;
}

int lt__stream_resume(lt_reader *r, uint32_t process, uint32_t thread, uint32_t skip,
               const lt__open_zone *z, uint32_t n) {
    lt__rstream *s = lt__stream_of(r, process, thread);
    if (!s || n > LT_MAX_DEPTH || (n && !skip)) return LT_EINVAL;
    uint32_t start = lt__nth_block(r, s, skip);
    if (skip && lt__nth_block(r, s, skip - 1) == LT__NONE) return LT_EINVAL;
    for (uint32_t i = 0; i < n; i++)
        if (!z[i].loc) return LT_EINVAL;
    lt__merge_reset(r);
    lt__resume_free(s);
    s->rz = calloc(n ? n : 1, sizeof *s->rz);
    s->rzs = calloc(n ? n : 1, sizeof *s->rzs);
    if (!s->rz || !s->rzs) {
        lt__resume_free(s);
        return LT_ENOMEM;
    }
    s->nrz = n;
    for (uint32_t i = 0; i < n; i++) {
        lt__zframe *f = &s->rz[i];
        lt__zstr *t = &s->rzs[i];
        f->begin_ts = z[i].begin_ts;
        f->child_ns = z[i].child_ns;
        f->loc = z[i].loc;
        if (z[i].name) {
            if (!(t->name = lt__dup(z[i].name, z[i].name_len))) goto nomem;
            t->name_len = (uint32_t)z[i].name_len;
            f->has |= LT__HAS_NAME;
        }
        if (z[i].text) {
            if (!(t->text = lt__dup(z[i].text, z[i].text_len))) goto nomem;
            t->text_len = (uint32_t)z[i].text_len;
            f->has |= LT__HAS_TEXT;
        }
    }
    s->start_blk = start;
    s->start_ts = skip ? r->blks[lt__nth_block(r, s, skip - 1)].last_ts : 0;
    s->resumed = 1;
    return 0;
nomem:
    lt__resume_free(s);
    return LT_ENOMEM;
}

/* Copies string `src` into a cursor's string slot (as lt__zone_str does),
 * counted in the budget. */
static int lt__copy_zstr(lt_reader *r, char **buf, uint32_t *cap, uint32_t *len,
                         const char *src, uint32_t n) {
    if (n + 1 > *cap) {
        if (r->raw_held + (n + 1 - *cap) > lt__raw_budget(r)) return LT_ECORRUPT;
        char *c = realloc(*buf, n + 1);
        if (!c) return LT_ENOMEM;
        r->raw_held += n + 1 - *cap;
        *buf = c;
        *cap = n + 1;
    }
    memcpy(*buf, src, n + 1);
    *len = n;
    return 0;
}

int lt__resume_install(lt_reader *r, lt__rstream *s) {
    uint32_t n = s->nrz;
    s->cut_left = 0;
    if (n > s->stack_cap) {
        uint32_t cap = s->stack_cap ? s->stack_cap : 64;
        while (cap < n) cap *= 2;
        uint64_t more = (uint64_t)(cap - s->stack_cap) * sizeof *s->stack;
        if (r->raw_held + r->stack_held + more > lt__zone_budget(r)) goto budget;
        lt__zframe *st = realloc(s->stack, cap * sizeof *st);
        if (!st) return LT_ENOMEM;
        r->stack_held += more;
        s->stack = st;
        s->stack_cap = cap;
    }
    if (n) memcpy(s->stack, s->rz, n * sizeof *s->rz);
    s->depth = n;
    for (uint32_t i = 0; i < n; i++) {
        if (!s->rz[i].has) continue;
        int rc = i < s->strs_cap ? 0 : lt__grow_strs(r, s, i);
        if (rc < 0) return rc;
        lt__zstr *d = &s->strs[i];
        const lt__zstr *o = &s->rzs[i];
        if (s->rz[i].has & LT__HAS_NAME)
            rc = lt__copy_zstr(r, &d->name, &d->name_cap, &d->name_len, o->name, o->name_len);
        if (!rc && (s->rz[i].has & LT__HAS_TEXT))
            rc = lt__copy_zstr(r, &d->text, &d->text_cap, &d->text_len, o->text, o->text_len);
        if (rc == LT_ECORRUPT) goto budget;
        if (rc < 0) return rc;
    }
    return 0;
budget:
    snprintf(r->errmsg, sizeof r->errmsg, "resumed zones hold more than a file of this size can");
    return LT_ECORRUPT;
}
