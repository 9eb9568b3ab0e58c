/* builder.c -- writes a whole trace without a daemon: one record buffer per
 * stream, blocks of LT_BLOCK_TARGET bytes whose descriptors carry their
 * counts; the writer makes the trailer from them at close. */
#include <stdlib.h>
#include <string.h>
#include "file_int.h"
#include "trace_builder.h"

#define LT__HDR_ROOM 32 /* room kept in front of the records for the header */

typedef struct lt__buf {
    uint8_t *p;
    size_t len, cap;
} lt__buf;

typedef struct lt__bstream {
    lt__buf rec;              /* LT__HDR_ROOM bytes, then the block's records */
    uint64_t base_ts, prev;   /* block base; last timed record in the block */
    lt_block_desc blk;        /* the block's counts, first and last ts */
    uint64_t last_ts;         /* last timed record of the stream */
    uint32_t depth;
    uint64_t events, lost;    /* of the stream, for its process's end */
} lt__bstream;

typedef struct lt__bproc {
    lt__buf meta;             /* LT__HDR_ROOM bytes, then pending records */
    uint32_t nthreads, nlocs, nplots, nframes;
    uint32_t threads_cap;
    lt__bstream **threads;
    int ended;
} lt__bproc;

struct lt_builder {
    lt_writer *w;
    int err;
    uint32_t nprocs;
    lt__bproc **procs;
};

static int lt__buf_room(lt__buf *b, size_t more) {
    if (b->len + more <= b->cap) return 0;
    /* Small at first, doubled as records come: a trace of a million
     * threads with one zone each must not hold a block-sized buffer per
     * thread. */
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) return LT_ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int lt__set_err(lt_builder *b, int rc) {
    if (rc < 0 && b->err == 0) b->err = rc;
    return rc;
}

/* Checks a caller's string: NULL is "", at most LT_MAX_STRING bytes of UTF-8. */
static int lt__arg_str(const char **s, size_t *len) {
    if (!*s) *s = "";
    *len = strlen(*s);
    if (*len > LT_MAX_STRING) return LT_ELIMIT;
    return lt__utf8_valid(*s, *len) ? 0 : LT_EINVAL;
}

int lt_builder_open(lt_builder **out, const char *path, int flags,
                    const char *creator) {
    *out = NULL;
    lt_builder *b = calloc(1, sizeof *b);
    if (!b) return LT_ENOMEM;
    int rc = lt_writer_open(&b->w, path, flags, creator, 0);
    if (rc < 0) {
        free(b);
        return rc;
    }
    lt__writer_sort_streams(b->w);
    *out = b;
    return 0;
}

static lt__bproc *lt__proc(lt_builder *b, uint32_t process) {
    return process >= 1 && process <= b->nprocs ? b->procs[process - 1] : NULL;
}

static lt__bstream *lt__stream(lt_builder *b, uint32_t process, uint32_t thread) {
    lt__bproc *p = lt__proc(b, process);
    return p && thread >= 1 && thread <= p->nthreads ? p->threads[thread - 1]
                                                     : NULL;
}

static int lt__emit(lt_builder *b, lt__buf *buf, const lt_block_desc *d,
                    uint64_t base_ts) {
    uint8_t hdr[LT__HDR_ROOM];
    size_t hlen = lt_block_header(hdr, d->kind, d->process, d->thread, base_ts);
    uint8_t *start = buf->p + LT__HDR_ROOM - hlen;
    memcpy(start, hdr, hlen);
    size_t raw = buf->len - LT__HDR_ROOM + hlen;
    int rc = lt_writer_block(b->w, d, start, raw);
    if (rc < 0) return lt__set_err(b, rc);
    buf->len = LT__HDR_ROOM;
    return 0;
}

static int lt__flush_meta(lt_builder *b, uint32_t process) {
    lt__bproc *p = b->procs[process - 1];
    if (p->meta.len <= LT__HDR_ROOM) return 0;
    lt_block_desc d = {.kind = LT_BLOCK_META, .process = process};
    return lt__emit(b, &p->meta, &d, 0);
}

