/* reader_merge.c -- the event iterator: one cursor per stream holding one
 * decompressed block (from its turn on, released under memory pressure)
 * and the stream's open zones, merged in time order through a binary
 * heap. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "reader_int.h"

/* ---- Cursor ------------------------------------------------------------ */

static void lt__cursor_free(lt_reader *r, lt__rstream *s) {
    r->raw_held -= s->raw_cap;
    r->stack_held -= (uint64_t)s->stack_cap * sizeof *s->stack +
                     (uint64_t)s->strs_cap * sizeof *s->strs;
    for (uint32_t i = 0; i < s->strs_cap; i++) {
        r->raw_held -= (uint64_t)s->strs[i].name_cap + s->strs[i].text_cap;
        free(s->strs[i].name);
        free(s->strs[i].text);
    }
    free(s->strs);
    s->strs = NULL;
    s->strs_cap = 0;
    free(s->stack);
    free(s->raw);
    s->stack = NULL;
    s->raw = NULL;
    s->stack_cap = s->depth = 0;
    s->raw_cap = 0;
    s->parked = 0;
}

/* ---- Releasing blocks under memory pressure ------------------------------
 * Each stream being merged holds its current block. When thousands of
 * streams with large blocks would exceed the budget, the blocks of streams
 * whose turn is furthest away (leaves of the merge heap) are released and
 * decompressed again when their turn comes. */

static int lt__has_text(const lt__rstream *s) {
    return s->ev.type == LT_EV_MESSAGE || s->ev.type == LT_EV_SIGNPOST;
}

static void lt__evict(lt_reader *r, lt__rstream *s) {
    s->p_off = (size_t)(s->p - s->raw);
    s->end_off = (size_t)(s->end - s->raw);
    if (lt__has_text(s)) {
        s->text_off = (size_t)((const uint8_t *)s->ev.text - s->raw);
        s->text2_off = s->ev.text2 ? (size_t)((const uint8_t *)s->ev.text2 - s->raw) : 0;
    }
    /* A block read to its end is not needed again: the next step loads the
     * stream's next block. */
    s->parked = s->p_off != s->end_off || lt__has_text(s) ? LT__PARK_EVICTED : 0;
    if (s->parked) {
        s->saved_type = s->ev.type; /* lt_reader_next sees LT__EV_PARKED */
        s->ev.type = LT__EV_PARKED;
    } else {
        s->p = s->end = NULL;
    }
    r->raw_held -= s->raw_cap;
    free(s->raw);
    s->raw = NULL;
    s->raw_cap = 0;
}

int lt__make_room(lt_reader *r, uint64_t n, uint8_t *const *keep) {
    uint64_t budget = lt__raw_budget(r);
    for (uint32_t i = r->nheap; i-- > 0 && r->raw_held + n > budget;) {
        lt__rstream *s = r->heap[i].s;
        if (s->raw && &s->raw != keep && !s->done && !s->parked) lt__evict(r, s);
    }
    return r->raw_held + n > budget ? -1 : 0;
}

/* Decompresses a released block again and puts the cursor back. Bounded:
 * a file whose streams interleave so that releasing blocks saves nothing
 * (more than the file's raw size decompressed again) is refused rather
 * than read for hours. */
static int lt__restore(lt_reader *r, lt__rstream *s) {
    const lt__blk *b = &r->blks[s->blk];
    const uint8_t *rec;
    uint64_t base;
    r->reloaded += b->raw;
    if (r->reloaded > r->reload_limit)
        return lt__corrupt(r, b->off, "blocks of too many streams interleave for the "
                                      "reader's memory budget");
    int rc = lt__load_block(r, b, &s->raw, &s->raw_cap, &rec, &base);
    if (rc < 0) return rc;
    s->ev.type = s->saved_type;
    s->p = s->raw + s->p_off;
    s->end = s->raw + s->end_off;
    if (lt__has_text(s)) {
        s->ev.text = (const char *)s->raw + s->text_off;
        if (s->ev.text2) s->ev.text2 = (const char *)s->raw + s->text2_off;
    }
    s->parked = 0;
    return 0;
}

static int lt__cursor_step(lt_reader *r, lt__rstream *s, int may_load);

/* Brings the heap's top stream back: decompresses its released block, or
 * its first block (whose first event must be at the first_ts it was
 * queued by). */
