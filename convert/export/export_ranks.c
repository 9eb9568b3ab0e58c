/* export_ranks.c -- tracy-export -f ranks: how evenly the processes of a
 * trace (MPI ranks) share the work. A row per function (its cumulative
 * time in each process: outermost activations only, as cProfile's
 * cumtime) and per signpost phase (a phase of a process lasts from its
 * signpost to the process's next signpost, or to its last event); per row
 * the time of every process, min, mean, max, imbalance (max - mean) / max,
 * the slowest process and the time lost to imbalance (max - mean), rows
 * sorted by that loss. One pass; memory grows with rows times processes,
 * never with zones. */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>

#include "convert/export/export.h"

typedef struct rrow {
    int phase;            /* 0 function, 1 phase */
    uint32_t key;         /* function index, or phase index */
    uint64_t min, max, sum;
    double mean, imbalance;
    uint32_t slowest;     /* column */
} rrow;

struct ex_rankset {
    ex_ctx *x;
    uint32_t nprocs;
    uint64_t *func_ns;    /* [f * stride + p] */
    size_t func_rows;
    uint64_t *phase_ns;   /* [ph * stride + p] */
    size_t phase_rows;
    cv_map *phases;
    uint32_t *open_phase; /* [p]: phase + 1, 0 none */
    uint64_t *open_ts, *last_ts;
    uint8_t *seen;
    ct_active *active;
};

/* Row `row` of a matrix of `stride` columns, grown (zeroed) to hold it. */
static uint64_t *cell_row(uint64_t **m, size_t *rows, size_t row, uint32_t stride) {
    if (row >= *rows) {
        size_t n = *rows ? *rows : 64;
        while (n <= row) n *= 2;
        uint64_t *p = realloc(*m, n * stride * sizeof *p);
        if (!p) return NULL;
        memset(p + *rows * stride, 0, (n - *rows) * stride * sizeof *p);
        *m = p;
        *rows = n;
    }
    return *m + row * stride;
}

static int phase_close(ex_rankset *s, uint32_t p, uint64_t ts) {
    if (!s->open_phase[p]) return 0;
    uint64_t *r = cell_row(&s->phase_ns, &s->phase_rows, s->open_phase[p] - 1, s->nprocs + 1);
    if (!r) return -1;
    r[p] += ts > s->open_ts[p] ? ts - s->open_ts[p] : 0;
    s->open_phase[p] = 0;
    return 0;
}

static int on_signpost(ex_rankset *s, const lt_event *ev) {
    if (phase_close(s, ev->process, ev->ts)) return -1;
    int added;
    long ph = cv_map_get(s->phases, ev->text ? ev->text : "", ev->text ? ev->text_len : 0, &added);
    if (ph < 0) return -1;
    s->open_phase[ev->process] = (uint32_t)ph + 1;
    s->open_ts[ev->process] = ev->ts;
    return 0;
}

static int on_zone(ex_rankset *s, const lt_event *ev) {
    long f = ct_tree_func_of(s->x->tree, ev->process, ev->loc);
    if (f < 0) return -1;
    if (ev->type == LT_EV_ZONE_BEGIN)
        return ct_active_begin(s->active, ev->process, ev->thread, (uint32_t)f);
    int outer = ct_active_end(s->active, ev->process, ev->thread);
    if (outer == 0) return 0;
    if (ct_tree_func(s->x->tree, (size_t)f)->kind == LT_LOC_LINE) return 0;
    uint64_t *r = cell_row(&s->func_ns, &s->func_rows, (size_t)f, s->nprocs + 1);
    if (!r) return -1;
    r[ev->process] += ev->ts - ev->begin_ts;
    return 0;
}

int ex_ranks_event(ex_rankset *s, const lt_event *ev) {
    if (ev->process == 0 || ev->process > s->nprocs) return 0;
    s->seen[ev->process] = 1;
    if (ev->ts > s->last_ts[ev->process]) s->last_ts[ev->process] = ev->ts;
    if (ev->type == LT_EV_ZONE_BEGIN || ev->type == LT_EV_ZONE_END) return on_zone(s, ev);
    if (ev->type == LT_EV_SIGNPOST) return on_signpost(s, ev);
    return 0;
}

