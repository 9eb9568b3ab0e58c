/* diff_stats.c -- tracy-diff's duration histograms and significance tests. */
#include "convert/diff/diff_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Histogram ----------------------------------------------------------- */

#define SUB (1u << DS_SUB_BITS)

uint32_t ds_bucket(uint64_t v) {
    if (v < 2 * SUB) return (uint32_t)v;
    uint32_t e = 63u - (uint32_t)__builtin_clzll(v);
    uint32_t sub = (uint32_t)(v >> (e - DS_SUB_BITS)) & (SUB - 1);
    return (e - DS_SUB_BITS + 1) * SUB + sub;
}

void ds_bucket_range(uint32_t idx, uint64_t *lo, uint64_t *hi) {
    if (idx < 2 * SUB) {
        *lo = idx;
        *hi = (uint64_t)idx + 1;
        return;
    }
    uint32_t e = idx / SUB + DS_SUB_BITS - 1, sub = idx % SUB;
    uint64_t width = 1ull << (e - DS_SUB_BITS);
    *lo = (uint64_t)(SUB + sub) << (e - DS_SUB_BITS);
    *hi = *lo > UINT64_MAX - width ? UINT64_MAX : *lo + width;
}

/* Makes bucket idx part of the stored range, growing it with some slack
 * (so that a spreading distribution does not reallocate at every value). */
static int cover(ds_hist *h, uint32_t idx) {
    if (h->n && idx >= h->lo && idx < h->lo + h->n) return 0;
    uint32_t lo = h->n ? (idx < h->lo ? idx : h->lo) : idx;
    uint32_t hi = h->n ? (idx >= h->lo + h->n ? idx + 1 : h->lo + h->n) : idx + 1;
    uint32_t slack = (hi - lo) / 4 + 8;
    lo = lo > slack ? lo - slack : 0;
    hi = hi + slack < DS_BUCKETS ? hi + slack : DS_BUCKETS;
    uint32_t *c = calloc(hi - lo, sizeof *c);
    if (!c) return -1;
    if (h->n) memcpy(c + (h->lo - lo), h->c, h->n * sizeof *c);
    free(h->c);
    h->c = c;
    h->lo = lo;
    h->n = hi - lo;
    return 0;
}

/* Walks the non-empty buckets in order: returns 1 with *idx and *cnt set,
 * 0 at the end. *pos starts at 0. */
static int next_bucket(const ds_hist *h, uint32_t *pos, uint32_t *idx, uint32_t *cnt) {
    if (h->n) {
        while (*pos < h->n && !h->c[*pos]) (*pos)++;
        if (*pos >= h->n) return 0;
        *idx = h->lo + *pos;
        *cnt = h->c[(*pos)++];
        return 1;
    }
    if (*pos >= h->nsp) return 0;
    *idx = h->c[2 * *pos];
    *cnt = h->c[2 * *pos + 1];
    (*pos)++;
    return 1;
}

static uint32_t sat_add(uint32_t c, uint64_t times) {
    return times > (uint64_t)(UINT32_MAX - c) ? UINT32_MAX : c + (uint32_t)times;
}

/* Turns a full list into the dense form. */
static int to_dense(ds_hist *h) {
    uint32_t pairs[2 * DS_SPARSE], n = h->nsp;
    memcpy(pairs, h->c, n * 2 * sizeof *pairs);
    free(h->c);
    h->c = NULL;
    h->nsp = 0;
    if (cover(h, pairs[0]) || cover(h, pairs[2 * (n - 1)])) return -1;
    for (uint32_t k = 0; k < n; k++) h->c[pairs[2 * k] - h->lo] = pairs[2 * k + 1];
    return 0;
}

/* Adds `times` to bucket idx (counts only). */
static int add_idx(ds_hist *h, uint32_t idx, uint64_t times) {
    if (!h->n) {
        uint32_t k = 0;
        while (k < h->nsp && h->c[2 * k] < idx) k++;
        if (k < h->nsp && h->c[2 * k] == idx) {
            h->c[2 * k + 1] = sat_add(h->c[2 * k + 1], times);
            return 0;
        }
        if (h->nsp < DS_SPARSE) {
            if (!h->c && !(h->c = malloc(2 * DS_SPARSE * sizeof *h->c))) return -1;
            memmove(h->c + 2 * k + 2, h->c + 2 * k, (h->nsp - k) * 2 * sizeof *h->c);
            h->c[2 * k] = idx;
            h->c[2 * k + 1] = sat_add(0, times);
            h->nsp++;
            return 0;
        }
        if (to_dense(h)) return -1;
    }
    if (idx - h->lo >= h->n && cover(h, idx)) return -1;
    h->c[idx - h->lo] = sat_add(h->c[idx - h->lo], times);
    return 0;
}

