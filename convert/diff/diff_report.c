/* diff_report.c -- tracy-diff's comparison: rows of the two sides matched,
 * the drift measured, a verdict per row. */
#include "convert/diff/diff_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct dr_report {
    dr_opts o;
    dp_profile *pa, *pb;
    dr_item *items;
    size_t n, cap;
    unsigned char *used_a, *used_b;
    char *keybuf;
    double drift;    /* NEW's speed over BASE's (1: none measured) */
    size_t drift_n;  /* functions it was measured on */
    double *factor;  /* runs mode: per run of BASE then NEW */
};

#define KEYBUF (6 * (LT_MAX_STRING + 1) + 32)

/* ---- Sides and verdicts -------------------------------------------------- */

static void side_of(dp_profile *p, const dp_row *w, dr_side *s) {
    uint32_t runs = dp_runs(p);
    memset(s, 0, sizeof *s);
    if (!w) return;
    for (uint32_t i = 0; i < runs; i++) {
        s->calls += (double)w->calls[i];
        s->total += (double)w->total[i];
        s->self += (double)w->self[i];
    }
    s->calls /= runs;
    s->total /= runs;
    s->self /= runs;
    s->n = w->hist.count;
    s->mean = s->n ? (double)w->hist.sum / (double)s->n : 0;
    s->p50 = ds_hist_quantile(&w->hist, 0.5);
    s->p95 = ds_hist_quantile(&w->hist, 0.95);
}

int dr_per_run(const dr_report *r) {
    if (r->o.test != DR_TEST_AUTO) return r->o.test == DR_TEST_RUNS;
    return dp_runs(r->pa) >= 3 && dp_runs(r->pb) >= 3;
}

/* ---- Drift ----------------------------------------------------------------
 * A shared machine runs a whole process faster or slower (other load, CPU
 * frequency, neighbours on the host): every function moves together. The
 * drift is the median over the functions with enough calls on both sides of
 * the ratio of their median self time per call (self time, so that a slower
 * function does not move its callers' figures); changes are measured
 * against it. With fewer than DR_DRIFT_MIN such functions it is taken as 1. */

static int drift_usable(const dr_report *r, const dr_item *it) {
    return it->a && it->b && it->status != DR_RENAMED && it->a->kind == DP_FUNC &&
           it->a->shist.count >= r->o.min_calls && it->b->shist.count >= r->o.min_calls;
}

/* Calls mode: one factor, NEW over BASE. */
static int drift_calls(dr_report *r) {
    double *v = malloc((r->n + 1) * sizeof *v);
    size_t n = 0;
    if (!v) return -1;
    for (size_t i = 0; i < r->n; i++) {
        const dr_item *it = &r->items[i];
        if (!drift_usable(r, it)) continue;
        double a = ds_hist_quantile(&it->a->shist, 0.5), b = ds_hist_quantile(&it->b->shist, 0.5);
        if (a > 0 && b > 0) v[n++] = b / a;
    }
    r->drift_n = n;
    r->drift = n >= DR_DRIFT_MIN ? ds_median(v, n) : 1;
    free(v);
    return 0;
}

/* Runs mode: a factor per run against each function's median over every
 * run of both sides, using the functions with enough calls in every run. */
static int drift_runs(dr_report *r) {
    uint32_t na = dp_runs(r->pa), nb = dp_runs(r->pb), nr = na + nb;
    double *ref = malloc((r->n + 1) * sizeof *ref), *tmp = malloc(nr * sizeof *tmp);
    double *col = malloc((r->n + 1) * sizeof *col);
    size_t *use = malloc((r->n + 1) * sizeof *use), n = 0;
    int rc = -1;
    if (!ref || !tmp || !col || !use) goto out;
    for (size_t i = 0; i < r->n; i++) {
        const dr_item *it = &r->items[i];
        int ok = drift_usable(r, it);
        for (uint32_t k = 0; ok && k < nr; k++) {
            const dp_row *w = k < na ? it->a : it->b;
            uint32_t run = k < na ? k : k - na;
            ok = w->calls[run] >= r->o.min_calls && w->s50[run] > 0;
            tmp[k] = w->s50[run];
        }
        if (!ok) continue;
        ref[n] = ds_median(tmp, nr);
        use[n++] = i;
    }
    r->drift_n = n;
    for (uint32_t k = 0; k < nr; k++) {
        size_t m = 0;
        for (size_t j = 0; j < n; j++) {
            const dr_item *it = &r->items[use[j]];
            const dp_row *w = k < na ? it->a : it->b;
            col[m++] = w->s50[k < na ? k : k - na] / ref[j];
        }
        r->factor[k] = n >= DR_DRIFT_MIN ? ds_median(col, m) : 1;
    }
    memcpy(tmp, r->factor, na * sizeof *tmp);
    double fa = ds_median(tmp, na);
    memcpy(tmp, r->factor + na, nb * sizeof *tmp);
    r->drift = ds_median(tmp, nb) / fa;
    rc = 0;
out:
    free(ref);
    free(tmp);
    free(col);
    free(use);
    return rc;
}

