/* records.h -- internal: decoding and validation of FORMAT.md records,
 * shared by the file reader and the capture daemon's message checks. */
#ifndef LIBTRACE_RECORDS_H
#define LIBTRACE_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads a varint from *p (not past end). Returns 0 and advances *p, or -1 on
 * a truncated or over-long (more than 64 bits) varint. */
LT_API int lt__get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);

/* Reads a `str`: on success *s points into the buffer and *len is its
 * length (at most LT_MAX_STRING). Returns 0 or -1. */
LT_API int lt__get_str(const uint8_t **p, const uint8_t *end, const char **s,
                       size_t *len);

/* Writes a varint / str; returns the new write position. The caller makes
 * room: at most 10 bytes for a varint, 10 + len for a string. */
LT_API uint8_t *lt__put_varint_(uint8_t *p, uint64_t v);
LT_API uint8_t *lt__put_str(uint8_t *p, const char *s, size_t len);

/* a + b, or UINT64_MAX when that overflows: counts of lost events saturate. */
static inline uint64_t lt__sat_add(uint64_t a, uint64_t b) {
    return a + b < a ? UINT64_MAX : a + b;
}

/* 1 when s[0..len) is valid UTF-8, else 0. */
LT_API int lt__utf8_valid(const char *s, size_t len);

/* Running state of one stream's event records. Zero-initialise. */
typedef struct lt__stream_state {
    uint64_t last_ts;     /* timestamp of the last timed record */
    uint64_t first_ts;    /* timestamp of the first timed record */
    int have_ts;          /* a timed record has been seen */
    uint32_t depth;       /* currently open zones */
    uint64_t events, zones, messages, plots, frames, lost;
} lt__stream_state;

/* An event block's counts (lt_block_desc) from its stream's state before
 * and after its records. */
static inline void lt__desc_counts(lt_block_desc *d, const lt__stream_state *before,
                                   const lt__stream_state *after) {
    d->n_events = (uint32_t)(after->events - before->events);
    d->zones = (uint32_t)(after->zones - before->zones);
    d->messages = (uint32_t)(after->messages - before->messages);
    d->plots = (uint32_t)(after->plots - before->plots);
    d->frames = (uint32_t)(after->frames - before->frames);
    d->lost = after->lost - before->lost;
}

/* What an event-record sequence may refer to: ids above these are undefined. */
typedef struct lt__scan_limits {
    uint32_t max_loc;     /* highest defined location id */
    uint32_t max_plot;
    uint32_t max_frame;
    uint32_t max_depth;   /* deepest nesting allowed (LT_MAX_DEPTH) */
    int allow_aborted;    /* accept ZONE_END_ABORTED (files: yes, wire: no) */
    /* Zones open in the whole process before these records (this stream's
     * included) and the most allowed (LT_MAX_OPEN_ZONES); 0: unchecked. */
    uint64_t proc_open, max_proc_open;
} lt__scan_limits;

/* Validates the event records p[0..n), which continue the stream described
 * by *st. Timestamps must stay at or below LT_MAX_TS. On success updates *st (counts, last_ts, depth) and returns 0. On
 * failure leaves *st untouched, returns LT_ECORRUPT, sets *reason to a static
 * one-line message ("zone end without open zone", "undefined location 7",
 * "truncated record", ...) and *err_off to the offset of the bad record. */
LT_API int lt__scan_events(const uint8_t *p, size_t n, lt__stream_state *st,
                           const lt__scan_limits *lim, const char **reason,
                           size_t *err_off);

/* One decoded metadata or statistics record. Strings point into the
 * scanned buffer and are not NUL-terminated. */
typedef struct lt__str { const char *s; size_t len; } lt__str;
typedef struct lt__meta_rec {
    uint8_t tag;                /* LT_TAG_PROC_INFO .. LT_TAG_STAT */
    uint64_t id;                /* THREAD_INFO thread, LOC_DEF loc,
                                   PLOT_DEF plot, FRAME_DEF frame */
    uint64_t tid;               /* THREAD_INFO */
    uint8_t kind;               /* LOC_DEF kind; PROC_END status; STAT severity */
    uint64_t line;              /* LOC_DEF */
    lt__str name;               /* THREAD_INFO, LOC_DEF, PLOT_DEF, FRAME_DEF,
                                   STAT name; PROC_END reason */
    lt__str file;               /* LOC_DEF file; STAT description */
    /* PROC_INFO */
    uint64_t pid;
    int64_t rank;
    lt__str hostname, program, client;
    uint32_t argc;
    const uint8_t *argv;        /* argc consecutive `str` fields */
    uint64_t anchor_mono_ns, anchor_wall_ns;
    /* PROC_END: ts, events_received, events_sent, events_lost;
       STAT: value in v[0] */
    uint64_t ts;
    uint64_t v[3];
} lt__meta_rec;

/* Decodes the next metadata/statistics record at *p. `allowed` is a bitmask
 * of (1u << (tag - 0x20)) for the tags accepted (0x20..0x30). Names are
 * checked to be UTF-8. Returns 0 and advances *p, or LT_ECORRUPT with
 * *reason set. */
LT_API int lt__next_meta(const uint8_t **p, const uint8_t *end,
                         uint32_t allowed, lt__meta_rec *m, const char **reason);

#define LT__META_BIT(tag) (1u << ((tag) - 0x20))

/* What a decoded metadata record costs a reader (see LT_META_REC_COST in
 * trace.h): the unit of the metadata budgets shared by the capture daemon
 * and the readers. */
LT_API uint64_t lt__meta_cost(const lt__meta_rec *m);

#ifdef __cplusplus
}
#endif
#endif /* LIBTRACE_RECORDS_H */
