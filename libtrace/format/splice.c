/* splice.c -- block-level copy of traces into a new trace: renumbering,
 * clock shifts, windows (see splice.h). Event records are copied byte for
 * byte; only block headers, a few metadata records and the zones open at a
 * window's start are written anew. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "reader_int.h"
#include "splice.h"
#include "zstack.h"

typedef struct sp_ostream {
    uint32_t proc, thread;    /* output indices */
    int64_t shift;
    lt__stream_state st;      /* what was written, in the input's time */
    int started, done;        /* window reached / passed */
    lt__zstack open;          /* open zones before the window starts */
} sp_ostream;

typedef struct sp_input {
    lt_splice_input in;
    uint32_t nprocs;
    uint32_t *proc_out;
    int64_t *proc_shift;
    sp_ostream ***threads;    /* [process][thread - 1], NULL = dropped */
    uint32_t *nthreads;
    uint32_t next;            /* next block of r->blks */
    uint8_t *raw;
    size_t raw_cap;
} sp_input;

typedef struct sp_stat {
    char *name, *desc;
    uint8_t severity;
    uint64_t value;
    int extra;                /* added by the caller, not summed */
} sp_stat;

struct lt_splice {
    lt_writer *w;
    sp_input *inputs;
    size_t ninputs;
    sp_ostream **streams;
    size_t nstreams;
    uint32_t nprocs;          /* output processes */
    sp_stat *stats;
    size_t nstats;
    uint8_t *out;             /* one block being assembled */
    size_t out_len, out_cap;
    uint64_t in_events, written, synthetic;
    char err[320];
};

static int sp_fail(lt_splice *s, int rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    return rc;
}

static int sp_room(lt_splice *s, size_t more) {
    if (s->out_len + more <= s->out_cap) return 0;
    size_t cap = s->out_cap ? s->out_cap : LT_BLOCK_TARGET * 2;
    while (cap < s->out_len + more) cap *= 2;
    uint8_t *p = realloc(s->out, cap);
    if (!p) return LT_ENOMEM;
    s->out = p;
    s->out_cap = cap;
    return 0;
}

/* ---- Open / add ---------------------------------------------------------- */

