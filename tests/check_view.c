/* check_view.c -- the level-of-detail index (view/view.h) against a
 * brute-force pass over libtrace's reader: viewport items and merged counts
 * for random windows, self times, functions, parents, a growing file, and
 * damaged traces and index files. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scratch.h"
#include "trace.h"
#include "view.h"

/* A zone as the reader tells it. */
typedef struct bz {
    uint64_t start, end, self;
    uint32_t track, depth;
    char name[64];
} bz;

typedef struct brute {
    bz *z;
    size_t n;
    uint64_t origin;
    uint32_t ntracks, maxdepth;
} brute;

static void gen_trace(const char *out, const char *args) {
    const char *build = getenv("LT_BUILD");
    ck_assert_msg(build != NULL, "LT_BUILD is not set (run through make check-c)");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/tools/tracegen' -f -o '%s' %s", build, out, args);
    ck_assert_int_eq(system(cmd), 0);
}

static void brute_load(brute *b, const char *path) {
    lt_reader *r;
    memset(b, 0, sizeof *b);
    ck_assert_int_eq(lt_reader_open(&r, path, NULL, 0), 0);
    b->origin = lt_reader_info(r)->first_ts;
    uint32_t base[64] = {0}, np = lt_reader_nprocesses(r);
    ck_assert_uint_lt(np, 63);
    for (uint32_t p = 1; p <= np; p++) base[p + 1] = base[p] + lt_reader_nthreads(r, p);
    b->ntracks = base[np + 1];
    size_t cap = 1024;
    b->z = malloc(cap * sizeof *b->z);
    lt_event ev;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0) {
        if (ev.type != LT_EV_ZONE_END) continue;
        if (b->n == cap) b->z = realloc(b->z, (cap *= 2) * sizeof *b->z);
        bz *z = &b->z[b->n++];
        z->start = ev.begin_ts - b->origin;
        z->end = ev.ts - b->origin;
        z->self = (ev.ts - ev.begin_ts) - ev.child_ns;
        z->track = base[ev.process] + ev.thread - 1;
        z->depth = ev.depth;
        const lt_loc *l = lt_reader_loc(r, ev.process, ev.loc);
        snprintf(z->name, sizeof z->name, "%s", l ? l->name : "?");
        if (ev.depth + 1 > b->maxdepth) b->maxdepth = ev.depth + 1;
    }
    ck_assert_int_eq(rc, 0);
    lt_reader_free(r);
}

static char cache[200];

static void setup(void) {
    scratch_make("check_view");
    snprintf(cache, sizeof cache, "%s/cache", scratch_dir);
    ck_assert_int_eq(mkdir(cache, 0700), 0);
}

static vw_index *open_ok(const char *trace, int *rebuilt) {
    vw_index *ix = NULL;
    char err[256];
    int rc = vw_open(&ix, trace, cache, rebuilt, err, sizeof err);
    ck_assert_msg(rc == 0, "vw_open: %d %s", rc, err);
    return ix;
}

typedef struct collect {
    const vw_index *ix;
    uint32_t row;
    uint64_t next_pos;  /* row position the next item must start at */
    uint64_t first_pos; /* of the first item, UINT64_MAX before */
    uint64_t total, singles;
    double npp;
    int bad;
} collect;

static int on_item(void *ctx, const vw_item *it) {
    collect *c = ctx;
    uint32_t row;
    uint64_t pos;
    if (vw_locate(c->ix, it->id, &row, &pos) < 0 || row != c->row) c->bad = 1;
    if (c->first_pos == UINT64_MAX) c->first_pos = pos;
    else if (pos != c->next_pos) c->bad = 2; /* a zone skipped or counted twice */
    c->next_pos = pos + it->count;
    c->total += it->count;
    if (it->count == 1) {
        const vw_zone *z = vw_rec(c->ix, row, pos);
        if (z->start != it->start || z->dur != it->dur) c->bad = 3;
        c->singles++;
    } else if (it->dur == 0 && it->count > 1 && c->npp < 1) {
        c->bad = 4;
    }
    return 0;
}

/* For random windows and widths: the items of every row cover exactly the
 * zones that overlap the window, each once, in order. */
