/* reader.c -- opens a .tracy file: header check, descriptor scan (no event
 * data is decompressed), trailer, metadata and statistics blocks. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "reader_int.h"

/* ---- Strings owned by the reader --------------------------------------- */

struct lt__chunk_a {
    struct lt__chunk_a *next;
    char data[];
};

static char *lt__arena_alloc(lt__arena *a, size_t n) {
    n = (n + 7) & ~(size_t)7;
    if (!a->head || a->used + n > a->cap) {
        size_t cap = n > 65536 ? n : 65536;
        struct lt__chunk_a *c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->next = a->head;
        a->head = c;
        a->used = 0;
        a->cap = cap;
        a->total += cap;
    }
    char *p = a->head->data + a->used;
    a->used += n;
    return p;
}

static const char *lt__arena_str(lt__arena *a, const char *s, size_t len) {
    char *p = lt__arena_alloc(a, len + 1);
    if (!p) return NULL;
    if (len) memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

static void lt__arena_free(lt__arena *a) {
    while (a->head) {
        struct lt__chunk_a *n = a->head->next;
        free(a->head);
        a->head = n;
    }
}

/* ---- Errors ------------------------------------------------------------ */

int lt__corrupt(lt_reader *r, uint64_t off, const char *why) {
    snprintf(r->errmsg, sizeof r->errmsg, "corrupt unit at file offset %" PRIu64 ": %s",
             off, why);
    return LT_ECORRUPT;
}

static int lt__fail(lt_reader *r, int rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->errmsg, sizeof r->errmsg, fmt, ap);
    va_end(ap);
    return rc;
}

static int lt__pread_all(int fd, void *buf, size_t len, uint64_t off) {
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = pread(fd, p, len, (off_t)off);
        if (n < 0) {
            if (errno == EINTR) continue;
            return lt_from_errno(errno) == LT_ENOMEM ? LT_ENOMEM : LT_EIO;
        }
        if (n == 0) return LT_EIO; /* the file shrank under us */
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

static int lt__grow(void **arr, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return 0;
    uint64_t c = *cap ? *cap : 8;
    while (c < need) c *= 2;
    if (c > UINT32_MAX) c = UINT32_MAX;
    void *p = realloc(*arr, (size_t)c * elem);
    if (!p) return LT_ENOMEM;
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(c - *cap) * elem);
    *arr = p;
    *cap = (uint32_t)c;
    return 0;
}

/* ---- Processes and streams -------------------------------------------- */

static lt__rproc *lt__get_proc(lt_reader *r, uint32_t idx) {
    if (idx >= r->nprocs) {
        if (lt__grow((void **)&r->procs, &r->procs_cap, idx + 1, sizeof *r->procs) < 0)
            return NULL;
        r->nprocs = idx + 1;
    }
    if (!r->procs[idx]) {
        lt__rproc *p = calloc(1, sizeof *p);
        if (!p) return NULL;
        p->info.index = idx;
        p->info.rank = -1;
        p->info.status = LT_PROC_RUNNING;
        p->info.hostname = p->info.program = p->info.client = "";
        p->info.end_reason = "";
        static const char *const no_argv[1] = {NULL};
        p->info.argv = no_argv;
        r->procs[idx] = p;
    }
    return r->procs[idx];
}

static lt__rstream *lt__get_stream(lt_reader *r, lt__rproc *p, uint32_t t) {
    if (t > p->nthreads) {
        if (lt__grow((void **)&p->threads, &p->threads_cap, t, sizeof *p->threads) < 0)
            return NULL;
        p->nthreads = t;
    }
    if (!p->threads[t - 1]) {
        if (lt__grow((void **)&r->streams, &r->streams_cap, r->nstreams + 1,
                     sizeof *r->streams) < 0)
            return NULL;
        lt__rstream *s = calloc(1, sizeof *s);
        if (!s) return NULL;
        s->info.process = p->info.index;
        s->info.index = t;
        s->info.name = "";
        s->first_blk = s->last_blk = s->blk = s->next_blk = LT__NONE;
        p->threads[t - 1] = s;
        r->streams[r->nstreams++] = s;
    }
    return p->threads[t - 1];
}

/* ---- Header ----------------------------------------------------------- */

/* A file cut inside its header (the part present agrees with a header) is
 * a trace with no complete unit, like any cut file. Returns 1 for such a
 * file (the version read when present), else 0. */
