/* rotate.c -- the writer's rotation to numbered files: each file a complete
 * trace (its own metadata, cut zones, statistics and trailer). What a next
 * file must repeat is kept here; the counts of its trailer are the
 * writer's (writer_sums.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "file_int.h"
#include "rotate.h"
#include "zstack.h"

typedef struct rt_stream {
    uint32_t proc, thread;
    lt__zstack open;          /* zones open after the last block */
    uint64_t last_ts;
} rt_stream;

typedef struct rt_proc {
    uint8_t *meta;            /* every metadata record received so far */
    size_t len, cap;
    int ended, in_file;
    rt_stream **threads;
    uint32_t nthreads;
    unsigned *file_of;        /* by thread: the last file that holds it */
    uint32_t nfile_of;
} rt_proc;

struct lt__rot {
    char *path;
    uint64_t max;
    unsigned index;
    rt_proc **procs;          /* by process index */
    uint32_t nprocs;
    rt_stream **streams;      /* in creation order */
    size_t nstreams, streams_bytes; /* count; bytes allocated */
    uint8_t *stats;           /* the last statistics block (raw) */
    size_t stats_len;
    int file_has_events;
    uint64_t file_threads;    /* threads the file declares or has blocks of */
    uint8_t *pend, *rbuf, *tmp;
    size_t pend_cap, rbuf_cap, tmp_cap;
};

int lt__rot_new(lt__rot **out, const char *path, uint64_t max_bytes) {
    lt__rot *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) {
        free(r);
        return LT_ENOMEM;
    }
    r->max = max_bytes;
    r->index = 1;
    *out = r;
    return 0;
}

void lt__rot_free(lt__rot *r) {
    if (!r) return;
    for (uint32_t i = 0; i < r->nprocs; i++)
        if (r->procs[i]) {
            free(r->procs[i]->meta);
            free(r->procs[i]->threads);
            free(r->procs[i]->file_of);
            free(r->procs[i]);
        }
    for (size_t i = 0; i < r->nstreams; i++) {
        lt__zstack_free(&r->streams[i]->open);
        free(r->streams[i]);
    }
    free(r->procs);
    free(r->streams);
    free(r->stats);
    free(r->pend);
    free(r->rbuf);
    free(r->tmp);
    free(r->path);
    free(r);
}

void lt__rot_pending(lt__rot *r, uint8_t ***buf, size_t **cap) {
    *buf = &r->pend;
    *cap = &r->pend_cap;
}

unsigned lt__rot_index(const lt__rot *r) { return r->index; }

static int rt_grow(uint8_t **p, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 4096;
    while (c < need) c *= 2;
    uint8_t *n = realloc(*p, c);
    if (!n) return LT_ENOMEM;
    *p = n;
    *cap = c;
    return 0;
}

static rt_proc *rt_proc_get(lt__rot *r, uint32_t idx) {
    if (idx >= r->nprocs) {
        rt_proc **n = realloc(r->procs, ((size_t)idx + 1) * sizeof *n);
        if (!n) return NULL;
        memset(n + r->nprocs, 0, ((size_t)idx + 1 - r->nprocs) * sizeof *n);
        r->procs = n;
        r->nprocs = idx + 1;
    }
    if (!r->procs[idx]) r->procs[idx] = calloc(1, sizeof **r->procs);
    return r->procs[idx];
}

static rt_stream *rt_stream_get(lt__rot *r, uint32_t proc, uint32_t thread) {
    rt_proc *p = rt_proc_get(r, proc);
    if (!p) return NULL;
    if (thread > p->nthreads) {
        rt_stream **n = realloc(p->threads, (size_t)thread * sizeof *n);
        if (!n) return NULL;
        memset(n + p->nthreads, 0, (size_t)(thread - p->nthreads) * sizeof *n);
        p->threads = n;
        p->nthreads = thread;
    }
    if (!p->threads[thread - 1]) {
        if (rt_grow((uint8_t **)&r->streams, &r->streams_bytes,
                    (r->nstreams + 1) * sizeof *r->streams) < 0)
            return NULL;
        rt_stream **all = r->streams;
        rt_stream *s = calloc(1, sizeof *s);
        if (!s) return NULL;
        s->proc = proc;
        s->thread = thread;
        p->threads[thread - 1] = all[r->nstreams++] = s;
    }
    return p->threads[thread - 1];
}

/* The block's records, past its header. */
static const uint8_t *rt_records(const uint8_t *raw, size_t len, uint64_t *base) {
    const uint8_t *p = raw + 1, *end = raw + len;
    uint64_t v;
    if (len < 1 || lt__get_varint(&p, end, &v) < 0 || lt__get_varint(&p, end, &v) < 0 ||
        lt__get_varint(&p, end, base) < 0)
        return NULL;
    return p;
}

