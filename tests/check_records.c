/* check_records.c -- varint, str, UTF-8, event scan and metadata decode. */
#include <check.h>
#include <stdint.h>
#include <string.h>
#include "records.h"

static size_t put_v(uint8_t *buf, uint64_t v) {
    return (size_t)(lt__put_varint_(buf, v) - buf);
}

START_TEST(varint_round_trips_edge_values) {
    static const uint64_t vals[] = {0, 1, 127, 128, 255, 16383, 16384,
                                    UINT32_MAX, (1ull << 63) - 1, 1ull << 63,
                                    UINT64_MAX - 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint8_t buf[16];
        size_t n = put_v(buf, vals[i]);
        ck_assert_uint_le(n, 10);
        const uint8_t *p = buf;
        uint64_t v = 42;
        ck_assert_int_eq(lt__get_varint(&p, buf + n, &v), 0);
        ck_assert_uint_eq(v, vals[i]);
        ck_assert_ptr_eq(p, buf + n);
        /* every shorter prefix is truncated */
        for (size_t k = 0; k < n; k++) {
            p = buf;
            ck_assert_int_eq(lt__get_varint(&p, buf + k, &v), -1);
            ck_assert_ptr_eq(p, buf);
        }
    }
    ck_assert_uint_eq(put_v((uint8_t[16]){0}, UINT64_MAX), 10);
}
END_TEST

START_TEST(varint_rejects_overlong) {
    uint8_t buf[11] = {0};
    memset(buf, 0xff, 9);
    buf[9] = 0x02; /* 10th byte above 1: more than 64 bits */
    const uint8_t *p = buf;
    uint64_t v;
    ck_assert_int_eq(lt__get_varint(&p, buf + 10, &v), -1);
    buf[9] = 0x81; /* an 11th byte follows */
    buf[10] = 0x00;
    p = buf;
    ck_assert_int_eq(lt__get_varint(&p, buf + 11, &v), -1);
    buf[9] = 0x01;
    p = buf;
    ck_assert_int_eq(lt__get_varint(&p, buf + 10, &v), 0);
    ck_assert_uint_eq(v, UINT64_MAX);
}
END_TEST

START_TEST(str_round_trips_empty_and_longest) {
    static char big[LT_MAX_STRING + 1];
    static uint8_t buf[LT_MAX_STRING + 32];
    memset(big, 'x', sizeof big);
    size_t lens[] = {0, 1, 127, 128, LT_MAX_STRING};
    for (size_t i = 0; i < 5; i++) {
        uint8_t *e = lt__put_str(buf, big, lens[i]);
        const uint8_t *p = buf;
        const char *s;
        size_t n = 99;
        ck_assert_int_eq(lt__get_str(&p, e, &s, &n), 0);
        ck_assert_uint_eq(n, lens[i]);
        ck_assert_ptr_eq(p, e);
        ck_assert_ptr_eq(s, (const char *)buf + (e - buf) - lens[i]);
        if (lens[i]) {
            p = buf;
            ck_assert_int_eq(lt__get_str(&p, e - 1, &s, &n), -1);
        }
    }
    uint8_t *e = lt__put_str(buf, big, LT_MAX_STRING + 1);
    const uint8_t *p = buf;
    const char *s;
    size_t n;
    ck_assert_int_eq(lt__get_str(&p, e, &s, &n), -1);
}
END_TEST

START_TEST(utf8_accepts_valid_rejects_invalid) {
    ck_assert_int_eq(lt__utf8_valid("", 0), 1);
    ck_assert_int_eq(lt__utf8_valid("plain ascii text, long enough", 29), 1);
    ck_assert_int_eq(lt__utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14), 1);
    ck_assert_int_eq(lt__utf8_valid("\xc0\xaf", 2), 0);          /* overlong */
    ck_assert_int_eq(lt__utf8_valid("\xe0\x80\xaf", 3), 0);      /* overlong */
    ck_assert_int_eq(lt__utf8_valid("\xed\xa0\x80", 3), 0);      /* surrogate */
    ck_assert_int_eq(lt__utf8_valid("\xf4\x90\x80\x80", 4), 0);  /* > U+10FFFF */
    ck_assert_int_eq(lt__utf8_valid("abcdefgh\xc3", 9), 0);      /* cut */
    ck_assert_int_eq(lt__utf8_valid("\x80", 1), 0);
    ck_assert_int_eq(lt__utf8_valid("\xff", 1), 0);
}
END_TEST