static int lt__header_cut(lt_reader *r, const uint8_t *h, size_t have, uint64_t *body_off) {
    static const uint8_t magic[4] = {0x50, 0x2A, 0x4D, 0x18};
    size_t n = have < 4 ? have : 4;
    if (memcmp(h, magic, n) != 0) return 0;
    if (have > 8 && memcmp(h + 8, LT__FILE_MAGIC, have - 8 < 8 ? have - 8 : 8) != 0)
        return 0;
    if (have >= 20) {
        r->info.major = lt__rd16(h + 16);
        r->info.minor = lt__rd16(h + 18);
    }
    r->info.creator = "";
    *body_off = 0; /* the scan meets the cut header: every byte ignored */
    return 1;
}

static int lt__read_header(lt_reader *r, uint64_t *body_off) {
    uint8_t h[20];
    uint64_t size = r->info.file_size;
    if (size == 0) return lt__fail(r, LT_EFORMAT, "not a .tracy file (empty)");
    size_t have = size < sizeof h ? (size_t)size : sizeof h;
    int rc = lt__pread_all(r->fd, h, have, 0);
    if (rc < 0) return lt__fail(r, rc, "read error: %s", lt_strerror(rc));
    uint32_t cs = have >= 8 ? lt__rd32(h + 4) : 0;
    if (have < 8 || (cs >= 8 + 24 && cs <= (1u << 20) && 8 + (uint64_t)cs > size)) {
        if (lt__header_cut(r, h, have, body_off)) return 0;
        if (have < 8) return lt__fail(r, LT_EFORMAT, "not a .tracy file (too short)");
    }
    if (lt__rd32(h) != LT__MAGIC_HEADER)
        return lt__fail(r, LT_EFORMAT, "not a .tracy file (bad magic)");
    if (cs < 8 + 24)
        return lt__fail(r, LT_EFORMAT, "not a .tracy file (header too short)");
    if (cs > (1u << 20))
        return lt__fail(r, LT_ECORRUPT, "file header size %u out of range", cs);
    if (8 + (uint64_t)cs > size)
        return lt__fail(r, LT_EFORMAT, "not a .tracy file (bad header magic)");
    uint8_t *c = malloc(cs);
    if (!c) return lt__fail(r, LT_ENOMEM, "out of memory");
    rc = lt__pread_all(r->fd, c, cs, 8);
    if (rc < 0) {
        free(c);
        return lt__fail(r, rc, "read error: %s", lt_strerror(rc));
    }
    if (memcmp(c, LT__FILE_MAGIC, 8) != 0) {
        free(c);
        return lt__fail(r, LT_EFORMAT, "not a .tracy file (bad header magic)");
    }
    r->info.major = lt__rd16(c + 8);
    r->info.minor = lt__rd16(c + 10);
    r->info.created_wall_ns = lt__rd64(c + 16);
    const uint8_t *q = c + 32;
    const char *cr;
    size_t crl;
    if (r->info.major > LT_FORMAT_MAJOR) {
        rc = lt__fail(r, LT_EVERSION, "file format version %u.%u is newer than "
                      "this reader (%u.%u)", r->info.major, r->info.minor,
                      LT_FORMAT_MAJOR, LT_FORMAT_MINOR);
    } else if (r->info.major < LT_FORMAT_MAJOR) {
        rc = lt__fail(r, LT_EFORMAT, "unsupported file format version %u.%u",
                      r->info.major, r->info.minor);
    } else if (lt__get_str(&q, c + cs, &cr, &crl) < 0 || !lt__utf8_valid(cr, crl)) {
        rc = lt__fail(r, LT_ECORRUPT, "corrupt file header (creator)");
    } else if (!(r->info.creator = lt__arena_str(&r->arena, cr, crl))) {
        rc = lt__fail(r, LT_ENOMEM, "out of memory");
    }
    free(c);
    *body_off = 8 + (uint64_t)cs;
    return rc;
}

/* ---- Descriptor scan -------------------------------------------------- */

