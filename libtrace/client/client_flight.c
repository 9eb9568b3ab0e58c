/* client_flight.c -- the client's flight recorder: instead of shipping
 * events to a daemon, the sender keeps the last N MiB or N seconds of them
 * in memory and writes them as a trace file on request (lt_flight_dump,
 * SIGUSR1) and when the client stops (at exit).
 *
 * The recording path is the streaming one: threads write their chunks as
 * always and the sender copies each round's new records into the ring
 * instead of a socket. Only the sender touches the ring. When it holds too
 * much, the oldest copies are dropped. A dump needs each thread's zones
 * open where its kept records start (written as cut zones, format 1.1) and
 * the timestamp their deltas start from. The thread notes both where each
 * of its chunks starts (lt__chunk_snap); a copy that starts a chunk carries
 * that snapshot, so dropping copies reads none of their records: a thread's
 * dropped copies of the chunk its oldest kept record is in are set aside
 * (60 KiB at most per thread, beyond the limit) and walked from the
 * snapshot only when a dump needs the state, or when all that is set aside
 * passes half the limit plus 256 KiB (then the thread that set aside last
 * is walked at once). A chunk without a usable snapshot (a name or text on
 * an open zone) is walked on the way out as before.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "client_internal.h"
#include "file_int.h"
#include "zstack.h"

#define RG_DEFAULT_CAP (256ull << 20) /* memory cap of the seconds mode */

typedef struct rg_seg {
    struct rg_seg *next;      /* next of the same thread */
    struct rg_seg *gnext;     /* next in arrival order */
    uint32_t thread, len;
    uint64_t arrived;         /* lt__now() of the round that copied it */
    uint32_t events;          /* timed records */
    uint32_t start;           /* 0: inside a chunk; 1: starts one, no usable
                                 snapshot; 2: starts one, snapshot below */
    uint64_t snap_ts;         /* start 2: lt__chunk_snap's ts, depth, loc */
    uint32_t snap_depth;
    uint32_t *snap_loc;       /* in this allocation, after data */
    uint8_t data[];
} rg_seg;

typedef struct rg_stream {
    /* `set` NULL: the state where the oldest kept record starts; else the
     * state where `set` (a snapshot) starts, to be walked over `set`'s
     * records and those of the copies after it up to `head` */
    uint64_t ts;              /* the time the oldest kept record's delta is from */
    lt__zstack open;          /* zones open before the oldest kept record */
    rg_seg *set, *set_tail;   /* dropped copies of the chunk `head` is in */
    rg_seg *head, *tail;
} rg_stream;

static struct {
    int on;
    uint64_t max_bytes, window_ns;
    char base[4096];          /* dump path; numbered after the first */
    unsigned dumps;
    unsigned name_from;       /* 1: dumps are numbered from the first */
    lt__bytes proc_info;      /* PROC_INFO record */
    lt__bytes meta;           /* every metadata record so far */
    rg_stream *streams;       /* by thread index - 1 */
    uint32_t nstreams;
    rg_seg *ghead, *gtail;
    uint64_t bytes;           /* held in segments */
    uint64_t set_bytes;       /* held in segments set aside (rg_stream) */
    uint64_t evicted_events;
    uint64_t want_round;      /* dump at the end of this sender round (its
                                 snapshot follows the request), 0: none;
                                 under lt__g.mu */
    int dump_rc;
    uint64_t dumped_round;    /* round of the last dump (under lt__g.mu) */
    int dirty;                /* records kept since the last dump */
    unsigned crash_sig;       /* the client stops for this crash, or 0 */
    uint64_t dump_events, dump_last_ts; /* of the dump being written */
    char last_path[4200];     /* of the last dump (under lt__g.mu) */
} rg;

static volatile sig_atomic_t rg_signalled;

static void rg_on_signal(int sig) {
    (void)sig;
    rg_signalled = 1;
}

/* ---- configuration -------------------------------------------------------- */

/* TRACY_FLIGHT: "64M" (MiB kept) or "30s" (seconds kept, at most
 * TRACY_FLIGHT_MAX_MB MiB, default 256). Returns 1 for flight mode, 0 for
 * streaming, -1 for a bad value (warned). */