int ds_hist_add(ds_hist *h, uint64_t v, uint64_t times) {
    uint32_t idx = ds_bucket(v);
    h->count += times;
    if (times == 1) { /* the common case: no multiply, no division */
        if (h->n && idx - h->lo < h->n) {
            uint32_t *c = &h->c[idx - h->lo];
            *c += *c != UINT32_MAX;
        } else if (add_idx(h, idx, 1)) {
            h->count--;
            return -1;
        }
        h->sum = v > UINT64_MAX - h->sum ? UINT64_MAX : h->sum + v;
        return 0;
    }
    if (add_idx(h, idx, times)) {
        h->count -= times;
        return -1;
    }
    uint64_t add = times && v > UINT64_MAX / times ? UINT64_MAX : v * times;
    h->sum = add > UINT64_MAX - h->sum ? UINT64_MAX : h->sum + add;
    return 0;
}

uint32_t ds_hist_at(const ds_hist *h, uint32_t idx) {
    uint32_t pos = 0, i, c;
    while (next_bucket(h, &pos, &i, &c))
        if (i == idx) return c;
    return 0;
}

int ds_hist_merge(ds_hist *dst, const ds_hist *src) {
    uint32_t pos = 0, idx, cnt;
    while (next_bucket(src, &pos, &idx, &cnt))
        if (add_idx(dst, idx, cnt)) return -1;
    dst->count += src->count;
    dst->sum = src->sum > UINT64_MAX - dst->sum ? UINT64_MAX : dst->sum + src->sum;
    return 0;
}

int ds_hist_move(ds_hist *dst, ds_hist *src) {
    if (!dst->c && !dst->count) {
        *dst = *src;
        memset(src, 0, sizeof *src);
        return 0;
    }
    int rc = ds_hist_merge(dst, src);
    ds_hist_free(src);
    return rc;
}

int ds_hist_add_scaled(ds_hist *dst, const ds_hist *src, double factor) {
    uint32_t pos = 0, idx, cnt;
    while (next_bucket(src, &pos, &idx, &cnt)) {
        uint64_t lo, hi;
        ds_bucket_range(idx, &lo, &hi);
        double v = ((double)lo + (double)(hi - lo) / 2) * factor;
        if (ds_hist_add(dst, v >= 1.8e19 ? UINT64_MAX : (uint64_t)v, cnt)) return -1;
    }
    return 0;
}

void ds_hist_clear(ds_hist *h) {
    if (h->n) memset(h->c, 0, h->n * sizeof *h->c);
    h->nsp = 0;
    h->count = h->sum = 0;
}

void ds_hist_free(ds_hist *h) {
    free(h->c);
    memset(h, 0, sizeof *h);
}

size_t ds_hist_bytes(const ds_hist *h) {
    return h->n ? h->n * sizeof *h->c : h->c ? 2 * DS_SPARSE * sizeof *h->c : 0;
}

double ds_hist_quantile(const ds_hist *h, double q) {
    uint64_t total = 0;
    uint32_t pos = 0, idx, cnt;
    while (next_bucket(h, &pos, &idx, &cnt)) total += cnt;
    if (!total) return 0;
    double rank = q * (double)total, seen = 0;
    uint64_t lo = 0, hi = 0;
    for (pos = 0; next_bucket(h, &pos, &idx, &cnt);) {
        ds_bucket_range(idx, &lo, &hi);
        if (seen + cnt >= rank) {
            if (hi - lo == 1) return (double)lo;
            double frac = (rank - seen) / (double)cnt;
            return (double)lo + frac * (double)(hi - lo);
        }
        seen += cnt;
    }
    return (double)lo;
}

/* ---- Mann-Whitney -------------------------------------------------------- */