static int lt__check_desc(lt_reader *r, lt__blk *b) {
    uint64_t off = b->off;
    if (b->kind == 0) return lt__corrupt(r, off, "descriptor kind 0");
    /* Kinds 4..15 have no meaning: a changed kind byte, not a future
     * minor version (those use 16 and above, see FORMAT.md). */
    if (b->kind > LT_BLOCK_STATS && b->kind < LT__KIND_SKIPPABLE)
        return lt__corrupt(r, off, "unknown unit kind");
    if (b->raw > LT_MAX_BLOCK_RAW) return lt__corrupt(r, off, "raw_size out of range");
    if (b->comp > lt__comp_limit(b->raw))
        return lt__corrupt(r, off, "comp_size out of range");
    if (b->kind == LT_BLOCK_CUT) {
        if (b->process == 0 || b->process > r->max_index || b->thread == 0 ||
            b->thread > r->max_index || b->n_events || b->first_ts || b->last_ts)
            return lt__corrupt(r, off, "descriptor fields out of range");
        return 0;
    }
    if (b->kind > LT_BLOCK_STATS) return 0; /* 16 and above, skipped: no more checks */
    if (b->process > r->max_index || b->thread > r->max_index)
        return lt__corrupt(r, off, "process or thread index out of range");
    if (b->kind == LT_BLOCK_EVENTS) {
        if (b->thread == 0) return lt__corrupt(r, off, "event block of thread 0");
        if (b->n_events > b->raw / 2)
            return lt__corrupt(r, off, "n_events out of range");
        if (b->first_ts > b->last_ts)
            return lt__corrupt(r, off, "first_ts after last_ts");
        if (b->last_ts > LT_MAX_TS) return lt__corrupt(r, off, "timestamp out of range");
    } else {
        if (b->thread || b->n_events || b->first_ts || b->last_ts ||
            (b->kind == LT_BLOCK_STATS && b->process))
            return lt__corrupt(r, off, "descriptor fields out of range");
    }
    return 0;
}

static int lt__add_block(lt_reader *r, const lt__blk *b) {
    if (r->nblks == LT__NONE - 1) return lt__corrupt(r, b->off, "too many blocks");
    if (lt__grow((void **)&r->blks, &r->blks_cap, r->nblks + 1, sizeof *r->blks) < 0)
        return LT_ENOMEM;
    uint32_t i = r->nblks++;
    r->blks[i] = *b;
    r->blks[i].next = LT__NONE;
    r->info.n_blocks++;
    r->info.raw_bytes += b->raw;
    if (b->kind == LT_BLOCK_META) {
        lt__rproc *p = lt__get_proc(r, b->process);
        if (!p) return LT_ENOMEM;
        p->meta_bytes += b->raw;
    } else if (b->kind == LT_BLOCK_EVENTS) {
        lt__rproc *p = lt__get_proc(r, b->process);
        lt__rstream *s = p ? lt__get_stream(r, p, b->thread) : NULL;
        if (!s) return LT_ENOMEM;
        if (!p->has_events) r->zone_procs++;
        p->has_events = 1;
        if (s->last_blk == LT__NONE) s->first_blk = i;
        else r->blks[s->last_blk].next = i;
        s->last_blk = i;
        r->info.n_events += b->n_events;
        if (b->n_events) {
            if (!r->have_ts || b->first_ts < r->info.first_ts)
                r->info.first_ts = b->first_ts;
            r->have_ts = 1;
            if (b->last_ts > r->info.last_ts) r->info.last_ts = b->last_ts;
        }
    }
    return 0;
}