int lt__ring_config(void) {
    const char *v = getenv("TRACY_FLIGHT");
    if (!v || !*v || strcmp(v, "0") == 0) return 0;
    char *end;
    double x = strtod(v, &end);
    rg.max_bytes = RG_DEFAULT_CAP;
    rg.window_ns = 0;
    if (!(x > 0) || x > 1e9) goto bad;
    if (!strcmp(end, "M") || !strcmp(end, "MiB") || !strcmp(end, "MB")) {
        rg.max_bytes = (uint64_t)(x * 1048576.0);
    } else if (!strcmp(end, "s")) {
        rg.window_ns = (uint64_t)(x * 1e9);
        const char *m = getenv("TRACY_FLIGHT_MAX_MB");
        if (m && *m) rg.max_bytes = (uint64_t)strtoull(m, NULL, 10) << 20;
        if (!rg.max_bytes) rg.max_bytes = RG_DEFAULT_CAP;
    } else {
        goto bad;
    }
    const char *o = getenv("TRACY_FLIGHT_OUT");
    if (o && *o) snprintf(rg.base, sizeof rg.base, "%s", o);
    else snprintf(rg.base, sizeof rg.base, "flight-%ld.tracy", (long)getpid());
    return 1;
bad:
    fprintf(stderr, "tracy: invalid TRACY_FLIGHT '%s' (expected MiB as 64M or seconds "
            "as 30s)\n", v);
    return -1;
}

static void rg_free_list(rg_seg *s) {
    for (rg_seg *n; s; s = n) {
        n = s->next;
        free(s);
    }
}

/* Memory of a segment set aside, its snapshot included. */
static uint64_t rg_set_size(const rg_seg *s) {
    return sizeof *s + s->len + (uint64_t)s->snap_depth * sizeof *s->snap_loc;
}

/* Frees what a stream set aside. */
static void rg_set_free(rg_stream *st) {
    for (rg_seg *s = st->set; s; s = s->next) rg.set_bytes -= rg_set_size(s);
    rg_free_list(st->set);
    st->set = st->set_tail = NULL;
}

static void rg_reset(void) {
    for (rg_seg *s = rg.ghead, *n; s; s = n) {
        n = s->gnext;
        free(s);
    }
    for (uint32_t i = 0; i < rg.nstreams; i++) {
        lt__zstack_free(&rg.streams[i].open);
        rg_free_list(rg.streams[i].set);
    }
    free(rg.streams);
    rg.streams = NULL;
    rg.nstreams = 0;
    rg.ghead = rg.gtail = NULL;
    rg.bytes = rg.set_bytes = rg.evicted_events = 0;
    rg.meta.len = rg.proc_info.len = 0;
    rg.dumps = 0;
}

/* PROC_INFO from the HELLO message the client would send: the same fields
 * after the magic and the version, less the token at the end. */
static int rg_proc_info(const uint8_t *hello, size_t n) {
    const uint8_t *p = hello + LT_WIRE_HEADER + LT_WIRE_MAGIC_LEN + 4, *end = hello + n;
    const uint8_t *start = p;
    uint64_t v;
    const char *s;
    size_t len;
    int ok = lt__get_varint(&p, end, &v) == 0 && lt__get_varint(&p, end, &v) == 0 &&
             lt__get_str(&p, end, &s, &len) == 0 && lt__get_str(&p, end, &s, &len) == 0 &&
             lt__get_varint(&p, end, &v) == 0;
    for (uint64_t i = 0; ok && i < v; i++) ok = lt__get_str(&p, end, &s, &len) == 0;
    ok = ok && lt__get_varint(&p, end, &v) == 0 && lt__get_varint(&p, end, &v) == 0 &&
         lt__get_str(&p, end, &s, &len) == 0;
    if (!ok) return LT_EINVAL;
    if (lt__bytes_reserve(&rg.proc_info, 1 + (size_t)(p - start)) < 0) return LT_ENOMEM;
    rg.proc_info.p[0] = LT_TAG_PROC_INFO;
    memcpy(rg.proc_info.p + 1, start, (size_t)(p - start));
    rg.proc_info.len = 1 + (size_t)(p - start);
    return 0;
}

