/* check_diff.c -- tracy-diff's statistics: the duration histogram (bucket
 * bounds, quantile error, bounded memory) and the significance tests
 * against values computed by hand or by reference implementations. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

/* The module under test is compiled into this suite. */
#include "../convert/diff/diff_stats.c"

/* ---- Histogram ----------------------------------------------------------- */

START_TEST(buckets_cover_every_value_without_gaps) {
    uint64_t prev_hi = 0;
    for (uint32_t i = 0; i < DS_BUCKETS; i++) {
        uint64_t lo, hi;
        ds_bucket_range(i, &lo, &hi);
        ck_assert_uint_eq(lo, prev_hi);
        ck_assert_uint_gt(hi, lo);
        ck_assert_uint_eq(ds_bucket(lo), i);
        ck_assert_uint_eq(ds_bucket(hi - 1), i);
        /* No bucket wider than 1/64 of its lower bound (above 128 ns). */
        if (lo >= 128) ck_assert(hi - lo <= lo / 64);
        prev_hi = hi;
    }
    ck_assert_uint_eq(prev_hi, UINT64_MAX);
    ck_assert_uint_eq(ds_bucket(UINT64_MAX), DS_BUCKETS - 1);
}
END_TEST

START_TEST(quantiles_are_within_the_stated_error) {
    ds_hist h = {0};
    /* Log-uniform values from 1 us to 1 s: the exact quantile is known. */
    const int n = 100000;
    for (int i = 0; i < n; i++) {
        double v = 1e3 * pow(1e6, (i + 0.5) / n);
        ck_assert_int_eq(ds_hist_add(&h, (uint64_t)v, 1), 0);
    }
    ck_assert_uint_eq(h.count, (uint64_t)n);
    for (double q = 0.05; q < 1; q += 0.05) {
        double want = 1e3 * pow(1e6, q), got = ds_hist_quantile(&h, q);
        ck_assert_msg(fabs(got - want) / want < 1.0 / 64, "q %.2f: %f vs %f", q, got, want);
    }
    /* Memory follows the spread (20 octaves), not the count. */
    ck_assert_uint_le(ds_hist_bytes(&h), 20 * 64 * 4 * 2);
    size_t before = ds_hist_bytes(&h);
    for (int i = 0; i < 1000000; i++) ds_hist_add(&h, 1000 + (uint64_t)i % 1000, 1);
    ck_assert_uint_eq(ds_hist_bytes(&h), before);
    ds_hist_free(&h);
}
END_TEST

START_TEST(merge_and_scaling_keep_counts_and_move_values) {
    ds_hist a = {0}, b = {0}, s = {0};
    for (uint64_t v = 1000; v < 2000; v++) ds_hist_add(&a, v, 2);
    ds_hist_add(&b, 5, 3);
    ck_assert_int_eq(ds_hist_merge(&b, &a), 0);
    ck_assert_uint_eq(b.count, 2003);
    ck_assert_uint_eq(b.sum, 15 + 2 * (1000 + 1999) * 1000 / 2);
    ds_hist_clear(&b);
    ck_assert_uint_eq(b.count, 0);
    ck_assert(ds_hist_quantile(&b, 0.5) == 0);
    ck_assert_int_eq(ds_hist_add_scaled(&s, &a, 2.0), 0);
    ck_assert_uint_eq(s.count, a.count);
    double m = ds_hist_quantile(&s, 0.5);
    ck_assert_msg(fabs(m - 3000) / 3000 < 0.02, "scaled median %f", m);
    ds_hist_free(&a);
    ds_hist_free(&b);
    ds_hist_free(&s);
}
END_TEST