/* Closes the phases still open at each process's last event. */
static int finish(ex_rankset *s) {
    for (uint32_t p = 1; p <= s->nprocs; p++)
        if (phase_close(s, p, s->last_ts[p])) return -1;
    return 0;
}

static int gather(ex_rankset *s) {
    lt_event ev;
    while (ex_next(s->x, &ev) > 0)
        if (ex_ranks_event(s, &ev)) return -1;
    return finish(s);
}

/* ---- Rows ------------------------------------------------------------------ */

/* The processes shown, in rank order when every one has a rank. */
static uint32_t *columns(ex_rankset *s, uint32_t *n) {
    uint32_t *c = malloc((s->nprocs + 1) * sizeof *c), k = 0;
    if (!c) return NULL;
    int all_ranked = 1;
    for (uint32_t p = 1; p <= s->nprocs; p++) {
        if (!s->seen[p]) continue;
        c[k++] = p;
        const lt_process *pr = lt_reader_process(s->x->r, p);
        if (!pr || pr->rank < 0) all_ranked = 0;
    }
    for (uint32_t i = 1; all_ranked && i < k; i++) /* insertion sort: few columns */
        for (uint32_t j = i; j > 0 && lt_reader_process(s->x->r, c[j])->rank <
                                          lt_reader_process(s->x->r, c[j - 1])->rank; j--) {
            uint32_t t = c[j];
            c[j] = c[j - 1];
            c[j - 1] = t;
        }
    *n = k;
    return c;
}

static void col_label(ex_rankset *s, uint32_t p, char *buf, size_t n) {
    const lt_process *pr = lt_reader_process(s->x->r, p);
    if (pr && pr->rank >= 0) snprintf(buf, n, "rank %lld", (long long)pr->rank);
    else snprintf(buf, n, "process %u", p);
}

static void row_stats(rrow *r, const uint64_t *v, const uint32_t *col, uint32_t ncol) {
    r->min = UINT64_MAX;
    r->max = r->sum = 0;
    r->slowest = 0;
    for (uint32_t i = 0; i < ncol; i++) {
        uint64_t t = v[col[i]];
        if (t < r->min) r->min = t;
        if (t > r->max) {
            r->max = t;
            r->slowest = i;
        }
        r->sum += t;
    }
    r->mean = ncol ? (double)r->sum / ncol : 0;
    r->imbalance = r->max ? ((double)r->max - r->mean) / (double)r->max : 0;
}

