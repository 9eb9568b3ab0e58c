/* check_calltree.c -- convert/calltree.c: outermost activations and the
 * aggregated call tree, on a trace written with lt_builder (recursion
 * direct and through another function, two threads) and read back. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* convert/strmap.c comes with check_convert.c (same runner binary). */
#include "../convert/calltree.c"
#include "trace_builder.h"

enum { LOC_A = 1, LOC_R = 2, LOC_B = 3 };

typedef struct span {
    uint32_t thread, loc;
    uint64_t begin, end;
} span;

/* Thread 1: a{ r{ r{ r{} b{} } } }; thread 2: r{ a{ r{} } }, as begin/end
 * pairs in the order they happen. */
static const span spans[] = {
    {1, LOC_A, 0, 100}, {1, LOC_R, 10, 90}, {1, LOC_R, 20, 80}, {1, LOC_R, 30, 50},
    {1, LOC_B, 55, 75}, {2, LOC_R, 0, 40}, {2, LOC_A, 5, 35}, {2, LOC_R, 10, 30},
};

static int put_thread(lt_builder *b, uint32_t t) {
    /* begins in order; an end whenever the next begin is past it */
    uint64_t open_end[8];
    int n = 0, rc = 0;
    for (size_t i = 0; i < sizeof spans / sizeof *spans; i++) {
        if (spans[i].thread != t) continue;
        while (n && open_end[n - 1] <= 1000 + spans[i].begin)
            rc |= lt_builder_zone_end(b, 1, t, open_end[--n]);
        rc |= lt_builder_zone_begin(b, 1, t, 1000 + spans[i].begin, spans[i].loc);
        open_end[n++] = 1000 + spans[i].end;
    }
    while (n) rc |= lt_builder_zone_end(b, 1, t, open_end[--n]);
    return rc;
}

static lt_reader *make_reader(char *path) {
    strcpy(path, "/tmp/check_calltree.XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    lt_builder *b;
    ck_assert_int_eq(lt_builder_open(&b, path, LT_WRITE_FORCE, "check"), 0);
    ck_assert_int_eq(lt_builder_process(b, 42, -1, "h", "prog", 0, NULL, 0, 0), 1);
    ck_assert_int_eq(lt_builder_thread(b, 1, 42, "main"), 1);
    ck_assert_int_eq(lt_builder_thread(b, 1, 43, "side"), 2);
    ck_assert_int_eq(lt_builder_loc(b, 1, LT_LOC_PYTHON, "a", "m.py", 1), LOC_A);
    ck_assert_int_eq(lt_builder_loc(b, 1, LT_LOC_PYTHON, "r", "m.py", 5), LOC_R);
    ck_assert_int_eq(lt_builder_loc(b, 1, LT_LOC_PYTHON, "b", "m.py", 9), LOC_B);
    ck_assert_int_eq(put_thread(b, 1) | put_thread(b, 2), 0);
    ck_assert_int_eq(lt_builder_close(b, 0), 0);
    lt_reader *r;
    ck_assert_int_eq(lt_reader_open(&r, path, NULL, 0), 0);
    return r;
}

static long func_named(const ct_tree *t, const char *name) {
    for (size_t f = 0; f < ct_tree_nfuncs(t); f++)
        if (strcmp(ct_tree_func(t, f)->name, name) == 0) return (long)f;
    return -1;
}

static ct_tree *read_tree(lt_reader *r, int merged) {
    ct_tree *t = ct_tree_new(r, merged);
    ck_assert_ptr_nonnull(t);
    lt_event ev;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0) ck_assert_int_eq(ct_tree_event(t, &ev), 0);
    ck_assert_int_eq(rc, 0);
    ct_tree_finish(t);
    return t;
}

