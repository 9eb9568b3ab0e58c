/* diff_report.c -- tracy-diff: matching the rows of two sides, the verdict
 * per row, and the terminal, Markdown, JSON and CSV outputs. */
#include "diff_report.h"

#include <errno.h>
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

static int use_runs(const dr_report *r) {
    if (r->o.test != DR_TEST_AUTO) return r->o.test == DR_TEST_RUNS;
    return dp_runs(r->pa) >= 3 && dp_runs(r->pb) >= 3;
}

/* ---- Drift ----------------------------------------------------------------
 * A shared machine runs a whole process faster or slower (other load, CPU
 * frequency, neighbours on the host): every function moves together. The
 * drift is the median over the functions with enough calls on both sides of
 * the ratio of their median self time per call (self time, so that a slower
 * function does not move its callers' figures); changes are measured
 * against it. With fewer than DRIFT_MIN such functions it is taken as 1. */

#define DRIFT_MIN 10

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
    r->drift = n >= DRIFT_MIN ? ds_median(v, n) : 1;
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
        r->factor[k] = n >= DRIFT_MIN ? ds_median(col, m) : 1;
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

/* Welch's t on the logarithms of the normalised per-run medians; the change
 * is that of their medians. */
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
        it->test = "welch";
        it->p = ds_welch(la, na, lb, nb);
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

static int judge(dr_report *r, dr_item *it) {
    double base = 0, next = 0;
    it->p = 1;
    it->status = DR_UNCHANGED;
    it->calls_changed = fabs(it->sb.calls - it->sa.calls) >= 0.5;
    it->raw_rel = (it->sb.p50 - it->sa.p50) / (it->sa.p50 > 1 ? it->sa.p50 : 1);
    if ((use_runs(r) ? test_runs : test_calls)(r, it, &base, &next)) return -1;
    it->rel = (next - base) / (base > 1 ? base : 1);
    it->cost = (next - base) * it->sb.calls;
    if (it->why) return 0;
    if (it->p >= r->o.alpha) it->why = "not significant";
    else if (fabs(it->rel) < r->o.threshold) it->why = "below --threshold";
    else if (fabs(it->cost) < r->o.min_time) it->why = "below --min-time";
    else it->status = it->rel > 0 ? DR_REGRESSION : DR_IMPROVEMENT;
    return 0;
}