int lt__ring_start(const uint8_t *hello, size_t n) {
    rg_reset();
    int rc = rg_proc_info(hello, n);
    if (rc < 0) return rc;
    /* The path itself is the program's: a child (of fork, or of a run)
     * that dumps before it takes the next number. */
    rg.name_from = lt__g.forked || lt__g.of_run;
    rg.on = 1;
    rg_signalled = 0;
    struct sigaction sa, old;
    if (sigaction(SIGUSR1, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = rg_on_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGUSR1, &sa, NULL);
    }
    return 0;
}

int lt__ring_on(void) { return rg.on; }

/* ---- the sender's side: copies, eviction ---------------------------------- */

void lt__ring_meta(const uint8_t *p, size_t n) {
    if (n && lt__bytes_reserve(&rg.meta, n) == 0) {
        memcpy(rg.meta.p + rg.meta.len, p, n);
        rg.meta.len += n;
    }
}

static rg_stream *rg_stream_of(uint32_t thread) {
    if (thread > rg.nstreams) {
        rg_stream *n = realloc(rg.streams, (size_t)thread * sizeof *n);
        if (!n) return NULL;
        memset(n + rg.nstreams, 0, (size_t)(thread - rg.nstreams) * sizeof *n);
        rg.streams = n;
        rg.nstreams = thread;
    }
    return &rg.streams[thread - 1];
}

int lt__ring_slice(uint32_t thread, const uint8_t *p, uint32_t len, uint32_t events,
                   const lt__chunk_snap *snap, uint64_t now) {
    rg_stream *st = len ? rg_stream_of(thread) : NULL;
    int have = snap && snap->ok;
    size_t at = (sizeof(rg_seg) + len + 3) & ~(size_t)3 /* snap_loc */;
    rg_seg *s = st ? malloc(at + (have ? (size_t)snap->depth * sizeof *snap->loc : 0)) : NULL;
    if (!s) return len ? LT_ENOMEM : 0;
    s->next = s->gnext = NULL;
    s->thread = thread;
    s->len = len;
    s->arrived = now;
    s->events = events;
    s->start = !snap ? 0 : have ? 2 : 1;
    s->snap_ts = have ? snap->ts : 0;
    s->snap_depth = have ? snap->depth : 0;
    s->snap_loc = (uint32_t *)((uint8_t *)s + at);
    if (have && snap->depth) memcpy(s->snap_loc, snap->loc, snap->depth * sizeof *snap->loc);
    memcpy(s->data, p, len);
    if (st->tail) st->tail->next = s;
    else st->head = s;
    st->tail = s;
    if (rg.gtail) rg.gtail->gnext = s;
    else rg.ghead = s;
    rg.gtail = s;
    rg.bytes += sizeof *s + len;
    rg.dirty = 1;
    return 0;
}

/* A varint at *p, one- and two-byte forms inline. Returns 0 or -1. */
static inline int rg_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    const uint8_t *q = *p;
    if (__builtin_expect(q < end && q[0] < 0x80, 1)) {
        *v = q[0];
        *p = q + 1;
        return 0;
    }
    if (end - q >= 2 && q[1] < 0x80) {
        *v = (uint64_t)(q[0] & 0x7f) | (uint64_t)q[1] << 7;
        *p = q + 2;
        return 0;
    }
    return lt__get_varint(p, end, v);
}

/* Moves the thread's start time and open zones over a segment's records.
 * Zone begins and ends, nearly every record, are handled inline. */
