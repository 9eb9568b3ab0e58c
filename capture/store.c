/* store.c -- what capture-release keeps per process and stream: validated
 * records buffered into blocks (their descriptors carry their counts: the
 * writer makes the trailer's summaries from them), metadata, statistics.
 *
 * Everything here runs on the event-loop thread. A block buffer is handed to
 * the worker when it reaches LT_BLOCK_TARGET, on the periodic flush, and when
 * its process ends; a process's metadata block is always queued before any
 * of its event blocks, so a reader meets every definition before its use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "capture.h"
#include "common/file_int.h" /* lt__writer_finish */
#include "common/wire.h"

#define HDR_MAX 32u                     /* lt_block_header() bound */
#define BLK_MIN 4096u                   /* first allocation of a block */
#define BLK_FULL (LT_BLOCK_TARGET + HDR_MAX)

typedef struct cap_stream {
    uint32_t thread;
    lt__stream_state st;
    cap_blk *blk;               /* block being built, or NULL */
    lt__stream_state blk0;      /* st when the block started */
    int blk_have_first;         /* blk->desc.first_ts is set */
    size_t hint;                /* capacity for the next block */
} cap_stream;

/* What one announced thread costs while its process is connected: its
 * state, its slot in the process's table, the allocator's header. */
#define STREAM_COST (sizeof(cap_stream) + 2 * sizeof(cap_stream *) + 16)

struct cap_proc {
    uint32_t index;
    uint64_t anchor_mono;
    cap_stream **threads;
    uint32_t n_threads, cap_threads;
    uint32_t max_loc, max_plot, max_frame;
    uint32_t names;
    cap_blk *meta;
    uint64_t received;          /* events stored */
    uint64_t lost;              /* counts of LOST records */
    uint64_t open_zones;        /* of all its threads (LT_MAX_OPEN_ZONES) */
    uint64_t meta_cost;         /* lt__meta_cost() of its metadata */
    int said_bye;
    uint64_t bye_sent, bye_lost;
    unsigned crash_sig;         /* from BYE (1.2): the fatal signal, or 0 */
};

struct cap_store {
    cap_worker *wk;
    uint32_t max_names;
    uint64_t mem;               /* bytes in blocks being built or queued */
    uint64_t tables;            /* bytes of the connected processes' streams */
    uint64_t table_limit;       /* most `tables` may reach */
    uint64_t threads;           /* threads announced, all processes */
    int err;                    /* first write error, or LT_ENOMEM */
    uint64_t stat[CAP_NSTATS];
    int stats_dirty;
    uint64_t processes, events, blocks, raw_bytes, body_bytes;
    uint64_t max_size;          /* --max-size, 0 = none */
    int full;                   /* the file reached max_size: events dropped */
    int rotating;               /* --rotate: files repeat live metadata */
    uint64_t meta_cost;         /* metadata budget used: all processes, or
                                   (rotating) the connected ones */
};

static const struct {
    const char *name;
    uint8_t severity;
    const char *desc;
} stat_info[CAP_NSTATS] = {
    {"clients_connected", LT_SEV_INFO, "clients that completed the handshake"},
    {"clients_refused", LT_SEV_ERROR,
     "connections closed before or during the handshake"},
    {"clients_rejected", LT_SEV_DATA_LOSS,
     "clients closed for breaking the protocol after the handshake"},
    {"clients_lost", LT_SEV_DATA_LOSS,
     "clients whose connection ended without a goodbye"},
    {"events_lost_client", LT_SEV_DATA_LOSS,
     "events clients reported as dropped"},
    {"events_rejected", LT_SEV_DATA_LOSS,
     "events in messages refused as malformed"},
    {"bytes_rejected", LT_SEV_DATA_LOSS, "bytes of messages refused as malformed"},
    {"zones_aborted", LT_SEV_DATA_LOSS,
     "zones closed by the daemon because their process ended abnormally"},
    {"size_limit_bytes", LT_SEV_INFO,
     "--max-size: events are no longer stored once the file has this size"},
    {"events_dropped_size_limit", LT_SEV_DATA_LOSS,
     "events received after the file reached --max-size, not stored"},
    {"clients_after_end", LT_SEV_INFO,
     "processes turned away while the capture was draining (SIGUSR1): "
     "started after the traced program ended, they ran unprofiled"},
    {"clients_over_budget", LT_SEV_DATA_LOSS,
     "clients cut off because their metadata would pass the budget every "
     "reader holds (also counted in clients_rejected)"},
    {"clients_too_slow", LT_SEV_DATA_LOSS,
     "clients closed while memory was short for sending a message slower "
     "than the minimum rate (also counted in clients_lost)"},
    {"clients_resumed", LT_SEV_INFO,
     "connections that took over a process whose connection had ended without "
     "a goodbye (the program closed or replaced the profiler's descriptor)"},
};