static int lt__parse_trailer(lt_reader *r, const uint8_t *c, uint32_t cs,
                             uint64_t off) {
    const uint8_t *q = c + 8, *end = c + cs - 16;
    uint64_t n, v;
    if (cs < 8 + 2 + 16 || memcmp(c, LT__TRAILER_MAGIC, 8) != 0 ||
        memcmp(c + cs - 8, LT__TRAILER_END, 8) != 0 || lt__rd64(c + cs - 16) != cs)
        return lt__corrupt(r, off, "malformed trailer");
    if (lt__get_varint(&q, end, &n) < 0 || n > (uint64_t)(end - q) / 11)
        return lt__corrupt(r, off, "malformed trailer");
    r->sums = calloc(n ? n : 1, sizeof *r->sums);
    if (!r->sums) return LT_ENOMEM;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t f[11];
        for (int k = 0; k < 11; k++)
            if (lt__get_varint(&q, end, &f[k]) < 0)
                return lt__corrupt(r, off, "malformed trailer");
        if (f[0] > UINT32_MAX || f[1] > UINT32_MAX)
            return lt__corrupt(r, off, "malformed trailer");
        r->sums[i] = (lt_stream_summary){(uint32_t)f[0], (uint32_t)f[1], f[2], f[3],
                                         f[4], f[5], f[6], f[7], f[8], f[9], f[10]};
    }
    r->nsums = (size_t)n;
    if (lt__get_varint(&q, end, &n) < 0 || n > (uint64_t)(end - q) / 2)
        return lt__corrupt(r, off, "malformed trailer");
    r->totals = calloc(n ? n : 1, sizeof *r->totals);
    if (!r->totals) return LT_ENOMEM;
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        if (lt__get_str(&q, end, &s, &len) < 0 || !lt__utf8_valid(s, len) ||
            lt__get_varint(&q, end, &v) < 0)
            return lt__corrupt(r, off, "malformed trailer");
        r->totals[i].name = lt__arena_str(&r->arena, s, len);
        if (!r->totals[i].name) return LT_ENOMEM;
        r->totals[i].value = v;
        r->ntotals++;
    }
    if (q != end) return lt__corrupt(r, off, "malformed trailer");
    return 0;
}

static int lt__read_trailer(lt_reader *r, uint64_t off, uint32_t cs) {
    if (cs > (64u << 20)) return lt__corrupt(r, off, "trailer size out of range");
    if (off + 8 + cs != r->info.file_size)
        return lt__corrupt(r, off, "data after the trailer");
    uint8_t *c = malloc(cs ? cs : 1);
    if (!c) return LT_ENOMEM;
    int rc = lt__pread_all(r->fd, c, cs, off + 8);
    if (rc == 0) rc = lt__parse_trailer(r, c, cs, off);
    free(c);
    if (rc == 0) r->info.complete = 1;
    return rc;
}

static int lt__scan(lt_reader *r, uint64_t off) {
    uint64_t size = r->info.file_size;
    uint8_t d[LT__UNIT_OVERHEAD];
    while (off < size) {
        uint64_t left = size - off;
        if (left < 8) break;
        int rc = lt__pread_all(r->fd, d, left < sizeof d ? (size_t)left : sizeof d, off);
        if (rc < 0) return lt__fail(r, rc, "read error: %s", lt_strerror(rc));
        uint32_t magic = lt__rd32(d), cs = lt__rd32(d + 4);
        if (magic == LT__MAGIC_DESC) {
            if (cs != LT__DESC_SIZE) return lt__corrupt(r, off, "descriptor size is not 40");
            if (left < LT__UNIT_OVERHEAD) break;
            lt__blk b = {.off = off, .kind = d[8], .process = lt__rd32(d + 12),
                         .thread = lt__rd32(d + 16), .raw = lt__rd32(d + 20),
                         .comp = lt__rd32(d + 24), .n_events = lt__rd32(d + 28),
                         .first_ts = lt__rd64(d + 32), .last_ts = lt__rd64(d + 40)};
            if ((rc = lt__check_desc(r, &b)) < 0) return rc;
            if (left - LT__UNIT_OVERHEAD < b.comp) break;
            if ((b.kind <= LT_BLOCK_STATS || b.kind == LT_BLOCK_CUT) &&
                (rc = lt__add_block(r, &b)) < 0)
                return rc == LT_ENOMEM ? lt__fail(r, rc, "out of memory") : rc;
            off += LT__UNIT_OVERHEAD + b.comp;
            r->info.body_bytes += LT__UNIT_OVERHEAD + b.comp;
        } else if (magic == LT__MAGIC_TRAILER) {
            if (left - 8 < cs) break;
            rc = lt__read_trailer(r, off, cs);
            if (rc < 0) return rc == LT_ENOMEM ? lt__fail(r, rc, "out of memory") : rc;
            return 0;
        } else if ((magic & 0xFFFFFFF0u) == LT__MAGIC_HEADER) {
            if (left - 8 < cs) break; /* another skippable frame: skipped */
            off += 8 + (uint64_t)cs;
        } else {
            return lt__corrupt(r, off, "no frame starts here");
        }
    }
    r->info.bytes_ignored = size - off;
    return 0;
}

/* ---- Metadata and statistics ----------------------------------------- */