START_TEST(view_matches_brute_force) {
    const char *t = scratch_path("a.tracy");
    gen_trace(t, "-z 30000 -t 3 -d 7 -p 2");
    brute b;
    brute_load(&b, t);
    vw_index *ix = open_ok(t, NULL);
    ck_assert_uint_eq(vw_totals_of(ix)->zones, b.n);
    ck_assert_uint_eq(vw_ntracks(ix), b.ntracks);
    ck_assert_uint_eq(vw_totals_of(ix)->max_depth, b.maxdepth);
    uint64_t dur = vw_totals_of(ix)->duration;
    srand(42);
    for (int w = 0; w < 300; w++) {
        uint64_t t0 = (uint64_t)rand() % (dur + 1), len;
        switch (w % 4) {
        case 0: t0 = 0, len = dur + 1; break;
        case 1: len = 1 + (uint64_t)rand() % 1000; break;
        case 2: len = 1 + (uint64_t)rand() % 50000; break;
        default: len = 1 + (uint64_t)rand() % (dur + 1);
        }
        uint64_t t1 = t0 + len;
        uint32_t px = 1 + (uint32_t)rand() % 2000;
        double npp = (double)len / px;
        for (uint32_t tr = 0; tr < b.ntracks; tr++)
            for (uint32_t d = 0; d < b.maxdepth; d++) {
                uint64_t want = 0;
                for (size_t i = 0; i < b.n; i++)
                    if (b.z[i].track == tr && b.z[i].depth == d && b.z[i].start <= t1 && b.z[i].end >= t0)
                        want++;
                long row = vw_find_row(ix, VW_ROW_ZONES, tr, d);
                collect c = {ix, (uint32_t)row, 0, UINT64_MAX, 0, 0, npp, 0};
                if (row >= 0) vw_view_row(ix, (uint32_t)row, t0, t1, npp, on_item, &c);
                ck_assert_msg(!c.bad, "window %d track %u depth %u: bad %d", w, tr, d, c.bad);
                ck_assert_msg(c.total == want, "window [%llu, %llu] px %u track %u depth %u: %llu != %llu",
                              (unsigned long long)t0, (unsigned long long)t1, px, tr, d,
                              (unsigned long long)c.total, (unsigned long long)want);
                /* a window narrower than the narrowest zone shows them one by one */
                if (npp < 1) ck_assert_uint_eq(c.singles, c.total);
            }
    }
    vw_close(ix);
    free(b.z);
}
END_TEST

/* Each zone's record: start, duration, self time and function name as the
 * reader has them; its parent encloses it one depth up. */
START_TEST(zone_records_and_parents) {
    const char *t = scratch_path("b.tracy");
    gen_trace(t, "-z 5000 -t 2 -d 6");
    brute b;
    brute_load(&b, t);
    vw_index *ix = open_ok(t, NULL);
    size_t seen = 0;
    for (uint32_t tr = 0; tr < b.ntracks; tr++)
        for (uint32_t d = 0; d < b.maxdepth; d++) {
            long row = vw_find_row(ix, VW_ROW_ZONES, tr, d);
            if (row < 0) continue;
            size_t k = 0;
            for (size_t i = 0; i < b.n; i++) {
                if (b.z[i].track != tr || b.z[i].depth != d) continue;
                const vw_zone *z = vw_rec(ix, (uint32_t)row, k);
                ck_assert_uint_eq(z->start, b.z[i].start);
                ck_assert_uint_eq(z->start + z->dur, b.z[i].end);
                ck_assert_uint_eq(z->self, b.z[i].self);
                const vw_func *f = vw_func_at(ix, z->func_flags & VW_FUNC_MASK);
                ck_assert_str_eq(vw_string(ix, f->name, NULL), b.z[i].name);
                uint32_t pr;
                uint64_t pi;
                if (d == 0) {
                    ck_assert_int_lt(vw_parent(ix, (uint32_t)row, k, &pr, &pi), 0);
                } else {
                    ck_assert_int_eq(vw_parent(ix, (uint32_t)row, k, &pr, &pi), 0);
                    const vw_zone *p = vw_rec(ix, pr, pi);
                    ck_assert_uint_eq(vw_row_at(ix, pr)->depth, d - 1);
                    ck_assert_uint_le(p->start, z->start);
                    ck_assert_uint_ge(p->start + p->dur, z->start + z->dur);
                }
                k++;
                seen++;
            }
            ck_assert_uint_eq(k, vw_row_at(ix, (uint32_t)row)->n);
        }
    ck_assert_uint_eq(seen, b.n);
    vw_close(ix);
    free(b.z);
}
END_TEST