/* ---- Blocks ------------------------------------------------------------ */

static cap_blk *blk_new(cap_store *s, size_t cap) {
    cap_blk *b = malloc(sizeof *b + cap);
    if (!b) {
        if (!s->err) s->err = LT_ENOMEM;
        return NULL;
    }
    memset(b, 0, sizeof *b);
    b->cap = cap;
    s->mem += cap;
    return b;
}

/* Makes room for `need` more bytes; returns the write position or NULL. */
static uint8_t *blk_room(cap_store *s, cap_blk **bp, size_t need) {
    cap_blk *b = *bp;
    if (b->len + need <= b->cap) return b->data + b->len;
    size_t nc = b->cap * 2;
    if (nc > BLK_FULL) nc = BLK_FULL;
    if (nc < b->len + need) nc = b->len + need;
    cap_blk *nb = realloc(b, sizeof *nb + nc);
    if (!nb) {
        if (!s->err) s->err = LT_ENOMEM;
        return NULL;
    }
    s->mem += nc - nb->cap;
    nb->cap = nc;
    *bp = nb;
    return nb->data + nb->len;
}

static void blk_free(cap_store *s, cap_blk *b) {
    s->mem -= b->cap;
    free(b);
}

static void queue(cap_store *s, cap_blk *b) {
    cap_worker_push(s->wk, b);
}

/* ---- Streams ----------------------------------------------------------- */

static void flush_meta(cap_store *s, cap_proc *p) {
    cap_blk *b = p->meta;
    if (!b) return;
    p->meta = NULL;
    b->desc = (lt_block_desc){.kind = LT_BLOCK_META, .process = p->index};
    queue(s, b);
}

static void flush_stream(cap_store *s, cap_proc *p, cap_stream *t, int full) {
    cap_blk *b = t->blk;
    if (!b) return;
    flush_meta(s, p);
    t->blk = NULL;
    b->desc.kind = LT_BLOCK_EVENTS;
    b->desc.process = p->index;
    b->desc.thread = t->thread;
    lt__desc_counts(&b->desc, &t->blk0, &t->st);
    b->desc.last_ts = t->st.last_ts;
    if (!t->blk_have_first) b->desc.first_ts = b->desc.last_ts;
    t->hint = full ? BLK_FULL : b->len < BLK_MIN ? BLK_MIN : b->len;
    queue(s, b);
}

/* Starts the stream's next block, from the stream's state `before` (its
 * last timestamp is the block's base), with room for `need` bytes of
 * records. */
static int start_block(cap_store *s, cap_proc *p, cap_stream *t,
                       const lt__stream_state *before, size_t need) {
    size_t cap = t->hint;
    if (cap < HDR_MAX + need) cap = HDR_MAX + need;
    cap_blk *b = blk_new(s, cap);
    if (!b) return -1;
    b->len = lt_block_header(b->data, LT_BLOCK_EVENTS, p->index, t->thread,
                             before->last_ts);
    t->blk = b;
    t->blk0 = *before;
    t->blk_have_first = 0;
    return 0;
}

/* Timestamp of the first event in already validated records. */
static uint64_t first_event_ts(const uint8_t *q, const uint8_t *end,
                               uint64_t ts) {
    while (q < end) {
        uint8_t tag = *q++;
        uint64_t v;
        if (tag == LT_TAG_ZONE_TEXT || tag == LT_TAG_ZONE_NAME) {
            const char *str;
            size_t n;
            if (lt__get_str(&q, end, &str, &n) < 0) break;
            continue;
        }
        if (lt__get_varint(&q, end, &v) == 0) return ts + v;
        break;
    }
    return ts;
}

/* Hands the stream's block over when `n` more bytes would take it past the
 * target. Called before the records are scanned: the block's descriptor
 * takes the stream state as it is now. */