static int lt__flush_stream(lt_builder *b, uint32_t process, uint32_t thread) {
    lt__bstream *s = lt__stream(b, process, thread);
    if (s->rec.len <= LT__HDR_ROOM) return 0;
    int rc = lt__flush_meta(b, process);
    if (rc < 0) return rc;
    lt_block_desc d = s->blk;
    d.kind = LT_BLOCK_EVENTS;
    d.process = process;
    d.thread = thread;
    rc = lt__emit(b, &s->rec, &d, s->base_ts);
    if (rc < 0) return rc;
    s->blk = (lt_block_desc){0};
    return 0;
}

/* Makes room for a metadata record of up to `more` bytes. */
static int lt__meta_room(lt_builder *b, uint32_t process, size_t more) {
    lt__bproc *p = b->procs[process - 1];
    if (p->meta.len - LT__HDR_ROOM + more > LT_BLOCK_TARGET) {
        int rc = lt__flush_meta(b, process);
        if (rc < 0) return rc;
    }
    return lt__set_err(b, lt__buf_room(&p->meta, more));
}

int lt_builder_process(lt_builder *b, uint64_t pid, int64_t rank,
                       const char *hostname, const char *program, uint32_t argc,
                       const char *const *argv, uint64_t anchor_mono_ns,
                       uint64_t anchor_wall_ns) {
    if (b->err) return b->err;
    size_t hl, pl, need = 64 + 10 * (size_t)argc, al;
    const char *client = "libtrace " LT_VERSION_STRING;
    if (lt__arg_str(&hostname, &hl) < 0 || lt__arg_str(&program, &pl) < 0 ||
        anchor_mono_ns > LT_MAX_TS || anchor_wall_ns > LT_MAX_TS)
        return LT_EINVAL;
    need += hl + pl + strlen(client);
    for (uint32_t i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (lt__arg_str(&a, &al) < 0) return LT_EINVAL;
        need += al;
    }
    if (b->nprocs == UINT32_MAX - 1) return LT_ELIMIT;
    lt__bproc **procs = realloc(b->procs, (b->nprocs + 1) * sizeof *procs);
    if (!procs) return LT_ENOMEM;
    b->procs = procs;
    lt__bproc *p = calloc(1, sizeof *p);
    if (!p || lt__buf_room(&p->meta, LT__HDR_ROOM) < 0) {
        free(p);
        return LT_ENOMEM;
    }
    p->meta.len = LT__HDR_ROOM;
    b->procs[b->nprocs++] = p;
    uint32_t idx = b->nprocs;
    int rc = lt__meta_room(b, idx, need);
    if (rc < 0) return rc;
    uint8_t *w = p->meta.p + p->meta.len;
    *w++ = LT_TAG_PROC_INFO;
    w = lt__put_varint_(w, pid);
    w = lt__put_varint_(w, lt__zigzag(rank));
    w = lt__put_str(w, hostname, hl);
    w = lt__put_str(w, program, pl);
    w = lt__put_varint_(w, argc);
    for (uint32_t i = 0; i < argc; i++) {
        const char *a = argv[i] ? argv[i] : "";
        w = lt__put_str(w, a, strlen(a));
    }
    w = lt__put_varint_(w, anchor_mono_ns);
    w = lt__put_varint_(w, anchor_wall_ns);
    w = lt__put_str(w, client, strlen(client));
    p->meta.len = (size_t)(w - p->meta.p);
    return (int)idx;
}

int lt_builder_thread(lt_builder *b, uint32_t process, uint64_t tid,
                      const char *name) {
    if (b->err) return b->err;
    lt__bproc *p = lt__proc(b, process);
    size_t nl;
    if (!p || lt__arg_str(&name, &nl) < 0) return LT_EINVAL;
    if (p->nthreads >= INT32_MAX) return LT_ELIMIT;
    if (p->nthreads == p->threads_cap) { /* doubled: linear in threads */
        uint32_t cap = p->threads_cap ? p->threads_cap * 2 : 16;
        lt__bstream **t = realloc(p->threads, (size_t)cap * sizeof *t);
        if (!t) return LT_ENOMEM;
        p->threads = t;
        p->threads_cap = cap;
    }
    lt__bstream *s = calloc(1, sizeof *s);
    if (!s || lt__buf_room(&s->rec, LT__HDR_ROOM) < 0) {
        free(s);
        return LT_ENOMEM;
    }
    s->rec.len = LT__HDR_ROOM;
    p->threads[p->nthreads++] = s;
    int rc = lt__writer_stream(b->w, process, p->nthreads);
    if (rc == 0) rc = lt__meta_room(b, process, 32 + nl);
    if (rc < 0) return rc;
    uint8_t *w = p->meta.p + p->meta.len;
    *w++ = LT_TAG_THREAD_INFO;
    w = lt__put_varint_(w, p->nthreads);
    w = lt__put_varint_(w, tid);
    w = lt__put_str(w, name, nl);
    p->meta.len = (size_t)(w - p->meta.p);
    return (int)p->nthreads;
}