static int lt__unpark(lt_reader *r, lt__rstream *s) {
    if (s->parked == LT__PARK_EVICTED) return lt__restore(r, s);
    s->parked = 0;
    int rc = lt__cursor_step(r, s, 1);
    if (rc < 0) return rc;
    if (rc == 0 || s->ev.ts != r->heap[0].ts)
        return lt__corrupt(r, r->blks[s->blk != LT__NONE ? s->blk : s->first_blk].off,
                           "block contents differ from its descriptor");
    return 0;
}

static void lt__cursor_start(lt_reader *r, lt__rstream *s) {
    lt__rproc *p = r->procs[s->info.process];
    s->blk = LT__NONE;
    s->next_blk = s->resumed ? s->start_blk : s->first_blk;
    s->done = 0;
    s->p = s->end = NULL;
    s->ts = s->resumed ? s->start_ts : 0;
    s->depth = 0;
    s->cut_left = s->cut_depth;
    s->max_loc = p->nlocs;
    s->max_plot = p->nplots;
    s->max_frame = p->nframes;
    memset(&s->ev, 0, sizeof s->ev);
    s->ev.process = s->info.process;
    s->ev.thread = s->info.index;
}

/* Checks the finished block against its descriptor and loads the next one.
 * Returns 1 when a block was loaded, 0 at the end of the stream. */
static int lt__cursor_next_block(lt_reader *r, lt__rstream *s) {
    if (s->blk != LT__NONE) {
        const lt__blk *b = &r->blks[s->blk];
        if (s->blk_events != b->n_events ||
            (b->n_events && (s->blk_first != b->first_ts || s->ts != b->last_ts)))
            return lt__corrupt(r, b->off, "block contents differ from its descriptor");
    }
    s->blk = s->next_blk;
    if (s->blk == LT__NONE) return 0;
    const lt__blk *b = &r->blks[s->blk];
    s->next_blk = b->next;
    uint64_t base;
    int rc = lt__load_block(r, b, &s->raw, &s->raw_cap, &s->p, &base);
    if (rc < 0) return rc;
    s->end = s->raw + b->raw;
    s->ts = base;
    s->blk_events = 0;
    return 1;
}

/* Doubles the stack of open zones, within the budget. Out of line: the
 * push it serves stays a leaf without register saves. */
static __attribute__((noinline, cold)) int lt__grow_stack(lt_reader *r, lt__rstream *s) {
    if (s->depth >= LT_MAX_DEPTH)
        return lt__corrupt(r, r->blks[s->blk].off, "zones nested too deeply");
    uint32_t cap = s->stack_cap ? s->stack_cap * 2 : 64;
    uint64_t more = (uint64_t)(cap - s->stack_cap) * sizeof *s->stack;
    /* Open zones count in the budget: 500 threads 65536 zones deep fit in a
     * file of 100 KB (see LT_MAX_OPEN_ZONES). */
    if (r->raw_held + r->stack_held + more > lt__zone_budget(r))
        return lt__corrupt(r, r->blks[s->blk].off,
                           "more zones open at once than a file of this size can hold");
    lt__zframe *st = realloc(s->stack, cap * sizeof *st);
    if (!st) return LT_ENOMEM;
    r->stack_held += more;
    s->stack = st;
    s->stack_cap = cap;
    return 0;
}

/* Push and pop are inlined into the cursor's step: a call each, with its
 * register saves, was a tenth of the decoding. */
static inline __attribute__((always_inline)) int lt__push(lt_reader *r, lt__rstream *s,
                                                          uint32_t loc) {
    if (__builtin_expect(s->depth == s->stack_cap, 0)) {
        int rc = lt__grow_stack(r, s);
        if (rc < 0) return rc;
    }
    lt__zframe *f = &s->stack[s->depth];
    f->begin_ts = s->ts;
    f->child_ns = 0;
    f->loc = loc;
    f->has = 0;
    f->cut = 0;
    if (__builtin_expect(s->cut_left > 0, 0)) f->cut = 1, s->cut_left--;
    lt_event *ev = &s->ev;
    ev->type = LT_EV_ZONE_BEGIN;
    ev->flags = f->cut ? LT_EVF_CUT : 0;
    ev->ts = s->ts;
    ev->loc = loc;
    ev->depth = s->depth++; /* lt_reader_next copies no further for a begin */
    return 1;
}