static const lt__scan_limits lim = {.max_loc = 100, .max_plot = 2,
                                    .max_frame = 1, .max_depth = 3,
                                    .allow_aborted = 1};

static int scan(const uint8_t *buf, size_t n, lt__stream_state *st,
                const char **why, size_t *off) {
    return lt__scan_events(buf, n, st, &lim, why, off);
}

START_TEST(scan_counts_a_valid_sequence) {
    uint8_t buf[256], *p = buf;
    *p++ = 0x81; p = lt__put_varint_(p, 10);           /* begin loc 1 @110 */
    *p++ = LT_TAG_ZONE_BEGIN; p = lt__put_varint_(p, 5); p = lt__put_varint_(p, 100);
    *p++ = LT_TAG_ZONE_TEXT; p = lt__put_str(p, "arg", 3);
    *p++ = LT_TAG_ZONE_NAME; p = lt__put_str(p, "nm", 2);
    *p++ = LT_TAG_ZONE_END; p = lt__put_varint_(p, 1);
    *p++ = LT_TAG_MESSAGE; p = lt__put_varint_(p, 0); p = lt__put_str(p, "hi", 2);
    *p++ = LT_TAG_SIGNPOST; p = lt__put_varint_(p, 0); p = lt__put_str(p, "h", 1);
    p = lt__put_str(p, "", 0);
    *p++ = LT_TAG_PLOT; p = lt__put_varint_(p, 1); p = lt__put_varint_(p, 2);
    memset(p, 0, 8); p += 8;
    *p++ = LT_TAG_FRAME; p = lt__put_varint_(p, 0); p = lt__put_varint_(p, 0);
    *p++ = LT_TAG_LOST; p = lt__put_varint_(p, 3); p = lt__put_varint_(p, 7);
    *p++ = LT_TAG_ZONE_END_ABORTED; p = lt__put_varint_(p, 0);
    lt__stream_state st = {.last_ts = 100};
    const char *why = NULL;
    size_t off = 0;
    ck_assert_int_eq(scan(buf, (size_t)(p - buf), &st, &why, &off), 0);
    ck_assert_uint_eq(st.first_ts, 110);
    ck_assert_uint_eq(st.last_ts, 120);
    ck_assert_int_eq(st.have_ts, 1);
    ck_assert_uint_eq(st.depth, 0);
    ck_assert_uint_eq(st.events, 9);
    ck_assert_uint_eq(st.zones, 2);
    ck_assert_uint_eq(st.messages, 2);
    ck_assert_uint_eq(st.plots, 1);
    ck_assert_uint_eq(st.frames, 1);
    ck_assert_uint_eq(st.lost, 7);
}
END_TEST