int lt_builder_loc(lt_builder *b, uint32_t process, uint8_t kind,
                   const char *name, const char *file, uint32_t line) {
    if (b->err) return b->err;
    lt__bproc *p = lt__proc(b, process);
    size_t nl, fl;
    if (!p || kind == 0 || lt__arg_str(&name, &nl) < 0 ||
        lt__arg_str(&file, &fl) < 0)
        return LT_EINVAL;
    if (p->nlocs >= INT32_MAX) return LT_ELIMIT;
    int rc = lt__meta_room(b, process, 40 + nl + fl);
    if (rc < 0) return rc;
    uint8_t *w = p->meta.p + p->meta.len;
    *w++ = LT_TAG_LOC_DEF;
    w = lt__put_varint_(w, ++p->nlocs);
    *w++ = kind;
    w = lt__put_varint_(w, line);
    w = lt__put_str(w, name, nl);
    w = lt__put_str(w, file, fl);
    p->meta.len = (size_t)(w - p->meta.p);
    return (int)p->nlocs;
}

static int lt__named_def(lt_builder *b, uint32_t process, uint8_t tag,
                         uint32_t *counter, const char *name) {
    if (b->err) return b->err;
    lt__bproc *p = lt__proc(b, process);
    size_t nl;
    if (!p || lt__arg_str(&name, &nl) < 0) return LT_EINVAL;
    if (*counter >= INT32_MAX) return LT_ELIMIT;
    int rc = lt__meta_room(b, process, 24 + nl);
    if (rc < 0) return rc;
    uint8_t *w = p->meta.p + p->meta.len;
    *w++ = tag;
    w = lt__put_varint_(w, ++*counter);
    w = lt__put_str(w, name, nl);
    p->meta.len = (size_t)(w - p->meta.p);
    return (int)*counter;
}

int lt_builder_plot(lt_builder *b, uint32_t process, const char *name) {
    lt__bproc *p = lt__proc(b, process);
    return p ? lt__named_def(b, process, LT_TAG_PLOT_DEF, &p->nplots, name)
             : LT_EINVAL;
}

int lt_builder_frame_name(lt_builder *b, uint32_t process, const char *name) {
    lt__bproc *p = lt__proc(b, process);
    return p ? lt__named_def(b, process, LT_TAG_FRAME_DEF, &p->nframes, name)
             : LT_EINVAL;
}

/* Starts a record of up to `more` bytes on a stream; returns the write
 * position or NULL with *rc set. Timed records pass their ts (checked to
 * not go back) and get their dt written. */
static uint8_t *lt__rec(lt_builder *b, uint32_t process, uint32_t thread,
                        size_t more, int timed, uint64_t ts, uint8_t tag,
                        lt__bstream **sp, int *rc) {
    lt__bstream *s = lt__stream(b, process, thread);
    *rc = b->err;
    if (*rc) return NULL;
    *rc = LT_EINVAL;
    if (!s || (timed && (ts < s->last_ts || ts > LT_MAX_TS))) return NULL;
    *rc = lt__set_err(b, lt__buf_room(&s->rec, more + 11));
    if (*rc < 0) return NULL;
    if (s->rec.len == LT__HDR_ROOM) /* a new block */
        s->base_ts = s->prev = timed ? ts : s->last_ts;
    uint8_t *w = s->rec.p + s->rec.len;
    *w++ = tag;
    if (timed) {
        w = lt__put_varint_(w, ts - s->prev);
        s->prev = s->last_ts = ts;
        if (s->blk.n_events++ == 0) s->blk.first_ts = ts;
        s->blk.last_ts = ts;
        s->events++;
    }
    *sp = s;
    return w;
}