static void rg_walk(rg_stream *st, const rg_seg *s) {
    const uint8_t *p = s->data, *end = s->data + s->len;
    lt__zstack *z = &st->open;
    uint64_t ts = st->ts;
    /* locals whose address is never taken, so that they stay in registers;
     * the general path works on copies */
    lt__zent *v = z->v;
    uint32_t depth = z->depth, cap = z->cap;
    int clean = 1; /* no slot below cap holds a name or text */
    for (uint32_t i = depth; i < cap && clean; i++) clean = !v[i].name && !v[i].text;
    while (p < end) {
        uint32_t tag = *p;
        if (tag == LT_TAG_ZONE_END || tag == LT_TAG_ZONE_BEGIN || tag > LT_TAG_ZONE_BEGIN_SHORT) {
            const uint8_t *q = p + 1;
            uint64_t dt, loc;
            if (__builtin_expect(q < end && q[0] < 0x80, 1)) {
                dt = q[0];
                q++;
            } else if (q + 1 < end && q[1] < 0x80) {
                dt = (uint64_t)(q[0] & 0x7f) | (uint64_t)q[1] << 7;
                q += 2;
            } else {
                goto general;
            }
            if (tag == LT_TAG_ZONE_END) {
                ts += dt;
                depth -= depth > 0;
                p = q;
                continue;
            }
            if (tag == LT_TAG_ZONE_BEGIN) {
                if (!(q < end && q[0] < 0x80)) goto general;
                loc = *q++;
            } else {
                loc = tag - LT_TAG_ZONE_BEGIN_SHORT;
            }
            if (__builtin_expect(depth < cap && clean, 1)) {
                ts += dt;
                v[depth++].loc = (uint32_t)loc;
                p = q;
                continue;
            }
        }
    general: {
        /* any other record, long varints, or a stack to grow */
        z->depth = depth;
        const uint8_t *pp = p;
        uint64_t t = ts, loc;
        const char *str, *why;
        size_t len;
        uint8_t t8;
        int timed = lt__rec_next(&pp, end, &t8, &t, &loc, &str, &len);
        if (timed < 0) break; /* the client wrote it: cannot happen */
        p = pp;
        ts = t;
        if (t8 != LT_TAG_LOST) (void)lt__zstack_apply(z, t8, loc, str, len, &why);
        v = z->v;
        depth = z->depth;
        cap = z->cap;
        clean = 1;
        for (uint32_t i = depth; i < cap && clean; i++) clean = !v[i].name && !v[i].text;
    }
    }
    z->depth = depth;
    st->ts = ts;
}

/* The state where the thread's oldest kept record starts: the set-aside
 * copies walked from their snapshot. */
static int rg_settle(rg_stream *st) {
    rg_seg *s = st->set;
    if (!s) return 0;
    lt__zstack *z = &st->open;
    if (s->snap_depth > z->cap) {
        lt__zent *v = realloc(z->v, s->snap_depth * sizeof *v);
        if (!v) return LT_ENOMEM;
        memset(v + z->cap, 0, (s->snap_depth - z->cap) * sizeof *v);
        z->v = v;
        z->cap = s->snap_depth;
    }
    for (uint32_t i = 0; i < s->snap_depth; i++) {
        lt__zent *e = &z->v[i];
        e->loc = s->snap_loc[i];
        free(e->name);
        free(e->text);
        e->name = e->text = NULL;
        e->name_len = e->text_len = 0;
    }
    z->depth = s->snap_depth;
    st->ts = s->snap_ts;
    for (; s; s = s->next) rg_walk(st, s);
    rg_set_free(st);
    return 0;
}

/* Memory the segments set aside may take beyond the limit: past it, the
 * stream that set one aside last is walked now. */
static uint64_t rg_set_budget(void) { return rg.max_bytes / 2 + (256u << 10); }

/* Drops the oldest segment. One that starts a chunk with a snapshot
 * replaces what was set aside; the others join it, or, with none set aside
 * (no usable snapshot), are walked now. */
static void rg_evict(void) {
    rg_seg *s = rg.ghead;
    rg_stream *st = &rg.streams[s->thread - 1];
    st->head = s->next;
    if (!st->head) st->tail = NULL;
    rg.ghead = s->gnext;
    if (!rg.ghead) rg.gtail = NULL;
    rg.bytes -= sizeof *s + s->len;
    rg.evicted_events += s->events;
    s->next = NULL;
    if (s->start == 2) {
        rg_set_free(st);
        st->set = st->set_tail = s;
    } else if (st->set && (s->start == 0 || rg_settle(st) < 0)) {
        st->set_tail->next = s;
        st->set_tail = s;
    } else {
        rg_walk(st, s);
        free(s);
        return;
    }
    rg.set_bytes += rg_set_size(s);
    if (rg.set_bytes > rg_set_budget()) (void)rg_settle(st);
}

static void rg_trim(uint64_t now) {
    while (rg.ghead && rg.bytes + rg.meta.len > rg.max_bytes) rg_evict();
    while (rg.window_ns && rg.ghead && rg.ghead->arrived + rg.window_ns < now) rg_evict();
}

