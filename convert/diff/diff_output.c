/* diff_output.c -- tracy-diff's outputs: terminal table, Markdown, JSON and
 * CSV, written from a comparison (diff_report.h). */
#include "convert/diff/diff_output.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

/* The p that decides: adjusted over the report's rows (see the rule line). */
static void fmt_p(char *buf, size_t n, const dr_item *it) {
    if (!it->test) snprintf(buf, n, "-");
    else if (it->p_adj < 1e-99) snprintf(buf, n, "<1e-99");
    else if (it->p_adj < 0.001) snprintf(buf, n, "%.0e", it->p_adj);
    else snprintf(buf, n, "%.3f", it->p_adj);
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
    const dp_row *w = dr_row_of(it);
    char *name = cell_text(w->kind == DP_PHASE ? w->phase : w->name, md);
    char *where = cell_text(dr_basename(w->file), md);
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
    const dp_row *w = dr_row_of(it);
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
    c[0] = strdup(kind_name(dr_row_of(it)->kind));
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
    int md = dr_options(r)->format == DR_MARKDOWN;
    table t = {0};
    int rc = 0;
    for (size_t i = 0; i < dr_nitems(r) && !rc; i++)
        if (keep(dr_item_at(r, i), arg)) rc = table_row(&t, dr_item_at(r, i), md);
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
    fmt_dur(t, sizeof t, dr_options(r)->min_time);
    cv_out_printf(out, "rule: slower median %s time per call, p < %g (%s%s), "
                  "change >= %g%% and >= %s per run\n",
                  dr_options(r)->self ? "self" : "inclusive", dr_options(r)->alpha,
                  dr_per_run(r) ? "Student's t on per-run medians" : "Mann-Whitney on per-call durations",
                  dr_options(r)->no_correction ? ", each row alone" : ", Holm over every tested row",
                  dr_options(r)->threshold * 100, t);
}

static void drift_line(const dr_report *r, cv_out *out) {
    size_t n;
    double drift = dr_drift(r, &n);
    if (dr_options(r)->no_normalize) {
        cv_out_str(out, "drift: not applied (--no-normalize)\n");
    } else if (n < DR_DRIFT_MIN) {
        cv_out_printf(out, "drift: not measured (%zu function%s with %llu calls or more, %d "
                      "needed)\n", n, n == 1 ? "" : "s",
                      (unsigned long long)dr_options(r)->min_calls, DR_DRIFT_MIN);
    } else {
        char pct[32];
        fmt_pct(pct, sizeof pct, drift - 1);
        cv_out_printf(out, "drift: new runs %s overall (median over %zu functions of the self "
                      "time per call); changes are relative to it\n", pct, n);
    }
}

static void write_tables(const dr_report *r, cv_out *out) {
    int md = dr_options(r)->format == DR_MARKDOWN;
    cv_out_str(out, md ? "### tracy-diff: " : "tracy-diff: ");
    summary_line(r, out);
    cv_out_str(out, md ? "\n\n" : "\n");
    side_line(dr_base(r), md ? "- base" : "base", out);
    side_line(dr_new(r), md ? "- new" : "new", out);
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
             (dr_options(r)->all && section(r, out, "Unchanged", keep_status, DR_UNCHANGED));
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
    const dp_row *w = dr_row_of(it);
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
        if (it->test) {
            jnum(o, "p_value", it->p);
            jnum(o, "p_adjusted", it->p_adj);
        }
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
    cv_out_printf(o, "\"metric\":\"%s\",\"test\":\"%s\"", dr_options(r)->self ? "self" : "inclusive",
                  dr_per_run(r) ? "student" : "mann-whitney");
    cv_out_printf(o, ",\"correction\":\"%s\"", dr_options(r)->no_correction ? "none" : "holm");
    jnum(o, "threshold", dr_options(r)->threshold);
    jnum(o, "min_time_ns", dr_options(r)->min_time);
    jnum(o, "alpha", dr_options(r)->alpha);
    cv_out_printf(o, ",\"min_calls\":%llu,\"normalize\":%s},", (unsigned long long)dr_options(r)->min_calls,
                  dr_options(r)->no_normalize ? "false" : "true");
    cv_out_str(o, "\"drift\":");
    size_t n;
    cv_out_double(o, dr_drift(r, &n));
    cv_out_printf(o, ",\"drift_functions\":%zu,", n);
    json_inputs(o, "base", dr_base(r));
    json_inputs(o, "new", dr_new(r));
    cv_out_printf(o, "\"summary\":{\"regressions\":%zu,\"improvements\":%zu,\"unchanged\":%zu,"
                  "\"added\":%zu,\"removed\":%zu,\"renamed\":%zu,\"calls_changed\":%zu},",
                  dr_count(r, DR_REGRESSION), dr_count(r, DR_IMPROVEMENT),
                  dr_count(r, DR_UNCHANGED), dr_count(r, DR_ADDED), dr_count(r, DR_REMOVED),
                  dr_count(r, DR_RENAMED), dr_calls_changed(r));
    cv_out_str(o, "\"rows\":[");
    for (size_t i = 0; i < dr_nitems(r); i++) {
        if (i) cv_out_str(o, ",\n");
        json_item(o, dr_item_at(r, i));
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
                  "p50_change_rel_raw,cost_ns_per_run,calls_changed,test,p_value,"
                  "p_adjusted\n");
    for (size_t i = 0; i < dr_nitems(r); i++) {
        const dr_item *it = dr_item_at(r, i);
        const dp_row *w = dr_row_of(it);
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
        cv_out_ch(o, ',');
        if (it->test) cv_out_double(o, it->p_adj);
        cv_out_ch(o, '\n');
    }
}

void dr_write(const dr_report *r, cv_out *out) {
    switch (dr_options(r)->format) {
    case DR_JSON: write_json(r, out); break;
    case DR_CSV: write_csv(r, out); break;
    default: write_tables(r, out); break;
    }
}