static void make_room(cap_store *s, cap_proc *p, cap_stream *t, size_t n) {
    if (t->blk && t->blk->len + n > LT_BLOCK_TARGET) flush_stream(s, p, t, 1);
}

/* Appends validated records to the stream; `before` is its state before
 * them (make_room() was called with that state). */
static int append_events(cap_store *s, cap_proc *p, cap_stream *t,
                         const lt__stream_state *before, const uint8_t *q,
                         size_t n) {
    if (!t->blk && start_block(s, p, t, before, n) < 0) return -1;
    uint8_t *w = blk_room(s, &t->blk, n);
    if (!w) return -1;
    memcpy(w, q, n);
    t->blk->len += n;
    if (!t->blk_have_first && t->st.events > before->events) {
        t->blk->desc.first_ts = first_event_ts(q, q + n, before->last_ts);
        t->blk_have_first = 1;
    }
    return 0;
}

/* Closes the stream's open zones at its last timestamp. */
static void abort_zones(cap_store *s, cap_proc *p, cap_stream *t) {
    uint32_t depth = t->st.depth;
    if (depth == 0) return;
    size_t n = (size_t)depth * 2;
    uint8_t *recs = malloc(n);
    if (!recs) {
        if (!s->err) s->err = LT_ENOMEM;
        return;
    }
    for (size_t i = 0; i < n; i += 2) {
        recs[i] = LT_TAG_ZONE_END_ABORTED;
        recs[i + 1] = 0;
    }
    make_room(s, p, t, n);
    lt__stream_state before = t->st;
    lt__scan_limits lim = {p->max_loc, p->max_plot, p->max_frame, LT_MAX_DEPTH, 1, 0, 0};
    const char *why;
    size_t off;
    if (lt__scan_events(recs, n, &t->st, &lim, &why, &off) == 0 &&
        append_events(s, p, t, &before, recs, n) == 0)
        cap_store_stat_add(s, CAP_ST_ZONES_ABORTED, depth);
    free(recs);
}

static int new_stream(cap_store *s, cap_proc *p) {
    if (p->n_threads == p->cap_threads) {
        uint32_t nc = p->cap_threads ? p->cap_threads * 2 : 4;
        cap_stream **nt = realloc(p->threads, nc * sizeof *nt);
        if (!nt) return -1;
        p->threads = nt;
        p->cap_threads = nc;
    }
    cap_stream *t = calloc(1, sizeof *t);
    if (!t) return -1;
    t->thread = p->n_threads + 1;
    t->hint = BLK_MIN;
    p->threads[p->n_threads++] = t;
    s->tables += STREAM_COST;
    s->threads++;
    return 0;
}

/* Frees the stream (its last block was handed over). */
static void end_stream(cap_store *s, cap_stream *t) {
    if (t->blk) blk_free(s, t->blk);
    s->tables -= STREAM_COST;
    free(t);
}

/* ---- Metadata budget ---------------------------------------------------- */

/* What is reserved for a process's PROC_END (its reason is at most 1024
 * bytes, see put_proc_end()). */
#define PROC_END_COST (LT_META_REC_COST + LT_META_STR_COST + 1024)

/* Whether `add` more metadata cost fits: the process's own budget
 * (LT_MAX_META_CLIENT) and the file's (LT_MAX_META, or LT_META_PER_BYTE
 * times the bytes written when that is more; with --rotate, the connected
 * processes' metadata within LT_MAX_META, as each new file repeats it).
 * Whatever the daemon writes is then within every reader's budget
 * (trace.h). Fills *why when not. */
static int meta_fits(cap_store *s, const cap_proc *p, uint64_t add,
                     cap_why *why) {
    uint64_t file = LT_MAX_META;
    if (!s->rotating) {
        uint64_t grown = cap_worker_bytes(s->wk) * LT_META_PER_BYTE;
        if (grown > file) file = grown;
    }
    if (p->meta_cost + add > LT_MAX_META_CLIENT) {
        snprintf(why->buf, sizeof why->buf,
                 "metadata past the per-client budget (%llu MiB, LT_MAX_META_CLIENT)",
                 (unsigned long long)(LT_MAX_META_CLIENT >> 20));
    } else if (s->meta_cost + add > file) {
        snprintf(why->buf, sizeof why->buf,
                 "metadata past the capture's budget (%llu MiB, LT_MAX_META)",
                 (unsigned long long)(file >> 20));
    } else {
        return 1;
    }
    why->text = why->buf;
    cap_store_stat_add(s, CAP_ST_CLIENTS_OVER_BUDGET, 1);
    return 0;
}

