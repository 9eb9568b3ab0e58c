/* fuzz_records.c -- libFuzzer target: the record decoders shared by the
 * reader and the daemon (lt__scan_events, lt__next_meta, varint, str).
 *
 * Input: byte 0 picks the decoder and byte 1..4 the limits; the rest is
 * the record bytes. Checks the decoders' contracts, not just survival: a
 * failed scan leaves the stream state untouched and reports an offset
 * inside the input; a successful scan of a prefix followed by the rest
 * gives the same state as scanning the whole. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "records.h"

static void fz_scan(const uint8_t *p, size_t n, const uint8_t *cfg) {
    lt__scan_limits lim = {cfg[0] & 0x3f, cfg[1] & 7, cfg[2] & 7,
                           (cfg[3] & 0x1f) + 1, cfg[0] >> 7, 0, 0};
    lt__stream_state st = {0}, st0;
    const char *why = NULL;
    size_t off = 0;
    st0 = st;
    int rc = lt__scan_events(p, n, &st, &lim, &why, &off);
    if (rc != 0) {
        if (rc != LT_ECORRUPT || !why || off > n || memcmp(&st, &st0, sizeof st))
            abort();
        return;
    }
    if (st.depth > lim.max_depth) abort();
    /* Split at the first record boundary we can find by rescanning the
     * prefix: both halves must give the same final state. */
    for (size_t cut = 1; cut < n && cut < 64; cut++) {
        lt__stream_state a = {0};
        const char *w;
        size_t o;
        if (lt__scan_events(p, cut, &a, &lim, &w, &o) != 0) continue;
        if (lt__scan_events(p + cut, n - cut, &a, &lim, &w, &o) != 0) abort();
        if (memcmp(&a, &st, sizeof a)) abort();
        break;
    }
}

static void fz_meta(const uint8_t *p, size_t n, const uint8_t *cfg) {
    const uint8_t *q = p, *end = p + n;
    uint32_t allowed = (uint32_t)cfg[0] | (uint32_t)cfg[1] << 8 |
                       (uint32_t)cfg[2] << 16 | 0x10000u;
    while (q < end) {
        const uint8_t *before = q;
        lt__meta_rec m;
        const char *why = NULL;
        if (lt__next_meta(&q, end, allowed, &m, &why) != 0) {
            if (!why || q != before) abort();
            return;
        }
        if (q <= before || q > end) abort();
        if (m.tag < 0x20 || m.tag > 0x30 || !(allowed & LT__META_BIT(m.tag)))
            abort();
        /* Decoded strings lie inside the record and are valid UTF-8 where
         * the format says names are. */
        const lt__str *ss[] = {&m.name, &m.file, &m.hostname, &m.program, &m.client};
        for (size_t i = 0; i < sizeof ss / sizeof ss[0]; i++) {
            if (!ss[i]->len) continue;
            const uint8_t *s = (const uint8_t *)ss[i]->s;
            if (s < before || s + ss[i]->len > q) abort();
        }
        if (m.tag == LT_TAG_PROC_INFO) {
            const uint8_t *a = m.argv;
            for (uint32_t i = 0; i < m.argc; i++) {
                const char *s;
                size_t l;
                if (lt__get_str(&a, q, &s, &l) != 0) abort();
            }
        }
        if ((m.tag == LT_TAG_THREAD_INFO || m.tag == LT_TAG_LOC_DEF ||
             m.tag == LT_TAG_PLOT_DEF || m.tag == LT_TAG_FRAME_DEF) &&
            !lt__utf8_valid(m.name.s, m.name.len))
            abort();
    }
}

static void fz_prims(const uint8_t *p, size_t n) {
    const uint8_t *q = p, *end = p + n;
    while (q < end) {
        uint64_t v;
        const uint8_t *b = q;
        if (lt__get_varint(&q, end, &v) != 0) break;
        /* Round trip: re-encoding gives at most as many bytes. */
        uint8_t tmp[16];
        uint8_t *e = lt__put_varint_(tmp, v);
        const uint8_t *r = tmp;
        uint64_t v2;
        if (lt__get_varint(&r, e, &v2) != 0 || v2 != v || r != e) abort();
        if ((size_t)(e - tmp) > (size_t)(q - b)) abort();
        const char *s;
        size_t l;
        if (lt__get_str(&q, end, &s, &l) != 0) break;
        if (l > LT_MAX_STRING || (const uint8_t *)s + l > end) abort();
        lt__utf8_valid(s, l);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 5) return 0;
    /* A private copy so that reads past the end are caught by ASan. */
    size_t n = size - 5;
    uint8_t *p = malloc(n ? n : 1);
    memcpy(p, data + 5, n);
    switch (data[0] % 3) {
    case 0: fz_scan(p, n, data + 1); break;
    case 1: fz_meta(p, n, data + 1); break;
    default: fz_prims(p, n); break;
    }
    free(p);
    return 0;
}