static inline __attribute__((always_inline)) void lt__pop(lt__rstream *s, uint8_t flags) {
    lt__zframe *f = &s->stack[--s->depth];
    lt_event *ev = &s->ev;
    ev->type = LT_EV_ZONE_END;
    ev->flags = flags | (f->cut ? LT_EVF_CUT : 0);
    ev->ts = s->ts;
    ev->loc = f->loc;
    ev->depth = s->depth;
    ev->begin_ts = f->begin_ts;
    ev->child_ns = f->child_ns;
    if (__builtin_expect(f->has, 0)) {
        const lt__zstr *z = &s->strs[s->depth];
        ev->name = f->has & LT__HAS_NAME ? z->name : NULL;
        ev->name_len = f->has & LT__HAS_NAME ? z->name_len : 0;
        ev->text = f->has & LT__HAS_TEXT ? z->text : NULL;
        ev->text_len = f->has & LT__HAS_TEXT ? z->text_len : 0;
    } else {
        ev->name = ev->text = NULL;
        ev->name_len = ev->text_len = 0;
    }
    if (s->depth) f[-1].child_ns += s->ts - f->begin_ts;
}

/* Grows the string slots to cover depth index `i`, within the budget. */
int lt__grow_strs(lt_reader *r, lt__rstream *s, uint32_t i) {
    uint32_t cap = s->strs_cap ? s->strs_cap : 16;
    while (cap <= i) cap *= 2;
    uint64_t more = (uint64_t)(cap - s->strs_cap) * sizeof *s->strs;
    if (r->raw_held + r->stack_held + more > lt__zone_budget(r))
        return lt__corrupt(r, s->blk != LT__NONE ? r->blks[s->blk].off : 0,
                           "open zones hold more text than a file of this size can");
    lt__zstr *z = realloc(s->strs, cap * sizeof *z);
    if (!z) return LT_ENOMEM;
    memset(z + s->strs_cap, 0, (cap - s->strs_cap) * sizeof *z);
    r->stack_held += more;
    s->strs = z;
    s->strs_cap = cap;
    return 0;
}

/* Copies a ZONE_TEXT / ZONE_NAME string for the innermost zone: the zone
 * may end in a later block, after this block's buffer is reused. */
static int lt__zone_str(lt_reader *r, lt__rstream *s, const char *str, size_t len,
                        int is_name) {
    uint32_t i = s->depth - 1;
    if (i >= s->strs_cap) {
        int rc = lt__grow_strs(r, s, i);
        if (rc < 0) return rc;
    }
    lt__zstr *z = &s->strs[i];
    char **buf = is_name ? &z->name : &z->text;
    uint32_t *cap = is_name ? &z->name_cap : &z->text_cap;
    if (len + 1 > *cap) {
        /* Deeply nested zones with long texts: bounded like block buffers. */
        if (r->raw_held + (len + 1 - *cap) > lt__raw_budget(r))
            return lt__corrupt(r, r->blks[s->blk].off,
                               "open zones hold more text than a file of this size can");
        char *n = realloc(*buf, len + 1);
        if (!n) return LT_ENOMEM;
        r->raw_held += len + 1 - *cap;
        *buf = n;
        *cap = (uint32_t)len + 1;
    }
    memcpy(*buf, str, len);
    (*buf)[len] = '\0';
    if (is_name) z->name_len = (uint32_t)len;
    else z->text_len = (uint32_t)len;
    s->stack[i].has |= is_name ? LT__HAS_NAME : LT__HAS_TEXT;
    return 0;
}

static void lt__simple(lt__rstream *s, uint8_t type) {
    lt_event *ev = &s->ev;
    ev->type = type;
    ev->flags = 0;
    ev->ts = s->ts;
    ev->loc = ev->depth = 0;
    ev->begin_ts = ev->child_ns = 0;
    ev->name = ev->text = ev->text2 = NULL;
    ev->name_len = ev->text_len = ev->text2_len = 0;
    ev->id = 0;
    ev->value = 0;
    ev->count = 0;
}

#define CORRUPT(why)                                           \
    do {                                                       \
        return lt__corrupt(r, r->blks[s->blk].off, (why));     \
    } while (0)

#define READ_VARINT(v)                                         \
    do {                                                       \
        if (__builtin_expect(p < end && *p < 0x80, 1)) {       \
            (v) = *p++;                                        \
        } else if (end - p >= 2 && p[1] < 0x80) {              \
            (v) = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7; \
            p += 2;                                            \
        } else if (lt__get_varint(&p, end, &(v)) < 0) {        \
            CORRUPT("truncated record");                       \
        }                                                      \
    } while (0)