/* Each bad sequence fails with the state untouched and the right offset. */
START_TEST(scan_rejects_bad_sequences) {
    struct { uint8_t b[16]; size_t n; size_t off; const char *why; } cases[] = {
        {{LT_TAG_ZONE_END, 0}, 2, 0, "zone end without open zone"},
        {{0x81, 0, LT_TAG_ZONE_END, 0, LT_TAG_ZONE_END, 0}, 6, 4, "zone end without open zone"},
        {{0x80, 0}, 2, 0, "invalid record tag 0x80"},
        {{0xFF, 0}, 2, 0, "undefined location"},
        {{LT_TAG_ZONE_BEGIN, 0, 0}, 3, 0, "undefined location"},
        {{LT_TAG_ZONE_BEGIN, 0, 0xC9, 0x01}, 4, 0, "undefined location"},
        {{0x81, 0, 0x81, 0, 0x81, 0, 0x81, 0}, 8, 6, "zones nested too deeply"},
        {{LT_TAG_ZONE_TEXT, 0}, 2, 0, "zone text or name without open zone"},
        {{0x81, 0, LT_TAG_ZONE_TEXT, 2, 'a'}, 5, 2, "truncated or oversized string"},
        {{0x81, 0, LT_TAG_ZONE_NAME, 1, 0xff}, 5, 2, "string is not valid UTF-8"},
        {{0x81}, 1, 0, "truncated record"},
        {{0x81, 0x80}, 2, 0, "truncated record"},
        {{LT_TAG_PLOT, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0}, 11, 0, "undefined plot"},
        {{LT_TAG_PLOT, 0, 1, 0, 0, 0}, 6, 0, "truncated record"},
        {{LT_TAG_FRAME, 0, 2}, 3, 0, "undefined frame name"},
        {{0x0B, 0}, 2, 0, "unknown record tag"},
        {{0x20, 0}, 2, 0, "unknown record tag"},
        {{0x81, 0, LT_TAG_ZONE_END, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
          0xff, 0xff, 0x01}, 13, 2, "timestamp out of range"},
        /* ts 5 + dt (2^63 - 5) = 2^63: one past what fits an int64. */
        {{0x81, 0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, 10, 0,
         "timestamp out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lt__stream_state st = {.last_ts = 5}, before;
        before = st;
        const char *why = NULL;
        size_t off = 999;
        ck_assert_msg(scan(cases[i].b, cases[i].n, &st, &why, &off) == LT_ECORRUPT,
                      "case %zu accepted", i);
        ck_assert_str_eq(why, cases[i].why);
        ck_assert_uint_eq(off, cases[i].off);
        ck_assert_int_eq(memcmp(&st, &before, sizeof st), 0);
    }
}
END_TEST

START_TEST(scan_refuses_aborted_end_on_the_wire) {
    lt__scan_limits wire = lim;
    wire.allow_aborted = 0;
    uint8_t b[] = {0x81, 0, LT_TAG_ZONE_END_ABORTED, 0};
    lt__stream_state st = {0};
    const char *why;
    size_t off;
    ck_assert_int_eq(lt__scan_events(b, sizeof b, &st, &wire, &why, &off), LT_ECORRUPT);
    ck_assert_uint_eq(off, 2);
}
END_TEST

START_TEST(scan_continues_across_calls) {
    uint8_t a[] = {0x81, 3}, b[] = {LT_TAG_ZONE_END, 4};
    lt__stream_state st = {0};
    const char *why;
    size_t off;
    ck_assert_int_eq(scan(a, 2, &st, &why, &off), 0);
    ck_assert_int_eq(scan(b, 2, &st, &why, &off), 0);
    ck_assert_uint_eq(st.first_ts, 3);
    ck_assert_uint_eq(st.last_ts, 7);
    ck_assert_uint_eq(st.depth, 0);
    ck_assert_uint_eq(st.events, 2);
    ck_assert_int_eq(scan(b, 2, &st, &why, &off), LT_ECORRUPT);
}
END_TEST

START_TEST(meta_decodes_every_record) {
    uint8_t buf[512], *p = buf;
    *p++ = LT_TAG_PROC_INFO; p = lt__put_varint_(p, 1234);
    p = lt__put_varint_(p, 1); /* zigzag(-1) */
    p = lt__put_str(p, "host", 4); p = lt__put_str(p, "prog", 4);
    p = lt__put_varint_(p, 2); p = lt__put_str(p, "a", 1); p = lt__put_str(p, "", 0);
    p = lt__put_varint_(p, 111); p = lt__put_varint_(p, 222); p = lt__put_str(p, "cl", 2);
    *p++ = LT_TAG_THREAD_INFO; p = lt__put_varint_(p, 1); p = lt__put_varint_(p, 99);
    p = lt__put_str(p, "main", 4);
    *p++ = LT_TAG_LOC_DEF; p = lt__put_varint_(p, 7); *p++ = LT_LOC_C;
    p = lt__put_varint_(p, 42); p = lt__put_str(p, "f", 1); p = lt__put_str(p, "x.c", 3);
    *p++ = LT_TAG_PROC_END; p = lt__put_varint_(p, 5); *p++ = LT_PROC_LOST;
    p = lt__put_str(p, "gone", 4); p = lt__put_varint_(p, 1); p = lt__put_varint_(p, 2);
    p = lt__put_varint_(p, 3);
    *p++ = LT_TAG_STAT; p = lt__put_str(p, "clients_lost", 12); *p++ = LT_SEV_DATA_LOSS;
    p = lt__put_varint_(p, 4); p = lt__put_str(p, "d", 1);
    const uint8_t *q = buf, *end = p;
    lt__meta_rec m;
    const char *why;
    uint32_t all = 0xffffffffu;
    ck_assert_int_eq(lt__next_meta(&q, end, all, &m, &why), 0);
    ck_assert_uint_eq(m.tag, LT_TAG_PROC_INFO);
    ck_assert_uint_eq(m.pid, 1234);
    ck_assert_int_eq(m.rank, -1);
    ck_assert_uint_eq(m.argc, 2);
    ck_assert_int_eq(memcmp(m.hostname.s, "host", 4), 0);
    ck_assert_uint_eq(m.anchor_wall_ns, 222);
    ck_assert_uint_eq(m.client.len, 2);
    ck_assert_int_eq(lt__next_meta(&q, end, all, &m, &why), 0);
    ck_assert_uint_eq(m.tid, 99);
    ck_assert_int_eq(lt__next_meta(&q, end, all, &m, &why), 0);
    ck_assert_uint_eq(m.id, 7);
    ck_assert_uint_eq(m.kind, LT_LOC_C);
    ck_assert_uint_eq(m.line, 42);
    ck_assert_uint_eq(m.file.len, 3);
    ck_assert_int_eq(lt__next_meta(&q, end, all, &m, &why), 0);
    ck_assert_uint_eq(m.kind, LT_PROC_LOST);
    ck_assert_uint_eq(m.v[2], 3);
    ck_assert_int_eq(lt__next_meta(&q, end, LT__META_BIT(LT_TAG_STAT), &m, &why), 0);
    ck_assert_uint_eq(m.v[0], 4);
    ck_assert_ptr_eq(q, end);
    /* a tag outside the allowed set, a truncated record */
    q = buf;
    ck_assert_int_eq(lt__next_meta(&q, end, LT__META_BIT(LT_TAG_STAT), &m, &why), LT_ECORRUPT);
    ck_assert_ptr_eq(q, buf);
    for (const uint8_t *cut = buf; cut < end; cut++) {
        q = buf;
        int rc = 0;
        while (rc == 0 && q < cut) rc = lt__next_meta(&q, cut, all, &m, &why);
        ck_assert(q <= cut);
    }
}
END_TEST

/* PROC_END status 4 (with wire protocol 1.2): crashed; 5 and above are corruption. */
START_TEST(proc_end_crashed_is_the_last_status) {
    for (uint8_t status = LT_PROC_CLEAN; status <= LT_PROC_CRASHED + 1; status++) {
        uint8_t buf[64], *p = buf;
        *p++ = LT_TAG_PROC_END; p = lt__put_varint_(p, 5); *p++ = status;
        p = lt__put_str(p, "SIGSEGV (signal 11)", 19);
        p = lt__put_varint_(p, 1); p = lt__put_varint_(p, 1); p = lt__put_varint_(p, 0);
        const uint8_t *q = buf;
        lt__meta_rec m;
        const char *why = NULL;
        int rc = lt__next_meta(&q, p, 0xffffffffu, &m, &why);
        if (status <= LT_PROC_CRASHED) {
            ck_assert_int_eq(rc, 0);
            ck_assert_uint_eq(m.kind, status);
        } else {
            ck_assert_int_eq(rc, LT_ECORRUPT);
            ck_assert_str_eq(why, "invalid process end status");
        }
    }
}
END_TEST

Suite *records_suite(void) {
    Suite *s = suite_create("records");
    TCase *t = tcase_create("encoding");
    tcase_add_test(t, varint_round_trips_edge_values);
    tcase_add_test(t, varint_rejects_overlong);
    tcase_add_test(t, str_round_trips_empty_and_longest);
    tcase_add_test(t, utf8_accepts_valid_rejects_invalid);
    suite_add_tcase(s, t);
    t = tcase_create("events");
    tcase_add_test(t, scan_counts_a_valid_sequence);
    tcase_add_test(t, scan_rejects_bad_sequences);
    tcase_add_test(t, scan_refuses_aborted_end_on_the_wire);
    tcase_add_test(t, scan_continues_across_calls);
    suite_add_tcase(s, t);
    t = tcase_create("metadata");
    tcase_add_test(t, proc_end_crashed_is_the_last_status);
    tcase_add_test(t, meta_decodes_every_record);
    suite_add_tcase(s, t);
    return s;
}