double ds_mann_whitney(const ds_hist *a, const ds_hist *b, double *effect) {
    if (effect) *effect = 0.5;
    uint32_t pa = 0, pb = 0, ia = 0, ib = 0, ca = 0, cb = 0;
    int ha = next_bucket(a, &pa, &ia, &ca), hb = next_bucket(b, &pb, &ib, &cb);
    double na = 0, nb = 0, u = 0, ties = 0;
    while (ha || hb) {
        uint32_t idx = !hb || (ha && ia < ib) ? ia : ib;
        double xa = ha && ia == idx ? ca : 0, xb = hb && ib == idx ? cb : 0, t = xa + xb;
        u += xb * (na + xa / 2);
        ties += t * t * t - t;
        na += xa;
        nb += xb;
        if (ha && ia == idx) ha = next_bucket(a, &pa, &ia, &ca);
        if (hb && ib == idx) hb = next_bucket(b, &pb, &ib, &cb);
    }
    if (na < 2 || nb < 2) return 1;
    double n = na + nb, mean = na * nb / 2;
    double var = na * nb / 12 * ((n + 1) - ties / (n * (n - 1)));
    if (effect) *effect = u / (na * nb);
    if (var <= 0) return 1;
    double dev = fabs(u - mean) - 0.5;
    if (dev <= 0) return 1;
    return erfc(dev / sqrt(var) / sqrt(2.0));
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ds_median(double *v, size_t n) {
    if (!n) return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- t tests ------------------------------------------------------------ */

/* Continued fraction of the incomplete beta function, evaluated by the
 * modified Lentz method. */
static double beta_cf(double a, double b, double x) {
    const double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double f = d;
    for (int m = 1; m <= 300; m++) {
        double m2 = 2.0 * m;
        double num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
        d = 1 + num * d;
        c = 1 + num / c;
        d = fabs(d) < tiny ? 1 / tiny : 1 / d;
        c = fabs(c) < tiny ? tiny : c;
        f *= d * c;
        num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
        d = 1 + num * d;
        c = 1 + num / c;
        d = fabs(d) < tiny ? 1 / tiny : 1 / d;
        c = fabs(c) < tiny ? tiny : c;
        double step = d * c;
        f *= step;
        if (fabs(step - 1) < 1e-15) break;
    }
    return f;
}

double ds_inc_beta(double a, double b, double x) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1) / (a + b + 2)) return front * beta_cf(a, b, x) / a;
    return 1 - front * beta_cf(b, a, 1 - x) / b;
}

static void mean_var(const double *v, size_t n, double *mean, double *var) {
    double s = 0, ss = 0;
    for (size_t i = 0; i < n; i++) s += v[i];
    *mean = s / (double)n;
    for (size_t i = 0; i < n; i++) ss += (v[i] - *mean) * (v[i] - *mean);
    *var = ss / (double)(n - 1);
}

double ds_student(const double *a, size_t na, const double *b, size_t nb) {
    if (na < 2 || nb < 2) return 1;
    double ma, va, mb, vb;
    mean_var(a, na, &ma, &va);
    mean_var(b, nb, &mb, &vb);
    double df = (double)(na + nb - 2);
    double pooled = ((double)(na - 1) * va + (double)(nb - 1) * vb) / df;
    double se2 = pooled * (1 / (double)na + 1 / (double)nb);
    if (se2 <= 0) return ma == mb ? 1 : 0;
    double t = (ma - mb) / sqrt(se2);
    return ds_inc_beta(df / 2, 0.5, df / (df + t * t));
}

/* ---- Many rows at once ---------------------------------------------------- */

/* A p-value and its place: sorted by value, without state outside the call
 * (tracy-serve compares sessions on several threads at once). */
typedef struct ranked {
    double p;
    size_t at;
} ranked;

static int by_p(const void *x, const void *y) {
    double a = ((const ranked *)x)->p, b = ((const ranked *)y)->p;
    return a < b ? -1 : a > b;
}

int ds_holm(double *p, size_t n) {
    ranked *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return -1;
    for (size_t i = 0; i < n; i++) order[i] = (ranked){p[i], i};
    qsort(order, n, sizeof *order, by_p);
    double run = 0;
    for (size_t k = 0; k < n; k++) {
        double adj = (double)(n - k) * order[k].p;
        if (adj > 1) adj = 1;
        if (adj > run) run = adj;
        p[order[k].at] = run;
    }
    free(order);
    return 0;
}