static void meta_charge(cap_store *s, cap_proc *p, uint64_t add) {
    p->meta_cost += add;
    s->meta_cost += add;
}

void cap_store_set_rotating(cap_store *s, int rotating) { s->rotating = rotating; }

/* The cost of a process's PROC_INFO (`info`, tag included) and PROC_END. */
static uint64_t proc_cost(const uint8_t *info, size_t info_len) {
    const uint8_t *q = info;
    lt__meta_rec m;
    const char *reason;
    if (lt__next_meta(&q, info + info_len, LT__META_BIT(LT_TAG_PROC_INFO), &m,
                      &reason) == 0)
        return PROC_END_COST + lt__meta_cost(&m);
    return PROC_END_COST + LT_META_REC_COST + info_len * 2 * LT_META_STR_COST;
}

int cap_store_admit(cap_store *s, const uint8_t *info, size_t info_len,
                    cap_why *why) {
    cap_proc none = {0};
    return meta_fits(s, &none, proc_cost(info, info_len), why) ? 0 : -1;
}

/* ---- Processes --------------------------------------------------------- */

cap_proc *cap_proc_new(cap_store *s, uint32_t index, const uint8_t *info,
                       size_t info_len, uint64_t anchor_mono_ns) {
    cap_proc *p = calloc(1, sizeof *p);
    if (!p) goto oom;
    p->index = index;
    p->anchor_mono = anchor_mono_ns;
    p->meta = blk_new(s, HDR_MAX + info_len + BLK_MIN);
    if (!p->meta) goto oom;
    meta_charge(s, p, proc_cost(info, info_len));
    p->meta->len = lt_block_header(p->meta->data, LT_BLOCK_META, index, 0, 0);
    memcpy(p->meta->data + p->meta->len, info, info_len);
    p->meta->len += info_len;
    s->processes++;
    return p;
oom:
    free(p);
    if (!s->err) s->err = LT_ENOMEM;
    return NULL;
}

/* Checks one META record against the process's definitions so far (the
 * counters are the tentative ones of the message being checked). */
static int check_def(const lt__meta_rec *m, uint32_t *thr, uint32_t *loc,
                     uint32_t *plot, uint32_t *frame, uint32_t *names,
                     cap_why *why) {
    uint32_t *next = m->tag == LT_TAG_THREAD_INFO ? thr
                     : m->tag == LT_TAG_LOC_DEF   ? loc
                     : m->tag == LT_TAG_PLOT_DEF  ? plot
                                                  : frame;
    static const char *what[] = {"thread", "location", "plot", "frame name"};
    int k = m->tag == LT_TAG_THREAD_INFO ? 0
            : m->tag == LT_TAG_LOC_DEF   ? 1
            : m->tag == LT_TAG_PLOT_DEF  ? 2
                                         : 3;
    /* Threads may be announced again (a new name); the others are defined
     * once each, in order, so that "ids up to max" means "defined". */
    if (m->id == (uint64_t)*next + 1) {
        (*next)++;
        (*names)++;
        return 0;
    }
    if (k == 0 && m->id <= *next) return 0;
    snprintf(why->buf, sizeof why->buf, "%s %llu defined out of order (next is %u)",
             what[k], (unsigned long long)m->id, *next + 1);
    why->text = why->buf;
    return -1;
}