/* ---- dump ---------------------------------------------------------------- */

static void rg_name(char *out, size_t n) {
    size_t len = strlen(rg.base);
    unsigned k = rg.dumps + rg.name_from;
    if (k == 0) snprintf(out, n, "%s", rg.base);
    else if (len > 6 && strcmp(rg.base + len - 6, ".tracy") == 0)
        snprintf(out, n, "%.*s.%u.tracy", (int)(len - 6), rg.base, k);
    else snprintf(out, n, "%s.%u", rg.base, k);
}

typedef struct rg_out {
    lt_writer *w;
    lt__bytes buf;
} rg_out;

static int rg_block(rg_out *o, const lt_block_desc *d, const uint8_t *raw, size_t len) {
    return lt_writer_block(o->w, d, raw, len);
}

/* The process's metadata, in blocks of whole records. */
static int rg_dump_meta(rg_out *o) {
    lt_block_desc d = {.kind = LT_BLOCK_META, .process = 1};
    const uint8_t *p = rg.meta.p, *end = rg.meta.p + rg.meta.len;
    int first = 1;
    while (first || p < end) {
        o->buf.len = 0;
        if (lt__bytes_reserve(&o->buf, 32 + rg.proc_info.len) < 0) return LT_ENOMEM;
        o->buf.len = lt_block_header(o->buf.p, LT_BLOCK_META, 1, 0, 0);
        if (first) {
            memcpy(o->buf.p + o->buf.len, rg.proc_info.p, rg.proc_info.len);
            o->buf.len += rg.proc_info.len;
        }
        const uint8_t *start = p;
        while (p < end && (size_t)(p - start) < (4u << 20)) {
            lt__meta_rec m;
            const char *why;
            if (lt__next_meta(&p, end, 0x3Fu, &m, &why) < 0) return LT_EINVAL;
        }
        if (lt__bytes_reserve(&o->buf, (size_t)(p - start)) < 0) return LT_ENOMEM;
        memcpy(o->buf.p + o->buf.len, start, (size_t)(p - start));
        o->buf.len += (size_t)(p - start);
        int rc = rg_block(o, &d, o->buf.p, o->buf.len);
        if (rc < 0) return rc;
        first = 0;
    }
    return 0;
}

/* Flushes the event block being built for a thread; `st0` is the stream's
 * state before it. */
static int rg_flush(rg_out *o, uint32_t thread, const lt__stream_state *st,
                    const lt__stream_state *st0, uint64_t first) {
    if (st->events == st0->events) return 0;
    lt_block_desc d = {.kind = LT_BLOCK_EVENTS, .process = 1, .thread = thread,
                       .first_ts = first, .last_ts = st->last_ts};
    lt__desc_counts(&d, st0, st);
    return rg_block(o, &d, o->buf.p, o->buf.len);
}

/* One thread: its cut zones, then its kept records in blocks of about
 * LT_BLOCK_TARGET bytes. */
static int rg_dump_thread(rg_out *o, uint32_t thread) {
    rg_stream *rs = &rg.streams[thread - 1];
    int rc = rg_settle(rs);
    if (rc < 0) return rc;
    lt__stream_state state = {.last_ts = rs->ts}, *st = &state;
    if (rs->open.depth) {
        rc = lt__writer_cut(o->w, 1, thread, rs->ts, rs->open.depth, &rs->open);
        if (rc < 0) return rc;
        st->events = st->zones = rs->open.depth;
        st->depth = rs->open.depth;
        st->have_ts = 1;
        st->first_ts = rs->ts;
    }
    lt__scan_limits lim = {UINT32_MAX, UINT32_MAX, UINT32_MAX, LT_MAX_DEPTH, 0, 0, 0};
    for (rg_seg *s = rs->head; s;) {
        const lt__stream_state st0 = *st;
        uint64_t events0 = st->events, base = st->last_ts, first = 0;
        o->buf.len = 0;
        if (lt__bytes_reserve(&o->buf, 32) < 0) return LT_ENOMEM;
        o->buf.len = lt_block_header(o->buf.p, LT_BLOCK_EVENTS, 1, thread, base);
        for (; s && o->buf.len < LT_BLOCK_TARGET; s = s->next) {
            const char *why;
            size_t off;
            uint64_t before = st->events;
            if (lt__scan_events(s->data, s->len, st, &lim, &why, &off) < 0) return LT_ECORRUPT;
            if (before == events0 && st->events > before) {
                const uint8_t *q = s->data, *end = s->data + s->len; /* first timed */
                uint64_t t = base, l;
                uint8_t tag;
                const char *str;
                size_t sl;
                while (q < end && lt__rec_next(&q, end, &tag, &t, &l, &str, &sl) == 0) {
                }
                first = t;
            }
            if (lt__bytes_reserve(&o->buf, s->len) < 0) return LT_ENOMEM;
            memcpy(o->buf.p + o->buf.len, s->data, s->len);
            o->buf.len += s->len;
        }
        if ((rc = rg_flush(o, thread, st, &st0, first)) < 0) return rc;
    }
    rg.dump_events += st->events;
    if (st->last_ts > rg.dump_last_ts) rg.dump_last_ts = st->last_ts;
    return 0;
}