/* Ends a record started by lt__rec; flushes a full block. */
static int lt__rec_done(lt_builder *b, uint32_t process, uint32_t thread,
                        lt__bstream *s, uint8_t *w) {
    s->rec.len = (size_t)(w - s->rec.p);
    if (s->rec.len - LT__HDR_ROOM >= LT_BLOCK_TARGET)
        return lt__flush_stream(b, process, thread);
    return 0;
}

int lt_builder_zone_begin(lt_builder *b, uint32_t process, uint32_t thread,
                          uint64_t ts, uint32_t loc) {
    lt__bproc *p = lt__proc(b, process);
    lt__bstream *s = lt__stream(b, process, thread);
    int rc;
    if (!s || loc == 0 || loc > p->nlocs) return LT_EINVAL;
    if (s->depth >= LT_MAX_DEPTH) return LT_ELIMIT;
    uint8_t tag = loc < 128 ? (uint8_t)(LT_TAG_ZONE_BEGIN_SHORT + loc)
                            : LT_TAG_ZONE_BEGIN;
    uint8_t *w = lt__rec(b, process, thread, 24, 1, ts, tag, &s, &rc);
    if (!w) return rc;
    if (loc >= 128) w = lt__put_varint_(w, loc);
    s->depth++;
    s->blk.zones++;
    return lt__rec_done(b, process, thread, s, w);
}

int lt_builder_zone_end(lt_builder *b, uint32_t process, uint32_t thread,
                        uint64_t ts) {
    lt__bstream *s = lt__stream(b, process, thread);
    int rc;
    if (!s || s->depth == 0) return LT_EINVAL;
    uint8_t *w = lt__rec(b, process, thread, 12, 1, ts, LT_TAG_ZONE_END, &s, &rc);
    if (!w) return rc;
    s->depth--;
    return lt__rec_done(b, process, thread, s, w);
}

static int lt__zone_str(lt_builder *b, uint32_t process, uint32_t thread,
                        uint8_t tag, const char *text) {
    lt__bstream *s = lt__stream(b, process, thread);
    size_t n;
    int rc;
    if (!s || s->depth == 0 || lt__arg_str(&text, &n) < 0) return LT_EINVAL;
    uint8_t *w = lt__rec(b, process, thread, 12 + n, 0, 0, tag, &s, &rc);
    if (!w) return rc;
    w = lt__put_str(w, text, n);
    return lt__rec_done(b, process, thread, s, w);
}

int lt_builder_zone_text(lt_builder *b, uint32_t process, uint32_t thread,
                         const char *text) {
    return lt__zone_str(b, process, thread, LT_TAG_ZONE_TEXT, text);
}

int lt_builder_zone_name(lt_builder *b, uint32_t process, uint32_t thread,
                         const char *name) {
    return lt__zone_str(b, process, thread, LT_TAG_ZONE_NAME, name);
}

int lt_builder_message(lt_builder *b, uint32_t process, uint32_t thread,
                       uint64_t ts, const char *text) {
    lt__bstream *s;
    size_t n;
    int rc;
    if (lt__arg_str(&text, &n) < 0) return LT_EINVAL;
    uint8_t *w = lt__rec(b, process, thread, 24 + n, 1, ts, LT_TAG_MESSAGE, &s, &rc);
    if (!w) return rc;
    w = lt__put_str(w, text, n);
    s->blk.messages++;
    return lt__rec_done(b, process, thread, s, w);
}

int lt_builder_signpost(lt_builder *b, uint32_t process, uint32_t thread,
                        uint64_t ts, const char *header, const char *body) {
    lt__bstream *s;
    size_t hn, bn;
    int rc;
    if (lt__arg_str(&header, &hn) < 0 || lt__arg_str(&body, &bn) < 0)
        return LT_EINVAL;
    uint8_t *w = lt__rec(b, process, thread, 32 + hn + bn, 1, ts,
                         LT_TAG_SIGNPOST, &s, &rc);
    if (!w) return rc;
    w = lt__put_str(w, header, hn);
    w = lt__put_str(w, body, bn);
    s->blk.messages++;
    return lt__rec_done(b, process, thread, s, w);
}