int cap_proc_meta(cap_store *s, cap_proc *p, const uint8_t *body, size_t n,
                  cap_why *why) {
    const uint8_t *q = body, *end = body + n;
    uint32_t thr = p->n_threads, loc = p->max_loc, plot = p->max_plot;
    uint32_t frame = p->max_frame, names = p->names;
    uint64_t cost = 0;
    const uint32_t allowed =
        LT__META_BIT(LT_TAG_THREAD_INFO) | LT__META_BIT(LT_TAG_LOC_DEF) |
        LT__META_BIT(LT_TAG_PLOT_DEF) | LT__META_BIT(LT_TAG_FRAME_DEF);
    why->events = 0;
    while (q < end) {
        lt__meta_rec m;
        const char *reason;
        size_t off = (size_t)(q - body);
        if (lt__next_meta(&q, end, allowed, &m, &reason) < 0) {
            snprintf(why->buf, sizeof why->buf, "%s (byte %zu of a META message)",
                     reason, off);
            why->text = why->buf;
            return -1;
        }
        if (check_def(&m, &thr, &loc, &plot, &frame, &names, why) < 0)
            return -1;
        cost += lt__meta_cost(&m);
        if (names > s->max_names) {
            snprintf(why->buf, sizeof why->buf,
                     "more than %u threads, locations, plots and frames",
                     s->max_names);
            why->text = why->buf;
            return -1;
        }
    }
    if (cost && !meta_fits(s, p, cost, why)) return -1;
    uint64_t add = (uint64_t)(thr - p->n_threads) * STREAM_COST;
    if (add && s->tables + add > s->table_limit) {
        snprintf(why->buf, sizeof why->buf,
                 "%u more threads would take the daemon's thread tables past "
                 "%llu MiB (half of -m)", thr - p->n_threads,
                 (unsigned long long)(s->table_limit >> 20));
        why->text = why->buf;
        return -1;
    }
    while (p->n_threads < thr)
        if (new_stream(s, p) < 0) {
            if (!s->err) s->err = LT_ENOMEM;
            return -2;
        }
    p->max_loc = loc;
    p->max_plot = plot;
    p->max_frame = frame;
    p->names = names;
    meta_charge(s, p, cost);
    if (n == 0) return 0;
    if (p->meta && p->meta->len + n > LT_BLOCK_TARGET) flush_meta(s, p);
    if (!p->meta) {
        p->meta = blk_new(s, HDR_MAX + (n < BLK_MIN ? BLK_MIN : n));
        if (!p->meta) return -2;
        p->meta->len =
            lt_block_header(p->meta->data, LT_BLOCK_META, p->index, 0, 0);
    }
    uint8_t *w = blk_room(s, &p->meta, n);
    if (!w) return -2;
    memcpy(w, body, n);
    p->meta->len += n;
    return 0;
}

/* ---- Size limit ---------------------------------------------------------- */

void cap_store_set_max_size(cap_store *s, uint64_t bytes, int rotating) {
    s->max_size = rotating ? 0 : bytes;
    s->stat[CAP_ST_SIZE_LIMIT] = bytes;
    s->stats_dirty = bytes != 0;
}

/* 1 once the written file (data whose writing is confirmed) reached the
 * limit; says so once. */
static int size_reached(cap_store *s) {
    if (s->full || !s->max_size || cap_worker_bytes(s->wk) < s->max_size) return s->full;
    s->full = 1;
    cap_log("the output reached --max-size (%llu bytes): recording stopped; events "
            "that arrive from now on are counted as dropped",
            (unsigned long long)s->max_size);
    return 1;
}

/* Validates an EVENTS body after the limit and counts its events as dropped;
 * the stream's state stays as stored, so the file remains consistent. */
static int drop_events(cap_store *s, cap_stream *t, const uint8_t *q, size_t rn,
                       const lt__scan_limits *lim, cap_why *why) {
    lt__stream_state tmp = t->st;
    const char *reason;
    size_t off;
    tmp.depth = LT_MAX_DEPTH / 2; /* dropped ends may close dropped begins */
    if (lt__scan_events(q, rn, &tmp, lim, &reason, &off) < 0) {
        why->text = reason;
        return -1;
    }
    cap_store_stat_add(s, CAP_ST_EVENTS_DROPPED_SIZE, tmp.events - t->st.events);
    return 0;
}