#define READ_DT()                                              \
    do {                                                       \
        uint64_t dt_;                                          \
        READ_VARINT(dt_);                                      \
        /* Past LT_MAX_TS without wrapping: the block's last   \
         * timestamp then differs from its descriptor's, which  \
         * is checked at the block's end (and kept below it). */ \
        if (__builtin_expect(s->ts + dt_ < s->ts, 0))          \
            CORRUPT("timestamp out of range");                 \
        s->ts += dt_;                                          \
        if (s->blk_events++ == 0) s->blk_first = s->ts;        \
    } while (0)

#define READ_STR(str, len)                                     \
    do {                                                       \
        if (lt__get_str(&p, end, &(str), &(len)) < 0)          \
            CORRUPT("truncated or oversized string");          \
        if (!lt__utf8_valid((str), (len)))                     \
            CORRUPT("string is not valid UTF-8");              \
    } while (0)

/* Moves the cursor to its next event (in s->ev). Returns 1, 0 at the end of
 * the stream, 2 when the block is used up and `may_load` is 0 (loading the
 * next block would invalidate strings of the event last returned), or a
 * negative code. */
static int lt__cursor_step(lt_reader *r, lt__rstream *s, int may_load) {
    for (;;) {
        const uint8_t *p = s->p, *end = s->end;
        if (__builtin_expect(p >= end, 0)) {
            if (s->done) return 0;
            if (!may_load) return 2;
            int rc = lt__cursor_next_block(r, s);
            if (rc < 0) return rc;
            if (rc == 0) {
                if (s->depth) { /* open-ended zones close at the last ts */
                    lt__pop(s, LT_EVF_UNCLOSED);
                    return 1;
                }
                s->done = 1;
                lt__cursor_free(r, s);
                s->p = s->end = NULL;
                return 0;
            }
            continue;
        }
        uint8_t tag = *p++;
        uint64_t v;
        const char *str;
        size_t len;
        if (tag > LT_TAG_ZONE_BEGIN_SHORT) {
            READ_DT();
            if (__builtin_expect((uint32_t)(tag - LT_TAG_ZONE_BEGIN_SHORT) > s->max_loc, 0))
                CORRUPT("undefined location");
            s->p = p;
            return lt__push(r, s, tag - LT_TAG_ZONE_BEGIN_SHORT);
        }
        switch (tag) {
        case LT_TAG_ZONE_END:
        case LT_TAG_ZONE_END_ABORTED:
            READ_DT();
            if (s->depth == 0) CORRUPT("zone end without open zone");
            s->p = p;
            lt__pop(s, tag == LT_TAG_ZONE_END ? 0 : LT_EVF_ABORTED);
            return 1;
        case LT_TAG_ZONE_BEGIN:
            READ_DT();
            READ_VARINT(v);
            if (v == 0 || v > s->max_loc) CORRUPT("undefined location");
            s->p = p;
            return lt__push(r, s, (uint32_t)v);
        case LT_TAG_ZONE_TEXT:
        case LT_TAG_ZONE_NAME:
            if (s->depth == 0) CORRUPT("zone text or name without open zone");
            READ_STR(str, len);
            int zrc = lt__zone_str(r, s, str, len, tag == LT_TAG_ZONE_NAME);
            if (zrc < 0) return zrc;
            s->p = p;
            continue;
        case LT_TAG_MESSAGE:
            READ_DT();
            lt__simple(s, LT_EV_MESSAGE);
            READ_STR(s->ev.text, s->ev.text_len);
            break;
        case LT_TAG_SIGNPOST:
            READ_DT();
            lt__simple(s, LT_EV_SIGNPOST);
            READ_STR(s->ev.text, s->ev.text_len);
            READ_STR(s->ev.text2, s->ev.text2_len);
            break;
        case LT_TAG_PLOT: {
            READ_DT();
            READ_VARINT(v);
            if (v == 0 || v > s->max_plot) CORRUPT("undefined plot");
            if (end - p < 8) CORRUPT("truncated record");
            uint64_t bits = lt__rd64(p);
            p += 8;
            lt__simple(s, LT_EV_PLOT);
            s->ev.id = (uint32_t)v;
            memcpy(&s->ev.value, &bits, 8);
            break;
        }
        case LT_TAG_FRAME:
            READ_DT();
            READ_VARINT(v);
            if (v > s->max_frame) CORRUPT("undefined frame name");
            lt__simple(s, LT_EV_FRAME);
            s->ev.id = (uint32_t)v;
            break;
        case LT_TAG_LOST:
            READ_DT();
            READ_VARINT(v);
            lt__simple(s, LT_EV_LOST);
            s->ev.count = v;
            break;
        default:
            CORRUPT(tag == LT_TAG_ZONE_BEGIN_SHORT ? "invalid record tag 0x80"
                                                   : "unknown record tag");
        }
        s->p = p;
        return 1;
    }
}