int lt_splice_open(lt_splice **out, const char *path, int flags,
                   const char *creator, int level) {
    *out = NULL;
    lt_splice *s = calloc(1, sizeof *s);
    if (!s) return LT_ENOMEM;
    int rc = lt_writer_open(&s->w, path, flags | LT_WRITE_CUTS, creator, level);
    if (rc < 0) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

static sp_ostream *sp_new_stream(lt_splice *s, uint32_t proc, uint32_t thread,
                                 int64_t shift) {
    sp_ostream **n = realloc(s->streams, (s->nstreams + 1) * sizeof *n);
    if (!n) return NULL;
    s->streams = n;
    sp_ostream *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->proc = proc;
    o->thread = thread;
    o->shift = shift;
    s->streams[s->nstreams++] = o;
    return lt__writer_stream(s->w, proc, thread) == 0 ? o : NULL;
}

static int sp_map_threads(lt_splice *s, sp_input *x, uint32_t p) {
    lt_reader *r = x->in.r;
    uint32_t n = lt_reader_nthreads(r, p), k = 0;
    x->nthreads[p] = n;
    x->threads[p] = calloc(n ? n : 1, sizeof *x->threads[p]);
    if (!x->threads[p]) return LT_ENOMEM;
    if (!x->proc_out[p]) return 0;
    for (uint32_t t = 1; t <= n; t++) {
        if (x->in.keep_thread && !x->in.keep_thread(x->in.ctx, p, t)) continue;
        x->threads[p][t - 1] = sp_new_stream(s, x->proc_out[p], ++k, x->proc_shift[p]);
        if (!x->threads[p][t - 1]) return LT_ENOMEM;
    }
    return 0;
}

int lt_splice_add(lt_splice *s, const lt_splice_input *in) {
    sp_input *xs = realloc(s->inputs, (s->ninputs + 1) * sizeof *xs);
    if (!xs) return LT_ENOMEM;
    s->inputs = xs;
    sp_input *x = &xs[s->ninputs];
    memset(x, 0, sizeof *x);
    x->in = *in;
    x->nprocs = lt_reader_nprocesses(in->r);
    size_t n = (size_t)x->nprocs + 1;
    x->proc_out = calloc(n, sizeof *x->proc_out);
    x->proc_shift = calloc(n, sizeof *x->proc_shift);
    x->threads = calloc(n, sizeof *x->threads);
    x->nthreads = calloc(n, sizeof *x->nthreads);
    s->ninputs++; /* freed by close from here on */
    if (!x->proc_out || !x->proc_shift || !x->threads || !x->nthreads) return LT_ENOMEM;
    for (uint32_t p = 1; p <= x->nprocs; p++) {
        x->proc_out[p] = in->proc_out[p];
        x->proc_shift[p] = in->proc_shift[p];
        if (x->proc_out[p] > s->nprocs) s->nprocs = x->proc_out[p];
        int rc = sp_map_threads(s, x, p);
        if (rc < 0) return rc;
    }
    s->in_events += lt_reader_info(in->r)->n_events;
    return 0;
}

/* ---- Writing blocks ------------------------------------------------------ */

static int sp_write_failed(lt_splice *s, int rc) {
    return sp_fail(s, rc, "cannot write the output: %s", lt_strerror(rc));
}

static int sp_write(lt_splice *s, const lt_block_desc *d, const uint8_t *raw, size_t len) {
    int rc = lt_writer_block(s->w, d, raw, len);
    return rc < 0 ? sp_write_failed(s, rc) : 0;
}

/* Zones open at `ts` (output time) written as cut zones (lt__writer_cut). */
static int sp_cut_zones(lt_splice *s, const sp_ostream *o, uint64_t ts, uint64_t depth,
                        const lt__zstack *open) {
    int rc = lt__writer_cut(s->w, o->proc, o->thread, ts, depth, open);
    if (rc == LT_ENOMEM) return sp_fail(s, rc, "out of memory");
    return rc < 0 ? sp_write_failed(s, rc) : 0;
}

static uint64_t sp_ts(const sp_ostream *o, uint64_t ts) {
    return (uint64_t)((int64_t)ts + o->shift);
}

/* The stream reaches its window: zones still open become cut zones. */
static int sp_start(lt_splice *s, sp_ostream *o, uint64_t from) {
    uint32_t depth = o->open.depth;
    o->started = 1;
    if (depth == 0) return 0;
    int rc = sp_cut_zones(s, o, sp_ts(o, from), depth, &o->open);
    if (rc < 0) return rc;
    o->st.events += depth;
    o->st.zones += depth;
    o->st.depth = depth;
    if (!o->st.have_ts) o->st.first_ts = from;
    o->st.have_ts = 1;
    o->st.last_ts = from;
    s->written += depth;
    s->synthetic += depth;
    lt__zstack_free(&o->open);
    return 0;
}

/* ---- Event blocks -------------------------------------------------------- */

static int sp_corrupt(lt_splice *s, const sp_input *x, const lt__blk *b,
                      const char *why) {
    return sp_fail(s, LT_ECORRUPT, "%s: corrupt unit at file offset %" PRIu64 ": %s",
                   x->in.name, b->off, why);
}

/* Validates and counts records [p, end) of the output stream and writes them
 * as one block based at `base` (input time). `frame` is the input's
 * compressed unit when it can be copied as it is, else NULL. */
static int sp_emit(lt_splice *s, sp_input *x, const lt__blk *b, sp_ostream *o,
                   uint8_t *p, uint8_t *end, uint64_t base, const void *frame) {
    const lt__rproc *rp = x->in.r->procs[b->process];
    lt__scan_limits lim = {.max_loc = rp->nlocs, .max_plot = rp->nplots,
                           .max_frame = rp->nframes, .allow_aborted = 1};
    const lt__stream_state before = o->st;
    const char *why;
    size_t off;
    o->st.last_ts = base;
    if (lt__scan_events(p, (size_t)(end - p), &o->st, &lim, &why, &off) < 0)
        return sp_corrupt(s, x, b, why);
    lt_block_desc d = {.kind = LT_BLOCK_EVENTS, .process = o->proc, .thread = o->thread,
                       .last_ts = sp_ts(o, o->st.last_ts)};
    lt__desc_counts(&d, &before, &o->st);
    s->written += d.n_events;
    if (d.n_events == 0) return 0;
    /* first_ts: the first timed record of the range */
    const uint8_t *q = p;
    uint64_t first = base, dt;
    while (q < end && (*q == LT_TAG_ZONE_TEXT || *q == LT_TAG_ZONE_NAME)) {
        const char *str;
        size_t len;
        q++;
        (void)lt__get_str(&q, end, &str, &len); /* validated above */
    }
    if (q < end) {
        q++;
        (void)lt__get_varint(&q, end, &dt);
        first += dt;
    }
    d.first_ts = sp_ts(o, first);
    if (frame) {
        int rc = lt__writer_frame(s->w, &d, b->raw, frame, b->comp);
        return rc < 0 ? sp_write_failed(s, rc) : 0;
    }
    uint8_t hdr[32];
    size_t hl = lt_block_header(hdr, LT_BLOCK_EVENTS, o->proc, o->thread, sp_ts(o, base));
    if ((size_t)(p - x->raw) >= hl) { /* room in front: no copy */
        memcpy(p - hl, hdr, hl);
        return sp_write(s, &d, p - hl, (size_t)(end - p) + hl);
    }
    s->out_len = 0;
    if (sp_room(s, hl + (size_t)(end - p)) < 0) return sp_fail(s, LT_ENOMEM, "out of memory");
    memcpy(s->out, hdr, hl);
    memcpy(s->out + hl, p, (size_t)(end - p));
    return sp_write(s, &d, s->out, hl + (size_t)(end - p));
}

/* A block that crosses the window's start or end: records before `from`
 * update the open zones, the ones within are copied, the first one after
 * `to` ends the stream. */
static int sp_window_block(lt_splice *s, sp_input *x, const lt__blk *b,
                           sp_ostream *o, uint8_t *rec, uint8_t *end, uint64_t base) {
    uint64_t ts = base, from = x->in.from, to = x->in.to;
    uint8_t *p = rec, *copy = NULL;
    uint64_t copy_base = 0;
    while (p < end) {
        uint8_t *r0 = p, tag;
        uint64_t prev = ts, loc;
        const char *str = NULL, *why = "truncated or malformed record";
        size_t len = 0;
        int timed = lt__rec_next((const uint8_t **)&p, end, &tag, &ts, &loc, &str, &len);
        if (timed < 0) return sp_corrupt(s, x, b, why);
        if (!o->started) {
            if (!timed || ts < from) {
                int rc = lt__zstack_apply(&o->open, tag, loc, str, len, &why);
                if (rc == LT_ENOMEM) return sp_fail(s, rc, "out of memory");
                if (rc < 0) return sp_corrupt(s, x, b, why);
                continue;
            }
            int rc = sp_start(s, o, from);
            if (rc < 0) return rc;
        }
        if (timed && ts > to) {
            o->done = 1;
            end = r0;
            break;
        }
        if (!copy) {
            copy = r0;
            copy_base = prev;
        }
    }
    return copy ? sp_emit(s, x, b, o, copy, end, copy_base, NULL) : 0;
}

static int sp_events(lt_splice *s, sp_input *x, const lt__blk *b) {
    sp_ostream *o = b->thread <= x->nthreads[b->process]
                        ? x->threads[b->process][b->thread - 1] : NULL;
    if (!o || o->done) return 0;
    uint64_t from = x->in.from, to = x->in.to;
    if (b->n_events && b->first_ts > to) { /* past the window */
        int rc = o->started ? 0 : sp_start(s, o, from);
        o->done = 1;
        return rc;
    }
    const uint8_t *rec;
    uint64_t base;
    int rc = lt__load_block(x->in.r, b, &x->raw, &x->raw_cap, &rec, &base);
    if (rc < 0)
        return sp_fail(s, rc, "%s: %s", x->in.name, lt_reader_error(x->in.r));
    uint8_t *p = (uint8_t *)rec, *end = x->raw + b->raw;
    if (!o->started && b->n_events && b->first_ts >= from &&
        (rc = sp_start(s, o, from)) < 0)
        return rc;
    if (!o->started || b->last_ts > to)
        return sp_window_block(s, x, b, o, p, end, base);
    int same = o->proc == b->process && o->thread == b->thread && o->shift == 0;
    return sp_emit(s, x, b, o, p, end, base, same ? x->in.r->cbuf : NULL);
}

/* ---- Metadata ------------------------------------------------------------ */

static uint8_t *sp_put_proc_info(uint8_t *p, const lt__meta_rec *m, int64_t shift) {
    *p++ = LT_TAG_PROC_INFO;
    p = lt__put_varint_(p, m->pid);
    p = lt__put_varint_(p, lt__zigzag(m->rank));
    p = lt__put_str(p, m->hostname.s, m->hostname.len);
    p = lt__put_str(p, m->program.s, m->program.len);
    p = lt__put_varint_(p, m->argc);
    const uint8_t *q = m->argv;
    for (uint32_t i = 0; i < m->argc; i++) {
        const char *a;
        size_t n;
        (void)lt__get_str(&q, q + 10 + LT_MAX_STRING, &a, &n); /* checked */
        p = lt__put_str(p, a, n);
    }
    uint64_t mono = m->anchor_mono_ns ? (uint64_t)((int64_t)m->anchor_mono_ns + shift) : 0;
    p = lt__put_varint_(p, mono);
    p = lt__put_varint_(p, m->anchor_wall_ns);
    return lt__put_str(p, m->client.s, m->client.len);
}

/* Copies one metadata record into the output block (rewritten where it
 * holds a timestamp or a thread index); records of dropped threads and the
 * end of a process after the window are left out. */
static int sp_meta_rec(lt_splice *s, sp_input *x, uint32_t proc,
                       const lt__meta_rec *m, const uint8_t *r0, const uint8_t *r1) {
    int64_t shift = x->proc_shift[proc];
    if (sp_room(s, (size_t)(r1 - r0) + 64) < 0) return LT_ENOMEM;
    uint8_t *p = s->out + s->out_len;
    switch (m->tag) {
    case LT_TAG_PROC_INFO:
        p = sp_put_proc_info(p, m, shift);
        break;
    case LT_TAG_THREAD_INFO: {
        sp_ostream *o = m->id <= x->nthreads[proc] ? x->threads[proc][m->id - 1] : NULL;
        if (!o) return 0;
        *p++ = LT_TAG_THREAD_INFO;
        p = lt__put_varint_(p, o->thread);
        p = lt__put_varint_(p, m->tid);
        p = lt__put_str(p, m->name.s, m->name.len);
        break;
    }
    case LT_TAG_PROC_END:
        if (m->ts > x->in.to) return 0;
        *p++ = LT_TAG_PROC_END;
        p = lt__put_varint_(p, (uint64_t)((int64_t)m->ts + shift));
        *p++ = m->kind;
        p = lt__put_str(p, m->name.s, m->name.len);
        for (int i = 0; i < 3; i++) p = lt__put_varint_(p, m->v[i]);
        break;
    default:
        memcpy(p, r0, (size_t)(r1 - r0));
        p += r1 - r0;
    }
    s->out_len = (size_t)(p - s->out);
    return 0;
}

static int sp_meta(lt_splice *s, sp_input *x, const lt__blk *b) {
    uint32_t proc = b->process;
    if (proc > x->nprocs || !x->proc_out[proc]) return 0;
    const uint8_t *p;
    uint64_t base;
    int rc = lt__load_block(x->in.r, b, &x->raw, &x->raw_cap, &p, &base);
    if (rc < 0) return sp_fail(s, rc, "%s: %s", x->in.name, lt_reader_error(x->in.r));
    const uint8_t *end = x->raw + b->raw;
    s->out_len = 0;
    if (sp_room(s, 32) < 0) return sp_fail(s, LT_ENOMEM, "out of memory");
    s->out_len = lt_block_header(s->out, LT_BLOCK_META, x->proc_out[proc], 0, 0);
    size_t hl = s->out_len;
    while (p < end) {
        const uint8_t *r0 = p;
        lt__meta_rec m;
        const char *why;
        if (lt__next_meta(&p, end, 0x3Fu, &m, &why) < 0) return sp_corrupt(s, x, b, why);
        if (sp_meta_rec(s, x, proc, &m, r0, p) < 0) return sp_fail(s, LT_ENOMEM, "out of memory");
    }
    if (s->out_len == hl) return 0;
    lt_block_desc d = {.kind = LT_BLOCK_META, .process = x->proc_out[proc]};
    return sp_write(s, &d, s->out, s->out_len);
}

/* A cut block of the input (it was itself cut or dumped by a flight
 * recorder): kept when the zones it marks lie in the window. */
static int sp_cut(lt_splice *s, sp_input *x, const lt__blk *b) {
    sp_ostream *o = b->process <= x->nprocs && b->thread >= 1 &&
                            b->thread <= x->nthreads[b->process]
                        ? x->threads[b->process][b->thread - 1] : NULL;
    if (!o) return 0;
    const uint8_t *p;
    uint64_t base, ts, depth;
    int rc = lt__load_block(x->in.r, b, &x->raw, &x->raw_cap, &p, &base);
    if (rc < 0) return sp_fail(s, rc, "%s: %s", x->in.name, lt_reader_error(x->in.r));
    const uint8_t *end = x->raw + b->raw;
    if (p >= end || *p++ != LT_TAG_CUT_OPEN || lt__get_varint(&p, end, &ts) < 0 ||
        lt__get_varint(&p, end, &depth) < 0)
        return sp_corrupt(s, x, b, "malformed cut block");
    if (ts < x->in.from || ts > x->in.to) return 0;
    return sp_cut_zones(s, o, sp_ts(o, ts), depth, NULL);
}

/* ---- Run ----------------------------------------------------------------- */

/* The input whose next unit comes first: metadata at once, event blocks by
 * their (shifted) first timestamp. -1 when every input is used up. */
static int sp_pick(lt_splice *s) {
    int best = -1;
    int64_t key = 0;
    for (size_t i = 0; i < s->ninputs; i++) {
        sp_input *x = &s->inputs[i];
        lt_reader *r = x->in.r;
        if (x->next >= r->nblks) continue;
        const lt__blk *b = &r->blks[x->next];
        if (b->kind != LT_BLOCK_EVENTS) return (int)i;
        int64_t k = (int64_t)b->first_ts +
                    (b->process <= x->nprocs ? x->proc_shift[b->process] : 0);
        if (best < 0 || k < key) {
            best = (int)i;
            key = k;
        }
    }
    return best;
}

/* Streams with no event from the window's start on, under keep_idle: the
 * zones open there are cut zones all the same. */
static int sp_unreached(lt_splice *s) {
    for (size_t i = 0; i < s->ninputs; i++) {
        sp_input *x = &s->inputs[i];
        uint64_t from = x->in.from;
        if (!x->in.keep_idle || from == 0 || from > lt_reader_info(x->in.r)->last_ts) continue;
        for (uint32_t p = 1; p <= x->nprocs; p++)
            for (uint32_t t = 0; x->threads[p] && t < x->nthreads[p]; t++) {
                sp_ostream *o = x->threads[p][t];
                int rc = o && !o->started && !o->done && o->open.depth ? sp_start(s, o, from) : 0;
                if (rc < 0) return rc;
            }
    }
    return 0;
}

int lt_splice_run(lt_splice *s) {
    int i;
    while ((i = sp_pick(s)) >= 0) {
        sp_input *x = &s->inputs[i];
        const lt__blk *b = &x->in.r->blks[x->next++];
        int rc = 0;
        if (b->kind == LT_BLOCK_EVENTS) rc = sp_events(s, x, b);
        else if (b->kind == LT_BLOCK_META) rc = sp_meta(s, x, b);
        else if (b->kind == LT_BLOCK_CUT) rc = sp_cut(s, x, b);
        if (rc < 0) return rc;
    }
    return sp_unreached(s);
}

/* ---- Statistics and close ---------------------------------------------- */

static sp_stat *sp_stat_lookup(lt_splice *s, const char *name) {
    for (size_t i = 0; i < s->nstats; i++)
        if (strcmp(s->stats[i].name, name) == 0) return &s->stats[i];
    return NULL;
}

static int sp_stat_add(lt_splice *s, const char *name, uint8_t sev, uint64_t value,
                       const char *desc, int extra) {
    sp_stat *st = sp_stat_lookup(s, name);
    int added = !st;
    if (added) {
        sp_stat *n = realloc(s->stats, (s->nstats + 1) * sizeof *n);
        if (!n) return LT_ENOMEM;
        s->stats = n;
        st = &n[s->nstats];
        memset(st, 0, sizeof *st);
        if (!(st->name = strdup(name))) return LT_ENOMEM;
        s->nstats++;
    }
    if (added || extra) {
        free(st->desc);
        if (!(st->desc = strdup(desc ? desc : ""))) return LT_ENOMEM;
        st->severity = sev;
        st->value = value;
        st->extra = extra;
    } else if (strncmp(name, "clock_", 6) == 0) {
        if (value > st->value) st->value = value;
    } else {
        st->value = st->value + value < st->value ? UINT64_MAX : st->value + value;
        if (sev > st->severity) st->severity = sev;
    }
    return 0;
}

int lt_splice_stat(lt_splice *s, const char *name, uint8_t severity,
                   uint64_t value, const char *description) {
    return sp_stat_add(s, name, severity, value, description, 1);
}

static int sp_write_stats(lt_splice *s) {
    for (size_t i = 0; i < s->ninputs; i++) {
        lt_reader *r = s->inputs[i].in.r;
        for (size_t k = 0; k < lt_reader_nstats(r); k++) {
            const lt_stat *st = lt_reader_stat(r, k);
            const sp_stat *have = sp_stat_lookup(s, st->name);
            if (have && have->extra) continue; /* the caller's value wins */
            if (sp_stat_add(s, st->name, st->severity, st->value, st->description, 0) < 0)
                return LT_ENOMEM;
        }
    }
    if (s->nstats == 0) return 0;
    s->out_len = 0;
    if (sp_room(s, 32) < 0) return LT_ENOMEM;
    s->out_len = lt_block_header(s->out, LT_BLOCK_STATS, 0, 0, 0);
    for (size_t i = 0; i < s->nstats; i++) {
        const sp_stat *st = &s->stats[i];
        size_t nl = strlen(st->name), dl = strlen(st->desc);
        if (sp_room(s, nl + dl + 32) < 0) return LT_ENOMEM;
        uint8_t *p = s->out + s->out_len;
        *p++ = LT_TAG_STAT;
        p = lt__put_str(p, st->name, nl);
        *p++ = st->severity;
        p = lt__put_varint_(p, st->value);
        p = lt__put_str(p, st->desc, dl);
        s->out_len = (size_t)(p - s->out);
    }
    lt_block_desc d = {.kind = LT_BLOCK_STATS};
    return sp_write(s, &d, s->out, s->out_len);
}

/* The trailer: the writer's, with the number of output processes and the
 * statistics as totals. */
static int sp_trailer(lt_splice *s) {
    lt_total *t = calloc(1 + s->nstats, sizeof *t);
    if (!t) return LT_ENOMEM;
    t[0] = (lt_total){"processes", s->nprocs};
    for (size_t i = 0; i < s->nstats; i++)
        t[1 + i] = (lt_total){s->stats[i].name, s->stats[i].value};
    int rc = lt__writer_finish(s->w, t, 1 + s->nstats);
    s->w = NULL;
    free(t);
    return rc;
}

uint64_t lt_splice_events(const lt_splice *s) { return s->written; }

uint64_t lt_splice_dropped(const lt_splice *s) {
    uint64_t copied = s->written - s->synthetic;
    return s->in_events > copied ? s->in_events - copied : 0;
}

const char *lt_splice_error(const lt_splice *s) {
    return s && s->err[0] ? s->err : "unknown error";
}

int lt_splice_close(lt_splice *s, int abandon) {
    int rc = 0;
    if (!s->w) return 0;
    if (!abandon) {
        rc = sp_write_stats(s);
        if (rc == 0) rc = sp_trailer(s);
        else if (rc == LT_ENOMEM) sp_fail(s, rc, "out of memory");
    }
    if (s->w) {
        int rc2 = lt_writer_close(s->w, NULL, 0, NULL, 0);
        if (rc == 0) rc = rc2;
    }
    s->w = NULL;
    if (rc < 0 && !s->err[0]) sp_fail(s, rc, "cannot write the output: %s", lt_strerror(rc));
    return rc;
}

void lt_splice_free(lt_splice *s) {
    if (!s) return;
    if (s->w) (void)lt_splice_close(s, 1);
    for (size_t i = 0; i < s->ninputs; i++) {
        sp_input *x = &s->inputs[i];
        for (uint32_t p = 0; x->threads && p <= x->nprocs; p++) free(x->threads[p]);
        free(x->threads);
        free(x->nthreads);
        free(x->proc_out);
        free(x->proc_shift);
        x->in.r->raw_held -= x->raw_cap;
        free(x->raw);
    }
    free(s->inputs);
    for (size_t i = 0; i < s->nstreams; i++) {
        lt__zstack_free(&s->streams[i]->open);
        free(s->streams[i]);
    }
    free(s->streams);
    for (size_t i = 0; i < s->nstats; i++) {
        free(s->stats[i].name);
        free(s->stats[i].desc);
    }
    free(s->stats);
    free(s->out);
    free(s);
}