/* ---- After each unit: what a next file must repeat ----------------------- */

/* Counts the thread in the current file's `threads` once (a reader counts
 * every thread that a THREAD_INFO declares or that has a block). */
static int rt_thread_in_file(lt__rot *r, rt_proc *pr, uint64_t thread) {
    if (thread == 0 || thread > UINT32_MAX) return 0; /* not a thread: the reader's call */
    if (thread > pr->nfile_of) {
        unsigned *n = realloc(pr->file_of, (size_t)thread * sizeof *n);
        if (!n) return LT_ENOMEM;
        memset(n + pr->nfile_of, 0, (size_t)(thread - pr->nfile_of) * sizeof *n);
        pr->file_of = n;
        pr->nfile_of = (uint32_t)thread;
    }
    if (pr->file_of[thread - 1] != r->index) {
        pr->file_of[thread - 1] = r->index;
        r->file_threads++;
    }
    return 0;
}

/* Walks metadata records [p, end) of process `pr`: its end, its threads. */
static int rt_meta_records(lt__rot *r, rt_proc *pr, const uint8_t *p, const uint8_t *end) {
    while (p < end) {
        lt__meta_rec m;
        const char *why;
        if (lt__next_meta(&p, end, 0x3Fu, &m, &why) < 0) return LT_EINVAL;
        if (m.tag == LT_TAG_PROC_END) pr->ended = 1;
        if (m.tag == LT_TAG_THREAD_INFO && rt_thread_in_file(r, pr, m.id) < 0)
            return LT_ENOMEM;
    }
    return 0;
}

static int rt_meta(lt__rot *r, const lt_block_desc *d, const uint8_t *raw, size_t len) {
    uint64_t base;
    const uint8_t *p = rt_records(raw, len, &base), *end = raw + len;
    rt_proc *pr = rt_proc_get(r, d->process);
    if (!p || !pr) return p ? LT_ENOMEM : LT_EINVAL;
    pr->in_file = 1;
    if (rt_grow(&pr->meta, &pr->cap, pr->len + (size_t)(end - p)) < 0) return LT_ENOMEM;
    memcpy(pr->meta + pr->len, p, (size_t)(end - p));
    pr->len += (size_t)(end - p);
    return rt_meta_records(r, pr, p, end);
}

/* The zones the block leaves open, and its stream's last timestamp. */
static int rt_events(lt__rot *r, const lt_block_desc *d, const uint8_t *raw, size_t len) {
    uint64_t ts;
    const uint8_t *p = rt_records(raw, len, &ts), *end = raw + len;
    rt_stream *s = rt_stream_get(r, d->process, d->thread);
    if (!p || !s) return p ? LT_ENOMEM : LT_EINVAL;
    if (rt_thread_in_file(r, r->procs[d->process], d->thread) < 0) return LT_ENOMEM;
    while (p < end) {
        uint8_t tag;
        uint64_t loc;
        const char *str, *why;
        size_t slen;
        if (lt__rec_next(&p, end, &tag, &ts, &loc, &str, &slen) < 0) return LT_EINVAL;
        int rc = tag == LT_TAG_LOST ? 0 : lt__zstack_apply(&s->open, tag, loc, str, slen, &why);
        if (rc < 0) return rc == LT_ENOMEM ? rc : LT_EINVAL;
    }
    s->last_ts = ts;
    r->file_has_events = 1;
    return 0;
}

int lt__rot_after(lt__rot *r, const lt_block_desc *d, const void *raw, size_t raw_len) {
    if (d->kind == LT_BLOCK_META) return rt_meta(r, d, raw, raw_len);
    if (d->kind == LT_BLOCK_EVENTS) return rt_events(r, d, raw, raw_len);
    if (d->kind == LT_BLOCK_STATS) {
        if (rt_grow(&r->stats, &r->stats_len, raw_len) < 0) return LT_ENOMEM;
        memcpy(r->stats, raw, raw_len);
        r->stats_len = raw_len;
    }
    return 0;
}

/* ---- Trailer of one file ------------------------------------------------- */

/* The statistics of the last statistics block, as totals (names point into
 * the block; a name is at most LT_MAX_STRING long: copied to `names`). */
static size_t rt_stat_totals(lt__rot *r, lt_total *t, char (*names)[64], size_t max) {
    uint64_t base;
    if (!r->stats) return 0;
    const uint8_t *p = rt_records(r->stats, r->stats_len, &base), *end = r->stats + r->stats_len;
    size_t n = 0;
    while (p && p < end && n < max) {
        lt__meta_rec m;
        const char *why;
        if (lt__next_meta(&p, end, LT__META_BIT(LT_TAG_STAT), &m, &why) < 0) break;
        snprintf(names[n], 64, "%.*s", (int)(m.name.len < 63 ? m.name.len : 63), m.name.s);
        t[n] = (lt_total){names[n], m.v[0]};
        n++;
    }
    return n;
}