static int by_loss(const void *a, const void *b) {
    const rrow *x = a, *y = b;
    double lx = (double)x->max - x->mean, ly = (double)y->max - y->mean;
    if (lx != ly) return lx > ly ? -1 : 1;
    if (x->max != y->max) return x->max > y->max ? -1 : 1;
    if (x->phase != y->phase) return x->phase > y->phase ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

static const uint64_t *row_values(const ex_rankset *s, const rrow *r) {
    return (r->phase ? s->phase_ns : s->func_ns) + (size_t)r->key * (s->nprocs + 1);
}

static const char *row_name(const ex_rankset *s, const rrow *r, size_t *len) {
    if (r->phase) return cv_map_key(s->phases, r->key, len);
    const ct_func *f = ct_tree_func(s->x->tree, r->key);
    *len = strlen(f->name);
    return f->name;
}

/* Every row with time, --function applied; NULL on out-of-memory. */
static rrow *make_rows(ex_rankset *s, const uint32_t *col, uint32_t ncol, size_t *n,
                       const regex_t *rx) {
    size_t nf = ct_tree_nfuncs(s->x->tree), np = cv_map_size(s->phases), k = 0;
    if (nf > s->func_rows) nf = s->func_rows;
    rrow *rows = malloc((nf + np + 1) * sizeof *rows);
    if (!rows) return NULL;
    for (int phase = 0; phase < 2; phase++) {
        size_t m = phase ? np : nf;
        for (size_t i = 0; i < m; i++) {
            rrow r = {.phase = phase, .key = (uint32_t)i};
            row_stats(&r, row_values(s, &r), col, ncol);
            if (!r.max) continue;
            size_t len;
            const char *name = row_name(s, &r, &len);
            char *z = strndup(name, len);
            if (!z) {
                free(rows);
                return NULL;
            }
            int keep = !rx || regexec(rx, z, 0, NULL, 0) == 0;
            free(z);
            if (keep) rows[k++] = r;
        }
    }
    qsort(rows, k, sizeof *rows, by_loss);
    *n = k;
    return rows;
}

/* ---- Output ------------------------------------------------------------------ */

#define TEXT_MAX_COLS 16

static void ms(cv_out *o, uint64_t ns) { cv_out_printf(o, " %11.3f", (double)ns / 1e6); }

static void write_text(ex_rankset *s, const rrow *rows, size_t n, const uint32_t *col,
                       uint32_t ncol) {
    cv_out *o = &s->x->out;
    char label[32];
    int per_col = ncol <= TEXT_MAX_COLS;
    cv_out_printf(o, "Balance over %u %s (times in ms; imbalance = (max - mean) / max; "
                  "lost = max - mean)\n", ncol,
                  ncol && lt_reader_process(s->x->r, col[0])->rank >= 0 ? "ranks" : "processes");
    if (!per_col) cv_out_printf(o, "(over %u columns: per-process times in --csv only)\n",
                                TEXT_MAX_COLS);
    cv_out_str(o, "\nkind    ");
    for (uint32_t i = 0; per_col && i < ncol; i++) {
        col_label(s, col[i], label, sizeof label);
        cv_out_printf(o, " %11s", label);
    }
    cv_out_printf(o, " %11s %11s %11s %9s %-10s %11s  name\n", "min", "mean", "max", "imbalance",
                  " slowest", "lost");
    for (size_t i = 0; i < n; i++) {
        const rrow *r = &rows[i];
        const uint64_t *v = row_values(s, r);
        cv_out_str(o, r->phase ? "phase   " : "function");
        for (uint32_t c = 0; per_col && c < ncol; c++) ms(o, v[col[c]]);
        ms(o, r->min);
        cv_out_printf(o, " %11.3f", r->mean / 1e6);
        ms(o, r->max);
        col_label(s, col[r->slowest], label, sizeof label);
        cv_out_printf(o, " %8.1f%% %-10s", 100 * r->imbalance, label);
        cv_out_printf(o, " %11.3f  ", ((double)r->max - r->mean) / 1e6);
        size_t len;
        const char *name = row_name(s, r, &len);
        cv_out_text(o, name, len);
        if (!r->phase) {
            const ct_func *f = ct_tree_func(s->x->tree, r->key);
            if (*f->file) cv_out_printf(o, " (%s:%u)", f->file, f->line);
        }
        cv_out_ch(o, '\n');
    }
}

static void write_csv(ex_rankset *s, const rrow *rows, size_t n, const uint32_t *col,
                      uint32_t ncol) {
    cv_out *o = &s->x->out;
    char label[32];
    cv_out_str(o, "kind,name,file,line");
    for (uint32_t i = 0; i < ncol; i++) {
        col_label(s, col[i], label, sizeof label);
        cv_out_printf(o, ",%s ns", label);
    }
    cv_out_str(o, ",min ns,mean ns,max ns,imbalance,slowest,lost ns\n");
    for (size_t i = 0; i < n; i++) {
        const rrow *r = &rows[i];
        const uint64_t *v = row_values(s, r);
        size_t len;
        const char *name = row_name(s, r, &len);
        const ct_func *f = r->phase ? NULL : ct_tree_func(s->x->tree, r->key);
        cv_out_str(o, r->phase ? "phase," : "function,");
        cv_out_csv(o, name, len, ',');
        cv_out_ch(o, ',');
        if (f) cv_out_csv(o, f->file, strlen(f->file), ',');
        cv_out_ch(o, ',');
        if (f && *f->file) cv_out_u64(o, f->line);
        for (uint32_t c = 0; c < ncol; c++) {
            cv_out_ch(o, ',');
            cv_out_u64(o, v[col[c]]);
        }
        col_label(s, col[r->slowest], label, sizeof label);
        cv_out_printf(o, ",%llu,%.1f,%llu,%.6f,%s,%.1f\n", (unsigned long long)r->min, r->mean,
                      (unsigned long long)r->max, r->imbalance, label,
                      (double)r->max - r->mean);
    }
}

void ex_ranks_free(ex_rankset *s) {
    if (!s) return;
    free(s->func_ns);
    free(s->phase_ns);
    cv_map_free(s->phases);
    free(s->open_phase);
    free(s->open_ts);
    free(s->last_ts);
    free(s->seen);
    ct_active_free(s->active);
    free(s);
}

ex_rankset *ex_ranks_new(ex_ctx *x) {
    ex_rankset *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->x = x;
    s->nprocs = lt_reader_nprocesses(x->r);
    size_t np = (size_t)s->nprocs + 1;
    s->phases = cv_map_new();
    s->open_phase = calloc(np, sizeof *s->open_phase);
    s->open_ts = calloc(np, sizeof *s->open_ts);
    s->last_ts = calloc(np, sizeof *s->last_ts);
    s->seen = calloc(np, 1);
    s->active = ct_active_new();
    if (!s->phases || !s->open_phase || !s->open_ts || !s->last_ts || !s->seen || !s->active) {
        ex_ranks_free(s);
        return NULL;
    }
    return s;
}

int ex_ranks(ex_ctx *x) {
    ex_rankset *s = ex_ranks_new(x);
    regex_t rx;
    int have_rx = x->o->function && regcomp(&rx, x->o->function, REG_EXTENDED | REG_NOSUB) == 0;
    uint32_t *col = NULL, ncol = 0;
    rrow *rows = NULL;
    size_t n = 0;
    int rc = -1;
    if (!s || gather(s) || !(col = columns(s, &ncol)) ||
        !(rows = make_rows(s, col, ncol, &n, have_rx ? &rx : NULL))) {
        cv_err("out of memory");
        goto out;
    }
    rc = 0;
    if (x->read_exit) goto out;
    if (n == 0 && x->o->function) {
        cv_err("--function '%s' matches no function or phase with time", x->o->function);
        rc = CV_EXIT_USAGE;
        goto out;
    }
    if (x->o->top && x->o->top < n) n = (size_t)x->o->top;
    if (x->o->csv) write_csv(s, rows, n, col, ncol);
    else write_text(s, rows, n, col, ncol);
out:
    free(rows);
    free(col);
    if (have_rx) regfree(&rx);
    ex_ranks_free(s);
    return rc;
}

/* ---- The HTML report's heat map ------------------------------------------ */

int ex_ranks_json(ex_rankset *s, size_t max_rows) {
    cv_out *o = &s->x->out;
    uint32_t *col = NULL, ncol = 0;
    rrow *rows = NULL;
    size_t n = 0;
    if (finish(s) || !(col = columns(s, &ncol)) || !(rows = make_rows(s, col, ncol, &n, NULL))) {
        free(col);
        return -1;
    }
    cv_out_str(o, "\"ranks\":{\"cols\":[");
    char label[32];
    for (uint32_t c = 0; c < ncol; c++) {
        col_label(s, col[c], label, sizeof label);
        cv_out_printf(o, "%s\"%s\"", c ? "," : "", label);
    }
    cv_out_str(o, "],\"rows\":[");
    if (n > max_rows) n = max_rows;
    for (size_t i = 0; i < n && ncol > 1; i++) {
        const rrow *r = &rows[i];
        const uint64_t *v = row_values(s, r);
        size_t len;
        const char *name = row_name(s, r, &len);
        char *z = strndup(name, len);
        cv_out_str(o, i ? ",\n{\"kind\":" : "\n{\"kind\":");
        cv_out_str(o, r->phase ? "\"phase\",\"name\":" : "\"function\",\"name\":");
        ex_html_str(o, z ? z : "");
        free(z);
        cv_out_printf(o, ",\"imbalance\":%.6f,\"slowest\":%u,\"v\":[", r->imbalance,
                      r->slowest);
        for (uint32_t c = 0; c < ncol; c++) {
            if (c) cv_out_ch(o, ',');
            cv_out_u64(o, v[col[c]]);
        }
        cv_out_str(o, "]}");
    }
    cv_out_str(o, "]}");
    free(rows);
    free(col);
    return 0;
}
