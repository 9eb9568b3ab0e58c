/* check_view.c -- the level-of-detail index (view/view.h) against a
 * brute-force pass over libtrace's reader: viewport items and merged counts
 * for random windows, self times, functions, parents, a growing file, and
 * damaged traces and index files. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scratch.h"
#include "trace.h"
#include "trace_builder.h"
#include "view.h"
#include "view_int.h" /* VW_ROW_TEXT */

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


/* ---- Extension ---------------------------------------------------------- */

/* Appends bytes [from, to) of `b` to path. */
static void append(const char *path, const uint8_t *b, size_t from, size_t to) {
    FILE *f = fopen(path, "ab");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b + from, 1, to - from, f), to - from);
    ck_assert_int_eq(fclose(f), 0);
}

/* vw_update of `t` into the index of cache folder `dir`: whether it was
 * extended. */
static int update(const char *t, const char *dir) {
    char *path = vw_index_path(t, dir), err[256];
    int ext = -1;
    int rc = vw_update(t, path, &ext, err, sizeof err);
    ck_assert_msg(rc == 0, "vw_update: %d %s", rc, err);
    free(path);
    return ext;
}

/* A whole build of `t` in cache folder `dir`, opened. */
static vw_index *whole(const char *t, const char *dir) {
    char *path = vw_index_path(t, dir), err[256];
    ck_assert_msg(vw_build(t, path, err, sizeof err) == 0, "vw_build: %s", err);
    free(path);
    vw_index *ix = NULL;
    ck_assert_int_eq(vw_open_built(&ix, t, dir), 0);
    return ix;
}

/* A function as its name, file, line and kind say (ids may differ). */
static void func_str(const vw_index *ix, uint32_t ff, char *out, size_t len) {
    const vw_func *f = vw_func_at(ix, ff & VW_FUNC_MASK);
    ck_assert_ptr_nonnull(f);
    snprintf(out, len, "%s|%s|%u|%u|%x", vw_string(ix, f->name, NULL), vw_string(ix, f->file, NULL),
             f->line, f->kind, ff & ~VW_FUNC_MASK);
}

static void text_str(const vw_index *ix, uint32_t text, char *out, size_t len) {
    uint64_t n, t;
    if (!text || vw_zone_text(ix, text, &n, &t) < 0) {
        snprintf(out, len, "-");
        return;
    }
    snprintf(out, len, "%s|%s|%d%d", n == UINT64_MAX ? "" : vw_string(ix, n, NULL),
             t == UINT64_MAX ? "" : vw_string(ix, t, NULL), n == UINT64_MAX, t == UINT64_MAX);
}

/* For each function of index a, the id of the same function in b. */
static uint32_t *func_map(const vw_index *a, const vw_index *b) {
    uint32_t n = vw_nfuncs(a), *m = calloc(n + 1, sizeof *m);
    char x[512], y[512];
    for (uint32_t i = 0; i < n; i++) {
        func_str(a, i, x, sizeof x);
        m[i] = UINT32_MAX;
        for (uint32_t k = 0; k < vw_nfuncs(b) && m[i] == UINT32_MAX; k++) {
            func_str(b, k, y, sizeof y);
            if (!strcmp(x, y)) m[i] = k;
        }
        ck_assert_msg(m[i] != UINT32_MAX, "function %s missing", x);
        ck_assert_uint_eq(vw_func_at(a, i)->zones, vw_func_at(b, m[i])->zones);
    }
    return m;
}