int lt__rot_trailer(lt_writer *w, lt__rot *r, const lt_total *extra, size_t n_extra) {
    uint64_t procs = 0;
    for (uint32_t i = 0; i < r->nprocs; i++) procs += r->procs[i] && r->procs[i]->in_file;
    if (extra) return lt__writer_rot_trailer(w, procs, r->file_threads, r->index, extra, n_extra);
    lt_total t[64];
    char(*names)[64] = calloc(64, sizeof *names);
    if (!names) return LT_ENOMEM;
    size_t nt = rt_stat_totals(r, t, names, 64);
    int rc = lt__writer_rot_trailer(w, procs, r->file_threads, r->index, t, nt);
    free(names);
    return rc;
}

/* ---- Rotation ------------------------------------------------------------ */

static int rt_replay(lt_writer *w, lt__rot *r, const lt_block_desc *d, const uint8_t *raw,
                     size_t len) {
    size_t unit;
    return lt__writer_replay(w, d, raw, len, &r->rbuf, &r->rbuf_cap, &unit);
}

/* A live process's metadata, in blocks below the size limit. */
static int rt_replay_meta(lt_writer *w, lt__rot *r, uint32_t idx) {
    rt_proc *pr = r->procs[idx];
    const uint8_t *p = pr->meta, *end = pr->meta + pr->len;
    lt_block_desc d = {.kind = LT_BLOCK_META, .process = idx};
    while (p < end) {
        if (rt_grow(&r->tmp, &r->tmp_cap, 32) < 0) return LT_ENOMEM;
        size_t n = lt_block_header(r->tmp, LT_BLOCK_META, idx, 0, 0);
        const uint8_t *start = p;
        while (p < end && (size_t)(p - start) < LT_BLOCK_TARGET * 8) {
            lt__meta_rec m;
            const char *why;
            if (lt__next_meta(&p, end, 0x3Fu, &m, &why) < 0) return LT_EINVAL;
            if (m.tag == LT_TAG_THREAD_INFO && rt_thread_in_file(r, pr, m.id) < 0)
                return LT_ENOMEM;
        }
        if (rt_grow(&r->tmp, &r->tmp_cap, n + (size_t)(p - start)) < 0) return LT_ENOMEM;
        memcpy(r->tmp + n, start, (size_t)(p - start));
        int rc = rt_replay(w, r, &d, r->tmp, n + (size_t)(p - start));
        if (rc < 0) return rc;
    }
    pr->in_file = 1;
    return 0;
}

static void rt_name(const lt__rot *r, char *out, size_t n) {
    size_t len = strlen(r->path);
    const char *sfx = ".tracy";
    if (len > 6 && strcmp(r->path + len - 6, sfx) == 0)
        snprintf(out, n, "%.*s.%u%s", (int)(len - 6), r->path, r->index - 1, sfx);
    else
        snprintf(out, n, "%s.%u", r->path, r->index - 1);
}

static int rt_rotate(lt_writer *w, lt__rot *r) {
    int rc = lt__rot_trailer(w, r, NULL, 0);
    if (rc < 0) return rc;
    char name[4200];
    r->index++;
    rt_name(r, name, sizeof name);
    if ((rc = lt__writer_reopen(w, name)) < 0) return rc;
    r->file_has_events = 0;
    r->file_threads = 0;
    for (uint32_t i = 0; i < r->nprocs; i++)
        if (r->procs[i]) r->procs[i]->in_file = 0;
    for (uint32_t i = 0; i < r->nprocs && rc == 0; i++)
        if (r->procs[i] && !r->procs[i]->ended && r->procs[i]->len)
            rc = rt_replay_meta(w, r, i);
    if (rc == 0 && r->stats) {
        lt_block_desc d = {.kind = LT_BLOCK_STATS};
        rc = rt_replay(w, r, &d, r->stats, r->stats_len);
    }
    for (size_t i = 0; i < r->nstreams && rc == 0; i++) {
        rt_stream *s = r->streams[i];
        if (s->open.depth && !r->procs[s->proc]->ended) /* cut zones */
            rc = lt__writer_cut(w, s->proc, s->thread, s->last_ts, s->open.depth, &s->open);
    }
    return rc;
}

int lt__rot_before(lt_writer *w, lt__rot *r, size_t len) {
    if (!r->file_has_events || lt__writer_bytes(w) + len <= r->max) return 0;
    return rt_rotate(w, r);
}