/* A crash's end of the process, as the daemon writes it: PROC_END
 * "crashed" with the signal, at the last event; events received: those in
 * the dump, sent: every event the recorder got, lost: the client's. */
static int rg_dump_crash(rg_out *o) {
    char why[64];
    lt__wire_signal_text(rg.crash_sig, why, sizeof why);
    uint64_t lost = __atomic_load_n(&lt__g.events_lost, __ATOMIC_RELAXED);
    o->buf.len = 0;
    if (lt__bytes_reserve(&o->buf, 128) < 0) return LT_ENOMEM;
    uint8_t *p = o->buf.p + lt_block_header(o->buf.p, LT_BLOCK_META, 1, 0, 0);
    *p++ = LT_TAG_PROC_END;
    p = lt__put_varint_(p, rg.dump_last_ts);
    *p++ = LT_PROC_CRASHED;
    p = lt__put_str(p, why, strlen(why));
    p = lt__put_varint_(p, rg.dump_events);
    p = lt__put_varint_(p, rg.dump_events + rg.evicted_events);
    p = lt__put_varint_(p, lost);
    lt_block_desc d = {.kind = LT_BLOCK_META, .process = 1};
    return rg_block(o, &d, o->buf.p, (size_t)(p - o->buf.p));
}

static int rg_dump_stats(rg_out *o) {
    static const struct { const char *name, *desc; } st[] = {
        {"flight_limit_bytes", "flight recorder: memory kept per process (TRACY_FLIGHT)"},
        {"flight_window_ns", "flight recorder: seconds kept, in ns (0: by size only)"},
        {"flight_events_dropped", "events recorded before the window, no longer kept"}};
    uint64_t v[3] = {rg.max_bytes, rg.window_ns, rg.evicted_events};
    o->buf.len = 0;
    if (lt__bytes_reserve(&o->buf, 512) < 0) return LT_ENOMEM;
    uint8_t *p = o->buf.p + lt_block_header(o->buf.p, LT_BLOCK_STATS, 0, 0, 0);
    for (int i = 0; i < 3; i++) {
        *p++ = LT_TAG_STAT;
        p = lt__put_str(p, st[i].name, strlen(st[i].name));
        *p++ = LT_SEV_INFO;
        p = lt__put_varint_(p, v[i]);
        p = lt__put_str(p, st[i].desc, strlen(st[i].desc));
    }
    lt_block_desc d = {.kind = LT_BLOCK_STATS};
    return rg_block(o, &d, o->buf.p, (size_t)(p - o->buf.p));
}

/* The writer's trailer, with the flight recorder's figures as totals. */
static int rg_trailer(rg_out *o) {
    lt_total tot[] = {{"flight_limit_bytes", rg.max_bytes},
                      {"flight_window_ns", rg.window_ns},
                      {"flight_events_dropped", rg.evicted_events}};
    int rc = lt__writer_finish(o->w, tot, sizeof tot / sizeof *tot);
    o->w = NULL;
    return rc;
}