static void same_record(const vw_index *a, const vw_index *b, const uint32_t *fmap, const vw_row *w,
                        const void *ra, const void *rb, uint64_t i) {
    char x[512], y[512];
    if (w->kind == VW_ROW_ZONES) {
        const vw_zone *za = ra, *zb = rb;
        ck_assert_msg(za->start == zb->start && za->dur == zb->dur && za->self == zb->self &&
                          fmap[za->func_flags & VW_FUNC_MASK] == (zb->func_flags & VW_FUNC_MASK) &&
                          (za->func_flags & ~VW_FUNC_MASK) == (zb->func_flags & ~VW_FUNC_MASK),
                      "row %u/%u/%u #%llu: zone %llu+%llu self %llu %x != %llu+%llu self %llu %x", w->kind,
                      w->key, w->depth, (unsigned long long)i, (unsigned long long)za->start,
                      (unsigned long long)za->dur, (unsigned long long)za->self, za->func_flags,
                      (unsigned long long)zb->start, (unsigned long long)zb->dur, (unsigned long long)zb->self,
                      zb->func_flags);
        if (!za->text && !zb->text) return;
        text_str(a, za->text, x, sizeof x);
        text_str(b, zb->text, y, sizeof y);
        ck_assert_msg(!strcmp(x, y), "#%llu: text %s != %s", (unsigned long long)i, x, y);
    } else if (w->kind == VW_ROW_MARKERS) {
        const vw_marker *ma = ra, *mb = rb;
        ck_assert_uint_eq(ma->t, mb->t);
        ck_assert_uint_eq(ma->track, mb->track);
        ck_assert_uint_eq(ma->kind, mb->kind);
        ck_assert_str_eq(vw_string(a, ma->text, NULL), vw_string(b, mb->text, NULL));
        ck_assert_str_eq(vw_string(a, ma->text2, NULL), vw_string(b, mb->text2, NULL));
    } else {
        const vw_sample *sa = ra, *sb = rb;
        ck_assert_msg(sa->t == sb->t && sa->value == sb->value && sa->count == sb->count &&
                          sa->track == sb->track, "#%llu: samples differ", (unsigned long long)i);
    }
}

typedef struct items {
    const vw_index *ix;
    char (*s)[160];
    size_t n, cap;
} items;

static int keep_item(void *ctx, const vw_item *it) {
    items *c = ctx;
    if (c->n == c->cap) c->s = realloc(c->s, (c->cap = c->cap ? c->cap * 2 : 64) * sizeof *c->s);
    char f[128];
    func_str(c->ix, it->func_flags, f, sizeof f);
    snprintf(c->s[c->n++], sizeof c->s[0], "%llu %llu %llu %.90s", (unsigned long long)it->start,
             (unsigned long long)it->dur, (unsigned long long)it->count, f);
    return 0;
}

/* Index `a` shows what `b` shows: totals, tracks, functions, every record
 * of every row, and the items of random windows. */