/* ---- Merge ------------------------------------------------------------- */

static inline int lt__before(const lt__hent *a, const lt__hent *b) {
    return a->ts < b->ts || (a->ts == b->ts && a->ord < b->ord);
}

static void lt__sift_down(lt_reader *r, uint32_t i) {
    lt__hent *h = r->heap, x = h[i];
    uint32_t n = r->nheap;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && lt__before(&h[c + 1], &h[c])) c++;
        if (!lt__before(&h[c], &x)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* Moves the top entry, whose stream now stands on an event at `ts`, down to
 * its place. The new key comes in a register: storing it first and loading
 * the entry back would stall on store forwarding. */
static void lt__sift_top(lt_reader *r, uint64_t ts) {
    lt__hent *h = r->heap;
    uint64_t ord = h[0].ord;
    lt__rstream *s = h[0].s;
    uint32_t n = r->nheap, i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && lt__before(&h[c + 1], &h[c])) c++;
        if (!(h[c].ts < ts || (h[c].ts == ts && h[c].ord < ord))) break;
        h[i] = h[c];
        i = c;
    }
    h[i].ts = ts;
    h[i].ord = ord;
    h[i].s = s;
}

/* Only streams in the heap hold cursor state: a stream leaves it when its
 * cursor is done (and freed), and lt__merge_start frees the cursor of a
 * stream it fails to start. So a reset costs the streams being merged, not
 * every stream of the file: reading a million streams one at a time
 * (lt_reader_select) stays linear. */
void lt__merge_reset(lt_reader *r) {
    for (uint32_t i = 0; i < r->nheap; i++) lt__cursor_free(r, r->heap[i].s);
    r->nheap = 0;
    r->started = r->pending = 0;
    r->fast = 0;
    r->err = 0;
    r->errmsg[0] = '\0';
}

/* Puts stream s in the heap (not yet ordered): parked until its turn when
 * its first block has events, else stepped to its first event now. */
static int lt__merge_add(lt_reader *r, lt__rstream *s) {
    lt__cursor_start(r, s);
    if (s->resumed) {
        int rc = lt__resume_install(r, s);
        if (rc < 0) {
            lt__cursor_free(r, s);
            return rc;
        }
    }
    const lt__blk *b = s->next_blk != LT__NONE ? &r->blks[s->next_blk] : NULL;
    uint64_t ord = (uint64_t)s->info.process << 32 | s->info.index;
    if (b && b->n_events) { /* decompressed when its turn comes */
        s->parked = LT__PARK_UNSTARTED;
        s->ev.type = LT__EV_PARKED;
        r->heap[r->nheap++] = (lt__hent){b->first_ts, ord, s};
        return 0;
    }
    int rc = lt__cursor_step(r, s, 1);
    if (rc < 0) {
        lt__cursor_free(r, s);
        return rc;
    }
    if (rc > 0) r->heap[r->nheap++] = (lt__hent){s->ev.ts, ord, s};
    return 0;
}

static int lt__merge_start(lt_reader *r) {
    if (!r->heap && r->nstreams) {
        r->heap = calloc(r->nstreams, sizeof *r->heap);
        if (!r->heap) return LT_ENOMEM;
    }
    r->nheap = 0;
    r->reloaded = 0;
    r->reload_limit = r->info.raw_bytes + (64ull << 20);
    if (r->sel_process || r->sel_thread) { /* one stream, found directly */
        int rc = lt__merge_add(r, r->procs[r->sel_process]->threads[r->sel_thread - 1]);
        if (rc < 0) return rc;
    } else {
        for (uint32_t i = 0; i < r->nstreams; i++) {
            int rc = lt__merge_add(r, r->streams[i]);
            if (rc < 0) return rc;
        }
    }
    for (uint32_t i = r->nheap / 2; i-- > 0;) lt__sift_down(r, i);
    r->started = 1;
    return 0;
}