/* The index is reused while the trace is unchanged, rebuilt when it
 * changed, and a cut trace (no trailer, cut mid-unit) is indexed as far as
 * it goes, its open zones flagged. */
START_TEST(growing_file) {
    const char *full = scratch_path("full.tracy"), *t = scratch_path("grow.tracy");
    gen_trace(full, "-z 20000 -t 2 -d 5 --no-trailer");
    size_t len;
    uint8_t *bytes = slurp(full, &len);
    spit(t, bytes, len / 2);
    int rebuilt = 0;
    vw_index *ix = open_ok(t, &rebuilt);
    ck_assert_int_eq(rebuilt, 1);
    brute b;
    brute_load(&b, t);
    uint64_t half = vw_totals_of(ix)->zones;
    ck_assert_uint_eq(half, b.n);
    ck_assert_uint_eq(vw_totals_of(ix)->complete, 0);
    free(b.z);
    vw_close(ix);
    ix = open_ok(t, &rebuilt);
    ck_assert_int_eq(rebuilt, 0); /* unchanged: the cached index */
    ck_assert_int_eq(vw_stale(ix), 0);
    spit(t, bytes, len);
    ck_assert_int_eq(vw_stale(ix), 1);
    vw_close(ix);
    ix = open_ok(t, &rebuilt);
    ck_assert_int_eq(rebuilt, 1);
    ck_assert_uint_eq(vw_totals_of(ix)->zones, 20000);
    ck_assert_uint_gt(20000, half);
    vw_close(ix);
    free(bytes);
}
END_TEST

/* Damaged traces give an error, never a crash; a damaged index file is
 * rebuilt rather than trusted. */
START_TEST(damaged_inputs) {
    const char *t = scratch_path("c.tracy"), *bad = scratch_path("bad.tracy");
    gen_trace(t, "-z 3000 -t 2 -d 4 --messages 20 --plots 30");
    size_t len;
    uint8_t *bytes = slurp(t, &len);
    vw_index *ix = NULL;
    char err[256];
    spit(bad, (const uint8_t *)"not a trace at all", 18);
    ck_assert_int_lt(vw_open(&ix, bad, cache, NULL, err, sizeof err), 0);
    ck_assert_ptr_null(ix);
    ck_assert_uint_gt(strlen(err), 0);
    srand(7);
    for (int k = 0; k < 60; k++) {
        uint8_t *m = malloc(len);
        memcpy(m, bytes, len);
        for (int f = 0; f < 1 + k % 4; f++) m[(size_t)rand() % len] ^= (uint8_t)(1 + rand() % 255);
        spit(bad, m, k % 5 == 0 ? len * (size_t)(1 + rand() % 9) / 10 : len);
        int rc = vw_open(&ix, bad, cache, NULL, err, sizeof err);
        if (rc == 0) {
            uint64_t d = vw_totals_of(ix)->duration;
            for (uint32_t r = 0; vw_row_at(ix, r); r++)
                if (vw_row_at(ix, r)->kind == VW_ROW_ZONES) {
                    collect c = {ix, r, 0, UINT64_MAX, 0, 0, 10, 0};
                    vw_view_row(ix, r, 0, d, (double)d / 100 + 1, on_item, &c);
                    ck_assert_int_eq(c.bad, 0);
                }
            vw_close(ix);
        } else {
            ck_assert_ptr_null(ix);
        }
        free(m);
    }
    /* the index file of t, damaged: rebuilt */
    int rebuilt;
    ix = open_ok(t, &rebuilt);
    vw_close(ix);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "for f in '%s'/*.idx; do truncate -s 5000 \"$f\"; done", cache);
    ck_assert_int_eq(system(cmd), 0);
    ix = open_ok(t, &rebuilt);
    ck_assert_int_eq(rebuilt, 1);
    ck_assert_uint_eq(vw_totals_of(ix)->zones, 3000);
    ck_assert_uint_eq(vw_totals_of(ix)->messages, 20);
    ck_assert_uint_eq(vw_totals_of(ix)->samples, 30);
    vw_close(ix);
    free(bytes);
}
END_TEST

Suite *view_suite(void) {
    Suite *s = suite_create("view");
    TCase *tc = tcase_create("index");
    tcase_add_checked_fixture(tc, setup, scratch_remove);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, view_matches_brute_force);
    tcase_add_test(tc, zone_records_and_parents);
    tcase_add_test(tc, growing_file);
    tcase_add_test(tc, damaged_inputs);
    suite_add_tcase(s, tc);
    return s;
}
