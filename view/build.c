#define _GNU_SOURCE /* qsort_r */
/* build.c -- one streaming pass over a trace into its index file (view.h).
 *
 * Memory: per row a buffer of at most VW_CHUNK records (all buffers
 * together within BUF_BUDGET: past it, every partial buffer is written out
 * as a short chunk), the chunk directory (24 B per chunk), the functions,
 * plots, frames and tracks. Strings go to a temporary file beside the
 * index and are copied behind the records at the end. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "build_int.h"
#include "format/resume.h"

#define BUF_BUDGET (64u << 20)
#define OUT_BUF (64u << 10) /* the index file's stdio buffer: fits L2 (1 MiB: slower) */
#define LOC_CACHE 4096u
#define REC_AHEAD (64u << 20) /* records file space reserved ahead of its writes */
#define REC_STAGE (64u << 10) /* records file bytes written at once (rec_hand) */

#define fail vw__fail
#define put_str vw__put_str
#define new_row vw__new_row
#define push_rec vw__push_rec
#define grow_arr vw__grow_arr
#define umap_put vw__umap_put

int vw__fail(builder *b, int code, const char *fmt, ...) {
    if (b->err && b->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->err, b->errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static int umap_grow(umap *m) {
    uint32_t ns = m->size ? m->size * 2 : 64;
    uint64_t *k = calloc(ns, sizeof *k);
    uint32_t *v = calloc(ns, sizeof *v);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    for (uint32_t i = 0; i < m->size; i++) {
        if (!m->vals[i]) continue;
        uint32_t j = (uint32_t)mix64(m->keys[i]) & (ns - 1);
        while (v[j]) j = (j + 1) & (ns - 1);
        k[j] = m->keys[i];
        v[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = k;
    m->vals = v;
    m->size = ns;
    return 0;
}

/* The slot of key: its value + 1 or 0 when absent (*slot where it goes). */
static uint32_t umap_get(const umap *m, uint64_t key, uint32_t *slot) {
    if (!m->size) return 0;
    uint32_t j = (uint32_t)mix64(key) & (m->size - 1);
    while (m->vals[j] && m->keys[j] != key) j = (j + 1) & (m->size - 1);
    *slot = j;
    return m->vals[j];
}

int vw__umap_has(const umap *m, uint64_t key) {
    uint32_t slot;
    return umap_get(m, key, &slot) != 0;
}

int vw__umap_put(umap *m, uint64_t key, uint32_t val) {
    uint32_t slot = 0;
    if ((m->used + 1) * 2 > m->size && umap_grow(m) < 0) return -1;
    if (!umap_get(m, key, &slot)) m->used++;
    m->keys[slot] = key;
    m->vals[slot] = val + 1;
    return 0;
}

static void umap_free(umap *m) {
    free(m->keys);
    free(m->vals);
}

int vw__grow_arr(void **p, uint32_t *cap, uint32_t want, size_t elem) {
    if (want < *cap) return 0;
    uint32_t c = *cap ? *cap : 8;
    while (c <= want) c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* ---- Strings ------------------------------------------------------------ */

/* Appends a string (at most LT_MAX_STRING bytes kept) as u32 length, bytes,
 * NUL; returns its offset or UINT64_MAX on a write error. */
uint64_t vw__put_str(builder *b, const char *s, size_t len) {
    if (!s) s = "";
    if (len > LT_MAX_STRING) len = LT_MAX_STRING;
    uint64_t off = b->strlen_;
    uint32_t l = (uint32_t)len;
    if (fwrite(&l, 4, 1, b->str) != 1 || (len && fwrite(s, 1, len, b->str) != len) ||
        fputc(0, b->str) == EOF)
        return UINT64_MAX;
    b->strlen_ += 4 + len + 1;
    return off;
}

/* ---- Rows --------------------------------------------------------------- */

long vw__new_row(builder *b, uint32_t kind, uint32_t key, uint32_t depth) {
    if (b->nrows == UINT32_MAX - 1 ||
        grow_arr((void **)&b->rows, &b->caprows, b->nrows, sizeof *b->rows) < 0)
        return -1;
    brow *r = &b->rows[b->nrows];
    memset(r, 0, sizeof *r);
    r->meta.kind = kind;
    r->meta.key = key;
    r->meta.depth = depth;
    return (long)b->nrows++;
}

/* Room for one more chunk entry, in the directory and in row `ri`'s list. */
static int chunk_room(builder *b, uint32_t ri) {
    brow *r = &b->rows[ri];
    if (b->nchunks == UINT32_MAX) return LT_ELIMIT;
    if (b->nchunks == b->capchunks) {
        uint64_t c = b->capchunks ? b->capchunks * 2 : 1024;
        vw_chunk *p = realloc(b->chunks, c * sizeof *p);
        if (!p) return LT_ENOMEM;
        b->chunks = p;
        b->capchunks = c;
    }
    if (grow_arr((void **)&r->chunks, &r->capchunks, r->nchunks, sizeof *r->chunks) < 0)
        return LT_ENOMEM;
    return 0;
}

/* Appends the entry of a chunk of `n` records `recs` of row `ri`, the
 * first at row position `first` and global id `id`. */
static void add_chunk(builder *b, uint32_t ri, const uint8_t *recs, uint32_t n, uint64_t first,
                      uint64_t id) {
    brow *r = &b->rows[ri];
    vw_chunk *c = &b->chunks[b->nchunks];
    const uint64_t *fr = (const uint64_t *)recs;
    const uint64_t *last = (const uint64_t *)(recs + (size_t)(n - 1) * VW_REC);
    c->lo = fr[0];
    c->hi = r->meta.kind == VW_ROW_ZONES ? last[0] + last[1] : last[0];
    c->maxdur = c->maxgap = 0;
    for (uint32_t k = 0; r->meta.kind == VW_ROW_ZONES && k < n; k++) {
        const vw_zone *z = (const vw_zone *)(recs + (size_t)k * VW_REC);
        if (z->dur > c->maxdur) c->maxdur = z->dur;
        if (k) {
            const vw_zone *p = z - 1;
            uint64_t pe = p->start + p->dur;
            if (z->start > pe && z->start - pe > c->maxgap) c->maxgap = z->start - pe;
        }
    }
    c->id = id;
    c->first = first;
    c->row = ri;
    c->n = n;
    r->chunks[r->nchunks++] = (uint32_t)b->nchunks++;
}

/* Reserves the records file's blocks ahead of the write that ends at byte
 * `end`, REC_AHEAD at a time, past its end (its size unchanged): a write
 * into reserved blocks skips the file system's per-page delayed allocation
 * (ext4: a fifth of a 100M-zone build's system time). Only a hint: where
 * it fails (no support, no room), plain writes from then on. finish gives
 * back what is left past the end. */
static void reserve_rec(builder *b, uint64_t end) {
    if (end <= b->rec_reserved) return;
    uint64_t at = b->nrecs * VW_REC; /* the file's end, the buffers handed over included */
    if (fallocate(b->rec, FALLOC_FL_KEEP_SIZE, (off_t)at, REC_AHEAD) == 0)
        b->rec_reserved = at + REC_AHEAD;
    else
        b->rec_reserved = UINT64_MAX;
}

/* Writes the buffers handed over (rec_hand) with one pwritev at their
 * place (the last records counted in nrecs); the rows' are kept for rows,
 * the staging ones freed. */
static int rec_write(builder *b) {
    struct iovec iov[VW_REC_OUT];
    size_t left = 0;
    for (uint32_t i = 0; i < b->nrec_out; i++) {
        iov[i].iov_base = b->rec_out[i];
        iov[i].iov_len = b->rec_len[i];
        left += b->rec_len[i];
    }
    uint64_t off = b->nrecs * VW_REC - left;
    struct iovec *v = iov;
    int nv = (int)b->nrec_out, rc = 0;
    while (left && !rc) {
        ssize_t w = pwritev(b->rec, v, nv, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            rc = LT_EIO;
            break;
        }
        off += (uint64_t)w;
        left -= (size_t)w;
        while (nv && (size_t)w >= v->iov_len) w -= (ssize_t)v->iov_len, v++, nv--;
        if (nv) v->iov_base = (uint8_t *)v->iov_base + w, v->iov_len -= (size_t)w;
    }
    for (uint32_t i = 0; i < b->nrec_out; i++) {
        if (b->rec_cap[i] && b->nrec_spare < VW_REC_OUT) b->rec_spare[b->nrec_spare++] = b->rec_out[i];
        else free(b->rec_out[i]);
    }
    b->nrec_out = 0;
    b->rec_pending = 0;
    return rc;
}

/* Hands the first n buffered records of row `ri` to the records file's
 * writer: a row's full chunk as it is (the row takes a spare buffer: no
 * copy through stdio, 6% of a build's instructions), other records copied
 * into a staging buffer (rows flushed by the budget: many small pieces in
 * one write). Written once VW_REC_OUT buffers or REC_STAGE bytes wait
 * (64 KiB: writes of 1 MiB cost ext4 3 to 7 times the system time). */
static int rec_hand(builder *b, brow *r, uint32_t n) {
    size_t len = (size_t)n * VW_REC;
    uint32_t k = b->nrec_out;
    if (n == VW_CHUNK && r->cap == VW_CHUNK && n == r->nbuf) {
        uint8_t *q = b->nrec_spare ? b->rec_spare[--b->nrec_spare] : malloc(len);
        if (!q) return LT_ENOMEM;
        b->rec_out[k] = r->buf, b->rec_cap[k] = VW_CHUNK;
        r->buf = q;
    } else if (k && !b->rec_cap[k - 1] && b->rec_len[k - 1] + len <= REC_STAGE) {
        memcpy(b->rec_out[k - 1] + b->rec_len[k - 1], r->buf, len); /* the staging buffer's room */
        b->rec_len[k - 1] += (uint32_t)len;
        len = 0;
    } else {
        if (!(b->rec_out[k] = malloc(REC_STAGE))) return LT_ENOMEM;
        memcpy(b->rec_out[k], r->buf, len);
        b->rec_cap[k] = 0;
    }
    if (len) b->rec_len[b->nrec_out++] = (uint32_t)len;
    b->rec_pending += (uint32_t)n * VW_REC;
    return b->nrec_out == VW_REC_OUT || b->rec_pending >= REC_STAGE ? rec_write(b) : 0;
}

/* Writes the first n buffered records of row `ri` to the records file as
 * one chunk; the others stay. */
static int flush_prefix(builder *b, uint32_t ri, uint32_t n) {
    brow *r = &b->rows[ri];
    if (!n) return 0;
    int rc = chunk_room(b, ri);
    if (rc < 0) return rc;
    reserve_rec(b, (b->nrecs + n) * VW_REC);
    add_chunk(b, ri, r->buf, n, r->meta.n - r->nbuf, b->nrecs);
    b->nrecs += n;
    b->buffered -= (uint64_t)n * VW_REC;
    uint32_t rest = r->nbuf - n;
    if ((rc = rec_hand(b, r, n)) < 0) return rc;
    r->nbuf = rest;
    if (rest) memmove(r->buf, r->buf + (size_t)n * VW_REC, (size_t)rest * VW_REC);
    return 0;
}

/* Writes the buffered records of row `ri` to the records file as one
 * chunk. */
static int flush_row(builder *b, uint32_t ri) {
    return flush_prefix(b, ri, b->rows[ri].nbuf);
}

static int flush_all(builder *b) {
    for (uint32_t i = 0; i < b->nrows; i++) {
        int rc = flush_row(b, i);
        if (rc < 0) return rc;
    }
    return 0;
}

/* Grows a row's buffer (below VW_CHUNK records). */
static int grow_buf(brow *r) {
    uint32_t c = r->cap ? r->cap * 4 : 8;
    if (c > VW_CHUNK) c = VW_CHUNK;
    uint8_t *p = realloc(r->buf, (size_t)c * VW_REC);
    if (!p) return LT_ENOMEM;
    r->buf = p;
    r->cap = c;
    return 0;
}

/* Appends one 32-byte record to row `ri`. */
int vw__push_rec(builder *b, uint32_t ri, const void *rec) {
    brow *r = &b->rows[ri];
    if (r->nbuf == r->cap) {
        int rc = r->cap == VW_CHUNK ? flush_row(b, ri) : grow_buf(r);
        if (rc < 0) return rc;
    }
    memcpy(r->buf + (size_t)r->nbuf * VW_REC, rec, VW_REC);
    r->nbuf++;
    r->meta.n++;
    b->buffered += VW_REC;
    if (b->buffered > BUF_BUDGET) return flush_all(b);
    return 0;
}

/* push_rec's common case inline: room in the row's buffer and within the
 * budget (a call per zone was 6% of a build). */
static inline int push_fast(builder *b, uint32_t ri, const void *rec) {
    brow *r = &b->rows[ri];
    if (__builtin_expect(r->nbuf == r->cap || b->buffered + VW_REC > BUF_BUDGET, 0))
        return vw__push_rec(b, ri, rec);
    memcpy(r->buf + (size_t)r->nbuf * VW_REC, rec, VW_REC);
    r->nbuf++;
    r->meta.n++;
    b->buffered += VW_REC;
    return 0;
}

static long misc_row(builder *b, uint32_t kind, uint32_t key) {
    uint64_t k = (uint64_t)kind << 56 | key;
    uint32_t slot;
    uint32_t v = umap_get(&b->misc_rows, k, &slot);
    if (v) return (long)v - 1;
    long r = new_row(b, kind, key, 0);
    if (r < 0 || umap_put(&b->misc_rows, k, (uint32_t)r) < 0) return -1;
    return r;
}

/* ---- Tracks and functions ---------------------------------------------- */

/* The tracks of the reader's streams. Their names are put in the strings
 * here for a whole build, by vw__extend_load for an extension. */
int vw__init_tracks(builder *b) {
    uint32_t np = lt_reader_nprocesses(b->r);
    b->nproc = np;
    b->proc_base = calloc((size_t)np + 2, sizeof *b->proc_base);
    b->loc_cache = calloc((size_t)np + 2, sizeof *b->loc_cache);
    if (!b->proc_base || !b->loc_cache) return LT_ENOMEM;
    uint32_t n = 0;
    for (uint32_t p = 1; p <= np; p++) {
        b->proc_base[p] = n;
        n += lt_reader_nthreads(b->r, p);
    }
    b->proc_base[np + 1] = n;
    b->tracks = calloc(n ? n : 1, sizeof *b->tracks);
    if (!b->tracks) return LT_ENOMEM;
    b->ntracks = n;
    for (uint32_t p = 1; p <= np; p++)
        for (uint32_t t = 1; t <= lt_reader_nthreads(b->r, p); t++) {
            btrack *bt = &b->tracks[b->proc_base[p] + t - 1];
            const lt_thread *th = lt_reader_thread(b->r, p, t);
            bt->t.process = p;
            bt->t.thread = t;
            bt->t.tid = th ? th->tid : 0;
            if (b->extending) continue;
            bt->t.name = put_str(b, th ? th->name : "", th && th->name ? strlen(th->name) : 0);
            if (bt->t.name == UINT64_MAX) return LT_EIO;
        }
    return 0;
}

/* The track of stream (process, thread), or -1. */
static long track_of(const builder *b, uint32_t process, uint32_t thread) {
    if (process < 1 || process > b->nproc || thread < 1) return -1;
    uint32_t t = b->proc_base[process] + thread - 1;
    return t < b->proc_base[process + 1] ? (long)t : -1;
}

/* track_of for zone ends: they come stream by stream, the last answer kept. */
static inline long zone_track(builder *b, uint32_t process, uint32_t thread) {
    uint64_t key = (uint64_t)process << 32 | thread;
    if (key != b->last_stream) {
        b->last_stream = key;
        b->last_track = track_of(b, process, thread);
    }
    return b->last_track;
}

static uint64_t str_hash(uint64_t h, const char *s) {
    for (; s && *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h * 0x100000001b3ull;
}

uint64_t vw__func_hash(const char *name, const char *file, uint32_t line, uint32_t kind) {
    return str_hash(str_hash(0xcbf29ce484222325ull ^ kind ^ (uint64_t)line << 8, name), file);
}

static long func_slow(builder *b, uint32_t process, uint32_t loc);

/* The function of (process, loc): a direct table for small loc ids. */
static inline long func_of(builder *b, uint32_t process, uint32_t loc) {
    if (loc < LOC_CACHE && process <= b->nproc) {
        uint32_t *c = b->loc_cache[process];
        if (c && c[loc]) return (long)c[loc] - 1;
        if (!c && !(c = b->loc_cache[process] = calloc(LOC_CACHE, sizeof *c))) return -1;
        long f = func_slow(b, process, loc);
        if (f >= 0) c[loc] = (uint32_t)f + 1;
        return f;
    }
    return func_slow(b, process, loc);
}

static long func_slow(builder *b, uint32_t process, uint32_t loc) {
    uint64_t k = (uint64_t)process << 32 | loc;
    uint32_t slot;
    uint32_t v = umap_get(&b->loc_func, k, &slot);
    if (v) return (long)v - 1;
    const lt_loc *l = lt_reader_loc(b->r, process, loc);
    const char *name = l && l->name ? l->name : "?";
    const char *file = l && l->file ? l->file : "";
    uint32_t line = l ? l->line : 0, kind = l ? l->kind : 0;
    uint64_t h = vw__func_hash(name, file, line, kind);
    long f = -1;
    for (;; h++) {
        uint32_t fv = umap_get(&b->func_hash, h, &slot);
        if (!fv) break;
        bfunc *c = &b->funcs[fv - 1];
        if (c->line == line && c->kind == kind && !strcmp(c->name, name) && !strcmp(c->file, file)) {
            f = (long)fv - 1;
            break;
        }
    }
    if (f < 0) {
        if (b->nfuncs >= VW_FUNC_MASK ||
            grow_arr((void **)&b->funcs, &b->capfuncs, b->nfuncs, sizeof *b->funcs) < 0)
            return -1;
        bfunc *c = &b->funcs[b->nfuncs];
        c->name = strdup(name);
        c->file = strdup(file);
        if (!c->name || !c->file) {
            free(c->name);
            free(c->file);
            return -1;
        }
        c->line = line;
        c->kind = kind;
        c->hash = h;
        c->zones = 0;
        c->name_off = put_str(b, name, strlen(name));
        c->file_off = put_str(b, file, strlen(file));
        if (c->name_off == UINT64_MAX || c->file_off == UINT64_MAX) {
            free(c->name);
            free(c->file);
            return -1;
        }
        if (umap_put(&b->func_hash, h, b->nfuncs) < 0) return -1;
        f = (long)b->nfuncs++;
    }
    if (umap_put(&b->loc_func, k, (uint32_t)f) < 0) return -1;
    return f;
}

/* ---- Events ------------------------------------------------------------- */

static uint64_t rel(const builder *b, uint64_t ts) { return ts > b->origin ? ts - b->origin : 0; }

static long zone_row(builder *b, btrack *t, uint32_t track, uint32_t depth) {
    if (depth >= t->ndepth) {
        uint32_t n = t->ndepth;
        if (grow_arr((void **)&t->depth_row, &t->ndepth, depth, sizeof *t->depth_row) < 0)
            return -1;
        memset(t->depth_row + n, 0, (size_t)(t->ndepth - n) * sizeof *t->depth_row);
    }
    if (!t->depth_row[depth]) {
        long r = new_row(b, VW_ROW_ZONES, track, depth);
        if (r < 0) return -1;
        t->depth_row[depth] = (uint32_t)r + 1;
    }
    return (long)t->depth_row[depth] - 1;
}

/* The text record of a zone's name override and text: 1 with *t, 0 when
 * it has neither, LT_EIO. */
static int make_text(builder *b, const lt_event *ev, vw_text *t) {
    if (!ev->name && !ev->text) return 0;
    memset(t, 0, sizeof *t);
    t->name = ev->name ? put_str(b, ev->name, ev->name_len) : UINT64_MAX - 1;
    t->text = ev->text ? put_str(b, ev->text, ev->text_len) : UINT64_MAX - 1;
    if (t->name == UINT64_MAX || t->text == UINT64_MAX) return LT_EIO;
    if (t->name == UINT64_MAX - 1) t->name = UINT64_MAX;
    if (t->text == UINT64_MAX - 1) t->text = UINT64_MAX;
    return 1;
}

static int text_row(builder *b) {
    if (!b->text_row) {
        long r = new_row(b, VW_ROW_TEXT, 0, 0);
        if (r < 0) return LT_ENOMEM;
        b->text_row = (uint32_t)r + 1;
    }
    return 0;
}

static int zone_text(builder *b, const lt_event *ev, uint32_t *text) {
    vw_text t;
    *text = 0;
    if (!ev->name && !ev->text) return 0; /* most zones: no call */
    int rc = make_text(b, ev, &t);
    if (rc <= 0) return rc;
    if ((rc = text_row(b)) < 0) return rc;
    if (b->ntexts >= UINT32_MAX - 1) return 0; /* beyond: texts are dropped */
    rc = push_rec(b, b->text_row - 1, &t);
    if (rc < 0) return rc;
    *text = (uint32_t)++b->ntexts;
    return 0;
}

/* A zone still open at its stream's end: set aside (indexed at the end,
 * see bopen), and kept in its track's open zones as it was before the
 * reader closed the zones inside it (their time left out of child_ns). */
static int on_open_zone(builder *b, const lt_event *ev, btrack *t, const bopen *o) {
    if (grow_arr((void **)&b->open, &b->capopen, b->nopen, sizeof *b->open) < 0) return LT_ENOMEM;
    b->open[b->nopen++] = *o;
    if (o->has_text && text_row(b) < 0) return LT_ENOMEM;
    if (ev->depth >= t->nopen) { /* the innermost comes first */
        if (grow_arr((void **)&t->open, &t->capopen, ev->depth, sizeof *t->open) < 0) return LT_ENOMEM;
        t->nopen = ev->depth + 1;
    }
    vw_szone *z = &t->open[ev->depth];
    memset(z, 0, sizeof *z);
    z->begin_ts = ev->begin_ts;
    z->loc = ev->loc;
    z->name = o->has_text && ev->name ? o->text.name : UINT64_MAX;
    z->text = o->has_text && ev->text ? o->text.text : UINT64_MAX;
    z->child_ns = ev->child_ns;
    if (ev->depth + 1 < t->nopen) {
        uint64_t inner = ev->ts - t->open[ev->depth + 1].begin_ts;
        z->child_ns = z->child_ns > inner ? z->child_ns - inner : 0;
    }
    return 0;
}

static int on_zone_end(builder *b, const lt_event *ev) {
    long tr = zone_track(b, ev->process, ev->thread);
    if (tr < 0) return fail(b, LT_ECORRUPT, "zone of an unknown thread %u/%u", ev->process, ev->thread);
    btrack *t = &b->tracks[tr];
    long row = zone_row(b, t, (uint32_t)tr, ev->depth);
    long f = func_of(b, ev->process, ev->loc);
    if (row < 0 || f < 0) return LT_ENOMEM;
    vw_zone z;
    z.start = rel(b, ev->begin_ts);
    uint64_t end = rel(b, ev->ts);
    z.dur = end > z.start ? end - z.start : 0;
    z.self = z.dur > ev->child_ns ? z.dur - ev->child_ns : 0;
    z.func_flags = (uint32_t)f;
    z.text = 0;
    if (ev->flags & LT_EVF_ABORTED) z.func_flags |= VW_ABORTED, b->tot.aborted++;
    if (ev->flags & LT_EVF_CUT) z.func_flags |= VW_CUT, b->cut = 1;
    if (ev->flags & LT_EVF_UNCLOSED) {
        bopen o = {(uint32_t)row, (uint32_t)tr, ev->depth, (uint32_t)f, z, {0, 0, {0, 0}}, 0};
        o.z.func_flags |= VW_OPEN;
        int rc = make_text(b, ev, &o.text);
        if (rc < 0) return rc;
        o.has_text = rc;
        return on_open_zone(b, ev, t, &o);
    }
    b->funcs[f].zones++;
    int rc = zone_text(b, ev, &z.text);
    if (rc < 0) return rc;
    rc = push_fast(b, (uint32_t)row, &z);
    if (rc < 0) return rc;
    if (!t->t.zones || z.start < t->t.first) t->t.first = z.start;
    if (z.start + z.dur > t->t.last) t->t.last = z.start + z.dur;
    t->t.zones++;
    if (ev->depth + 1 > t->t.depths) t->t.depths = ev->depth + 1;
    if (ev->depth + 1 > b->tot.max_depth) b->tot.max_depth = ev->depth + 1;
    b->tot.zones++;
    return 0;
}

static int on_marker(builder *b, const lt_event *ev) {
    long tr = track_of(b, ev->process, ev->thread);
    if (tr < 0) return 0;
    btrack *t = &b->tracks[tr];
    if (!t->marker_row) {
        long r = new_row(b, VW_ROW_MARKERS, (uint32_t)tr, 0);
        if (r < 0) return LT_ENOMEM;
        t->marker_row = (uint32_t)r + 1;
    }
    vw_marker m;
    memset(&m, 0, sizeof m);
    m.t = rel(b, ev->ts);
    m.track = (uint32_t)tr;
    m.kind = ev->type == LT_EV_SIGNPOST;
    m.text = put_str(b, ev->text, ev->text_len);
    m.text2 = put_str(b, ev->text2, ev->text2 ? ev->text2_len : 0);
    if (m.text == UINT64_MAX || m.text2 == UINT64_MAX) return LT_EIO;
    if (m.kind) b->tot.signposts++;
    else b->tot.messages++;
    return push_rec(b, t->marker_row - 1, &m);
}

/* Plots and frames are numbered in order of first sample; their rows are
 * keyed by that number. */
/* The time of the first record of the row of (kind, key), UINT64_MAX when
 * it has none. */
static uint64_t first_time(const builder *b, uint32_t kind, uint32_t key) {
    uint32_t slot;
    uint32_t v = umap_get(&b->misc_rows, (uint64_t)kind << 56 | key, &slot);
    if (!v) return UINT64_MAX;
    const brow *r = &b->rows[v - 1];
    if (r->nchunks) return b->chunks[r->chunks[0]].lo;
    return r->nbuf ? *(const uint64_t *)r->buf : UINT64_MAX;
}

/* An extension numbers a new plot or frame after the others: a whole build
 * does the same only when its first sample comes after theirs. */
static int numbered_late(const builder *b, int is_plot, uint64_t t) {
    uint32_t n = is_plot ? b->nplots : b->nframes;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t f = first_time(b, is_plot ? VW_ROW_PLOT : VW_ROW_FRAME, i);
        if (f != UINT64_MAX && f >= t) return 0;
    }
    return 1;
}

static long numbered(builder *b, umap *m, uint64_t k, int is_plot, const lt_event *ev) {
    uint32_t slot;
    uint32_t v = umap_get(m, k, &slot);
    if (v) return (long)v - 1;
    if (b->extending && !numbered_late(b, is_plot, rel(b, ev->ts))) {
        b->refused = 1;
        return -1;
    }
    uint32_t n = is_plot ? b->nplots : b->nframes;
    const char *name = is_plot ? lt_reader_plot_name(b->r, ev->process, ev->id)
                               : lt_reader_frame_name(b->r, ev->process, ev->id);
    uint64_t so = put_str(b, name ? name : "", name ? strlen(name) : 0);
    if (so == UINT64_MAX) return -1;
    if (is_plot) {
        if (grow_arr((void **)&b->plots, &b->capplots, n, sizeof *b->plots) < 0) return -1;
        vw_plot *p = &b->plots[b->nplots++];
        memset(p, 0, sizeof *p);
        p->name = so;
        p->process = ev->process;
        p->id = ev->id;
    } else {
        if (grow_arr((void **)&b->frames, &b->capframes, n, sizeof *b->frames) < 0) return -1;
        vw_frame *f = &b->frames[b->nframes++];
        memset(f, 0, sizeof *f);
        f->name = so;
        f->process = ev->process;
        f->id = ev->id;
    }
    if (umap_put(m, k, n) < 0) return -1;
    return n;
}

/* Whether sample x comes before y in a whole build's merged order (time,
 * then thread; the same thread's in stream order). */
static inline int sample_before(const vw_sample *x, const vw_sample *y) {
    return x->t < y->t || (x->t == y->t && x->track < y->track);
}

/* An extension appends samples to rows that mix threads: one that a whole
 * build would have put before the row's last one goes in the row's buffer
 * at its place (the records before it written out first when the buffer
 * is full). Returns 0, 1 when its place is among the records written
 * already (the row's last chunk entry: equal times too, its thread
 * unknown), or an LT_E* code. */
static int insert_sample(builder *b, uint32_t ri, const vw_sample *s) {
    brow *r = &b->rows[ri];
    uint32_t p = r->nbuf;
    while (p > 0 && sample_before(s, (const vw_sample *)(r->buf + (size_t)(p - 1) * VW_REC))) p--;
    if (p == 0 && r->nchunks && s->t <= b->chunks[r->chunks[r->nchunks - 1]].hi) return 1;
    if (r->nbuf == r->cap) {
        int rc;
        if (r->cap < VW_CHUNK) {
            rc = grow_buf(r);
        } else {
            if (p == 0) return 1; /* nothing before it to write out */
            rc = flush_prefix(b, ri, p); /* those before it go out */
            p = 0;
        }
        if (rc < 0) return rc;
    }
    memmove(r->buf + (size_t)(p + 1) * VW_REC, r->buf + (size_t)p * VW_REC, (size_t)(r->nbuf - p) * VW_REC);
    memcpy(r->buf + (size_t)p * VW_REC, s, VW_REC);
    r->nbuf++;
    r->meta.n++;
    b->buffered += VW_REC;
    return b->buffered > BUF_BUDGET ? flush_all(b) : 0;
}

static int out_of_order(const builder *b, uint32_t row, const vw_sample *s) {
    const brow *r = &b->rows[row];
    if (r->nbuf) return sample_before(s, (const vw_sample *)(r->buf + (size_t)(r->nbuf - 1) * VW_REC));
    return r->nchunks && s->t <= b->chunks[r->chunks[r->nchunks - 1]].hi;
}

static int on_sample(builder *b, const lt_event *ev, umap *plots, umap *frames) {
    int is_plot = ev->type == LT_EV_PLOT, is_lost = ev->type == LT_EV_LOST;
    vw_sample s;
    memset(&s, 0, sizeof s);
    s.t = rel(b, ev->ts);
    long tr = track_of(b, ev->process, ev->thread);
    s.track = tr < 0 ? UINT32_MAX : (uint32_t)tr;
    long row;
    if (is_lost) {
        s.count = ev->count;
        b->tot.lost_records++;
        b->tot.lost_events += ev->count;
        row = misc_row(b, VW_ROW_LOST, 0);
    } else {
        long n = numbered(b, is_plot ? plots : frames, (uint64_t)ev->process << 32 | ev->id,
                          is_plot, ev);
        if (n < 0) return LT_ENOMEM;
        if (is_plot) {
            vw_plot *p = &b->plots[n];
            if (!p->samples || ev->value < p->min) p->min = ev->value;
            if (!p->samples || ev->value > p->max) p->max = ev->value;
            p->samples++;
            s.value = ev->value;
            b->tot.samples++;
        } else {
            b->frames[n].marks++;
            b->tot.frame_marks++;
        }
        s.count = 1;
        row = misc_row(b, is_plot ? VW_ROW_PLOT : VW_ROW_FRAME, (uint32_t)n);
    }
    if (row < 0) return LT_ENOMEM;
    if (b->extending && out_of_order(b, (uint32_t)row, &s)) {
        int rc = insert_sample(b, (uint32_t)row, &s);
        if (rc != 1) return rc;
        b->refused = 1;
        return fail(b, LT_EINVAL, "samples arrived out of order");
    }
    return push_rec(b, (uint32_t)row, &s);
}

#define SCAN_ZONES 1   /* zones and markers: rows of one track */
#define SCAN_SAMPLES 2 /* plots, frames, LOST: rows fed by every thread */

/* One pass of lt_reader_next over the current selection, taking the event
 * kinds of `what`; sets *others when it skipped samples. */
static int scan_pass(builder *b, int what, umap *plots, umap *frames, int *others) {
    lt_event ev;
    int rc;
    uint64_t last = 0; /* events come in time order: the last is the latest */
    while ((rc = lt_reader_next(b->r, &ev)) > 0) {
        last = ev.ts;
        switch (ev.type) {
        case LT_EV_ZONE_END: rc = what & SCAN_ZONES ? on_zone_end(b, &ev) : 0; break;
        case LT_EV_MESSAGE:
        case LT_EV_SIGNPOST: rc = what & SCAN_ZONES ? on_marker(b, &ev) : 0; break;
        case LT_EV_PLOT:
        case LT_EV_FRAME:
        case LT_EV_LOST:
            if (what & SCAN_SAMPLES) rc = on_sample(b, &ev, plots, frames);
            else *others = 1, rc = 0;
            break;
        default: rc = 0;
        }
        if (rc < 0) break;
    }
    if (last > b->origin && last - b->origin > b->tot.duration) b->tot.duration = last - b->origin;
    if (rc < 0 && b->err && !b->err[0])
        fail(b, rc, "%s", rc == LT_ECORRUPT ? lt_reader_error(b->r) : lt_strerror(rc));
    return rc;
}

/* Zones and markers stream by stream (no merge across threads: twice the
 * reader's merged rate), then, only when the trace has any, plot samples,
 * frame marks and LOST records in one merged pass (their rows mix
 * threads). A stream the reader cannot select alone: everything merged. */
static int scan(builder *b) {
    umap *plots = &b->plot_ids, *frames = &b->frame_ids;
    int others = 0, rc = 0, alone = 1;
    for (uint32_t p = 1; p <= b->nproc && alone; p++)
        for (uint32_t t = 1; t <= lt_reader_nthreads(b->r, p) && alone; t++)
            alone = lt_reader_thread(b->r, p, t) != NULL;
    if (!alone) {
        rc = scan_pass(b, SCAN_ZONES | SCAN_SAMPLES, plots, frames, &others);
    } else {
        for (uint32_t p = 1; p <= b->nproc && rc >= 0; p++)
            for (uint32_t t = 1; t <= lt_reader_nthreads(b->r, p) && rc >= 0; t++) {
                rc = lt_reader_select(b->r, p, t);
                if (rc >= 0) rc = scan_pass(b, SCAN_ZONES, plots, frames, &others);
            }
        if (rc >= 0 && others && (rc = lt_reader_select(b->r, 0, 0)) >= 0)
            rc = scan_pass(b, SCAN_SAMPLES, plots, frames, &others);
    }
    if (rc < 0 && b->err && !b->err[0]) fail(b, rc, "%s", lt_strerror(rc));
    return rc;
}

/* ---- Output ------------------------------------------------------------- */

static int row_cmp(const void *a, const void *c, void *ctx) {
    const builder *b = ctx;
    const vw_row *x = &b->rows[*(const uint32_t *)a].meta;
    const vw_row *y = &b->rows[*(const uint32_t *)c].meta;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    if (x->depth != y->depth) return x->depth < y->depth ? -1 : 1;
    return 0;
}

static int put_section(builder *b, uint64_t *off, const void *p, size_t elem, uint64_t n) {
    static const char pad[8];
    long pos = ftell(b->idx);
    if (pos < 0) return LT_EIO;
    if (pos % 8) {
        if (fwrite(pad, 1, (size_t)(8 - pos % 8), b->idx) != (size_t)(8 - pos % 8)) return LT_EIO;
        pos += 8 - pos % 8;
    }
    *off = (uint64_t)pos;
    if (n && fwrite(p, elem, n, b->idx) != n) return LT_EIO;
    return 0;
}

static int copy_strings(builder *b, vw_header *h) {
    long pos = ftell(b->idx);
    if (pos < 0 || fflush(b->str) || fseek(b->str, 0, SEEK_SET)) return LT_EIO;
    h->off_strings = (uint64_t)pos;
    h->len_strings = b->strlen_;
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, b->str)) > 0)
        if (fwrite(buf, 1, n, b->idx) != n) return LT_EIO;
    return ferror(b->str) ? LT_EIO : 0;
}

/* What the index shows beyond the state an extension resumes from: the
 * zones still open, counted in copies of the totals, tracks and
 * functions. */
typedef struct outview {
    vw_totals tot;
    vw_track *tracks;
    uint64_t *fzones;
    uint32_t *open_of_row; /* index + 1 into b->open of a row's open zone */
    uint32_t *committed;   /* records of each row's buffer */
} outview;

static int open_view(builder *b, outview *o) {
    o->tot = b->tot;
    o->tracks = calloc((size_t)b->ntracks + 1, sizeof *o->tracks);
    o->fzones = calloc((size_t)b->nfuncs + 1, sizeof *o->fzones);
    o->open_of_row = calloc((size_t)b->nrows + 1, sizeof *o->open_of_row);
    o->committed = calloc((size_t)b->nrows + 1, sizeof *o->committed);
    if (!o->tracks || !o->fzones || !o->open_of_row || !o->committed) return LT_ENOMEM;
    for (uint32_t i = 0; i < b->ntracks; i++) o->tracks[i] = b->tracks[i].t;
    for (uint32_t i = 0; i < b->nfuncs; i++) o->fzones[i] = b->funcs[i].zones;
    for (uint32_t i = 0; i < b->nrows; i++) o->committed[i] = b->rows[i].nbuf;
    uint64_t ntexts = b->ntexts;
    for (uint32_t k = 0; k < b->nopen; k++) {
        bopen *z = &b->open[k];
        if (z->has_text && ntexts < UINT32_MAX - 1) z->z.text = (uint32_t)++ntexts;
        o->open_of_row[z->row] = k + 1;
        o->tot.zones++;
        o->tot.unclosed++;
        if (z->depth + 1 > o->tot.max_depth) o->tot.max_depth = z->depth + 1;
        o->fzones[z->func]++;
        vw_track *t = &o->tracks[z->track];
        if (!t->zones || z->z.start < t->first) t->first = z->z.start;
        if (z->z.start + z->z.dur > t->last) t->last = z->z.start + z->z.dur;
        t->zones++;
        if (z->depth + 1 > t->depths) t->depths = z->depth + 1;
    }
    return 0;
}

static void open_view_free(outview *o) {
    free(o->tracks);
    free(o->fzones);
    free(o->open_of_row);
    free(o->committed);
}

/* Row `ri`'s records that stay in the index file: its buffer, then its
 * open zone (zone rows) or the texts of open zones (the text row). */
static int row_tail(builder *b, const outview *o, uint32_t ri, uint8_t **buf, size_t *cap,
                    uint32_t *n) {
    brow *r = &b->rows[ri];
    size_t want = r->nbuf + 1;
    if (ri + 1 == b->text_row) want += b->nopen;
    if (want > *cap) {
        uint8_t *p = realloc(*buf, want * VW_REC);
        if (!p) return LT_ENOMEM;
        *buf = p;
        *cap = want;
    }
    if (r->nbuf) memcpy(*buf, r->buf, (size_t)r->nbuf * VW_REC);
    *n = r->nbuf;
    if (o->open_of_row[ri]) memcpy(*buf + (size_t)(*n)++ * VW_REC, &b->open[o->open_of_row[ri] - 1].z, VW_REC);
    for (uint32_t k = 0; ri + 1 == b->text_row && k < b->nopen; k++)
        if (b->open[k].has_text && b->open[k].z.text)
            memcpy(*buf + (size_t)(*n)++ * VW_REC, &b->open[k].text, VW_REC);
    return 0;
}

/* Writes every row's tail after the header, as chunks numbered after those
 * of the records file. */
static int write_tails(builder *b, const outview *o, vw_header *h) {
    uint8_t *buf = NULL;
    size_t cap = 0;
    uint64_t id = b->nrecs;
    int rc = 0;
    h->off_recs = VW_HEADER_SIZE;
    h->n_main = b->nrecs;
    for (uint32_t ri = 0; ri < b->nrows && !rc; ri++) {
        uint32_t n;
        if ((rc = row_tail(b, o, ri, &buf, &cap, &n)) < 0) break;
        brow *r = &b->rows[ri];
        uint64_t first = r->meta.n - r->nbuf;
        for (uint32_t k = 0; k < n && !rc; k += VW_CHUNK) {
            uint32_t m = n - k < VW_CHUNK ? n - k : VW_CHUNK;
            if ((rc = chunk_room(b, ri)) < 0) break;
            if (fwrite(buf + (size_t)k * VW_REC, VW_REC, m, b->idx) != m) rc = LT_EIO;
            else add_chunk(b, ri, buf + (size_t)k * VW_REC, m, first + k, id);
            id += m;
        }
        r->meta.n = first + n;
    }
    free(buf);
    h->n_recs = id;
    return rc;
}

static int write_tables(builder *b, const outview *o, vw_header *h) {
    int rc;
    if ((rc = copy_strings(b, h)) < 0) return rc;
    /* rows sorted by (kind, key, depth); chunks renumbered to match */
    uint32_t *order = malloc(((size_t)b->nrows + 1) * sizeof *order);
    uint32_t *inv = malloc(((size_t)b->nrows + 1) * sizeof *inv);
    vw_row *rows = malloc(((size_t)b->nrows + 1) * sizeof *rows);
    uint32_t *rc_list = malloc((b->nchunks + 1) * sizeof *rc_list);
    uint32_t *comm = malloc(((size_t)b->nrows + 1) * sizeof *comm);
    if (!order || !inv || !rows || !rc_list || !comm) {
        free(order), free(inv), free(rows), free(rc_list), free(comm);
        return LT_ENOMEM;
    }
    for (uint32_t i = 0; i < b->nrows; i++) order[i] = i;
    qsort_r(order, b->nrows, sizeof *order, row_cmp, b);
    uint64_t pos = 0;
    for (uint32_t i = 0; i < b->nrows; i++) {
        brow *r = &b->rows[order[i]];
        inv[order[i]] = i;
        rows[i] = r->meta;
        rows[i].nchunks = r->nchunks;
        rows[i].chunks = pos;
        comm[i] = o->committed[order[i]];
        memcpy(rc_list + pos, r->chunks, (size_t)r->nchunks * sizeof *rc_list);
        pos += r->nchunks;
    }
    for (uint64_t i = 0; i < b->nchunks; i++) b->chunks[i].row = inv[b->chunks[i].row];
    h->text_row = b->text_row ? inv[b->text_row - 1] + 1 : 0;
    h->n_chunks = b->nchunks;
    h->n_rows = b->nrows;
    h->n_rowchunks = pos;
    rc = put_section(b, &h->off_chunks, b->chunks, sizeof *b->chunks, b->nchunks);
    if (!rc) rc = put_section(b, &h->off_rows, rows, sizeof *rows, b->nrows);
    if (!rc) rc = put_section(b, &h->off_rowchunks, rc_list, sizeof *rc_list, pos);
    memcpy(o->committed, comm, (size_t)b->nrows * sizeof *comm); /* in the rows' order now */
    free(order), free(inv), free(rows), free(rc_list), free(comm);
    if (rc) return rc;
    h->n_tracks = b->ntracks;
    h->n_funcs = b->nfuncs;
    h->n_plots = b->nplots;
    h->n_frames = b->nframes;
    return put_section(b, &h->off_tracks, o->tracks, sizeof *o->tracks, b->ntracks);
}

static int write_funcs(builder *b, const outview *o, vw_header *h) {
    vw_func *fn = calloc((size_t)b->nfuncs + 1, sizeof *fn);
    if (!fn) return LT_ENOMEM;
    for (uint32_t i = 0; i < b->nfuncs; i++) {
        fn[i].name = b->funcs[i].name_off;
        fn[i].file = b->funcs[i].file_off;
        fn[i].line = b->funcs[i].line;
        fn[i].kind = b->funcs[i].kind;
        fn[i].zones = o->fzones[i];
    }
    int rc = put_section(b, &h->off_funcs, fn, sizeof *fn, b->nfuncs);
    free(fn);
    return rc;
}

/* The streams as read: blocks, the last one's offset and timestamp, and
 * their open zones. */
static int write_streams(builder *b, uint64_t *nstreams, uint64_t *nzones) {
    *nstreams = *nzones = 0;
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < b->ntracks; i++) {
            const btrack *t = &b->tracks[i];
            vw_sstream s = {t->t.process, t->t.thread, 0, t->nopen, 0, 0};
            s.blocks = lt__stream_nblocks(b->r, s.process, s.thread);
            if (!s.blocks) continue;
            if (lt__stream_block(b->r, s.process, s.thread, s.blocks - 1, &s.last_off, &s.last_ts) < 0)
                return LT_ECORRUPT;
            if (pass == 0) {
                if (fwrite(&s, sizeof s, 1, b->idx) != 1) return LT_EIO;
                ++*nstreams;
            } else {
                if (t->nopen && fwrite(t->open, sizeof *t->open, t->nopen, b->idx) != t->nopen) return LT_EIO;
                *nzones += t->nopen;
            }
        }
    return 0;
}

/* The state an extension resumes from (view_int.h). */
static int write_state(builder *b, const outview *o, const char *trace, vw_header *h) {
    vw_state st;
    memset(&st, 0, sizeof st);
    st.magic = VW_STATE_MAGIC;
    st.extendable = !b->cut;
    const lt_file_info *fi = lt_reader_info(b->r);
    st.body_end = fi->file_size - fi->bytes_ignored;
    st.have_ts = b->have_ts;
    int fd = open(trace, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || vw__trace_hashes(fd, st.body_end, &st.head_hash, &st.tail_hash) < 0) st.extendable = 0;
    if (fd >= 0) close(fd);
    st.tot = b->tot;
    st.n_rows = b->nrows;
    st.n_tracks = b->ntracks;
    st.n_funcs = b->nfuncs;
    int rc = put_section(b, &h->off_state, &st, sizeof st, 1);
    long at = ftell(b->idx);
    if (!rc && fwrite(o->committed, sizeof *o->committed, b->nrows, b->idx) != b->nrows) rc = LT_EIO;
    uint64_t dummy;
    for (uint32_t i = 0; !rc && i < b->ntracks; i++) {
        if (i == 0 && (rc = put_section(b, &dummy, NULL, 1, 0)) < 0) break;
        if (fwrite(&b->tracks[i].t, sizeof(vw_track), 1, b->idx) != 1) rc = LT_EIO;
    }
    if (!rc) rc = put_section(b, &dummy, NULL, 1, 0);
    for (uint32_t i = 0; !rc && i < b->nfuncs; i++)
        if (fwrite(&b->funcs[i].zones, 8, 1, b->idx) != 1) rc = LT_EIO;
    if (!rc) rc = write_streams(b, &st.n_streams, &st.n_zones);
    long end = ftell(b->idx);
    if (rc || at < 0 || end < 0) return rc ? rc : LT_EIO;
    h->len_state = (uint64_t)end - h->off_state;
    /* the counts of streams and zones, known now */
    if (fseek(b->idx, (long)h->off_state, SEEK_SET) || fwrite(&st, sizeof st, 1, b->idx) != 1 ||
        fseek(b->idx, end, SEEK_SET))
        return LT_EIO;
    return 0;
}

static int finish(builder *b, const char *trace, vw_header *h) {
    outview o;
    memset(&o, 0, sizeof o);
    int rc = open_view(b, &o);
    if (!rc) rc = write_tails(b, &o, h);
    if (!rc) rc = write_tables(b, &o, h);
    if (!rc) rc = write_funcs(b, &o, h);
    if (!rc) rc = put_section(b, &h->off_plots, b->plots, sizeof *b->plots, b->nplots);
    if (!rc) rc = put_section(b, &h->off_frames, b->frames, sizeof *b->frames, b->nframes);
    if (!rc) rc = write_state(b, &o, trace, h);
    h->totals = o.tot;
    open_view_free(&o);
    if (rc) return rc;
    long end = ftell(b->idx);
    if (end < 0) return LT_EIO;
    h->file_size = (uint64_t)end;
    struct stat st;
    if (rec_write(b) < 0 || fstat(b->rec, &st) < 0) return LT_EIO;
    /* the blocks reserved past the end (reserve_rec) given back */
    if (b->rec_reserved && ftruncate(b->rec, st.st_size) < 0) return LT_EIO;
    h->rec_ino = (uint64_t)st.st_ino;
    h->rec_dev = (uint64_t)st.st_dev;
    if (fseek(b->idx, 0, SEEK_SET) || fwrite(h, sizeof *h, 1, b->idx) != 1) return LT_EIO;
    return 0;
}

static void builder_free(builder *b) {
    for (uint32_t i = 0; i < b->nrows; i++) {
        free(b->rows[i].buf);
        free(b->rows[i].chunks);
    }
    free(b->rows);
    free(b->chunks);
    for (uint32_t i = 0; i < b->nrec_out; i++) free(b->rec_out[i]);
    for (uint32_t i = 0; i < b->nrec_spare; i++) free(b->rec_spare[i]);
    for (uint32_t i = 0; i < b->ntracks; i++) {
        free(b->tracks[i].depth_row);
        free(b->tracks[i].open);
    }
    free(b->tracks);
    free(b->proc_base);
    for (uint32_t i = 0; b->loc_cache && i <= b->nproc + 1; i++) free(b->loc_cache[i]);
    free(b->loc_cache);
    for (uint32_t i = 0; i < b->nfuncs; i++) {
        free(b->funcs[i].name);
        free(b->funcs[i].file);
    }
    free(b->funcs);
    free(b->plots);
    free(b->frames);
    free(b->open);
    umap_free(&b->loc_func);
    umap_free(&b->func_hash);
    umap_free(&b->misc_rows);
    umap_free(&b->plot_ids);
    umap_free(&b->frame_ids);
}

int vw__identity(const char *path, uint64_t *size, uint64_t *mtime_ns, uint64_t *ino,
                 uint64_t *dev) {
    struct stat st;
    if (stat(path, &st) < 0) return -1;
    *size = (uint64_t)st.st_size;
    *mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
    *ino = (uint64_t)st.st_ino;
    *dev = (uint64_t)st.st_dev;
    return 0;
}

/* Opens the trace's reader and (for a whole build) its tracks. */
static int open_trace(builder *b, const char *trace, vw_header *h) {
    char detail[256] = "";
    if (vw__identity(trace, &h->trace_size, &h->trace_mtime_ns, &h->trace_ino, &h->trace_dev) < 0)
        return fail(b, LT_EOPEN, "cannot stat %s: %s", trace, strerror(errno));
    int rc = lt_reader_open(&b->r, trace, detail, sizeof detail);
    if (rc < 0) return fail(b, rc, "%s", detail[0] ? detail : lt_strerror(rc));
    if ((rc = lt_reader_sound(b->r)) < 0) return fail(b, rc, "%s", lt_reader_error(b->r));
    const lt_file_info *fi = lt_reader_info(b->r);
    b->origin = fi->first_ts;
    b->have_ts = fi->first_ts || fi->last_ts;
    if (!b->extending && (rc = vw__init_tracks(b)) < 0) return fail(b, rc, "%s", lt_strerror(rc));
    return 0;
}

/* Scans (what an extension loaded is already in the builder) and writes
 * the index. */
static int scan_and_finish(builder *b, const char *trace, vw_header *h) {
    const lt_file_info *fi = lt_reader_info(b->r);
    b->tot.origin = b->origin;
    b->tot.complete = fi->complete ? 1 : 0;
    int rc = scan(b);
    if (rc < 0) return rc;
    if ((rc = finish(b, trace, h)) < 0) return fail(b, rc, "writing the index: %s", lt_strerror(rc));
    return 0;
}

/* The files being written: the index under a temporary name, its strings
 * (unlinked at once), and for a whole build the records file under a
 * temporary name too. */
typedef struct outfiles {
    char *tmp, *stmp, *rtmp, *rec;
    char *obuf;
} outfiles;

static int open_outputs(builder *b, outfiles *f, const char *out_path, int whole) {
    size_t pl = strlen(out_path);
    f->tmp = malloc(pl + 32);
    f->stmp = malloc(pl + 32);
    f->rtmp = malloc(pl + 32);
    f->rec = vw__rec_path(out_path);
    f->obuf = malloc(OUT_BUF);
    if (!f->tmp || !f->stmp || !f->rtmp || !f->rec || !f->obuf)
        return fail(b, LT_ENOMEM, "out of memory");
    snprintf(f->tmp, pl + 32, "%s.%ld.tmp", out_path, (long)getpid());
    snprintf(f->stmp, pl + 32, "%s.%ld.str", out_path, (long)getpid());
    snprintf(f->rtmp, pl + 32, "%s.%ld.rtmp", out_path, (long)getpid());
    int fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int sfd = open(f->stmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    b->idx = fd >= 0 ? fdopen(fd, "wb") : NULL;
    b->str = sfd >= 0 ? fdopen(sfd, "w+b") : NULL;
    unlink(f->stmp);
    if (!b->idx && fd >= 0) close(fd);
    if (!b->str && sfd >= 0) close(sfd);
    if (!b->idx || !b->str) return fail(b, LT_EOPEN, "cannot create %s: %s", f->tmp, strerror(errno));
    /* buffers of our own: given NULL, stdio keeps its small default one
     * (a write call per few KiB of records: 40% of the build in the kernel) */
    setvbuf(b->idx, f->obuf, _IOFBF, OUT_BUF);
    static const char zero[VW_HEADER_SIZE];
    if (fwrite(zero, 1, sizeof zero, b->idx) != sizeof zero) return fail(b, LT_EIO, "writing %s", f->tmp);
    if (!whole) return 0;
    b->rec = open(f->rtmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (b->rec < 0) return fail(b, LT_EOPEN, "cannot create %s: %s", f->rtmp, strerror(errno));
    return 0;
}

/* Closes the outputs; on success renames the records file (whole builds)
 * then the index into place. An extension's records file is its caller's
 * (its lock, closed after the index is renamed: the next extension then
 * starts from it). */
static int close_outputs(builder *b, outfiles *f, const char *out_path, int whole, int rc) {
    if (b->str) fclose(b->str);
    if (b->idx && fclose(b->idx) && !rc) rc = fail(b, LT_EIO, "writing %s: %s", f->tmp, strerror(errno));
    if (whole && b->rec >= 0 && close(b->rec) && !rc)
        rc = fail(b, LT_EIO, "writing records: %s", strerror(errno));
    b->rec = -1;
    b->str = b->idx = NULL;
    if (!rc && whole && rename(f->rtmp, f->rec) < 0)
        rc = fail(b, LT_EIO, "cannot rename %s: %s", f->rtmp, strerror(errno));
    if (!rc && rename(f->tmp, out_path) < 0)
        rc = fail(b, LT_EIO, "cannot rename %s: %s", f->tmp, strerror(errno));
    if (rc) {
        if (f->tmp) unlink(f->tmp);
        if (whole && f->rtmp) unlink(f->rtmp);
    }
    free(f->tmp), free(f->stmp), free(f->rtmp), free(f->rec), free(f->obuf);
    return rc;
}

static vw_header new_header(void) {
    vw_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, VW_MAGIC, 8);
    h.version = VW_VERSION;
    h.rec_size = VW_REC;
    return h;
}

int vw_build(const char *trace, const char *out_path, char *err, size_t errlen) {
    builder b;
    memset(&b, 0, sizeof b);
    b.rec = -1;
    b.err = err;
    b.errlen = errlen;
    if (err && errlen) err[0] = 0;
    outfiles f;
    memset(&f, 0, sizeof f);
    vw_header h = new_header();
    int rc = open_outputs(&b, &f, out_path, 1);
    if (!rc) rc = open_trace(&b, trace, &h);
    if (!rc) rc = scan_and_finish(&b, trace, &h);
    rc = close_outputs(&b, &f, out_path, 1, rc);
    if (b.r) lt_reader_free(b.r);
    builder_free(&b);
    return rc;
}

/* Extends the index at out_path: 0, VW_REFUSED, or a negative code. */
static int extend(const char *trace, const char *out_path, char *err, size_t errlen) {
    builder b;
    memset(&b, 0, sizeof b);
    b.rec = -1;
    b.err = err;
    b.errlen = errlen;
    b.extending = 1;
    outfiles f;
    memset(&f, 0, sizeof f);
    vw_header h = new_header();
    char *rec = vw__rec_path(out_path);
    int fd = rec ? open(rec, O_RDWR | O_CLOEXEC) : -1;
    int rc = VW_REFUSED;
    /* one extension at a time: another would cut what this one appends */
    if (fd >= 0 && flock(fd, LOCK_EX) == 0) {
        rc = open_outputs(&b, &f, out_path, 0);
        if (!rc) rc = open_trace(&b, trace, &h);
        if (!rc) rc = vw__extend_load(&b, trace, out_path, fd);
        if (!rc) b.rec = fd; /* appended at nrecs: the index's end, cut to it */
        if (!rc) rc = scan_and_finish(&b, trace, &h);
        if (b.refused) rc = VW_REFUSED;
        if (rc == VW_REFUSED && err && errlen) err[0] = 0;
        rc = close_outputs(&b, &f, out_path, 0, rc);
    }
    if (fd >= 0) close(fd);
    free(rec);
    if (b.r) lt_reader_free(b.r);
    builder_free(&b);
    return rc;
}

/* Whether the index at out_path is sound and made for the trace as it is. */
static int current(const char *trace, const char *out_path) {
    vw_index *ix = vw__load(out_path);
    if (!ix) return 0;
    const vw_header *h = vw__header(ix);
    uint64_t size, mt, ino, dev;
    int same = vw__identity(trace, &size, &mt, &ino, &dev) == 0 && size == h->trace_size &&
               mt == h->trace_mtime_ns && ino == h->trace_ino && dev == h->trace_dev;
    vw_close(ix);
    return same;
}

int vw_update(const char *trace, const char *out_path, int *extended, char *err, size_t errlen) {
    if (extended) *extended = 0;
    if (err && errlen) err[0] = 0;
    if (current(trace, out_path)) return 0;
    int rc = extend(trace, out_path, err, errlen);
    if (rc == 0 && extended) *extended = 1;
    if (rc == VW_REFUSED) rc = vw_build(trace, out_path, err, errlen);
    return rc;
}