START_TEST(few_buckets_stay_a_list_then_turn_dense_unchanged) {
    ds_hist h = {0}, ref = {0};
    /* The reference turns dense at once: 40 values far apart. */
    for (uint64_t k = 0; k < 40; k++) ds_hist_add(&ref, 1000000 + k * 100000, 1);
    ck_assert_uint_gt(ref.n, 0);
    uint64_t vals[] = {5000, 70, 1234567, 5000, 999, 70, 31, 5000};
    for (size_t i = 0; i < 8; i++) ds_hist_add(&h, vals[i], 1);
    ck_assert_uint_eq(h.n, 0);                 /* still a list */
    ck_assert_uint_eq(h.nsp, 5);
    ck_assert_uint_le(ds_hist_bytes(&h), 2 * DS_SPARSE * 4);
    ck_assert_uint_eq(ds_hist_at(&h, ds_bucket(5000)), 3);
    ck_assert(ds_hist_quantile(&h, 0.5) >= 999 && ds_hist_quantile(&h, 0.5) < 5000 * 1.02);
    double before = ds_hist_quantile(&h, 0.5);
    /* Merging into the dense reference and back keeps every count. */
    ds_hist d = {0};
    ck_assert_int_eq(ds_hist_merge(&d, &ref), 0);
    ck_assert_int_eq(ds_hist_merge(&d, &h), 0);
    ck_assert_uint_eq(d.count, 48);
    ck_assert_uint_eq(ds_hist_at(&d, ds_bucket(70)), 2);
    /* Past DS_SPARSE buckets the list turns dense with the same counts. */
    for (uint64_t k = 0; k < DS_SPARSE; k++) ds_hist_add(&h, 200000 + k * 10000, 1);
    ck_assert_uint_gt(h.n, 0);
    ck_assert_uint_eq(h.nsp, 0);
    ck_assert_uint_eq(h.count, 8 + DS_SPARSE);
    ck_assert_uint_eq(ds_hist_at(&h, ds_bucket(5000)), 3);
    ck_assert_uint_eq(ds_hist_at(&h, ds_bucket(31)), 1);
    ck_assert(ds_hist_quantile(&h, 0.5) > 100 * before); /* 16 values of 200 us or more */
    /* Mann-Whitney treats both forms alike: a list against itself in
     * dense form gives no difference. */
    ds_hist l = {0}, dd = {0};
    for (size_t i = 0; i < 8; i++) ds_hist_add(&l, vals[i], 1);
    ck_assert_int_eq(ds_hist_merge(&dd, &ref), 0);
    ds_hist_clear(&dd);
    ck_assert_uint_gt(dd.n, 0);
    ck_assert_int_eq(ds_hist_merge(&dd, &l), 0);
    ck_assert(ds_mann_whitney(&l, &dd, NULL) == 1);
    /* Moving into an empty histogram hands the storage over. */
    ds_hist m = {0};
    uint32_t *storage = l.c;
    ck_assert_int_eq(ds_hist_move(&m, &l), 0);
    ck_assert_ptr_eq(m.c, storage);
    ck_assert_ptr_null(l.c);
    ck_assert_uint_eq(m.count, 8);
    ck_assert_int_eq(ds_hist_move(&m, &h), 0);
    ck_assert_uint_eq(m.count, 8 + 8 + DS_SPARSE);
    ck_assert_ptr_null(h.c);
    ds_hist_free(&ref);
    ds_hist_free(&d);
    ds_hist_free(&dd);
    ds_hist_free(&m);
}
END_TEST

START_TEST(counts_saturate_instead_of_wrapping) {
    ds_hist h = {0};
    ds_hist_add(&h, 100, UINT32_MAX - 1);
    ds_hist_add(&h, 100, 10);
    ck_assert_uint_eq(ds_hist_at(&h, 100), UINT32_MAX);
    /* The same in the dense form. */
    for (uint64_t v = 200; v < 200 + 2 * DS_SPARSE; v++) ds_hist_add(&h, v, 1);
    ck_assert_uint_gt(h.n, 0);
    ds_hist_add(&h, 100, 10);
    ck_assert_uint_eq(ds_hist_at(&h, 100), UINT32_MAX);
    ds_hist_free(&h);
}
END_TEST