int cap_proc_events(cap_store *s, cap_proc *p, const uint8_t *body, size_t n,
                    cap_why *why) {
    const uint8_t *q;
    uint64_t thread;
    size_t rn, off;
    why->events = 0;
    if (lt__wire_events_decode(body, n, &thread, &q, &rn, &why->text) < 0) return -1;
    if (thread == 0 || thread > p->n_threads) {
        snprintf(why->buf, sizeof why->buf,
                 "EVENTS for thread %llu, which was never announced",
                 (unsigned long long)thread);
        why->text = why->buf;
        return -1;
    }
    cap_stream *t = p->threads[thread - 1];
    lt__scan_limits lim = {p->max_loc, p->max_plot, p->max_frame, LT_MAX_DEPTH, 0,
                           p->open_zones, LT_MAX_OPEN_ZONES};
    if (size_reached(s)) return drop_events(s, t, q, rn, &lim, why);
    make_room(s, p, t, rn);
    lt__stream_state before = t->st;
    const char *reason;
    if (lt__scan_events(q, rn, &t->st, &lim, &reason, &off) < 0) {
        lt__stream_state tmp = before;
        const char *r2;
        size_t o2;
        if (lt__scan_events(q, off, &tmp, &lim, &r2, &o2) == 0)
            why->events = tmp.events - before.events;
        why->events++; /* the bad record */
        snprintf(why->buf, sizeof why->buf,
                 "%s (thread %llu, byte %zu of an EVENTS message)", reason,
                 (unsigned long long)thread, off);
        why->text = why->buf;
        return -1;
    }
    p->open_zones = p->open_zones - before.depth + t->st.depth;
    if (rn == 0) return 0;
    if (append_events(s, p, t, &before, q, rn) < 0) return -2;
    uint64_t ev = t->st.events - before.events;
    p->received += ev;
    s->events += ev;
    if (t->st.lost != before.lost) {
        p->lost = lt__sat_add(p->lost, t->st.lost - before.lost);
        cap_store_stat_add(s, CAP_ST_EVENTS_LOST_CLIENT,
                           t->st.lost - before.lost);
    }
    return 0;
}

/* BYE and EXEC carry the same counts. */
static int said_counts(cap_proc *p, int exec, const uint8_t *body, size_t n) {
    uint64_t sent, lost;
    unsigned sig = 0;
    const char *why;
    if ((exec ? lt__wire_exec_decode(body, n, &sent, &lost, &why)
              : lt__wire_bye_crash_decode(body, n, &sent, &lost, &sig, &why)) < 0)
        return -1;
    p->said_bye = 1;
    p->crash_sig = sig;
    p->bye_sent = sent;
    p->bye_lost = lost;
    return 0;
}

int cap_proc_bye(cap_proc *p, const uint8_t *body, size_t n) {
    return said_counts(p, 0, body, n);
}

int cap_proc_exec(cap_proc *p, const uint8_t *body, size_t n) {
    return said_counts(p, 1, body, n);
}

void cap_proc_exec_failed(cap_proc *p) { p->said_bye = 0; }

static void put_proc_end(cap_store *s, cap_proc *p, int status,
                         const char *reason) {
    uint64_t ts = 0, sent = 0, lost = p->lost;
    size_t rlen = strlen(reason);
    if (rlen > 1024) rlen = 1024;
    for (uint32_t i = 0; i < p->n_threads; i++)
        if (p->threads[i]->st.have_ts && p->threads[i]->st.last_ts > ts)
            ts = p->threads[i]->st.last_ts;
    if (ts == 0) ts = p->anchor_mono;
    if (p->said_bye) {
        sent = p->bye_sent;
        if (p->bye_lost > lost) {
            cap_store_stat_add(s, CAP_ST_EVENTS_LOST_CLIENT, p->bye_lost - lost);
            lost = p->bye_lost;
        }
    }
    if (!p->meta) {
        p->meta = blk_new(s, BLK_MIN + rlen);
        if (!p->meta) return;
        p->meta->len =
            lt_block_header(p->meta->data, LT_BLOCK_META, p->index, 0, 0);
    }
    uint8_t *w = blk_room(s, &p->meta, 64 + rlen), *w0 = w;
    if (!w) return;
    *w++ = LT_TAG_PROC_END;
    w = lt__put_varint_(w, ts);
    *w++ = (uint8_t)status;
    w = lt__put_str(w, reason, rlen);
    w = lt__put_varint_(w, p->received);
    w = lt__put_varint_(w, sent);
    w = lt__put_varint_(w, lost);
    p->meta->len += (size_t)(w - w0);
}

void cap_proc_end(cap_store *s, cap_proc *p, int status, const char *reason) {
    if (status != LT_PROC_CLEAN)
        for (uint32_t i = 0; i < p->n_threads; i++)
            abort_zones(s, p, p->threads[i]);
    for (uint32_t i = 0; i < p->n_threads; i++)
        flush_stream(s, p, p->threads[i], 0);
    put_proc_end(s, p, status, reason);
    flush_meta(s, p);
    for (uint32_t i = 0; i < p->n_threads; i++) end_stream(s, p->threads[i]);
    if (s->rotating) s->meta_cost -= p->meta_cost; /* not repeated any more */
    free(p->threads);
    free(p);
}