START_TEST(totals_count_the_outermost_activation_once) {
    char path[64];
    lt_reader *r = make_reader(path);
    ct_tree *t = read_tree(r, 1);
    ct_total tot[3];
    ck_assert_uint_eq(ct_tree_nfuncs(t), 3);
    ct_tree_totals(t, tot);
    const ct_total *a = &tot[func_named(t, "a")], *rr = &tot[func_named(t, "r")];
    const ct_total *b = &tot[func_named(t, "b")];
    ck_assert_uint_eq(rr->calls, 5);
    ck_assert_uint_eq(rr->prim, 2);
    ck_assert_uint_eq(rr->cum, 80 + 40);
    ck_assert_uint_eq(rr->self, 20 + 20 + 20 + 10 + 20);
    ck_assert_uint_eq(a->calls, 2);
    ck_assert_uint_eq(a->prim, 2);
    ck_assert_uint_eq(a->cum, 100 + 30);
    ck_assert_uint_eq(a->self, 20 + 10);
    ck_assert_uint_eq(b->calls, 1);
    ck_assert_uint_eq(b->cum, 20);
    /* (caller r, callee r): two calls, one while the pair was not open */
    uint64_t rr_calls = 0, rr_prim = 0;
    for (size_t i = 0; i < ct_tree_nnodes(t); i++) {
        const ct_node *n = ct_tree_node(t, i);
        if (n->func == CT_ROOT || n->func != (uint32_t)func_named(t, "r")) continue;
        if (ct_tree_node(t, n->parent)->func != n->func) continue;
        rr_calls += n->calls;
        rr_prim += n->outer_edge ? n->calls : 0;
    }
    ck_assert_uint_eq(rr_calls, 2);
    ck_assert_uint_eq(rr_prim, 1);
    ct_tree_free(t);
    lt_reader_free(r);
    unlink(path);
}
END_TEST

START_TEST(per_thread_trees_have_a_root_each) {
    char path[64];
    lt_reader *r = make_reader(path);
    ct_tree *t = read_tree(r, 0);
    ck_assert_uint_eq(ct_tree_nstreams(t), 2);
    uint64_t zones = 0;
    for (size_t s = 0; s < ct_tree_nstreams(t); s++) {
        const ct_stream *st = ct_tree_stream(t, s);
        const ct_node *root = ct_tree_node(t, st->root);
        ck_assert_uint_eq(root->func, CT_ROOT);
        ck_assert_uint_eq(root->stream, s);
        zones += st->zones;
    }
    ck_assert_uint_eq(zones, 8);
    /* 2 roots + thread 1: a, r, r, r, b + thread 2: r, a, r */
    ck_assert_uint_eq(ct_tree_nnodes(t), 10);
    for (size_t i = 0; i < ct_tree_nnodes(t); i++) {
        const ct_node *n = ct_tree_node(t, i);
        if (n->func == CT_ROOT) continue;
        ck_assert_uint_lt(n->parent, i);
        ck_assert_uint_eq(ct_tree_node(t, n->parent)->stream, n->stream);
        ck_assert_uint_eq(ct_tree_node(t, n->parent)->depth + 1, n->depth);
    }
    ct_tree_free(t);
    lt_reader_free(r);
    unlink(path);
}
END_TEST

START_TEST(active_tracks_recursion_per_thread) {
    ct_active *a = ct_active_new();
    ck_assert_ptr_nonnull(a);
    /* thread 1: 7 { 7 { 9 } }, thread 2 interleaved: 7 */
    ck_assert_int_eq(ct_active_begin(a, 1, 1, 7), 0);
    ck_assert_int_eq(ct_active_begin(a, 1, 2, 7), 0);
    ck_assert_int_eq(ct_active_begin(a, 1, 1, 7), 0);
    ck_assert_int_eq(ct_active_begin(a, 1, 1, 9), 0);
    ck_assert_int_eq(ct_active_end(a, 1, 1), 1);  /* 9 */
    ck_assert_int_eq(ct_active_end(a, 1, 1), 0);  /* inner 7 */
    ck_assert_int_eq(ct_active_end(a, 1, 2), 1);  /* thread 2's 7 */
    ck_assert_int_eq(ct_active_end(a, 1, 1), 1);  /* outer 7 */
    ck_assert_int_eq(ct_active_end(a, 1, 1), -1); /* nothing open */
    ck_assert_int_eq(ct_active_end(a, 3, 1), -1); /* unknown stream */
    /* many keys on one stream: the table grows */
    for (uint32_t k = 0; k < 1000; k++) ck_assert_int_eq(ct_active_begin(a, 2, 1, k % 300), 0);
    for (uint32_t k = 1000; k-- > 0;) ck_assert_int_eq(ct_active_end(a, 2, 1), k < 300);
    ct_active_free(a);
    ct_active_free(NULL);
}
END_TEST

Suite *calltree_suite(void) {
    Suite *s = suite_create("calltree");
    TCase *tc = tcase_create("recursion");
    tcase_add_test(tc, totals_count_the_outermost_activation_once);
    tcase_add_test(tc, per_thread_trees_have_a_root_each);
    tcase_add_test(tc, active_tracks_recursion_per_thread);
    suite_add_tcase(s, tc);
    return s;
}