/* ---- Verdicts ------------------------------------------------------------ */

/* Per-run medians of the runs where the row had calls, divided by their
 * run's drift factor. */
static size_t run_values(const dr_report *r, const dp_row *w, int side, double *out) {
    dp_profile *p = side ? r->pb : r->pa;
    const double *f = r->factor + (side ? dp_runs(r->pa) : 0);
    size_t n = 0;
    for (uint32_t i = 0; i < dp_runs(p); i++)
        if (w->calls[i]) out[n++] = w->p50[i] / f[i];
    return n;
}

/* Student's t on the logarithms of the normalised per-run medians (the
 * same spread on both sides: runs of one program on one machine; the pooled
 * variance gives the few runs of a CI job their full degrees of freedom);
 * the change is that of their medians. */
static int test_runs(dr_report *r, dr_item *it, double *base, double *next) {
    double *va = malloc(dp_runs(r->pa) * sizeof *va), *vb = malloc(dp_runs(r->pb) * sizeof *vb);
    if (!va || !vb) {
        free(va);
        free(vb);
        return -1;
    }
    size_t na = run_values(r, it->a, 0, va), nb = run_values(r, it->b, 1, vb);
    if (na >= 2 && nb >= 2) {
        double la[na], lb[nb];
        for (size_t i = 0; i < na; i++) la[i] = log(va[i] > 1 ? va[i] : 1);
        for (size_t i = 0; i < nb; i++) lb[i] = log(vb[i] > 1 ? vb[i] : 1);
        it->test = "student";
        it->p = ds_student(la, na, lb, nb);
        *base = ds_median(va, na);
        *next = ds_median(vb, nb);
    } else {
        it->why = "too few runs";
    }
    free(va);
    free(vb);
    return 0;
}

/* Mann-Whitney on the per-call durations, NEW's divided by the drift. */
static int test_calls(dr_report *r, dr_item *it, double *base, double *next) {
    *base = it->sa.p50;
    *next = it->sb.p50 / r->drift;
    if (it->sa.n < r->o.min_calls || it->sb.n < r->o.min_calls) {
        it->why = "too few calls";
        return 0;
    }
    ds_hist scaled = {0};
    const ds_hist *hb = &it->b->hist;
    if (r->drift != 1) {
        if (ds_hist_add_scaled(&scaled, hb, 1 / r->drift)) return -1;
        hb = &scaled;
    }
    it->test = "mann-whitney";
    it->p = ds_mann_whitney(&it->a->hist, hb, NULL);
    ds_hist_free(&scaled);
    return 0;
}

/* The row's test and change; its verdict waits for every row's p. */
static int judge(dr_report *r, dr_item *it) {
    double base = 0, next = 0;
    it->p = 1;
    it->calls_changed = fabs(it->sb.calls - it->sa.calls) >= 0.5;
    it->raw_rel = (it->sb.p50 - it->sa.p50) / (it->sa.p50 > 1 ? it->sa.p50 : 1);
    if ((dr_per_run(r) ? test_runs : test_calls)(r, it, &base, &next)) return -1;
    it->rel = (next - base) / (base > 1 ? base : 1);
    it->cost = (next - base) * it->sb.calls;
    return 0;
}

static int tested(const dr_item *it) { return it->a && it->b && it->test && !it->why; }

/* Holm over every tested row: a report of many rows at alpha each would
 * flag some by chance alone (a 200-function A/A comparison at 0.05 finds a
 * "regression" about once in 20); the adjustment keeps the chance of any
 * false flag in the whole report at most alpha. */
static int adjust(dr_report *r) {
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++) n += tested(&r->items[i]);
    double *p = malloc((n ? n : 1) * sizeof *p);
    if (!p) return -1;
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++)
        if (tested(&r->items[i])) p[k++] = r->items[i].p;
    if (!r->o.no_correction && ds_holm(p, n)) {
        free(p);
        return -1;
    }
    k = 0;
    for (size_t i = 0; i < r->n; i++) {
        dr_item *it = &r->items[i];
        it->p_adj = tested(it) ? p[k++] : it->p;
    }
    free(p);
    return 0;
}