uint32_t cap_proc_index(const cap_proc *p) { return p->index; }
uint64_t cap_proc_received(const cap_proc *p) { return p->received; }

int cap_proc_said_bye(const cap_proc *p, uint64_t *sent, uint64_t *lost) {
    *sent = p->bye_sent;
    *lost = p->bye_lost;
    return p->said_bye;
}

unsigned cap_proc_crash_sig(const cap_proc *p) { return p->crash_sig; }

/* ---- Store ------------------------------------------------------------- */

cap_store *cap_store_new(cap_worker *wk, uint32_t max_names) {
    cap_store *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->wk = wk;
    s->max_names = max_names;
    s->table_limit = UINT64_MAX;
    return s;
}

void cap_store_free(cap_store *s) {
    if (!s) return;
    free(s);
}

uint64_t cap_store_mem(const cap_store *s) { return s->mem + s->tables; }

void cap_store_set_table_limit(cap_store *s, uint64_t bytes) {
    s->table_limit = bytes;
}
uint64_t cap_store_events(const cap_store *s) { return s->events; }
int cap_store_error(const cap_store *s) { return s->err; }

void cap_store_stat_add(cap_store *s, enum cap_stat st, uint64_t n) {
    if (n == 0) return;
    s->stat[st] = lt__sat_add(s->stat[st], n); /* counts saturate, never wrap */
    s->stats_dirty = 1;
}

uint64_t cap_store_stat(const cap_store *s, enum cap_stat st) {
    return s->stat[st];
}

void cap_store_flush_proc(cap_store *s, cap_proc *p) {
    for (uint32_t i = 0; i < p->n_threads; i++)
        flush_stream(s, p, p->threads[i], 0);
    flush_meta(s, p);
}

void cap_store_stats_block(cap_store *s) {
    if (!s->stats_dirty) return;
    size_t cap = HDR_MAX;
    for (int i = 0; i < CAP_NSTATS; i++)
        cap += 1 + 10 + strlen(stat_info[i].name) + 1 + 10 + 10 +
               strlen(stat_info[i].desc);
    cap_blk *b = blk_new(s, cap);
    if (!b) return;
    uint8_t *w = b->data;
    w += lt_block_header(w, LT_BLOCK_STATS, 0, 0, 0);
    for (int i = 0; i < CAP_NSTATS; i++) {
        *w++ = LT_TAG_STAT;
        w = lt__put_str(w, stat_info[i].name, strlen(stat_info[i].name));
        *w++ = stat_info[i].severity;
        w = lt__put_varint_(w, s->stat[i]);
        w = lt__put_str(w, stat_info[i].desc, strlen(stat_info[i].desc));
    }
    b->len = (size_t)(w - b->data);
    b->desc = (lt_block_desc){.kind = LT_BLOCK_STATS};
    s->stats_dirty = 0;
    queue(s, b);
}

int cap_store_done(cap_store *s, cap_blk *done) {
    while (done) {
        cap_blk *b = done;
        done = b->next;
        if (b->rc < 0) {
            if (!s->err) s->err = b->rc;
        } else {
            s->blocks++;
            s->raw_bytes += b->len;
            s->body_bytes += b->unit_bytes;
        }
        blk_free(s, b);
    }
    return s->err;
}

void cap_store_totals(const cap_store *s, cap_totals *t) {
    memset(t, 0, sizeof *t);
    t->processes = s->processes;
    t->threads = s->threads;
    t->events = s->events;
    t->raw_bytes = s->raw_bytes;
    t->body_bytes = s->body_bytes;
    t->blocks = s->blocks;
}

int cap_store_close_writer(cap_store *s, lt_writer *w) {
    if (s->err) {
        /* Never claim completeness after a failure: no trailer. */
        int rc = lt_writer_close(w, NULL, 0, NULL, 0);
        return s->err < 0 ? s->err : rc;
    }
    /* The writer sums the descriptors; it does not know of the threads
     * that sent no event, nor of every process. */
    lt_total tot[2 + CAP_NSTATS] = {{"processes", s->processes}, {"threads", s->threads}};
    for (int i = 0; i < CAP_NSTATS; i++)
        tot[2 + i] = (lt_total){stat_info[i].name, s->stat[i]};
    return lt__writer_finish(w, tot, 2 + CAP_NSTATS);
}