static void same_index(const vw_index *a, const vw_index *b, unsigned seed) {
    ck_assert_int_eq(memcmp(vw_totals_of(a), vw_totals_of(b), sizeof(vw_totals)), 0);
    ck_assert_uint_eq(vw_ntracks(a), vw_ntracks(b));
    for (uint32_t i = 0; i < vw_ntracks(a); i++) {
        const vw_track *x = vw_track_at(a, i), *y = vw_track_at(b, i);
        ck_assert(x->process == y->process && x->thread == y->thread && x->tid == y->tid);
        ck_assert(x->depths == y->depths && x->zones == y->zones && x->first == y->first && x->last == y->last);
        ck_assert_str_eq(vw_string(a, x->name, NULL), vw_string(b, y->name, NULL));
    }
    ck_assert_uint_eq(vw_nfuncs(a), vw_nfuncs(b));
    ck_assert_uint_eq(vw_nplots(a), vw_nplots(b));
    ck_assert_uint_eq(vw_nframes(a), vw_nframes(b));
    for (uint32_t i = 0; i < vw_nplots(a); i++)
        ck_assert_int_eq(memcmp(&vw_plot_at(a, i)->process, &vw_plot_at(b, i)->process,
                                sizeof(vw_plot) - sizeof(uint64_t)), 0);
    uint32_t nb = 0, *fmap = func_map(a, b);
    for (uint32_t r = 0; vw_row_at(b, r); r++) {
        const vw_row *w = vw_row_at(b, r);
        if (w->kind == VW_ROW_TEXT) continue; /* numbered in another order: compared through zones */
        nb++;
        long ra = vw_find_row(a, w->kind, w->key, w->depth);
        ck_assert_msg(ra >= 0, "row %u/%u/%u missing", w->kind, w->key, w->depth);
        ck_assert_uint_eq(vw_row_at(a, (uint32_t)ra)->n, w->n);
        for (uint64_t i = 0; i < w->n; i++) same_record(a, b, fmap, w, vw_rec(a, (uint32_t)ra, i), vw_rec(b, r, i), i);
    }
    free(fmap);
    uint32_t na = 0;
    for (uint32_t r = 0; vw_row_at(a, r); r++) {
        const vw_row *w = vw_row_at(a, r);
        if (w->kind == VW_ROW_TEXT) continue;
        ck_assert_msg(w->n > 0 || vw_find_row(b, w->kind, w->key, w->depth) >= 0, "row %u/%u/%u extra",
                      w->kind, w->key, w->depth);
        na += w->n > 0;
    }
    ck_assert_uint_le(nb, na + 0);
    uint64_t dur = vw_totals_of(b)->duration;
    srand(seed);
    for (int k = 0; k < 40; k++) {
        uint64_t t0 = (uint64_t)rand() % (dur + 1), len = 1 + (uint64_t)rand() % (dur + 1);
        double npp = (double)len / (1 + rand() % 2000);
        for (uint32_t r = 0; vw_row_at(b, r); r++) {
            const vw_row *w = vw_row_at(b, r);
            if (w->kind != VW_ROW_ZONES) continue;
            long ra = vw_find_row(a, w->kind, w->key, w->depth);
            items x = {a, NULL, 0, 0}, y = {b, NULL, 0, 0};
            vw_view_row(a, (uint32_t)ra, t0, t0 + len, npp, keep_item, &x);
            vw_view_row(b, r, t0, t0 + len, npp, keep_item, &y);
            ck_assert_uint_eq(x.n, y.n);
            for (size_t i = 0; i < x.n; i++) ck_assert_str_eq(x.s[i], y.s[i]);
            free(x.s);
            free(y.s);
        }
    }
}

/* The index of `t` in folder `inc` shows what a whole build in `ref` does;
 * returns the zones still open. */
static uint64_t same_as_whole(const char *t, const char *inc, const char *ref, unsigned seed) {
    vw_index *a = NULL;
    ck_assert_int_eq(vw_open_built(&a, t, inc), 0);
    vw_index *b = whole(t, ref);
    same_index(a, b, seed);
    uint64_t open = vw_totals_of(b)->unclosed;
    vw_close(a);
    vw_close(b);
    return open;
}

/* Grows `t` to the whole of `bytes` in `steps` appends; after each, the
 * index updated in place shows what a whole build of the same bytes
 * shows. Returns how many updates were extensions. */
static int grow_and_compare(const char *t, const uint8_t *bytes, size_t len, int steps, int *open_steps) {
    char inc[256], ref[256];
    snprintf(inc, sizeof inc, "%s/inc", scratch_dir);
    snprintf(ref, sizeof ref, "%s/ref", scratch_dir);
    mkdir(inc, 0700);
    mkdir(ref, 0700);
    unlink(t);
    size_t have = 0;
    int extended = 0;
    *open_steps = 0;
    for (int k = 1; k <= steps; k++) {
        size_t to = k == steps ? len : len * (size_t)k / (size_t)steps;
        append(t, bytes, have, to);
        have = to;
        extended += update(t, inc) == 1;
        *open_steps += same_as_whole(t, inc, ref, (unsigned)k) > 0;
    }
    return extended;
}

/* A trace appended to in many steps: each update extends the index (the
 * first builds it), zones open across steps included, and it equals a
 * whole build of the same bytes, its last step with the trailer. */