static void verdict(const dr_report *r, dr_item *it) {
    if (it->why) return;
    if (it->p_adj >= r->o.alpha) it->why = "not significant";
    else if (fabs(it->rel) < r->o.threshold) it->why = "below --threshold";
    else if (fabs(it->cost) < r->o.min_time) it->why = "below --min-time";
    else if (it->status != DR_RENAMED) it->status = it->rel > 0 ? DR_REGRESSION : DR_IMPROVEMENT;
}

static int judge_all(dr_report *r) {
    uint32_t nr = dp_runs(r->pa) + dp_runs(r->pb);
    r->factor = malloc(nr * sizeof *r->factor);
    if (!r->factor) return -1;
    for (uint32_t k = 0; k < nr; k++) r->factor[k] = 1;
    r->drift = 1;
    if (!r->o.no_normalize && (dr_per_run(r) ? drift_runs(r) : drift_calls(r))) return -1;
    for (size_t i = 0; i < r->n; i++) {
        dr_item *it = &r->items[i];
        if (it->a && it->b && judge(r, it)) return -1;
    }
    if (adjust(r)) return -1;
    for (size_t i = 0; i < r->n; i++)
        if (r->items[i].a && r->items[i].b) verdict(r, &r->items[i]);
    return 0;
}

static int add_item(dr_report *r, long ia, long ib, int renamed) {
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 256;
        dr_item *items = realloc(r->items, cap * sizeof *items);
        if (!items) return -1;
        r->items = items;
        r->cap = cap;
    }
    dr_item *it = &r->items[r->n++];
    memset(it, 0, sizeof *it);
    it->a = ia >= 0 ? dp_row_at(r->pa, (size_t)ia) : NULL;
    it->b = ib >= 0 ? dp_row_at(r->pb, (size_t)ib) : NULL;
    side_of(r->pa, it->a, &it->sa);
    side_of(r->pb, it->b, &it->sb);
    it->p = 1;
    if (ia >= 0) r->used_a[ia] = 1;
    if (ib >= 0) r->used_b[ib] = 1;
    it->status = !it->a ? DR_ADDED : !it->b ? DR_REMOVED : renamed ? DR_RENAMED : DR_UNCHANGED;
    return 0;
}

/* ---- Matching ------------------------------------------------------------ */