/* ---- Tests --------------------------------------------------------------- */

START_TEST(mann_whitney_matches_a_hand_computed_case) {
    /* a = 1..10, b = 6..15: 6..10 tied in pairs. U(b > a) = 5.5 + 6.5 +
     * 7.5 + 8.5 + 9.5 + 5 * 10 = 87.5, mean 50, tie term 5 * (8 - 2) = 30,
     * var = 100 / 12 * (21 - 30 / (20 * 19)). */
    ds_hist a = {0}, b = {0};
    for (uint64_t v = 1; v <= 10; v++) ds_hist_add(&a, v, 1);
    for (uint64_t v = 6; v <= 15; v++) ds_hist_add(&b, v, 1);
    double effect, p = ds_mann_whitney(&a, &b, &effect);
    double var = 100.0 / 12 * (21 - 30.0 / 380);
    double want = erfc((87.5 - 50 - 0.5) / sqrt(var) / sqrt(2.0));
    ck_assert_msg(fabs(p - want) < 1e-12, "p %g vs %g", p, want);
    ck_assert(fabs(effect - 0.875) < 1e-12);
    /* Symmetric. */
    ck_assert(fabs(ds_mann_whitney(&b, &a, NULL) - p) < 1e-12);
    ds_hist_free(&a);
    ds_hist_free(&b);
}
END_TEST

START_TEST(mann_whitney_sees_no_change_in_equal_samples) {
    ds_hist a = {0}, b = {0};
    for (uint64_t v = 0; v < 5000; v++) {
        ds_hist_add(&a, 1000 + (v * 7919) % 3000, 1);
        ds_hist_add(&b, 1000 + (v * 104729) % 3000, 1);
    }
    ck_assert(ds_mann_whitney(&a, &b, NULL) > 0.5);
    /* Stretching b by 10% is significant with 5000 values a side. */
    ds_hist c = {0};
    ds_hist_add_scaled(&c, &b, 1.10);
    ck_assert(ds_mann_whitney(&a, &c, NULL) < 1e-6);
    /* Every value tied, or a side too small: nothing to test. */
    ds_hist t1 = {0}, t2 = {0};
    ds_hist_add(&t1, 500, 10);
    ds_hist_add(&t2, 500, 10);
    ck_assert(ds_mann_whitney(&t1, &t2, NULL) == 1);
    ds_hist_free(&t2);
    ds_hist_add(&t2, 900, 1);
    ck_assert(ds_mann_whitney(&t1, &t2, NULL) == 1);
    ds_hist_free(&a);
    ds_hist_free(&b);
    ds_hist_free(&c);
    ds_hist_free(&t1);
    ds_hist_free(&t2);
}
END_TEST

START_TEST(incomplete_beta_matches_closed_forms) {
    /* I_x(a, 1) = x^a, I_x(1, b) = 1 - (1-x)^b, I_0.5(2, 3) = 11/16. */
    ck_assert(fabs(ds_inc_beta(3, 1, 0.3) - pow(0.3, 3)) < 1e-12);
    ck_assert(fabs(ds_inc_beta(1, 4, 0.2) - (1 - pow(0.8, 4))) < 1e-12);
    ck_assert(fabs(ds_inc_beta(2, 3, 0.5) - 11.0 / 16) < 1e-12);
    ck_assert(ds_inc_beta(2, 3, 0) == 0 && ds_inc_beta(2, 3, 1) == 1);
}
END_TEST