/* Definition tables keep their capacity apart from their highest id: one
 * growth per doubling, not one per new id (which copied and cleared the
 * table each time: quadratic in the number of definitions). */
static int lt__set_name(lt_reader *r, const char ***tab, uint32_t *n, uint32_t *cap,
                        uint64_t id, lt__str s) {
    if (lt__grow((void **)tab, cap, (uint32_t)id, sizeof **tab) < 0) return LT_ENOMEM;
    if (id > *n) *n = (uint32_t)id;
    (*tab)[id - 1] = lt__arena_str(&r->arena, s.s, s.len);
    return (*tab)[id - 1] ? 0 : LT_ENOMEM;
}

static int lt__proc_info(lt_reader *r, lt__rproc *p, const lt__meta_rec *m) {
    lt__arena *a = &r->arena;
    const char **argv = (const char **)lt__arena_alloc(a, (m->argc + 1) * sizeof *argv);
    if (!argv) return LT_ENOMEM;
    const uint8_t *q = m->argv;
    for (uint32_t i = 0; i < m->argc; i++) {
        const char *s;
        size_t len;
        (void)lt__get_str(&q, q + 10 + LT_MAX_STRING, &s, &len); /* checked */
        if (!(argv[i] = lt__arena_str(a, s, len))) return LT_ENOMEM;
    }
    argv[m->argc] = NULL;
    p->info.has_info = 1;
    p->info.pid = m->pid;
    p->info.rank = m->rank;
    p->info.argc = m->argc;
    p->info.argv = argv;
    p->info.anchor_mono_ns = m->anchor_mono_ns;
    p->info.anchor_wall_ns = m->anchor_wall_ns;
    if (!(p->info.hostname = lt__arena_str(a, m->hostname.s, m->hostname.len)) ||
        !(p->info.program = lt__arena_str(a, m->program.s, m->program.len)) ||
        !(p->info.client = lt__arena_str(a, m->client.s, m->client.len)))
        return LT_ENOMEM;
    return 0;
}

static int lt__meta_record(lt_reader *r, lt__rproc *p, const lt__meta_rec *m,
                           uint64_t off) {
    if (m->id > p->meta_bytes) return lt__corrupt(r, off, "identifier out of range");
    switch (m->tag) {
    case LT_TAG_PROC_INFO:
        return lt__proc_info(r, p, m);
    case LT_TAG_THREAD_INFO: {
        lt__rstream *s = lt__get_stream(r, p, (uint32_t)m->id);
        if (!s) return LT_ENOMEM;
        s->info.tid = m->tid;
        s->info.name = lt__arena_str(&r->arena, m->name.s, m->name.len);
        return s->info.name ? 0 : LT_ENOMEM;
    }
    case LT_TAG_LOC_DEF: {
        if (lt__grow((void **)&p->locs, &p->locs_cap, (uint32_t)m->id, sizeof *p->locs) < 0)
            return LT_ENOMEM;
        if (m->id > p->nlocs) p->nlocs = (uint32_t)m->id;
        lt_loc *l = (lt_loc *)lt__arena_alloc(&r->arena, sizeof *l);
        if (!l) return LT_ENOMEM;
        l->id = (uint32_t)m->id;
        l->kind = m->kind;
        l->line = (uint32_t)m->line;
        l->name = lt__arena_str(&r->arena, m->name.s, m->name.len);
        l->file = lt__arena_str(&r->arena, m->file.s, m->file.len);
        p->locs[m->id - 1] = l;
        return l->name && l->file ? 0 : LT_ENOMEM;
    }
    case LT_TAG_PLOT_DEF:
        return lt__set_name(r, &p->plots, &p->nplots, &p->plots_cap, m->id, m->name);
    case LT_TAG_FRAME_DEF:
        return lt__set_name(r, &p->frames, &p->nframes, &p->frames_cap, m->id, m->name);
    case LT_TAG_PROC_END:
        p->info.status = m->kind;
        p->info.end_ts = m->ts;
        p->info.events_received = m->v[0];
        p->info.events_sent = m->v[1];
        p->info.events_lost = m->v[2];
        p->info.end_reason = lt__arena_str(&r->arena, m->name.s, m->name.len);
        return p->info.end_reason ? 0 : LT_ENOMEM;
    }
    return 0;
}