START_TEST(extension_equals_whole_build) {
    const char *full = scratch_path("full.tracy"), *t = scratch_path("grow.tracy");
    /* streams of several blocks (LT_BLOCK_TARGET): steps cut them */
    gen_trace(full, "-z 240000 -t 2 -d 9 --messages 40 --signposts 15");
    size_t len;
    uint8_t *bytes = slurp(full, &len);
    int open_steps;
    ck_assert_int_eq(grow_and_compare(t, bytes, len, 17, &open_steps), 16);
    ck_assert_int_ge(open_steps, 12); /* zones open across steps */
    char inc[256];
    snprintf(inc, sizeof inc, "%s/inc", scratch_dir);
    vw_index *ix = NULL;
    ck_assert_int_eq(vw_open_built(&ix, t, inc), 0);
    ck_assert_uint_eq(vw_totals_of(ix)->zones, 240000);
    ck_assert_uint_eq(vw_totals_of(ix)->complete, 1);
    ck_assert_uint_eq(vw_totals_of(ix)->unclosed, 0);
    vw_close(ix);
    /* a current index is left as it is */
    char *path = vw_index_path(t, inc);
    struct stat before, after;
    ck_assert_int_eq(stat(path, &before), 0);
    ck_assert_int_eq(update(t, inc), 0);
    ck_assert_int_eq(stat(path, &after), 0);
    ck_assert_uint_eq(before.st_ino, after.st_ino);
    free(path);
    free(bytes);
    /* every record type, zone texts and a zone that never ends */
    gen_trace(full, "--fixed small");
    bytes = slurp(full, &len);
    grow_and_compare(t, bytes, len, 9, &open_steps);
    ck_assert_int_gt(open_steps, 0);
    free(bytes);
    /* samples of several threads, blocks appended out of time order: each
     * goes in its row's partial chunk at its place, or (its place among the
     * records written out) the update builds whole */
    gen_trace(full, "-z 6000 -t 3 -d 5 --plots 3000 --frames 400 --lost 60");
    bytes = slurp(full, &len);
    ck_assert_int_ge(grow_and_compare(t, bytes, len, 11, &open_steps), 1);
    free(bytes);
    /* one thread's samples fill the plot's partial chunk; another's, in a
     * later block, belong in its last part: the records before them go out */
    lt_builder *w;
    ck_assert_int_eq(lt_builder_open(&w, full, LT_WRITE_FORCE, "check_view"), 0);
    const char *argv0[] = {"p"};
    ck_assert_int_eq(lt_builder_process(w, 1, -1, "h", "p", 1, argv0, 1000, 1), 1);
    ck_assert_int_eq(lt_builder_thread(w, 1, 11, "a"), 1);
    ck_assert_int_eq(lt_builder_thread(w, 1, 12, "b"), 2);
    ck_assert_int_eq(lt_builder_plot(w, 1, "p"), 1);
    for (uint64_t i = 0; i < 1024; i++) ck_assert_int_eq(lt_builder_plot_value(w, 1, 1, 1000 + 10 * i, 1, (double)i), 0);
    for (uint64_t j = 0; j < 10; j++)
        ck_assert_int_eq(lt_builder_plot_value(w, 1, 2, 1000 + 10 * (1000 + j) + 5, 1, -(double)j), 0);
    ck_assert_int_eq(lt_builder_close(w, 0), 0);
    bytes = slurp(full, &len);
    ck_assert_int_ge(grow_and_compare(t, bytes, len, 40, &open_steps), 1);
    free(bytes);
}
END_TEST

/* What is not an append is built whole: a shorter file, another file
 * renamed over it, bytes changed before the indexed end, data after a
 * trailer. */
