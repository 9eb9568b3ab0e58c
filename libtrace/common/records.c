/* records.c -- encoding and validation of the records of FORMAT.md. */
#include <string.h>
#include "file_int.h"

int lt__get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    const uint8_t *q = *p;
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (q >= end) return -1;
        uint8_t b = *q++;
        if (shift == 63 && b > 1) return -1; /* 10th byte: one bit left */
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            *p = q;
            return 0;
        }
    }
    return -1; /* an 11th byte */
}

int lt__get_str(const uint8_t **p, const uint8_t *end, const char **s,
                size_t *len) {
    const uint8_t *q = *p;
    uint64_t n;
    if (lt__varint(&q, end, &n) < 0) return -1;
    if (n > LT_MAX_STRING || n > (uint64_t)(end - q)) return -1;
    *s = (const char *)q;
    *len = (size_t)n;
    *p = q + n;
    return 0;
}

uint8_t *lt__put_varint_(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

uint8_t *lt__put_str(uint8_t *p, const char *s, size_t len) {
    p = lt__put_varint_(p, len);
    if (len) memcpy(p, s, len);
    return p + len;
}

int lt__utf8_valid(const char *str, size_t len) {
    const uint8_t *s = (const uint8_t *)str, *end = s + len;
    while (s < end) {
        /* ASCII runs eight bytes at a time. */
        while (end - s >= 8) {
            uint64_t w;
            memcpy(&w, s, 8);
            if (w & 0x8080808080808080ull) break;
            s += 8;
        }
        if (s >= end) break;
        uint8_t c = *s;
        if (c < 0x80) {
            s++;
            continue;
        }
        size_t n;
        uint32_t cp, min;
        if (c >= 0xC2 && c <= 0xDF) {
            n = 2; cp = c & 0x1f; min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 3; cp = c & 0x0f; min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 4; cp = c & 0x07; min = 0x10000;
        } else {
            return 0;
        }
        if ((size_t)(end - s) < n) return 0;
        for (size_t i = 1; i < n; i++) {
            if ((s[i] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (s[i] & 0x3f);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        s += n;
    }
    return 1;
}

/* ---- Event records --------------------------------------------------- */

#define FAIL(msg)        \
    do {                 \
        why = (msg);     \
        goto fail;       \
    } while (0)

/* Reads dt and advances the running timestamp. */
#define TIMED()                                                   \
    do {                                                          \
        uint64_t dt_;                                             \
        if (lt__varint(&p, end, &dt_) < 0) FAIL("truncated record"); \
        if (dt_ > LT_MAX_TS - ts) FAIL("timestamp out of range"); \
        ts += dt_;                                                \
        if (__builtin_expect(!s.have_ts, 0)) {                    \
            s.have_ts = 1;                                        \
            s.first_ts = ts;                                      \
        }                                                         \
        s.events++;                                               \
    } while (0)

static const char *lt__depth_why(uint32_t depth, uint32_t max_depth) {
    return depth >= max_depth ? "zones nested too deeply"
                              : "more than LT_MAX_OPEN_ZONES zones open in the process";
}

static int lt__scan_text(const uint8_t **p, const uint8_t *end) {
    const char *t;
    size_t n;
    if (lt__get_str(p, end, &t, &n) < 0) return -1;
    return lt__utf8_valid(t, n) ? 0 : -2;
}

int lt__scan_events(const uint8_t *p, size_t n, lt__stream_state *st,
                    const lt__scan_limits *lim, const char **reason,
                    size_t *err_off) {
    const uint8_t *const start = p, *const end = p + n, *rec = p;
    lt__stream_state s = *st;
    uint64_t ts = s.last_ts, v;
    uint32_t max_depth = lim->max_depth ? lim->max_depth : LT_MAX_DEPTH;
    /* One compare per zone begin: the deepest this stream may go, by its
     * own limit and by the zones the process's other threads hold open. */
    uint64_t others = lim->proc_open > s.depth ? lim->proc_open - s.depth : 0;
    uint32_t depth_cap = max_depth;
    if (lim->max_proc_open && lim->max_proc_open - others < depth_cap)
        depth_cap = lim->max_proc_open > others
                        ? (uint32_t)(lim->max_proc_open - others) : 0;
    const char *why;
    int rc;
    if (ts > LT_MAX_TS) {
        why = "timestamp out of range";
        goto fail;
    }

    while (p < end) {
        rec = p;
        uint8_t tag = *p++;
        if (tag > LT_TAG_ZONE_BEGIN_SHORT) { /* the common case first */
            TIMED();
            if ((uint32_t)(tag - LT_TAG_ZONE_BEGIN_SHORT) > lim->max_loc)
                FAIL("undefined location");
            if (s.depth >= depth_cap) FAIL(lt__depth_why(s.depth, max_depth));
            s.depth++;
            s.zones++;
            continue;
        }
        switch (tag) {
        case LT_TAG_ZONE_END:
            TIMED();
            if (s.depth == 0) FAIL("zone end without open zone");
            s.depth--;
            break;
        case LT_TAG_ZONE_BEGIN:
            TIMED();
            if (lt__varint(&p, end, &v) < 0) FAIL("truncated record");
            if (v == 0 || v > lim->max_loc) FAIL("undefined location");
            if (s.depth >= depth_cap) FAIL(lt__depth_why(s.depth, max_depth));
            s.depth++;
            s.zones++;
            break;
        case LT_TAG_ZONE_END_ABORTED:
            if (!lim->allow_aborted) FAIL("aborted zone end not allowed here");
            TIMED();
            if (s.depth == 0) FAIL("zone end without open zone");
            s.depth--;
            break;
        case LT_TAG_ZONE_TEXT:
        case LT_TAG_ZONE_NAME:
            if (s.depth == 0) FAIL("zone text or name without open zone");
            rc = lt__scan_text(&p, end);
            if (rc == -1) FAIL("truncated or oversized string");
            if (rc == -2) FAIL("string is not valid UTF-8");
            break;
        case LT_TAG_MESSAGE:
        case LT_TAG_SIGNPOST:
            TIMED();
            for (int i = 0; i < (tag == LT_TAG_SIGNPOST ? 2 : 1); i++) {
                rc = lt__scan_text(&p, end);
                if (rc == -1) FAIL("truncated or oversized string");
                if (rc == -2) FAIL("string is not valid UTF-8");
            }
            s.messages++;
            break;
        case LT_TAG_PLOT:
            TIMED();
            if (lt__varint(&p, end, &v) < 0) FAIL("truncated record");
            if (v == 0 || v > lim->max_plot) FAIL("undefined plot");
            if (end - p < 8) FAIL("truncated record");
            p += 8;
            s.plots++;
            break;
        case LT_TAG_FRAME:
            TIMED();
            if (lt__varint(&p, end, &v) < 0) FAIL("truncated record");
            if (v > lim->max_frame) FAIL("undefined frame name");
            s.frames++;
            break;
        case LT_TAG_LOST:
            TIMED();
            if (lt__varint(&p, end, &v) < 0) FAIL("truncated record");
            s.lost = lt__sat_add(s.lost, v);
            break;
        case LT_TAG_ZONE_BEGIN_SHORT:
            FAIL("invalid record tag 0x80");
        default:
            FAIL("unknown record tag");
        }
    }
    s.last_ts = ts;
    *st = s;
    return 0;
fail:
    *reason = why;
    *err_off = (size_t)(rec - start);
    return LT_ECORRUPT;
}

/* ---- Metadata and statistics records ---------------------------------- */

#define GETV(x)                                                     \
    do {                                                            \
        if (lt__get_varint(&q, end, &(x)) < 0) FAIL("truncated record"); \
    } while (0)
#define GETS(dst)                                                   \
    do {                                                            \
        if (lt__get_str(&q, end, &(dst).s, &(dst).len) < 0)         \
            FAIL("truncated or oversized string");                  \
        if (!lt__utf8_valid((dst).s, (dst).len))                    \
            FAIL("string is not valid UTF-8");                      \
    } while (0)
#define GETU8(x)                                       \
    do {                                               \
        if (q >= end) FAIL("truncated record");        \
        (x) = *q++;                                    \
    } while (0)

int lt__next_meta(const uint8_t **p, const uint8_t *end, uint32_t allowed,
                  lt__meta_rec *m, const char **reason) {
    const uint8_t *q = *p;
    const char *why;
    uint64_t v;
    lt__str tmp;

    if (q >= end) FAIL("truncated record");
    memset(m, 0, sizeof *m);
    m->tag = *q++;
    if (m->tag < 0x20 || m->tag > 0x3F) FAIL("unknown record tag");
    if (m->tag > LT_TAG_PROC_END && m->tag != LT_TAG_STAT)
        FAIL("unknown record tag");
    if (!(allowed & LT__META_BIT(m->tag))) FAIL("record not allowed here");

    switch (m->tag) {
    case LT_TAG_PROC_INFO:
        GETV(m->pid);
        GETV(v);
        m->rank = lt__unzigzag(v);
        GETS(m->hostname);
        GETS(m->program);
        GETV(v);
        if (v > (uint64_t)(end - q)) FAIL("argument count out of range");
        m->argc = (uint32_t)v;
        m->argv = q;
        for (uint32_t i = 0; i < m->argc; i++) GETS(tmp);
        GETV(m->anchor_mono_ns);
        GETV(m->anchor_wall_ns);
        GETS(m->client);
        if (m->anchor_mono_ns > LT_MAX_TS || m->anchor_wall_ns > LT_MAX_TS)
            FAIL("timestamp out of range");
        break;
    case LT_TAG_THREAD_INFO:
        GETV(m->id);
        GETV(m->tid);
        GETS(m->name);
        break;
    case LT_TAG_LOC_DEF:
        GETV(m->id);
        GETU8(m->kind);
        GETV(m->line);
        GETS(m->name);
        GETS(m->file);
        if (m->kind == 0) FAIL("invalid location kind");
        if (m->line > UINT32_MAX) FAIL("line number out of range");
        break;
    case LT_TAG_PLOT_DEF:
    case LT_TAG_FRAME_DEF:
        GETV(m->id);
        GETS(m->name);
        break;
    case LT_TAG_PROC_END:
        GETV(m->ts);
        GETU8(m->kind);
        GETS(m->name);
        GETV(m->v[0]);
        GETV(m->v[1]);
        GETV(m->v[2]);
        if (m->kind > LT_PROC_CRASHED) FAIL("invalid process end status");
        if (m->ts > LT_MAX_TS) FAIL("timestamp out of range");
        break;
    case LT_TAG_STAT:
        GETS(m->name);
        GETU8(m->kind);
        GETV(m->v[0]);
        GETS(m->file);
        if (m->kind > LT_SEV_ERROR) FAIL("invalid statistic severity");
        break;
    }
    if ((m->tag == LT_TAG_THREAD_INFO || m->tag == LT_TAG_LOC_DEF ||
         m->tag == LT_TAG_PLOT_DEF || m->tag == LT_TAG_FRAME_DEF) &&
        (m->id == 0 || m->id > UINT32_MAX))
        FAIL("identifier out of range");
    *p = q;
    return 0;
fail:
    *reason = why;
    return LT_ECORRUPT;
}

/* ---- Metadata cost -------------------------------------------------------- */

/* What the reader allocates for a record must stay under its cost: one
 * lt_loc and 8-byte-rounded NUL-terminated strings. The readers' minimum
 * budget holds the daemon's whole allowance twice (arena chunks may be half
 * empty) plus a metadata block being decoded, with room to spare; past it,
 * the allowance grows with the file at a quarter of the readers' rate or
 * less, so the same holds for a file of any size. */
_Static_assert(sizeof(lt_loc) <= LT_META_REC_COST, "lt_loc fits its cost");
_Static_assert(2 * LT_MAX_META + LT_MAX_BLOCK_RAW + (16ull << 20) <= LT_READER_BUDGET_MIN,
               "the daemon's metadata fits every reader's budget");
_Static_assert(2 * LT_META_PER_BYTE * 2 <= LT_READER_BUDGET_PER_BYTE,
               "the daemon's growing allowance fits the reader's");
_Static_assert(LT_MAX_META_CLIENT <= LT_MAX_META, "a client fits the file");

static uint64_t lt__str_cost(uint64_t len) { return len + LT_META_STR_COST; }

uint64_t lt__meta_cost(const lt__meta_rec *m) {
    uint64_t c = lt__str_cost(m->name.len);
    switch (m->tag) {
    case LT_TAG_LOC_DEF: /* an lt_loc */
        c += LT_META_REC_COST + lt__str_cost(m->file.len);
        break;
    case LT_TAG_STAT:
        c += lt__str_cost(m->file.len);
        break;
    case LT_TAG_PROC_INFO: {
        c = LT_META_REC_COST + lt__str_cost(m->hostname.len) + lt__str_cost(m->program.len) +
             lt__str_cost(m->client.len) + 8; /* argv's terminating NULL */
        const uint8_t *q = m->argv;
        /* argv was validated by lt__next_meta: argc strings, in bounds */
        for (uint32_t i = 0; i < m->argc; i++) {
            uint64_t len;
            if (lt__get_varint(&q, q + 10, &len) < 0) break;
            q += len;
            c += 2 * lt__str_cost(len);
        }
        break;
    }
    default:
        break;
    }
    return c;
}