static int lt__stat_record(lt_reader *r, const lt__meta_rec *m) {
    size_t i;
    for (i = 0; i < r->nstats; i++)
        if (strlen(r->stats[i].name) == m->name.len &&
            memcmp(r->stats[i].name, m->name.s, m->name.len) == 0)
            break;
    if (i == r->nstats) {
        lt_stat *st = realloc(r->stats, (r->nstats + 1) * sizeof *st);
        if (!st) return LT_ENOMEM;
        r->stats = st;
        r->nstats++;
        if (!(st[i].name = lt__arena_str(&r->arena, m->name.s, m->name.len)))
            return LT_ENOMEM;
    }
    r->stats[i].severity = m->kind;
    r->stats[i].value = m->v[0];
    r->stats[i].description = lt__arena_str(&r->arena, m->file.s, m->file.len);
    return r->stats[i].description ? 0 : LT_ENOMEM;
}

/* A cut block (format 1.1): how many of the stream's first zones were
 * already open where the recorded window starts. */
static int lt__cut_block(lt_reader *r, const lt__blk *b, const uint8_t *p,
                         const uint8_t *end) {
    uint64_t ts, depth;
    if (p >= end || *p++ != LT_TAG_CUT_OPEN || lt__get_varint(&p, end, &ts) < 0 ||
        lt__get_varint(&p, end, &depth) < 0 || p != end || depth > LT_MAX_DEPTH)
        return lt__corrupt(r, b->off, "malformed cut block");
    lt__rproc *proc = lt__get_proc(r, b->process);
    lt__rstream *s = proc ? lt__get_stream(r, proc, b->thread) : NULL;
    if (!s) return LT_ENOMEM;
    s->cut_depth = (uint32_t)depth;
    return 0;
}

static int lt__decode_meta(lt_reader *r) {
    uint8_t *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (uint32_t i = 0; i < r->nblks && rc == 0; i++) {
        const lt__blk *b = &r->blks[i];
        if (b->kind != LT_BLOCK_META && b->kind != LT_BLOCK_STATS &&
            b->kind != LT_BLOCK_CUT)
            continue;
        const uint8_t *p, *end;
        uint64_t base;
        if ((rc = lt__load_block(r, b, &buf, &cap, &p, &base)) < 0) break;
        end = buf + b->raw;
        if (b->kind == LT_BLOCK_CUT) {
            rc = base ? lt__corrupt(r, b->off, "base_ts of a cut block")
                      : lt__cut_block(r, b, p, end);
            continue;
        }
        if (base != 0) rc = lt__corrupt(r, b->off, "base_ts of a metadata block");
        uint32_t allowed = b->kind == LT_BLOCK_STATS
                               ? LT__META_BIT(LT_TAG_STAT)
                               : 0x3Fu; /* PROC_INFO .. PROC_END */
        lt__rproc *proc = b->kind == LT_BLOCK_META ? lt__get_proc(r, b->process) : NULL;
        while (rc == 0 && p < end) {
            lt__meta_rec m;
            const char *why;
            if (lt__next_meta(&p, end, allowed, &m, &why) < 0)
                rc = lt__corrupt(r, b->off, why);
            else if (m.tag == LT_TAG_STAT)
                rc = lt__stat_record(r, &m);
            else
                rc = lt__meta_record(r, proc, &m, b->off);
            /* Names are kept for the reader's life: bounded like blocks. */
            if (rc == 0 && r->arena.total + r->raw_held > lt__raw_budget(r))
                rc = lt__corrupt(r, b->off, "metadata larger than a file of this "
                                            "size can hold");
        }
    }
    free(buf);
    r->raw_held -= cap;
    if (rc == LT_ENOMEM) lt__fail(r, rc, "out of memory");
    return rc;
}

/* ---- Block loading ---------------------------------------------------- */

