/* client_fast.h -- inline zone recording for hot paths (the Python hook).
 *
 * Internal to the toolkit: the layout below may change between versions.
 * A thread's records go into its current chunk (the per-thread buffer) as
 * encoded bytes (FORMAT.md event records, delta-encoded timestamps). The
 * producer publishes each complete record by a release store of the chunk's
 * `committed` word (events in the chunk << 32 | bytes in the chunk); the
 * sender thread reads up to it with an acquire load, and so knows how many
 * events it ships without decoding them. When fewer than LT__SLACK bytes are left, the slow path
 * lt__tbuf_refill() hands the chunk over and installs a fresh one (waiting
 * for memory by default, or dropping in TRACY_DROP mode).
 */
#ifndef LIBTRACE_CLIENT_FAST_H
#define LIBTRACE_CLIENT_FAST_H

#include <stdint.h>
#include <time.h>
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LT__SLACK 64u /* the largest fast-path record is 1 + 10 + 5 bytes */

typedef struct lt__chunk lt__chunk;

typedef struct lt__tbuf {
    uint8_t *wp;          /* write position in the current chunk */
    uint8_t *limit;       /* chunk end minus LT__SLACK; NULL sends every
                             record to the slow path (drop mode, a buffer
                             left by fork) */
    uint8_t *base;        /* start of the current chunk's data */
    uint64_t *committed;  /* the chunk's published word (release store) */
    uint64_t last_ts;     /* timestamp of the last timed record */
    uint64_t cbias;       /* events in the chunk << 32, minus `base`: the
                             published word is (uintptr_t)wp + cbias */
    uint32_t depth;       /* zones open in the recorded stream */
    uint32_t thread;      /* thread index within the process */
    uint32_t uz_top;      /* the Python hook's: `depth` just after the
                             innermost zone that tracy.zone opened on this
                             thread began, or 0 (pyhook/hook.c, "User
                             zones"); a frame that ends where it is the
                             innermost zone must close it first */
    /* the rest is private to client.c */
} lt__tbuf;

/* The calling thread's buffer, or NULL. Initial-exec TLS: the fast path is a
 * single %fs-relative load, also inside a dlopen()ed extension module. */
extern LT_API __thread lt__tbuf *lt__tls
    __attribute__((tls_model("initial-exec")));

/* Creates (and registers with the sender) the calling thread's buffer,
 * connecting first when needed. Returns NULL when the client is inactive. */
LT_API lt__tbuf *lt__tbuf_create(void);

/* Called when t->wp > t->limit: publishes the chunk and installs a fresh one,
 * so that at least LT__SLACK bytes are free on return. `ts` is the timestamp
 * of the record about to be written. Returns 0, or -1 when the record must be
 * dropped (drop mode; the loss is counted, and the zones nested in a dropped
 * zone are dropped with it). In the default mode it waits for
 * memory and records the wait as a zone of its own. */
LT_API int lt__tbuf_refill(lt__tbuf *t, uint64_t ts);

/* The same for lt__put_end (drop mode keeps t->limit NULL while the begin of
 * an open zone was dropped, so that its end comes here too). Returns 0 when
 * the end is to be written (room made), -1 when it is to be skipped: no zone
 * open, or the end of a dropped zone. Never drops the end of a recorded
 * zone. */
LT_API int lt__tbuf_refill_end(lt__tbuf *t, uint64_t ts);

/* Bytes from a thread's lt__tbuf to the location of each of its open
 * zones, by depth, in the same allocation: the flight recorder notes them
 * where each chunk starts (client_flight.c). The slow path keeps room for
 * every begin the current chunk can hold, so the hot path stores at a fixed
 * offset without a check. */
#define LT__STK_OFF 512u

static inline __attribute__((always_inline)) uint32_t *lt__stk(lt__tbuf *t) {
    return (uint32_t *)(void *)((uint8_t *)t + LT__STK_OFF);
}

static inline lt__tbuf *lt__tb(void) {
    lt__tbuf *t = lt__tls;
    if (__builtin_expect(t == NULL, 0)) t = lt__tbuf_create();
    return t;
}

/* CLOCK_MONOTONIC in ns. On x86-64 with an invariant TSC the client
 * publishes a linear map from the TSC (about 10 ns to read, against 25 ns or
 * more for clock_gettime) when it connects, which the sender thread then
 * keeps within microseconds of the clock. Once published, the map is never
 * withdrawn (only replaced). Elsewhere, clock_gettime. */
typedef struct lt__clock_map {
    uint64_t tsc0, ns0;
    uint64_t mult; /* ns per tick, 32.32 fixed point */
    uint64_t off;  /* ns0 - tsc0 * mult: the time is off + tsc * mult */
} lt__clock_map;
extern LT_API const lt__clock_map *lt__clk;
/* Added to every timestamp (0 unless TRACY_TEST_CLOCK_OFFSET_NS is set; the
 * TSC map carries it in `off`). */
extern LT_API int64_t lt__mono_bias;

/* The current TSC map, or NULL (then lt__now reads clock_gettime). */
static inline __attribute__((always_inline)) const lt__clock_map *lt__clock(void) {
    return __atomic_load_n(&lt__clk, __ATOMIC_ACQUIRE);
}

