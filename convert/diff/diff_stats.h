/* diff_stats.h -- tracy-diff's statistics: a bounded log-linear histogram of
 * durations (the per-call distributions) and the significance tests
 * (Mann-Whitney on two histograms, Student's t on two small samples, Holm's
 * adjustment of many p-values). */
#ifndef CONVERT_DIFF_STATS_H
#define CONVERT_DIFF_STATS_H

#include <stddef.h>
#include <stdint.h>

/* ---- Histogram -----------------------------------------------------------
 * Values (ns) below 128 have a bucket each; above, every power of two is cut
 * into 64 equal buckets, so a bucket spans at most 1/64 of its lower bound.
 * Quantiles interpolate inside their bucket: the error is below 1/64 (1.6%)
 * of the value in the worst case and below 0.8% for a value at the bucket's
 * middle. Only the range of buckets touched is stored (4 bytes each), so
 * memory depends on the spread of the durations, never on their number:
 * at most 3776 buckets (15 KiB) for durations from 1 ns to 584 years. Up to
 * DS_SPARSE distinct buckets are kept as a list (128 bytes), so that the
 * many functions called a few times each cost little. */

#define DS_SPARSE 16

#define DS_SUB_BITS 6
#define DS_BUCKETS 3776u

typedef struct ds_hist {
    uint32_t *c;     /* dense: counts of buckets lo .. lo + n - 1;
                        sparse (n == 0): nsp pairs (bucket, count) by bucket */
    uint32_t lo, n, nsp;
    uint64_t count;  /* values added */
    uint64_t sum;    /* their sum, ns (saturating) */
} ds_hist;

/* Bucket index of a value and the bounds [lo, hi) of a bucket. */
uint32_t ds_bucket(uint64_t v);
void ds_bucket_range(uint32_t idx, uint64_t *lo, uint64_t *hi);

/* Adds `times` values v. Returns 0, or -1 on out-of-memory (h unchanged).
 * A bucket's count saturates at UINT32_MAX. */
int ds_hist_add(ds_hist *h, uint64_t v, uint64_t times);
/* Adds every value of src to dst. Returns 0 or -1 on out-of-memory. */
int ds_hist_merge(ds_hist *dst, const ds_hist *src);
/* The same, then empties src and releases its storage (taken over by dst
 * when dst holds nothing yet). */
int ds_hist_move(ds_hist *dst, ds_hist *src);
/* The count in bucket idx. */
uint32_t ds_hist_at(const ds_hist *h, uint32_t idx);
/* Empties h, keeping its storage. */
void ds_hist_clear(ds_hist *h);
/* Frees the storage; h becomes empty. Accepts an empty histogram. */
void ds_hist_free(ds_hist *h);
/* Adds every value of src multiplied by factor (> 0) to dst, each bucket
 * moved whole by its middle value. Returns 0 or -1 on out-of-memory. */
int ds_hist_add_scaled(ds_hist *dst, const ds_hist *src, double factor);
/* Quantile q in [0, 1] (0.5: median), interpolated inside its bucket;
 * 0 for an empty histogram. */
double ds_hist_quantile(const ds_hist *h, double q);
/* Bytes of storage held. */
size_t ds_hist_bytes(const ds_hist *h);

/* ---- Tests --------------------------------------------------------------- */

/* Mann-Whitney U test of two histograms (values in one bucket count as
 * ties), normal approximation with tie and continuity corrections. Returns
 * the two-sided p-value (1 when either side has fewer than 2 values or
 * every value is tied). *effect, when non-NULL, gets the probability that a
 * value of b exceeds one of a (ties half), 0.5 meaning no shift. */
double ds_mann_whitney(const ds_hist *a, const ds_hist *b, double *effect);

/* Student's t-test of two samples with a pooled variance (na + nb - 2
 * degrees of freedom): for samples of one kind whose spread is the same on
 * both sides, as the logarithms of per-run medians are. Returns the
 * two-sided p-value, or 1 when a side has fewer than 2 values; two samples
 * without variance give 0 when their means differ and 1 when equal. */
double ds_student(const double *a, size_t na, const double *b, size_t nb);

/* Holm's step-down adjustment of n p-values (in place): the adjusted value
 * of the k-th smallest is max over j <= k of min(1, (n - j + 1) p_(j)), so
 * that rejecting every adjusted p below alpha keeps the chance of one false
 * rejection among all n at most alpha. Returns -1 on out-of-memory. */
int ds_holm(double *p, size_t n);

/* Median of v[0..n-1] (reorders v); 0 when n is 0. */
double ds_median(double *v, size_t n);

/* Regularized incomplete beta I_x(a, b), for the t distribution. */
double ds_inc_beta(double a, double b, double x);

#endif /* CONVERT_DIFF_STATS_H */