/* Writes what the ring holds as a new trace. Returns 0 or an LT_E* code. */
static int rg_dump(void) {
    char path[4200];
    rg_out o = {0};
    int rc;
    do { /* never over an existing file: the next number */
        rg_name(path, sizeof path);
        rc = lt_writer_open(&o.w, path, LT_WRITE_CUTS, "libtrace " LT_VERSION_STRING
                            " flight recorder", 0);
        rg.dumps++;
    } while (rc == LT_EEXIST && rg.dumps < 100000);
    if (rc < 0) return rc;
    for (uint32_t t = 1; rc == 0 && t <= rg.nstreams; t++) /* every thread, in order */
        rc = lt__writer_stream(o.w, 1, t);
    if (rc == 0) rc = rg_dump_meta(&o);
    rg.dump_events = rg.dump_last_ts = 0;
    for (uint32_t t = 1; rc == 0 && t <= rg.nstreams; t++) rc = rg_dump_thread(&o, t);
    if (rc == 0 && rg.crash_sig) rc = rg_dump_crash(&o);
    if (rc == 0) rc = rg_dump_stats(&o);
    if (rc == 0) rc = rg_trailer(&o);
    if (o.w) lt_writer_close(o.w, NULL, 0, NULL, 0);
    if (rc < 0 && !lt__g.quiet)
        lt__say("tracy: flight recorder: cannot write %s: %s\n", path, lt_strerror(rc));
    else if (!lt__g.quiet)
        lt__say("tracy: flight recorder: wrote %s\n", path);
    if (rc == 0) {
        pthread_mutex_lock(&lt__g.mu);
        snprintf(rg.last_path, sizeof rg.last_path, "%s", path);
        pthread_mutex_unlock(&lt__g.mu);
        rg.dirty = 0;
    }
    lt__bytes_free(&o.buf);
    return rc;
}

int lt__ring_exit_dump(void) {
    const char *no = getenv("TRACY_FLIGHT_NO_EXIT_DUMP");
    return !(no && *no && strcmp(no, "0"));
}

/* End of a sender round (mu not held): trims the ring, then dumps when
 * asked (lt_flight_dump, SIGUSR1) or at the last round. */
void lt__ring_round(int last, uint64_t now, uint64_t round) {
    lt__client *g = &lt__g;
    rg_trim(now);
    pthread_mutex_lock(&g->mu);
    if (rg_signalled) { /* what was recorded before the signal: next round */
        rg_signalled = 0;
        if (!rg.want_round) rg.want_round = round + 1;
        g->kick = 1;
    }
    int want = rg.want_round && round >= rg.want_round;
    if (want) rg.want_round = 0;
    pthread_mutex_unlock(&g->mu);
    /* at exit, unless nothing was recorded since a dump; after a crash */
    int at_exit = last && (rg.crash_sig || (lt__ring_exit_dump() && (rg.dirty || !rg.dumps)));
    if (!want && !at_exit) return;
    int rc = rg_dump();
    pthread_mutex_lock(&g->mu);
    rg.dump_rc = rc;
    rg.dumped_round = round;
    pthread_cond_broadcast(&g->done_cv);
    pthread_mutex_unlock(&g->mu);
    if (last) {
        if (!rg.crash_sig) rg_reset(); /* the crashed thread may hold malloc's lock */
        rg.on = 0;
    }
}

void lt__ring_crashed(unsigned sig) { rg.crash_sig = sig; }

int lt_flight_dump(void) {
    lt__client *g = &lt__g;
    if (!rg.on || __atomic_load_n(&g->state, __ATOMIC_ACQUIRE) != LT__ACTIVE)
        return LT_EINVAL;
    pthread_mutex_lock(&g->mu);
    /* a round whose snapshot follows this call (an earlier request waits too) */
    if (rg.want_round < g->rounds_started + 1) rg.want_round = g->rounds_started + 1;
    uint64_t target = rg.want_round;
    g->kick = 1;
    pthread_cond_signal(&g->send_cv);
    while (g->sender_running && !g->stopping && rg.dumped_round < target)
        pthread_cond_wait(&g->done_cv, &g->mu);
    int rc = rg.dumped_round >= target ? rg.dump_rc : LT_EINVAL;
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int lt_flight_last_path(char *buf, size_t n) {
    pthread_mutex_lock(&lt__g.mu);
    int have = rg.last_path[0] != 0;
    if (n) snprintf(buf, n, "%s", rg.last_path);
    pthread_mutex_unlock(&lt__g.mu);
    return have;
}