int lt__load_block(lt_reader *r, const lt__blk *b, uint8_t **buf, size_t *cap,
                   const uint8_t **rec, uint64_t *base_ts) {
    if (b->comp > r->cbuf_cap) {
        uint8_t *c = realloc(r->cbuf, b->comp);
        if (!c) return lt__fail(r, LT_ENOMEM, "out of memory");
        r->cbuf = c;
        r->cbuf_cap = b->comp;
    }
    if (b->raw > *cap || !*buf) {
        /* Sized to the block, not to a guess: a file of thousands of streams
         * with small blocks holds little. One block per stream is held while
         * merging: a small file of many streams declaring huge, highly
         * compressible blocks must not make the reader allocate without
         * bound. */
        size_t n = b->raw ? b->raw : 1;
        if (r->raw_held - *cap + n > lt__raw_budget(r) &&
            lt__make_room(r, n - *cap, buf) < 0)
            return lt__corrupt(r, b->off, "blocks declare more data than a file of "
                                          "this size can hold at once");
        uint8_t *c = realloc(*buf, n);
        if (!c) return lt__fail(r, LT_ENOMEM, "out of memory");
        r->raw_held = r->raw_held - *cap + n;
        *buf = c;
        *cap = n;
    }
    int rc = lt__pread_all(r->fd, r->cbuf, b->comp, b->off + LT__UNIT_OVERHEAD);
    if (rc < 0) return lt__fail(r, rc, "read error at offset %" PRIu64 ": %s",
                                b->off, lt_strerror(rc));
    const uint8_t *c = r->cbuf;
    if (b->comp < 6 || lt__rd32(c) != 0xFD2FB528u)
        return lt__corrupt(r, b->off, "data is not a zstd frame");
    if (!(c[4] & 0x04)) return lt__corrupt(r, b->off, "zstd frame without checksum");
    unsigned long long fcs = ZSTD_getFrameContentSize(c, b->comp);
    if (fcs != b->raw) return lt__corrupt(r, b->off, "frame content size differs from raw_size");
    size_t fs = ZSTD_findFrameCompressedSize(c, b->comp);
    if (ZSTD_isError(fs) || fs != b->comp)
        return lt__corrupt(r, b->off, "frame size differs from comp_size");
    size_t n = ZSTD_decompressDCtx(r->dctx, *buf, b->raw, c, b->comp);
    if (ZSTD_isError(n)) return lt__corrupt(r, b->off, ZSTD_getErrorName(n));
    if (n != b->raw) return lt__corrupt(r, b->off, "decompressed size differs from raw_size");
    const uint8_t *p = *buf, *end = *buf + n;
    uint64_t proc, thr, base;
    if (p >= end || *p++ != b->kind || lt__get_varint(&p, end, &proc) < 0 ||
        lt__get_varint(&p, end, &thr) < 0 || lt__get_varint(&p, end, &base) < 0 ||
        proc != b->process || thr != b->thread)
        return lt__corrupt(r, b->off, "block header does not match its descriptor");
    if (base > LT_MAX_TS) return lt__corrupt(r, b->off, "timestamp out of range");
    *rec = p;
    *base_ts = base;
    return 0;
}

/* ---- Open / free ------------------------------------------------------ */

int lt_reader_open(lt_reader **out, const char *path, char *detail,
                   size_t detail_len) {
    int rc;
    uint64_t body = 0;
    struct stat st;
    *out = NULL;
    lt_reader *r = calloc(1, sizeof *r);
    if (!r) {
        if (detail && detail_len) snprintf(detail, detail_len, "out of memory");
        return LT_ENOMEM;
    }
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        rc = lt__fail(r, LT_EOPEN, "%s: %s", path, strerror(errno));
        goto err;
    }
    if (fstat(r->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        rc = lt__fail(r, LT_EOPEN, "%s: not a regular file", path);
        goto err;
    }
    r->info.file_size = (uint64_t)st.st_size;
    r->max_index = r->info.file_size / LT__UNIT_OVERHEAD + 1;
    r->dctx = ZSTD_createDCtx();
    if (!r->dctx) {
        rc = lt__fail(r, LT_ENOMEM, "out of memory");
        goto err;
    }
    if ((rc = lt__read_header(r, &body)) < 0) goto err;
    if ((rc = lt__scan(r, body)) < 0) goto err;
    if ((rc = lt__decode_meta(r)) < 0) goto err;
    /* A trailer that contradicts the descriptors: every reader refuses the
     * file (lt_reader_sound, lt_reader_next), tracy-info after its summary. */
    if ((rc = lt__check_trailer(r)) == LT_ECORRUPT) {
        memcpy(r->unsound_msg, r->errmsg, sizeof r->unsound_msg);
        r->unsound = LT_ECORRUPT;
    } else if (rc < 0) {
        lt__fail(r, rc, "out of memory");
        goto err;
    }
    for (size_t i = 0; i < r->ntotals; i++) /* trailer values are final */
        for (size_t k = 0; k < r->nstats; k++)
            if (strcmp(r->stats[k].name, r->totals[i].name) == 0)
                r->stats[k].value = r->totals[i].value;
    r->errmsg[0] = '\0';
    *out = r;
    return 0;
err:
    if (detail && detail_len) snprintf(detail, detail_len, "%s", r->errmsg);
    lt_reader_free(r);
    return rc;
}