static int judge_all(dr_report *r) {
    uint32_t nr = dp_runs(r->pa) + dp_runs(r->pb);
    r->factor = malloc(nr * sizeof *r->factor);
    if (!r->factor) return -1;
    for (uint32_t k = 0; k < nr; k++) r->factor[k] = 1;
    r->drift = 1;
    if (!r->o.no_normalize && (use_runs(r) ? drift_runs(r) : drift_calls(r))) return -1;
    for (size_t i = 0; i < r->n; i++) {
        dr_item *it = &r->items[i];
        if (!it->a || !it->b) continue;
        int renamed = it->status == DR_RENAMED;
        if (judge(r, it)) return -1;
        if (renamed) it->status = DR_RENAMED;
    }
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

static const char *base_name(const char *path) {
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
    if (pass != PASS_NAME) at = put(buf, at, base_name(w->file));
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

static const dp_row *row_of(const dr_item *it) { return it->b ? it->b : it->a; }

static int by_status_then_size(const void *x, const void *y) {
    const dr_item *a = x, *b = y;
    if (a->status != b->status) return a->status < b->status ? -1 : 1;
    double ka = fabs(a->cost), kb = fabs(b->cost);
    if (a->status >= DR_ADDED) {
        ka = a->sa.total + a->sb.total;
        kb = b->sa.total + b->sb.total;
    }
    if (ka != kb) return ka > kb ? -1 : 1;
    const dp_row *ra = row_of(a), *rb = row_of(b);
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

/* ---- Formatting helpers -------------------------------------------------- */

static const char *kind_name(int kind) {
    return kind == DP_PHASE ? "phase" : kind == DP_OP ? "op" : "function";
}

static const char *status_name(int s) {
    static const char *names[] = {"regression", "improvement", "unchanged",
                                  "renamed", "added", "removed"};
    return names[s];
}

/* 3 significant digits with a unit: 812ns, 10.3us, 2.06ms, 1.23s. */
static void fmt_dur(char *buf, size_t n, double ns) {
    static const char *units[] = {"ns", "us", "ms", "s"};
    double v = fabs(ns);
    int u = 0;
    while (u < 3 && v >= 999.5) {
        v /= 1000;
        u++;
    }
    const char *sign = ns < 0 ? "-" : "";
    if (u == 0 || v >= 99.95) snprintf(buf, n, "%s%.0f%s", sign, v, units[u]);
    else if (v >= 9.995) snprintf(buf, n, "%s%.1f%s", sign, v, units[u]);
    else snprintf(buf, n, "%s%.2f%s", sign, v, units[u]);
}

static void fmt_count(char *buf, size_t n, double v) {
    if (v == floor(v) && v < 1e15) snprintf(buf, n, "%.0f", v);
    else snprintf(buf, n, "%.1f", v);
}

static void fmt_pct(char *buf, size_t n, double rel) {
    if (fabs(rel) >= 100) snprintf(buf, n, "%s%.0fx", rel > 0 ? "+" : "-", fabs(rel));
    else snprintf(buf, n, "%+.1f%%", rel * 100);
}

static void fmt_p(char *buf, size_t n, const dr_item *it) {
    if (!it->test) snprintf(buf, n, "-");
    else if (it->p < 1e-99) snprintf(buf, n, "<1e-99");
    else if (it->p < 0.001) snprintf(buf, n, "%.0e", it->p);
    else snprintf(buf, n, "%.3f", it->p);
}

/* ---- Tables (terminal and Markdown) -------------------------------------- */

#define NCOLS 9
#define NAME_MAX_SHOWN 70

typedef struct table {
    char *(*cells)[NCOLS];
    size_t n, cap;
} table;

/* A copy fit for the output: control characters become '?'; for the
 * terminal long texts are cut, for Markdown | \ ` * _ < > [ ] are escaped. */
static char *cell_text(const char *s, int markdown) {
    size_t n = strlen(s), cut = !markdown && n > NAME_MAX_SHOWN ? NAME_MAX_SHOWN - 3 : n;
    char *out = malloc(cut * 2 + 4), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < cut; i++) {
        unsigned char c = (unsigned char)s[i];
        if (markdown && strchr("|\\`*_<>[]", c)) *o++ = '\\';
        *o++ = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    if (cut < n) o += sprintf(o, "...");
    *o = '\0';
    return out;
}

static char *fmt_pair(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 8;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s -> %s", a, b);
    return s;
}

static char *dur_pair(const dr_item *it, double a, double b) {
    char x[32] = "-", y[32] = "-";
    if (it->a) fmt_dur(x, sizeof x, a);
    if (it->b) fmt_dur(y, sizeof y, b);
    return fmt_pair(x, y);
}

static char *name_cell(const dr_item *it, int md) {
    const dp_row *w = row_of(it);
    char *name = cell_text(w->kind == DP_PHASE ? w->phase : w->name, md);
    char *where = cell_text(base_name(w->file), md);
    char *phase = cell_text(w->phase, md);
    char *old = it->status == DR_RENAMED ? cell_text(it->a->name, md) : NULL;
    char *s = NULL;
    if (name && where && phase && (old || it->status != DR_RENAMED)) {
        size_t n = strlen(name) + strlen(where) + strlen(phase) + (old ? strlen(old) : 0) + 64;
        s = malloc(n);
        if (s) {
            int k = snprintf(s, n, "%s", name);
            if (w->kind == DP_OP) k += snprintf(s + k, n - (size_t)k, " [%s]", phase);
            if (*where) k += snprintf(s + k, n - (size_t)k, " (%s:%u)", where, w->line);
            if (old) snprintf(s + k, n - (size_t)k, ", was %s", old);
        }
    }
    free(name);
    free(where);
    free(phase);
    free(old);
    return s;
}

static char *scope_cell(const dr_item *it, int md) {
    const dp_row *w = row_of(it);
    char *p = cell_text(w->program, md), *t = cell_text(w->thread, md), *s = NULL;
    if (p && t) {
        size_t n = strlen(p) + strlen(t) + 2;
        s = malloc(n);
        if (s) snprintf(s, n, *t ? "%s/%s" : "%s%s", p, t);
    }
    free(p);
    free(t);
    return s;
}

static int table_row(table *t, const dr_item *it, int md) {
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 32;
        void *c = realloc(t->cells, cap * sizeof *t->cells);
        if (!c) return -1;
        t->cells = c;
        t->cap = cap;
    }
    char **c = t->cells[t->n++];
    char a[32] = "-", b[32] = "-", buf[64];
    c[0] = strdup(kind_name(row_of(it)->kind));
    c[1] = name_cell(it, md);
    c[2] = scope_cell(it, md);
    if (it->a) fmt_count(a, sizeof a, it->sa.calls);
    if (it->b) fmt_count(b, sizeof b, it->sb.calls);
    c[3] = fmt_pair(a, b);
    c[4] = dur_pair(it, it->sa.p50, it->sb.p50);
    if (it->a && it->b) fmt_pct(buf, sizeof buf, it->rel);
    else snprintf(buf, sizeof buf, "-");
    c[5] = strdup(buf);
    c[6] = dur_pair(it, it->sa.p95, it->sb.p95);
    c[7] = dur_pair(it, it->sa.total, it->sb.total);
    fmt_p(buf, sizeof buf, it);
    if (it->why && it->status == DR_UNCHANGED) {
        size_t k = strlen(buf);
        snprintf(buf + k, sizeof buf - k, " (%s)", it->why);
    }
    c[8] = strdup(buf);
    for (int i = 0; i < NCOLS; i++)
        if (!c[i]) return -1;
    return 0;
}

static void table_free(table *t) {
    for (size_t i = 0; i < t->n; i++)
        for (int k = 0; k < NCOLS; k++) free(t->cells[i][k]);
    free(t->cells);
}

static const char *const heads[NCOLS] = {"kind", "name", "program", "calls/run", "p50",
                                         "change", "p95", "total/run", "p-value"};

static void table_print(const table *t, int md, cv_out *out) {
    size_t w[NCOLS];
    for (int k = 0; k < NCOLS; k++) {
        w[k] = strlen(heads[k]);
        for (size_t i = 0; i < t->n; i++)
            if (strlen(t->cells[i][k]) > w[k]) w[k] = strlen(t->cells[i][k]);
    }
    for (size_t i = 0; i <= t->n + (md ? 1 : 0); i++) {
        for (int k = 0; k < NCOLS; k++) {
            const char *s;
            if (i == 0) s = heads[k];
            else if (md && i == 1) s = k == 5 || k == 8 || k == 3 ? "--:" : "---";
            else s = t->cells[i - 1 - (md ? 1 : 0)][k];
            if (md) cv_out_printf(out, "| %s ", s);
            else if (k == NCOLS - 1) cv_out_printf(out, "  %s", s);
            else cv_out_printf(out, "  %-*s", (int)w[k], s);
        }
        cv_out_str(out, md ? "|\n" : "\n");
    }
}

/* Prints the rows selected by `keep` under a heading, nothing when none. */
static int section(const dr_report *r, cv_out *out, const char *title,
                   int (*keep)(const dr_item *, int), int arg) {
    int md = r->o.format == DR_MARKDOWN;
    table t = {0};
    int rc = 0;
    for (size_t i = 0; i < r->n && !rc; i++)
        if (keep(&r->items[i], arg)) rc = table_row(&t, &r->items[i], md);
    if (!rc && t.n) {
        if (md) cv_out_printf(out, "\n#### %s (%zu)\n\n", title, t.n);
        else cv_out_printf(out, "\n%s (%zu)\n", title, t.n);
        table_print(&t, md, out);
    }
    table_free(&t);
    return rc;
}

static int keep_status(const dr_item *it, int status) { return it->status == status; }
static int keep_calls(const dr_item *it, int unused) {
    (void)unused;
    return it->calls_changed && it->a && it->b;
}

static void plural(cv_out *out, size_t n, const char *one, const char *many) {
    cv_out_printf(out, "%zu %s", n, n == 1 ? one : many);
}

static void summary_line(const dr_report *r, cv_out *out) {
    plural(out, dr_count(r, DR_REGRESSION), "regression", "regressions");
    cv_out_str(out, ", ");
    plural(out, dr_count(r, DR_IMPROVEMENT), "improvement", "improvements");
    cv_out_printf(out, ", %zu added, %zu removed, %zu renamed, ", dr_count(r, DR_ADDED),
                  dr_count(r, DR_REMOVED), dr_count(r, DR_RENAMED));
    plural(out, dr_calls_changed(r), "call count changed", "call counts changed");
}

static void side_line(dp_profile *p, const char *label, cv_out *out) {
    uint64_t zones = 0, lost = 0;
    for (uint32_t i = 0; i < dp_runs(p); i++) {
        zones += dp_input_at(p, i)->zones;
        lost += dp_input_at(p, i)->lost;
    }
    char *path = cell_text(dp_input_at(p, 0)->path, 0);
    cv_out_printf(out, "%s: %s%s, %u run%s, %llu zones", label, path ? path : "?",
                  dp_runs(p) > 1 ? " ..." : "", dp_runs(p), dp_runs(p) == 1 ? "" : "s",
                  (unsigned long long)zones);
    if (lost) cv_out_printf(out, ", %llu events lost", (unsigned long long)lost);
    cv_out_ch(out, '\n');
    free(path);
}

static void rule_line(const dr_report *r, cv_out *out) {
    char t[32];
    fmt_dur(t, sizeof t, r->o.min_time);
    cv_out_printf(out, "rule: slower median %s time per call, p < %g (%s), "
                  "change >= %g%% and >= %s per run\n",
                  r->o.self ? "self" : "inclusive", r->o.alpha,
                  use_runs(r) ? "Welch's t on per-run medians" : "Mann-Whitney on per-call durations",
                  r->o.threshold * 100, t);
}

static void drift_line(const dr_report *r, cv_out *out) {
    if (r->o.no_normalize) {
        cv_out_str(out, "drift: not applied (--no-normalize)\n");
    } else if (r->drift_n < DRIFT_MIN) {
        cv_out_printf(out, "drift: not measured (%zu function%s with %llu calls or more, %d "
                      "needed)\n", r->drift_n, r->drift_n == 1 ? "" : "s",
                      (unsigned long long)r->o.min_calls, DRIFT_MIN);
    } else {
        char pct[32];
        fmt_pct(pct, sizeof pct, r->drift - 1);
        cv_out_printf(out, "drift: new runs %s overall (median over %zu functions of the self "
                      "time per call); changes are relative to it\n", pct, r->drift_n);
    }
}

static void write_tables(const dr_report *r, cv_out *out) {
    int md = r->o.format == DR_MARKDOWN;
    cv_out_str(out, md ? "### tracy-diff: " : "tracy-diff: ");
    summary_line(r, out);
    cv_out_str(out, md ? "\n\n" : "\n");
    side_line(r->pa, md ? "- base" : "base", out);
    side_line(r->pb, md ? "- new" : "new", out);
    if (md) cv_out_str(out, "- ");
    rule_line(r, out);
    if (md) cv_out_str(out, "- ");
    drift_line(r, out);
    int rc = section(r, out, "Regressions", keep_status, DR_REGRESSION) ||
             section(r, out, "Improvements", keep_status, DR_IMPROVEMENT) ||
             section(r, out, "Call counts changed", keep_calls, 0) ||
             section(r, out, "Added", keep_status, DR_ADDED) ||
             section(r, out, "Removed", keep_status, DR_REMOVED) ||
             section(r, out, "Renamed", keep_status, DR_RENAMED) ||
             (r->o.all && section(r, out, "Unchanged", keep_status, DR_UNCHANGED));
    if (rc && !out->err) out->err = ENOMEM;
}

/* ---- JSON ---------------------------------------------------------------- */

static void jstr(cv_out *o, const char *k, const char *v) {
    cv_out_printf(o, "\"%s\":", k);
    if (v) cv_out_json(o, v, strlen(v));
    else cv_out_str(o, "null");
}

static void jnum(cv_out *o, const char *k, double v) {
    cv_out_printf(o, ",\"%s\":", k);
    cv_out_double(o, v);
}

static void json_side(cv_out *o, const char *k, const dp_row *w, const dr_side *s) {
    cv_out_printf(o, ",\"%s\":", k);
    if (!w) {
        cv_out_str(o, "null");
        return;
    }
    cv_out_ch(o, '{');
    jstr(o, "file", w->file);
    cv_out_printf(o, ",\"line\":%u,\"calls\":%llu", w->line, (unsigned long long)s->n);
    jnum(o, "calls_per_run", s->calls);
    jnum(o, "total_ns", s->total);
    jnum(o, "self_ns", s->self);
    jnum(o, "mean_ns", s->mean);
    jnum(o, "p50_ns", s->p50);
    jnum(o, "p95_ns", s->p95);
    cv_out_ch(o, '}');
}

static void json_item(cv_out *o, const dr_item *it) {
    const dp_row *w = row_of(it);
    cv_out_ch(o, '{');
    jstr(o, "status", status_name(it->status));
    cv_out_ch(o, ',');
    jstr(o, "reason", it->status == DR_UNCHANGED ? it->why : NULL);
    cv_out_ch(o, ',');
    jstr(o, "kind", kind_name(w->kind));
    cv_out_ch(o, ',');
    jstr(o, "program", w->program);
    cv_out_ch(o, ',');
    jstr(o, "thread", *w->thread ? w->thread : NULL);
    cv_out_ch(o, ',');
    jstr(o, "phase", w->kind == DP_FUNC ? NULL : w->phase);
    cv_out_ch(o, ',');
    jstr(o, "name", w->name);
    cv_out_ch(o, ',');
    jstr(o, "old_name", it->status == DR_RENAMED ? it->a->name : NULL);
    json_side(o, "base", it->a, &it->sa);
    json_side(o, "new", it->b, &it->sb);
    if (it->a && it->b) {
        jnum(o, "p50_change_ns", it->sb.p50 - it->sa.p50);
        jnum(o, "p50_change_rel", it->rel);
        jnum(o, "p50_change_rel_raw", it->raw_rel);
        jnum(o, "cost_ns_per_run", it->cost);
        jnum(o, "total_change_ns", it->sb.total - it->sa.total);
        jnum(o, "calls_change_per_run", it->sb.calls - it->sa.calls);
        cv_out_printf(o, ",\"calls_changed\":%s,", it->calls_changed ? "true" : "false");
        jstr(o, "test", it->test);
        if (it->test) jnum(o, "p_value", it->p);
    }
    cv_out_ch(o, '}');
}

static void json_inputs(cv_out *o, const char *k, dp_profile *p) {
    cv_out_printf(o, "\"%s\":[", k);
    for (uint32_t i = 0; i < dp_runs(p); i++) {
        const dp_input *in = dp_input_at(p, i);
        cv_out_str(o, i ? ",{" : "{");
        jstr(o, "path", in->path);
        cv_out_printf(o, ",\"zones\":%llu,\"zones_skipped\":%llu,\"signposts\":%llu,"
                      "\"lost_events\":%llu}", (unsigned long long)in->zones,
                      (unsigned long long)in->skipped, (unsigned long long)in->signposts,
                      (unsigned long long)in->lost);
    }
    cv_out_str(o, "],");
}

static void write_json(const dr_report *r, cv_out *o) {
    cv_out_str(o, "{\"tool\":\"tracy-diff\",\"settings\":{");
    cv_out_printf(o, "\"metric\":\"%s\",\"test\":\"%s\"", r->o.self ? "self" : "inclusive",
                  use_runs(r) ? "welch" : "mann-whitney");
    jnum(o, "threshold", r->o.threshold);
    jnum(o, "min_time_ns", r->o.min_time);
    jnum(o, "alpha", r->o.alpha);
    cv_out_printf(o, ",\"min_calls\":%llu,\"normalize\":%s},", (unsigned long long)r->o.min_calls,
                  r->o.no_normalize ? "false" : "true");
    cv_out_str(o, "\"drift\":");
    cv_out_double(o, r->drift);
    cv_out_printf(o, ",\"drift_functions\":%zu,", r->drift_n);
    json_inputs(o, "base", r->pa);
    json_inputs(o, "new", r->pb);
    cv_out_printf(o, "\"summary\":{\"regressions\":%zu,\"improvements\":%zu,\"unchanged\":%zu,"
                  "\"added\":%zu,\"removed\":%zu,\"renamed\":%zu,\"calls_changed\":%zu},",
                  dr_count(r, DR_REGRESSION), dr_count(r, DR_IMPROVEMENT),
                  dr_count(r, DR_UNCHANGED), dr_count(r, DR_ADDED), dr_count(r, DR_REMOVED),
                  dr_count(r, DR_RENAMED), dr_calls_changed(r));
    cv_out_str(o, "\"rows\":[");
    for (size_t i = 0; i < r->n; i++) {
        if (i) cv_out_str(o, ",\n");
        json_item(o, &r->items[i]);
    }
    cv_out_str(o, "]}\n");
}

/* ---- CSV ----------------------------------------------------------------- */

static void csv_text(cv_out *o, const char *s) {
    cv_out_csv(o, s ? s : "", s ? strlen(s) : 0, ',');
    cv_out_ch(o, ',');
}

static void csv_num(cv_out *o, double v, int present) {
    if (present) cv_out_double(o, v);
    cv_out_ch(o, ',');
}

static void csv_side(cv_out *o, const dp_row *w, const dr_side *s) {
    int p = w != NULL;
    csv_num(o, (double)s->n, p);
    csv_num(o, s->calls, p);
    csv_num(o, s->total, p);
    csv_num(o, s->self, p);
    csv_num(o, s->mean, p);
    csv_num(o, s->p50, p);
    csv_num(o, s->p95, p);
}

static void write_csv(const dr_report *r, cv_out *o) {
    cv_out_str(o, "status,reason,kind,program,thread,phase,name,old_name,file,line,"
                  "base_calls,base_calls_per_run,base_total_ns,base_self_ns,base_mean_ns,"
                  "base_p50_ns,base_p95_ns,new_calls,new_calls_per_run,new_total_ns,"
                  "new_self_ns,new_mean_ns,new_p50_ns,new_p95_ns,p50_change_rel,"
                  "p50_change_rel_raw,cost_ns_per_run,calls_changed,test,p_value\n");
    for (size_t i = 0; i < r->n; i++) {
        const dr_item *it = &r->items[i];
        const dp_row *w = row_of(it);
        int both = it->a && it->b;
        csv_text(o, status_name(it->status));
        csv_text(o, it->status == DR_UNCHANGED ? it->why : NULL);
        csv_text(o, kind_name(w->kind));
        csv_text(o, w->program);
        csv_text(o, w->thread);
        csv_text(o, w->kind == DP_FUNC ? NULL : w->phase);
        csv_text(o, w->name);
        csv_text(o, it->status == DR_RENAMED ? it->a->name : NULL);
        csv_text(o, w->file);
        csv_num(o, w->line, 1);
        csv_side(o, it->a, &it->sa);
        csv_side(o, it->b, &it->sb);
        csv_num(o, it->rel, both);
        csv_num(o, it->raw_rel, both);
        csv_num(o, it->cost, both);
        csv_text(o, both ? (it->calls_changed ? "1" : "0") : NULL);
        csv_text(o, it->test);
        if (it->test) cv_out_double(o, it->p);
        cv_out_ch(o, '\n');
    }
}

void dr_write(const dr_report *r, cv_out *out) {
    switch (r->o.format) {
    case DR_JSON: write_json(r, out); break;
    case DR_CSV: write_csv(r, out); break;
    default: write_tables(r, out); break;
    }
}