const char *dr_basename(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static size_t put(char *buf, size_t at, const char *s) {
    size_t n = strlen(s);
    memcpy(buf + at, s, n + 1);
    return at + n + 1;
}

enum pass { PASS_EXACT, PASS_BASENAME, PASS_NAME, PASS_LINE };

/* The row's key for a matching pass, or 0 when the row takes no part. */
static size_t pass_key(char *buf, const dp_row *w, int pass) {
    if (pass == PASS_EXACT) {
        memcpy(buf, w->key, w->keylen);
        return w->keylen;
    }
    if (pass == PASS_LINE && (w->kind == DP_PHASE || !w->line || !*w->file)) return 0;
    size_t at = 0;
    buf[at++] = (char)('0' + w->kind);
    at = put(buf, at, w->program);
    at = put(buf, at, w->thread);
    at = put(buf, at, w->phase);
    if (pass != PASS_LINE) at = put(buf, at, w->name);
    if (pass != PASS_NAME) at = put(buf, at, dr_basename(w->file));
    if (pass == PASS_LINE) at += (size_t)snprintf(buf + at, 16, "%u", w->line);
    return at;
}

/* Pairs the unmatched rows whose pass keys are unique on both sides. */
static int match_pass(dr_report *r, int pass) {
    size_t na = dp_nrows(r->pa), nb = dp_nrows(r->pb);
    cv_map *m = cv_map_new();
    long *who_a = malloc((na + nb + 1) * sizeof *who_a);
    long *who_b = malloc((na + nb + 1) * sizeof *who_b);
    int rc = -1, added;
    if (!m || !who_a || !who_b) goto out;
    for (size_t i = 0; i < na + nb; i++) who_a[i] = who_b[i] = -1;
    for (int side = 0; side < 2; side++) {
        dp_profile *p = side ? r->pb : r->pa;
        unsigned char *used = side ? r->used_b : r->used_a;
        long *who = side ? who_b : who_a;
        for (size_t i = 0; i < dp_nrows(p); i++) {
            size_t len = used[i] ? 0 : pass_key(r->keybuf, dp_row_at(p, i), pass);
            if (!len) continue;
            long k = cv_map_get(m, r->keybuf, len, &added);
            if (k < 0) goto out;
            who[k] = who[k] == -1 ? (long)i : -2; /* -2: not unique */
        }
    }
    for (size_t k = 0; k < cv_map_size(m); k++)
        if (who_a[k] >= 0 && who_b[k] >= 0 && add_item(r, who_a[k], who_b[k], pass == PASS_LINE))
            goto out;
    rc = 0;
out:
    cv_map_free(m);
    free(who_a);
    free(who_b);
    return rc;
}

static int match_rest(dr_report *r) {
    for (size_t i = 0; i < dp_nrows(r->pa); i++)
        if (!r->used_a[i] && add_item(r, (long)i, -1, 0)) return -1;
    for (size_t i = 0; i < dp_nrows(r->pb); i++)
        if (!r->used_b[i] && add_item(r, -1, (long)i, 0)) return -1;
    return 0;
}

static int by_status_then_size(const void *x, const void *y) {
    const dr_item *a = x, *b = y;
    if (a->status != b->status) return a->status < b->status ? -1 : 1;
    double ka = fabs(a->cost), kb = fabs(b->cost);
    if (a->status >= DR_ADDED) {
        ka = a->sa.total + a->sb.total;
        kb = b->sa.total + b->sb.total;
    }
    if (ka != kb) return ka > kb ? -1 : 1;
    const dp_row *ra = dr_row_of(a), *rb = dr_row_of(b);
    if (ra->kind != rb->kind) return ra->kind < rb->kind ? -1 : 1;
    size_t n = ra->keylen < rb->keylen ? ra->keylen : rb->keylen;
    int c = memcmp(ra->key, rb->key, n);
    return c ? c : (ra->keylen > rb->keylen) - (ra->keylen < rb->keylen);
}

/* A side whose runs have no signpost has only the phase "(start)": its
 * phase and op rows would repeat the function rows, so they take no part
 * (marked as used). */
static void hide_phases(dp_profile *p, unsigned char *used) {
    for (uint32_t i = 0; i < dp_runs(p); i++)
        if (dp_input_at(p, i)->signposts) return;
    for (size_t i = 0; i < dp_nrows(p); i++)
        if (dp_row_at(p, i)->kind != DP_FUNC) used[i] = 1;
}

dr_report *dr_compare(dp_profile *base, dp_profile *next, const dr_opts *o) {
    dr_report *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->o = *o;
    r->pa = base;
    r->pb = next;
    r->used_a = calloc(dp_nrows(base) + 1, 1);
    r->used_b = calloc(dp_nrows(next) + 1, 1);
    r->keybuf = malloc(KEYBUF);
    if (!r->used_a || !r->used_b || !r->keybuf) {
        dr_report_free(r);
        return NULL;
    }
    hide_phases(base, r->used_a);
    hide_phases(next, r->used_b);
    if (match_pass(r, PASS_EXACT) ||
        match_pass(r, PASS_BASENAME) || match_pass(r, PASS_NAME) ||
        match_pass(r, PASS_LINE) || match_rest(r) || judge_all(r)) {
        dr_report_free(r);
        return NULL;
    }
    qsort(r->items, r->n, sizeof *r->items, by_status_then_size);
    return r;
}

void dr_report_free(dr_report *r) {
    if (!r) return;
    free(r->items);
    free(r->used_a);
    free(r->used_b);
    free(r->keybuf);
    free(r->factor);
    free(r);
}

size_t dr_count(const dr_report *r, int status) {
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++) n += r->items[i].status == status;
    return n;
}

double dr_drift(const dr_report *r, size_t *nfuncs) {
    if (nfuncs) *nfuncs = r->drift_n;
    return r->drift;
}

size_t dr_calls_changed(const dr_report *r) {
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++) n += r->items[i].calls_changed;
    return n;
}

size_t dr_nitems(const dr_report *r) { return r->n; }
const dr_item *dr_item_at(const dr_report *r, size_t i) { return &r->items[i]; }
const dr_opts *dr_options(const dr_report *r) { return &r->o; }
dp_profile *dr_base(const dr_report *r) { return r->pa; }
dp_profile *dr_new(const dr_report *r) { return r->pb; }