START_TEST(student_matches_t_table_values) {
    /* Equal variances and sizes: t = -2, df = 8, and the two-sided p of
     * Student's t with 8 degrees of freedom at |t| = 2 is 0.080516. */
    double a[] = {1, 2, 3, 4, 5}, b[] = {3, 4, 5, 6, 7};
    ck_assert_msg(fabs(ds_student(a, 5, b, 5) - 0.080516) < 1e-5, "%f", ds_student(a, 5, b, 5));
    /* Sizes 3 and 5, variances 1 and 2.5: pooled (2 * 1 + 4 * 2.5) / 6 = 2,
     * se = sqrt(2 * (1/3 + 1/5)), t = 4 / se = 3.872983 with 6 degrees of
     * freedom: two-sided p 0.008237 (between the table's 3.707 at 0.01 and
     * 4.317 at 0.005). */
    double c[] = {1, 2, 3}, d[] = {4, 5, 6, 7, 8};
    ck_assert_msg(fabs(ds_student(c, 3, d, 5) - 0.008237) < 1e-5, "%f", ds_student(c, 3, d, 5));
    /* Two values a side: df = 2; a gap of 4.302653 se is the 0.05
     * two-sided point of t(2). */
    double gap = 4.302653 * sqrt(0.5);
    double g[] = {0.5, 1.5}, h[] = {0.5 + gap, 1.5 + gap};
    ck_assert_msg(fabs(ds_student(g, 2, h, 2) - 0.05) < 1e-5, "%f", ds_student(g, 2, h, 2));
    /* No spread on either side; too few values. */
    double k[] = {2, 2, 2}, l[] = {3, 3, 3};
    ck_assert(ds_student(k, 3, l, 3) == 0);
    ck_assert(ds_student(k, 3, k, 3) == 1);
    ck_assert(ds_student(k, 1, l, 3) == 1);
}
END_TEST

START_TEST(holm_adjusts_by_rank_and_stays_monotone) {
    /* Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06 and
     * 0.04, which becomes 0.06 (never below a smaller p's adjustment). */
    double p[] = {0.01, 0.04, 0.03, 0.005};
    ck_assert(ds_holm(p, 4) == 0);
    double want[] = {0.03, 0.06, 0.06, 0.02};
    for (int i = 0; i < 4; i++) ck_assert_msg(fabs(p[i] - want[i]) < 1e-12, "%d: %f", i, p[i]);
    /* Capped at 1; one value is left as it is; none is allowed. */
    double q[] = {0.5, 0.9};
    ck_assert(ds_holm(q, 2) == 0 && q[0] == 1 && q[1] == 1);
    double one[] = {0.3};
    ck_assert(ds_holm(one, 1) == 0 && one[0] == 0.3);
    ck_assert(ds_holm(NULL, 0) == 0);
}
END_TEST

START_TEST(median_of_odd_and_even_counts) {
    double a[] = {5, 1, 3}, b[] = {4, 1, 3, 2};
    ck_assert(ds_median(a, 3) == 3);
    ck_assert(ds_median(b, 4) == 2.5);
    ck_assert(ds_median(b, 0) == 0);
}
END_TEST

Suite *diff_suite(void) {
    Suite *s = suite_create("diff");
    TCase *h = tcase_create("histogram");
    /* Quick (about a second under ASan), but make check runs suites side by
     * side on a busy machine: the default 4 s can pass while waiting. */
    tcase_set_timeout(h, 60);
    tcase_add_test(h, buckets_cover_every_value_without_gaps);
    tcase_add_test(h, quantiles_are_within_the_stated_error);
    tcase_add_test(h, merge_and_scaling_keep_counts_and_move_values);
    tcase_add_test(h, few_buckets_stay_a_list_then_turn_dense_unchanged);
    tcase_add_test(h, counts_saturate_instead_of_wrapping);
    suite_add_tcase(s, h);
    TCase *t = tcase_create("tests");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, mann_whitney_matches_a_hand_computed_case);
    tcase_add_test(t, mann_whitney_sees_no_change_in_equal_samples);
    tcase_add_test(t, incomplete_beta_matches_closed_forms);
    tcase_add_test(t, student_matches_t_table_values);
    tcase_add_test(t, holm_adjusts_by_rank_and_stays_monotone);
    tcase_add_test(t, median_of_odd_and_even_counts);
    suite_add_tcase(s, t);
    return s;
}