static __attribute__((noinline, cold)) int lt__next_fail(lt_reader *r, int rc) {
    if (rc == LT_ENOMEM) snprintf(r->errmsg, sizeof r->errmsg, "out of memory");
    r->err = rc;
    r->fast = 0;
    return rc;
}

/* What lt_reader_next does first when it is not on its fast path (r->fast):
 * the error of an earlier call, the merge's start, or the next block of the
 * stream of the event returned last. Returns 1 to go on, else what
 * lt_reader_next returns. */
static __attribute__((noinline)) int lt__next_slow(lt_reader *r) {
    int rc;
    if (r->err) return r->err;
    if (!r->started) {
        if ((rc = lt_reader_sound(r)) < 0) { /* the trailer contradicts the file */
            r->err = rc;
            return rc;
        }
        if ((rc = lt__merge_start(r)) < 0) return lt__next_fail(r, rc);
    } else if (r->pending) {
        rc = r->pending;
        r->pending = 0;
        if (rc < 0) return lt__next_fail(r, rc);
        if (r->heap[0].s->parked && (rc = lt__unpark(r, r->heap[0].s)) < 0) return lt__next_fail(r, rc);
        rc = lt__cursor_step(r, r->heap[0].s, 1);
        if (rc < 0) return lt__next_fail(r, rc);
        if (rc == 0) {
            r->heap[0] = r->heap[--r->nheap];
            if (r->nheap > 1) lt__sift_down(r, 0);
        } else {
            lt__sift_top(r, r->heap[0].s->ev.ts);
        }
    }
    r->fast = 1;
    return 1;
}

/* The cursor of the event being returned moves on at once, but stops short
 * of loading its next block (r->pending): string pointers of the returned
 * event stay valid until the next call, and no freshly written event is
 * copied out (a store-forwarding stall). */
int lt_reader_next(lt_reader *r, lt_event *ev) {
    int rc;
    if (__builtin_expect(!r->fast, 0)) { /* not started, failed, or a block to load */
        if ((rc = lt__next_slow(r)) != 1) return rc;
    }
    if (r->nheap == 0) return 0;
    lt__rstream *s = r->heap[0].s;
    /* A zone begin, most of all events, is the head of the struct plus
     * constants: no loads of what the cursor has just stored. */
copy:
    if (s->ev.type == LT_EV_ZONE_BEGIN) {
        memcpy(ev, &s->ev, offsetof(lt_event, begin_ts));
        ev->begin_ts = ev->ts;
        ev->child_ns = 0;
        ev->name = ev->text = ev->text2 = NULL;
        ev->name_len = ev->text_len = ev->text2_len = 0;
        ev->id = 0;
        ev->value = 0;
        ev->count = 0;
    } else if (s->ev.type == LT_EV_ZONE_END) {
        memcpy(ev, &s->ev, offsetof(lt_event, text2));
        ev->text2 = NULL;
        ev->text2_len = 0;
        ev->id = 0;
        ev->value = 0;
        ev->count = 0;
    } else if (__builtin_expect(s->ev.type != LT__EV_PARKED, 1)) {
        *ev = s->ev;
    } else { /* checked only here: zones, most events, pay nothing */
        if ((rc = lt__unpark(r, s)) < 0) goto fail;
        goto copy;
    }
    rc = lt__cursor_step(r, s, 0);
    if (rc == 1) {
        if (r->nheap > 1) lt__sift_top(r, s->ev.ts);
        else r->heap[0].ts = s->ev.ts;
    } else if (rc == 0) {
        r->heap[0] = r->heap[--r->nheap];
        if (r->nheap > 1) lt__sift_down(r, 0);
    } else {
        r->pending = rc == 2 ? 1 : rc; /* an error shows at the next call */
        r->fast = 0;
    }
    return 1;
fail:
    return lt__next_fail(r, rc);
}

int lt_reader_rewind(lt_reader *r) {
    lt__merge_reset(r);
    return 0;
}

int lt_reader_select(lt_reader *r, uint32_t process, uint32_t thread) {
    if (process != 0 || thread != 0) {
        if (!lt_reader_thread(r, process, thread)) return LT_EINVAL;
    }
    r->sel_process = process;
    r->sel_thread = thread;
    return lt_reader_rewind(r);
}