int lt_builder_plot_value(lt_builder *b, uint32_t process, uint32_t thread,
                          uint64_t ts, uint32_t plot, double value) {
    lt__bproc *p = lt__proc(b, process);
    lt__bstream *s;
    int rc;
    if (!p || plot == 0 || plot > p->nplots) return LT_EINVAL;
    uint8_t *w = lt__rec(b, process, thread, 32, 1, ts, LT_TAG_PLOT, &s, &rc);
    if (!w) return rc;
    w = lt__put_varint_(w, plot);
    uint64_t bits;
    memcpy(&bits, &value, 8);
    lt__le64(w, bits);
    s->blk.plots++;
    return lt__rec_done(b, process, thread, s, w + 8);
}

int lt_builder_frame(lt_builder *b, uint32_t process, uint32_t thread,
                     uint64_t ts, uint32_t frame) {
    lt__bproc *p = lt__proc(b, process);
    lt__bstream *s;
    int rc;
    if (!p || frame > p->nframes) return LT_EINVAL;
    uint8_t *w = lt__rec(b, process, thread, 24, 1, ts, LT_TAG_FRAME, &s, &rc);
    if (!w) return rc;
    w = lt__put_varint_(w, frame);
    s->blk.frames++;
    return lt__rec_done(b, process, thread, s, w);
}

int lt_builder_lost(lt_builder *b, uint32_t process, uint32_t thread,
                    uint64_t ts, uint64_t count) {
    lt__bstream *s;
    int rc;
    uint8_t *w = lt__rec(b, process, thread, 24, 1, ts, LT_TAG_LOST, &s, &rc);
    if (!w) return rc;
    w = lt__put_varint_(w, count);
    s->blk.lost = lt__sat_add(s->blk.lost, count);
    s->lost = lt__sat_add(s->lost, count);
    return lt__rec_done(b, process, thread, s, w);
}

int lt_builder_process_end(lt_builder *b, uint32_t process, uint64_t ts,
                           int status, const char *reason) {
    if (b->err) return b->err;
    lt__bproc *p = lt__proc(b, process);
    size_t rl;
    if (!p || p->ended || status < LT_PROC_CLEAN || status > LT_PROC_CRASHED ||
        lt__arg_str(&reason, &rl) < 0 || ts > LT_MAX_TS)
        return LT_EINVAL;
    uint64_t events = 0, lost = 0;
    for (uint32_t i = 0; i < p->nthreads; i++) {
        events += p->threads[i]->events;
        lost = lt__sat_add(lost, p->threads[i]->lost);
    }
    int rc = lt__meta_room(b, process, 64 + rl);
    if (rc < 0) return rc;
    uint8_t *w = p->meta.p + p->meta.len;
    *w++ = LT_TAG_PROC_END;
    w = lt__put_varint_(w, ts);
    *w++ = (uint8_t)status;
    w = lt__put_str(w, reason, rl);
    w = lt__put_varint_(w, events);
    w = lt__put_varint_(w, events);
    w = lt__put_varint_(w, lost);
    p->meta.len = (size_t)(w - p->meta.p);
    p->ended = 1;
    return 0;
}

int lt_builder_close(lt_builder *b, int no_trailer) {
    if (!b) return 0;
    int rc = b->err;
    for (uint32_t i = 0; i < b->nprocs && rc == 0; i++) {
        rc = lt__flush_meta(b, i + 1);
        for (uint32_t t = 0; t < b->procs[i]->nthreads && rc == 0; t++)
            rc = lt__flush_stream(b, i + 1, t + 1);
    }
    if (rc == 0 && !no_trailer) {
        const lt_total procs = {"processes", b->nprocs};
        rc = lt__writer_finish(b->w, &procs, 1);
    } else {
        int rc2 = lt_writer_close(b->w, NULL, 0, NULL, 0);
        if (rc == 0) rc = rc2;
    }
    for (uint32_t i = 0; i < b->nprocs; i++) {
        lt__bproc *p = b->procs[i];
        for (uint32_t t = 0; t < p->nthreads; t++) {
            free(p->threads[t]->rec.p);
            free(p->threads[t]);
        }
        free(p->threads);
        free(p->meta.p);
        free(p);
    }
    free(b->procs);
    free(b);
    return rc;
}