START_TEST(extension_fallbacks) {
    const char *full = scratch_path("full.tracy"), *other = scratch_path("other.tracy"),
               *t, *tmp = scratch_path("t.new");
    gen_trace(full, "-z 8000 -t 2 -d 6 --no-trailer");
    gen_trace(other, "-z 9000 -t 2 -d 6 -l 9 --no-trailer");
    size_t len, olen;
    uint8_t *bytes = slurp(full, &len), *obytes = slurp(other, &olen);
    char inc[256], ref[256];
    snprintf(inc, sizeof inc, "%s/inc", scratch_dir);
    snprintf(ref, sizeof ref, "%s/ref", scratch_dir);
    mkdir(inc, 0700);
    mkdir(ref, 0700);
    struct {
        const char *what;
        size_t first, then;
        int rename_other, change_other;
    } cases[] = {
        {"truncated", len * 2 / 3, len / 3, 0, 0},
        {"replaced", len / 2, 0, 1, 0},
        {"rewritten", len / 2, len * 3 / 4, 0, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char name[32];
        snprintf(name, sizeof name, "case%zu.tracy", c);
        t = scratch_path(name);
        spit(t, bytes, cases[c].first);
        ck_assert_int_eq(update(t, inc), 0); /* first build */
        append(t, bytes, cases[c].first, cases[c].first + (len - cases[c].first) / 4);
        ck_assert_int_eq(update(t, inc), 1); /* grew: extended */
        if (cases[c].rename_other) {
            spit(tmp, obytes, olen * 3 / 4);
            ck_assert_int_eq(rename(tmp, t), 0);
        } else {
            spit(t, cases[c].change_other ? obytes : bytes, cases[c].then);
        }
        ck_assert_msg(update(t, inc) == 0, "%s: extended", cases[c].what);
        same_as_whole(t, inc, ref, (unsigned)c);
    }
    /* an index open while its trace grows and is extended keeps answering
     * as it did */
    t = scratch_path("open.tracy");
    spit(t, bytes, len / 2);
    ck_assert_int_eq(update(t, inc), 0);
    vw_index *old = NULL;
    ck_assert_int_eq(vw_open_built(&old, t, inc), 0);
    vw_index *before = whole(t, ref);
    append(t, bytes, len / 2, len);
    ck_assert_int_eq(update(t, inc), 1);
    same_index(old, before, 99);
    vw_close(old);
    vw_close(before);
    free(bytes);
    free(obytes);
}
END_TEST

/* Two updates of one index at once (two servers on one cache folder):
 * each step's index still equals a whole build, and an index mapped
 * before keeps its records. */
START_TEST(concurrent_updates) {
    const char *full = scratch_path("full.tracy");
    gen_trace(full, "-z 120000 -t 2 -d 8");
    size_t len;
    uint8_t *bytes = slurp(full, &len);
    char inc[256], ref[256], t[256];
    snprintf(inc, sizeof inc, "%s/inc", scratch_dir);
    snprintf(ref, sizeof ref, "%s/ref", scratch_dir);
    snprintf(t, sizeof t, "%s/conc.tracy", scratch_dir);
    mkdir(inc, 0700);
    mkdir(ref, 0700);
    size_t have = len / 8;
    spit(t, bytes, have);
    update(t, inc);
    vw_index *first = NULL;
    ck_assert_int_eq(vw_open_built(&first, t, inc), 0);
    vw_index *first_ref = whole(t, ref);
    for (int k = 2; k <= 8; k++) {
        size_t to = k == 8 ? len : len * (size_t)k / 8;
        append(t, bytes, have, to);
        have = to;
        pid_t kids[2];
        for (int c = 0; c < 2; c++) {
            kids[c] = fork();
            ck_assert_int_ge(kids[c], 0);
            if (kids[c] == 0) {
                char *path = vw_index_path(t, inc), err[256];
                _exit(vw_update(t, path, NULL, err, sizeof err) == 0 ? 0 : 1);
            }
        }
        for (int c = 0; c < 2; c++) {
            int st;
            ck_assert_int_eq(waitpid(kids[c], &st, 0), kids[c]);
            ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        }
        same_as_whole(t, inc, ref, (unsigned)k);
    }
    same_index(first, first_ref, 1);
    vw_close(first);
    vw_close(first_ref);
    free(bytes);
}
END_TEST

/* A real capture: `python -m tracy` (the client in a Python program and
 * capture-release writing the trace) on a program that flushes while it
 * runs. The bytes written so far are copied to a snapshot at each step (as
 * a server reading the growing file sees them), the snapshot's index
 * updated, and each update but the first extends it and equals a whole
 * build; the last step adds what the daemon writes at its close. */
static const char LIVE_PROGRAM[] =
    "import os, sys, threading, time, tracy\n"
    "stop = sys.argv[1]\n"
    "def leaf(i):\n"
    "    return sum(range(100 + i % 50))\n"
    "def step(i):\n"
    "    with tracy.zone('step', text='i=%d' % i):\n"
    "        return leaf(i) + leaf(i + 1)\n"
    "def work():\n"
    "    i = 0\n"
    "    deadline = time.monotonic() + 120\n"
    "    while not os.path.exists(stop) and time.monotonic() < deadline:\n"
    "        for k in range(200):\n"
    "            step(i + k)\n"
    "        i += 200\n"
    "        tracy.flush()\n"
    "        time.sleep(0.02)\n"
    "t = threading.Thread(target=work)\n"
    "t.start()\n"
    "work()\n"
    "t.join()\n";

/* The first timestamp of trace `t` (0 when it has none). */
static uint64_t first_ts(const char *t) {
    lt_reader *r;
    ck_assert_int_eq(lt_reader_open(&r, t, NULL, 0), 0);
    uint64_t ts = lt_reader_info(r)->first_ts;
    lt_reader_free(r);
    return ts;
}

START_TEST(live_capture_extends) {
    const char *build = getenv("LT_BUILD");
    ck_assert_ptr_nonnull(build);
    char prog[256], stop[256], live[256], snap[256], inc[256], ref[256], cmd[2048];
    snprintf(prog, sizeof prog, "%s/live.py", scratch_dir);
    snprintf(stop, sizeof stop, "%s/stop", scratch_dir);
    snprintf(live, sizeof live, "%s/live.tracy", scratch_dir);
    snprintf(snap, sizeof snap, "%s/snap.tracy", scratch_dir);
    snprintf(inc, sizeof inc, "%s/inc", scratch_dir);
    snprintf(ref, sizeof ref, "%s/ref", scratch_dir);
    mkdir(inc, 0700);
    mkdir(ref, 0700);
    spit(prog, (const uint8_t *)LIVE_PROGRAM, strlen(LIVE_PROGRAM));
    snprintf(cmd, sizeof cmd,
             "PATH='%s/bin':\"$PATH\" PYTHONPATH='%s/python' TRACY_PORT=0 TRACY_ADDR= TRACY_PY_OPTS= "
             "exec \"${PYTHON:-/usr/bin/python3}\" -m tracy -o '%s' '%s' '%s' >'%s/live.log' 2>&1",
             build, build, live, prog, stop, scratch_dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    size_t have = 0;
    int grown = 0, extended = 0, done = 0;
    for (int round = 0; round < 2000 && !done; round++) {
        usleep(100000);
        int st;
        if (extended >= 4 && access(stop, F_OK) != 0) spit(stop, (const uint8_t *)"", 0);
        if (waitpid(pid, &st, WNOHANG) == pid) {
            ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "python -m tracy failed (see live.log)");
            done = 1;
        }
        if (access(live, F_OK) != 0) continue;
        size_t len;
        uint8_t *bytes = slurp(live, &len);
        if (len > have) {
            uint64_t was = grown ? first_ts(snap) : 0;
            append(snap, bytes, have, len);
            have = len;
            int ext = update(snap, inc);
            /* The first one builds; so does a growth whose block starts
             * before every earlier one (another thread's first block, sent
             * late), since every time in the index is kept from the start. */
            ck_assert_int_eq(ext, grown > 0 && (!was || was == first_ts(snap)));
            extended += ext;
            grown++;
            same_as_whole(snap, inc, ref, (unsigned)round);
        }
        free(bytes);
    }
    ck_assert_msg(done, "the capture did not end");
    ck_assert_int_ge(extended, 4);
    vw_index *ix = NULL;
    ck_assert_int_eq(vw_open_built(&ix, snap, inc), 0);
    ck_assert_uint_eq(vw_totals_of(ix)->complete, 1);
    ck_assert_uint_gt(vw_totals_of(ix)->zones, 0);
    vw_close(ix);
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
    tcase_add_test(tc, extension_equals_whole_build);
    tcase_add_test(tc, extension_fallbacks);
    tcase_add_test(tc, concurrent_updates);
    tcase_add_test(tc, live_capture_extends);
    suite_add_tcase(s, tc);
    return s;
}