void lt_reader_free(lt_reader *r) {
    if (!r) return;
    lt__merge_reset(r);
    for (uint32_t i = 0; i < r->nstreams; i++) {
        lt__resume_free(r->streams[i]);
        free(r->streams[i]);
    }
    for (uint32_t i = 0; i < r->nprocs; i++) {
        lt__rproc *p = r->procs[i];
        if (!p) continue;
        free(p->locs);
        free(p->plots);
        free(p->frames);
        free(p->threads);
        free(p);
    }
    free(r->streams);
    free(r->procs);
    free(r->blks);
    free(r->stats);
    free(r->totals);
    free(r->sums);
    free(r->cbuf);
    free(r->heap);
    ZSTD_freeDCtx(r->dctx);
    lt__arena_free(&r->arena);
    if (r->fd >= 0) close(r->fd);
    free(r);
}

/* ---- Look-ups --------------------------------------------------------- */

const lt_file_info *lt_reader_info(const lt_reader *r) { return &r->info; }

int lt_reader_sound(lt_reader *r) {
    if (r->unsound) memcpy(r->errmsg, r->unsound_msg, sizeof r->errmsg);
    return r->unsound;
}

const char *lt_reader_error(const lt_reader *r) {
    return r->errmsg[0] ? r->errmsg : lt_strerror(r->err);
}

uint32_t lt_reader_nprocesses(const lt_reader *r) {
    return r->nprocs ? r->nprocs - 1 : 0;
}

const lt_process *lt_reader_process(const lt_reader *r, uint32_t process) {
    return process < r->nprocs && r->procs[process] ? &r->procs[process]->info
                                                    : NULL;
}

static const lt__rproc *lt__proc_c(const lt_reader *r, uint32_t process) {
    return process < r->nprocs ? r->procs[process] : NULL;
}

uint32_t lt_reader_nthreads(const lt_reader *r, uint32_t process) {
    const lt__rproc *p = lt__proc_c(r, process);
    return p ? p->nthreads : 0;
}

const lt_thread *lt_reader_thread(const lt_reader *r, uint32_t process,
                                  uint32_t thread) {
    const lt__rproc *p = lt__proc_c(r, process);
    if (!p || thread == 0 || thread > p->nthreads || !p->threads[thread - 1])
        return NULL;
    return &p->threads[thread - 1]->info;
}

const lt_loc *lt_reader_loc(const lt_reader *r, uint32_t process, uint32_t loc) {
    const lt__rproc *p = lt__proc_c(r, process);
    return p && loc >= 1 && loc <= p->nlocs ? p->locs[loc - 1] : NULL;
}

const char *lt_reader_plot_name(const lt_reader *r, uint32_t process,
                                uint32_t plot) {
    const lt__rproc *p = lt__proc_c(r, process);
    return p && plot >= 1 && plot <= p->nplots ? p->plots[plot - 1] : NULL;
}

const char *lt_reader_frame_name(const lt_reader *r, uint32_t process,
                                 uint32_t frame) {
    const lt__rproc *p = lt__proc_c(r, process);
    return p && frame >= 1 && frame <= p->nframes ? p->frames[frame - 1] : NULL;
}

size_t lt_reader_nstats(const lt_reader *r) { return r->nstats; }

const lt_stat *lt_reader_stat(const lt_reader *r, size_t i) {
    return i < r->nstats ? &r->stats[i] : NULL;
}

int lt_reader_total(const lt_reader *r, const char *name, uint64_t *value) {
    for (size_t i = 0; i < r->ntotals; i++)
        if (strcmp(r->totals[i].name, name) == 0) {
            *value = r->totals[i].value;
            return 1;
        }
    for (size_t i = 0; i < r->nstats; i++)
        if (strcmp(r->stats[i].name, name) == 0) {
            *value = r->stats[i].value;
            return 1;
        }
    return 0;
}