#if defined(__x86_64__)
/* The time by the map c (not NULL), within 1 ns of
 * ns0 + (tsc - tsc0) * mult, also for a reading a little before tsc0
 * (another core's TSC). */
static inline __attribute__((always_inline)) uint64_t lt__tsc_ns(const lt__clock_map *c) {
    return c->off + (uint64_t)(((unsigned __int128)__builtin_ia32_rdtsc() * c->mult) >> 32);
}
#endif

static inline __attribute__((always_inline)) uint64_t lt__now(void) {
#if defined(__x86_64__)
    const lt__clock_map *c = lt__clock();
    if (__builtin_expect(c != NULL, 1)) return lt__tsc_ns(c);
#endif
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + (uint64_t)lt__mono_bias;
}

static inline __attribute__((always_inline)) uint8_t *lt__put_varint(uint8_t *p, uint64_t v) {
    /* straight-line code for the usual 1..3 byte deltas */
    if (__builtin_expect(v < ((uint64_t)1 << 21), 1)) {
        if (v < 0x80) {
            p[0] = (uint8_t)v;
            return p + 1;
        }
        p[0] = (uint8_t)(v | 0x80);
        if (v < ((uint64_t)1 << 14)) {
            p[1] = (uint8_t)(v >> 7);
            return p + 2;
        }
        p[1] = (uint8_t)((v >> 7) | 0x80);
        p[2] = (uint8_t)(v >> 14);
        return p + 3;
    }
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Delta from the last timed record; clamps to 0 (and keeps last_ts) when ts
 * is older, which happens only right after a recorded wait. */
static inline uint64_t lt__dt(lt__tbuf *t, uint64_t ts) {
    uint64_t last = t->last_ts;
    uint64_t dt = ts - last;
    if ((int64_t)dt < 0) dt = 0;
    t->last_ts = last + dt;
    return dt;
}

/* Writes the delta from the last timed record as lt__dt does: the usual
 * 1..3 byte delta (under 2.1 ms) in straight-line code, the clamp to 0 (an
 * older ts, right after a recorded wait) with the longer ones. */
static inline __attribute__((always_inline)) uint8_t *lt__put_dt(lt__tbuf *t, uint8_t *p,
                                                                 uint64_t ts) {
    uint64_t dt = ts - t->last_ts;
    if (__builtin_expect(dt < ((uint64_t)1 << 21), 1)) {
        t->last_ts = ts;
        return lt__put_varint(p, dt);
    }
    return lt__put_varint(p, lt__dt(t, ts));
}

static inline void lt__publish(lt__tbuf *t, uint8_t *p) {
    uint64_t b = t->cbias + ((uint64_t)1 << 32);
    t->wp = p;
    t->cbias = b;
    __atomic_store_n(t->committed, (uint64_t)(uintptr_t)p + b, __ATOMIC_RELEASE);
}

/* Writes ZONE_BEGIN of `loc` at `ts`; the caller made sure that
 * t->wp <= t->limit. */
static inline __attribute__((always_inline)) void lt__write_begin(lt__tbuf *t, uint32_t loc,
                                                                  uint64_t ts) {
    uint8_t *p = t->wp;
    if (__builtin_expect(loc < 128, 1)) {
        *p++ = (uint8_t)(LT_TAG_ZONE_BEGIN_SHORT | loc);
        p = lt__put_dt(t, p, ts);
    } else {
        *p++ = LT_TAG_ZONE_BEGIN;
        p = lt__put_dt(t, p, ts);
        p = lt__put_varint(p, loc);
    }
    lt__stk(t)[t->depth++] = loc;
    lt__publish(t, p);
}

/* Writes ZONE_END at `ts`; the caller made sure that t->wp <= t->limit and
 * that a zone is open. */
static inline __attribute__((always_inline)) void lt__write_end(lt__tbuf *t, uint64_t ts) {
    uint8_t *p = t->wp;
    *p++ = LT_TAG_ZONE_END;
    p = lt__put_dt(t, p, ts);
    t->depth--;
    lt__publish(t, p);
}

/* Records ZONE_BEGIN of `loc` at `ts`. */
static inline __attribute__((always_inline)) void lt__put_begin(lt__tbuf *t, uint32_t loc, uint64_t ts) {
    if (__builtin_expect(t->wp > t->limit, 0) && lt__tbuf_refill(t, ts) < 0)
        return;
    lt__write_begin(t, loc, ts);
}

/* Records ZONE_END at `ts`. Ignored when no zone is open. */
static inline __attribute__((always_inline)) void lt__put_end(lt__tbuf *t, uint64_t ts) {
    if (__builtin_expect(t->wp > t->limit, 0)) {
        if (lt__tbuf_refill_end(t, ts) < 0) return;
    } else if (__builtin_expect(t->depth == 0, 0)) {
        return;
    }
    lt__write_end(t, ts);
}

/* The same for a caller that recorded the matching begin on this buffer
 * (t->depth > 0 is known): no check for a stray end. */
static inline __attribute__((always_inline)) void lt__put_end_matched(lt__tbuf *t,
                                                                      uint64_t ts) {
    if (__builtin_expect(t->wp > t->limit, 0) && lt__tbuf_refill_end(t, ts) < 0)
        return;
    lt__write_end(t, ts);
}

#ifdef __cplusplus
}
#endif
#endif /* LIBTRACE_CLIENT_FAST_H */
