/* export_html.c -- tracy-export's HTML report: one page that opens from
 * disk with no network. The trace is aggregated (per-thread call trees,
 * per-thread function totals, a timeline of fixed resolution, at most
 * HTML_MAX_SIGNPOSTS signposts), so the page's size does not grow with
 * the number of zones. d3 and d3-flame-graph (npm, see tools/npm) and
 * convert/export/report/ are embedded at build time (report_assets.h). */
#include <stdio.h>
#include <stdlib.h>

#include "convert/export/export.h"
#include "report_assets.h"

#define HTML_BINS 1000          /* timeline resolution */
#define HTML_LANES 64           /* threads drawn on the timeline */
#define HTML_DEPTHS 2           /* rows per thread: depth 0 and 1 */
#define HTML_MAX_NODES 20000    /* call-tree nodes kept, by total time */
#define HTML_MAX_ROWS 20000     /* (thread, function) rows kept, by self time */
#define HTML_MAX_SIGNPOSTS 2000

typedef struct bin {
    uint64_t busy;     /* ns covered by zones of the row's depth */
    uint64_t best_ns;  /* the largest share of one function */
    int32_t best;      /* that function, -1 when none */
} bin;

typedef struct lane {
    uint32_t process, thread;
    bin *bins;         /* HTML_DEPTHS * HTML_BINS */
} lane;

typedef struct signpost {
    uint64_t ts;
    uint32_t process, thread;
    char *header, *body;
} signpost;

#define HTML_LINE_FUNCS 30      /* functions of the line view, by time */
#define HTML_RANK_ROWS 40       /* rows of the rank heat map, by time lost */

struct ex_html {
    lt_reader *r;
    ct_tree *tree;
    ex_lineset *lines;
    ex_rankset *ranks;
    uint64_t t0, t1;
    lane lanes[HTML_LANES];
    uint32_t nlanes;
    signpost *sp;
    size_t nsp, sp_total;
    uint64_t messages, lost, zones, plots, frames;
};

ex_html *ex_html_new(ex_ctx *x) {
    ex_html *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    lt_reader *r = x->r;
    h->r = r;
    h->tree = x->tree;
    h->lines = ex_lines_new(x, 0);
    /* the heat map compares processes: not collected for one */
    int several = lt_reader_nprocesses(r) > 1;
    h->ranks = several ? ex_ranks_new(x) : NULL;
    const lt_file_info *fi = lt_reader_info(r);
    h->t0 = fi->first_ts;
    h->t1 = fi->last_ts > fi->first_ts ? fi->last_ts : fi->first_ts + 1;
    h->sp = calloc(HTML_MAX_SIGNPOSTS, sizeof *h->sp);
    if (!h->sp || !h->lines || (several && !h->ranks)) {
        ex_html_free(h);
        return NULL;
    }
    return h;
}

void ex_html_free(ex_html *h) {
    if (!h) return;
    for (uint32_t i = 0; i < h->nlanes; i++) free(h->lanes[i].bins);
    for (size_t i = 0; i < h->nsp; i++) {
        free(h->sp[i].header);
        free(h->sp[i].body);
    }
    free(h->sp);
    ex_lines_free(h->lines);
    ex_ranks_free(h->ranks);
    free(h);
}

/* ---- Collecting ------------------------------------------------------------ */

static lane *lane_of(ex_html *h, uint32_t p, uint32_t t) {
    for (uint32_t i = 0; i < h->nlanes; i++)
        if (h->lanes[i].process == p && h->lanes[i].thread == t) return &h->lanes[i];
    if (h->nlanes == HTML_LANES) return NULL;
    lane *l = &h->lanes[h->nlanes];
    l->bins = malloc(HTML_DEPTHS * HTML_BINS * sizeof *l->bins);
    if (!l->bins) return NULL;
    for (size_t i = 0; i < HTML_DEPTHS * HTML_BINS; i++) l->bins[i] = (bin){0, 0, -1};
    l->process = p;
    l->thread = t;
    h->nlanes++;
    return l;
}

static void bin_add(bin *x, int32_t func, uint64_t part) {
    x->busy += part;
    if (part > x->best_ns) {
        x->best_ns = part;
        x->best = func;
    }
}

/* Spreads a zone of depth 0 or 1 over the bins it covers. */
static void timeline_zone(ex_html *h, bin *row, int32_t func, uint64_t b, uint64_t e) {
    double span = (double)(h->t1 - h->t0);
    if (b < h->t0) b = h->t0;
    if (e > h->t1) e = h->t1;
    if (e <= b) return;
    size_t i = (size_t)((double)(b - h->t0) / span * HTML_BINS);
    size_t last = (size_t)((double)(e - 1 - h->t0) / span * HTML_BINS);
    if (i == last && i < HTML_BINS) { /* most zones: within one slice */
        bin_add(&row[i], func, e - b);
        return;
    }
    for (; i < HTML_BINS; i++) {
        uint64_t lo = h->t0 + (uint64_t)(span * (double)i / HTML_BINS);
        uint64_t hi = h->t0 + (uint64_t)(span * (double)(i + 1) / HTML_BINS);
        if (lo >= e) break;
        uint64_t part = (e < hi ? e : hi) - (b > lo ? b : lo);
        if (b >= hi) continue;
        bin_add(&row[i], func, part);
    }
}

static char *dup_n(const char *s, size_t n) { return strndup(s ? s : "", s ? n : 0); }

int ex_html_event(ex_html *h, const lt_event *ev) {
    if (ex_lines_event(h->lines, ev) || (h->ranks && ex_ranks_event(h->ranks, ev))) return -1;
    switch (ev->type) {
    case LT_EV_ZONE_END: {
        h->zones++;
        if (ev->depth >= HTML_DEPTHS) return 0;
        lane *l = lane_of(h, ev->process, ev->thread);
        if (!l) return 0;
        long f = ct_tree_func_of(h->tree, ev->process, ev->loc);
        if (f < 0) return -1;
        timeline_zone(h, l->bins + ev->depth * HTML_BINS, (int32_t)f, ev->begin_ts, ev->ts);
        return 0;
    }
    case LT_EV_SIGNPOST:
        if (h->nsp < HTML_MAX_SIGNPOSTS) {
            signpost *s = &h->sp[h->nsp];
            s->ts = ev->ts;
            s->process = ev->process;
            s->thread = ev->thread;
            s->header = dup_n(ev->text, ev->text_len);
            s->body = dup_n(ev->text2, ev->text2_len);
            if (!s->header || !s->body) return -1;
            h->nsp++;
        }
        h->sp_total++;
        return 0;
    case LT_EV_MESSAGE: h->messages++; return 0;
    case LT_EV_LOST: h->lost += ev->count; return 0;
    case LT_EV_PLOT: h->plots++; return 0;
    case LT_EV_FRAME: h->frames++; return 0;
    default: return 0;
    }
}

/* ---- Writing --------------------------------------------------------------- */

void ex_html_str(cv_out *o, const char *s) {
    char *j = cv_json_dup(s ? s : "", s ? strlen(s) : 0);
    if (!j) {
        o->err = o->err ? o->err : 12;
        return;
    }
    for (const char *p = j; *p; p++) {
        if (*p == '<') cv_out_str(o, "\\u003c");
        else cv_out_ch(o, *p);
    }
    free(j);
}

static void hj_key(cv_out *o, const char *k) {
    cv_out_ch(o, '"');
    cv_out_str(o, k);
    cv_out_str(o, "\":");
}

/* Writes "key":[...] with item(x, i) writing the i-th of n items. */
static void hj_array(ex_ctx *x, const char *key, size_t n, void (*item)(ex_ctx *x, size_t i)) {
    cv_out *o = &x->out;
    hj_key(o, key);
    cv_out_ch(o, '[');
    for (size_t i = 0; i < n; i++) {
        if (i) cv_out_ch(o, ',');
        item(x, i);
    }
    cv_out_ch(o, ']');
}

static void process_item(ex_ctx *x, size_t i) {
    cv_out *o = &x->out;
    const lt_process *pr = lt_reader_process(x->r, (uint32_t)i + 1);
    cv_out_printf(o, "{\"pid\":%llu,\"rank\":%lld,\"program\":",
                  (unsigned long long)(pr ? pr->pid : 0), (long long)(pr ? pr->rank : -1));
    ex_html_str(o, pr ? pr->program : "");
    cv_out_str(o, ",\"host\":");
    ex_html_str(o, pr ? pr->hostname : "");
    cv_out_str(o, ",\"status\":");
    ex_html_str(o, cv_status_name(pr ? pr->status : -2));
    cv_out_str(o, ",\"reason\":"); /* what tracy-info shows after the status */
    ex_html_str(o, pr && pr->end_reason ? pr->end_reason : "");
    cv_out_printf(o, ",\"lost\":%llu,\"args\":", (unsigned long long)(pr ? pr->events_lost : 0));
    char args[1024];
    size_t n = 0;
    args[0] = '\0';
    for (uint32_t a = 0; pr && a < pr->argc && n + 2 < sizeof args; a++)
        n += (size_t)snprintf(args + n, sizeof args - n, a ? " %s" : "%s", pr->argv[a]);
    ex_html_str(o, args);
    cv_out_ch(o, '}');
}

static void thread_item(ex_ctx *x, size_t i) {
    cv_out *o = &x->out;
    const ct_stream *s = ct_tree_stream(x->tree, i);
    const lt_thread *th = lt_reader_thread(x->r, s->process, s->thread);
    cv_out_printf(o, "{\"p\":%u,\"tid\":%llu,\"zones\":%llu,\"first\":%llu,\"last\":%llu,"
                  "\"name\":", s->process - 1, (unsigned long long)(th ? th->tid : 0),
                  (unsigned long long)s->zones, (unsigned long long)s->first_ts,
                  (unsigned long long)s->last_ts);
    ex_html_str(o, th ? th->name : "");
    cv_out_ch(o, '}');
}

static void func_item(ex_ctx *x, size_t i) {
    cv_out *o = &x->out;
    const ct_func *fn = ct_tree_func(x->tree, i);
    cv_out_ch(o, '[');
    ex_html_str(o, fn->name);
    cv_out_ch(o, ',');
    ex_html_str(o, fn->file);
    cv_out_printf(o, ",%u,\"%s\"]", fn->line, cv_kind_name(fn->kind));
}

static int cmp_u64_desc(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The value of the `keep`-th largest of v[0..n) (0 when n <= keep). */
static uint64_t threshold(uint64_t *v, size_t n, size_t keep) {
    if (n <= keep) return 0;
    qsort(v, n, sizeof *v, cmp_u64_desc);
    return v[keep - 1];
}

/* Nodes as [stream, parent (-1 for a thread's root), func (-1 for a
 * root), calls, total, self], the largest by total time. */
static int write_nodes(ex_ctx *x) {
    const ct_tree *t = x->tree;
    size_t nn = ct_tree_nnodes(t);
    uint64_t *tot = malloc((nn + 1) * sizeof *tot);
    int64_t *out_id = malloc((nn + 1) * sizeof *out_id);
    if (!tot || !out_id) {
        free(tot);
        free(out_id);
        return -1;
    }
    for (size_t i = 0; i < nn; i++) tot[i] = ct_tree_node(t, i)->total;
    uint64_t thr = threshold(tot, nn, HTML_MAX_NODES);
    cv_out *o = &x->out;
    int64_t k = 0;
    hj_key(o, "nodes");
    cv_out_ch(o, '[');
    for (size_t i = 0; i < nn; i++) {
        const ct_node *n = ct_tree_node(t, i);
        int root = n->func == CT_ROOT;
        out_id[i] = -1;
        if (!root && (out_id[n->parent] < 0 || n->total < thr || k >= HTML_MAX_NODES))
            continue;
        out_id[i] = k++;
        cv_out_printf(o, "%s[%u,%lld,%lld,%llu,%llu,%llu]", k > 1 ? ",\n" : "", n->stream,
                      root ? -1LL : (long long)out_id[n->parent],
                      root ? -1LL : (long long)n->func, (unsigned long long)n->calls,
                      (unsigned long long)n->total, (unsigned long long)n->self);
    }
    cv_out_ch(o, ']');
    free(tot);
    free(out_id);
    return 0;
}

typedef struct row {
    uint32_t stream, func;
    uint64_t calls, self, cum;
} frow;

static int by_stream_func(const void *a, const void *b) {
    const frow *x = a, *y = b;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    return x->func < y->func ? -1 : x->func > y->func;
}

/* Per-thread function totals as [stream, func, calls, self, cumulative]. */
static int write_table(ex_ctx *x) {
    const ct_tree *t = x->tree;
    size_t nn = ct_tree_nnodes(t), k = 0, m = 0;
    frow *r = malloc((nn + 1) * sizeof *r);
    uint64_t *selfs = malloc((nn + 1) * sizeof *selfs);
    if (!r || !selfs) {
        free(r);
        free(selfs);
        return -1;
    }
    for (size_t i = 0; i < nn; i++) {
        const ct_node *n = ct_tree_node(t, i);
        if (n->func != CT_ROOT)
            r[k++] = (frow){n->stream, n->func, n->calls, n->self, n->outer ? n->total : 0};
    }
    qsort(r, k, sizeof *r, by_stream_func);
    for (size_t i = 0; i < k; i++) {
        if (m && r[m - 1].stream == r[i].stream && r[m - 1].func == r[i].func) {
            r[m - 1].calls += r[i].calls;
            r[m - 1].self += r[i].self;
            r[m - 1].cum += r[i].cum;
        } else {
            r[m++] = r[i];
        }
    }
    for (size_t i = 0; i < m; i++) selfs[i] = r[i].self;
    uint64_t thr = threshold(selfs, m, HTML_MAX_ROWS);
    cv_out *o = &x->out;
    size_t written = 0;
    hj_key(o, "table");
    cv_out_ch(o, '[');
    for (size_t i = 0; i < m; i++) {
        if (r[i].self < thr || written == HTML_MAX_ROWS) continue;
        cv_out_printf(o, "%s[%u,%u,%llu,%llu,%llu]", written++ ? ",\n" : "", r[i].stream,
                      r[i].func, (unsigned long long)r[i].calls, (unsigned long long)r[i].self,
                      (unsigned long long)r[i].cum);
    }
    cv_out_ch(o, ']');
    free(r);
    free(selfs);
    return 0;
}

static long stream_index(const ct_tree *t, uint32_t p, uint32_t th) {
    size_t ns = ct_tree_nstreams(t);
    for (size_t i = 0; i < ns; i++)
        if (ct_tree_stream(t, i)->process == p && ct_tree_stream(t, i)->thread == th)
            return (long)i;
    return -1;
}

static void write_timeline(ex_ctx *x) {
    ex_html *h = x->html;
    cv_out *o = &x->out;
    cv_out_printf(o, "\"timeline\":{\"t0\":%llu,\"t1\":%llu,\"bins\":%d,\"lanes\":[",
                  (unsigned long long)h->t0, (unsigned long long)h->t1, HTML_BINS);
    for (uint32_t l = 0; l < h->nlanes; l++) {
        long s = stream_index(x->tree, h->lanes[l].process, h->lanes[l].thread);
        for (int d = 0; d < HTML_DEPTHS; d++) {
            const bin *row = h->lanes[l].bins + d * HTML_BINS;
            cv_out_printf(o, "%s{\"s\":%ld,\"d\":%d,\"busy\":[", l || d ? ",\n" : "", s, d);
            for (int i = 0; i < HTML_BINS; i++) {
                if (i) cv_out_ch(o, ',');
                cv_out_u64(o, row[i].busy);
            }
            cv_out_str(o, "],\"func\":[");
            for (int i = 0; i < HTML_BINS; i++) {
                if (i) cv_out_ch(o, ',');
                cv_out_i64(o, row[i].best);
            }
            cv_out_str(o, "]}");
        }
    }
    cv_out_str(o, "]}");
}

static void write_signposts(ex_ctx *x) {
    ex_html *h = x->html;
    cv_out *o = &x->out;
    cv_out_printf(o, "\"signposts_total\":%zu,\"signposts\":[", h->sp_total);
    for (size_t i = 0; i < h->nsp; i++) {
        const signpost *s = &h->sp[i];
        cv_out_printf(o, "%s[%llu,%ld,", i ? ",\n" : "", (unsigned long long)s->ts,
                      stream_index(x->tree, s->process, s->thread));
        ex_html_str(o, s->header);
        cv_out_ch(o, ',');
        ex_html_str(o, s->body);
        cv_out_ch(o, ']');
    }
    cv_out_ch(o, ']');
}

static void write_summary(ex_ctx *x) {
    ex_html *h = x->html;
    cv_out *o = &x->out;
    const lt_file_info *fi = lt_reader_info(x->r);
    uint64_t rejected = 0, lost_total = h->lost;
    lt_reader_total(x->r, "clients_rejected", &rejected);
    lt_reader_total(x->r, "events_lost", &lost_total);
    hj_key(o, "trace");
    ex_html_str(o, x->o->path);
    /* the absolute path: the report's links to tracy-serve name the trace by it */
    char *abs = realpath(x->o->path, NULL);
    cv_out_str(o, ",\"trace_abs\":");
    if (abs) ex_html_str(o, abs);
    else cv_out_str(o, "null");
    free(abs);
    cv_out_printf(o, ",\"created\":%llu,\"first\":%llu,\"last\":%llu,\"complete\":%d,"
                  "\"zones\":%llu,\"messages\":%llu,\"plots\":%llu,\"frames\":%llu,"
                  "\"lost\":%llu,\"lost_records\":%llu,\"rejected\":%llu,"
                  "\"converter\":\"tracy-export " LT_VERSION_STRING "\",",
                  (unsigned long long)fi->created_wall_ns, (unsigned long long)fi->first_ts,
                  (unsigned long long)fi->last_ts, fi->complete, (unsigned long long)h->zones,
                  (unsigned long long)h->messages, (unsigned long long)h->plots,
                  (unsigned long long)h->frames, (unsigned long long)lost_total,
                  (unsigned long long)h->lost, (unsigned long long)rejected);
}

static int write_data(ex_ctx *x) {
    cv_out *o = &x->out;
    cv_out_ch(o, '{');
    write_summary(x);
    hj_array(x, "processes", lt_reader_nprocesses(x->r), process_item);
    cv_out_ch(o, ',');
    hj_array(x, "threads", ct_tree_nstreams(x->tree), thread_item);
    cv_out_ch(o, ',');
    hj_array(x, "funcs", ct_tree_nfuncs(x->tree), func_item);
    cv_out_str(o, ",\n");
    if (write_nodes(x)) return -1;
    cv_out_str(o, ",\n");
    if (write_table(x)) return -1;
    cv_out_str(o, ",\n");
    write_timeline(x);
    cv_out_str(o, ",\n");
    write_signposts(x);
    cv_out_str(o, ",\n");
    if (ex_lines_json(x->html->lines, HTML_LINE_FUNCS)) return -1;
    cv_out_str(o, ",\n");
    if (!x->html->ranks) cv_out_str(o, "\"ranks\":null");
    else if (ex_ranks_json(x->html->ranks, HTML_RANK_ROWS)) return -1;
    cv_out_str(o, "}\n");
    return 0;
}

int ex_html_write(ex_ctx *x) {
    cv_out *o = &x->out;
    const char *base = strrchr(x->o->path, '/');
    base = base ? base + 1 : x->o->path;
    cv_out_str(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>");
    for (const char *p = base; *p; p++) {
        if (*p == '<') cv_out_str(o, "&lt;");
        else if (*p == '&') cv_out_str(o, "&amp;");
        else cv_out_ch(o, *p);
    }
    cv_out_str(o, " - tracy report</title>\n<style>\n");
    cv_out_write(o, asset_flamegraph_css, sizeof asset_flamegraph_css - 1);
    cv_out_write(o, asset_report_css, sizeof asset_report_css - 1);
    cv_out_str(o, "</style>\n<script>\n");
    cv_out_write(o, asset_d3_js, sizeof asset_d3_js - 1);
    cv_out_str(o, "\n</script>\n<script>\n");
    cv_out_write(o, asset_flamegraph_js, sizeof asset_flamegraph_js - 1);
    cv_out_str(o, "\n</script>\n<script type=\"text/plain\" id=\"third-party-licenses\">\n"
               "d3 (embedded above):\n");
    cv_out_write(o, asset_d3_license, sizeof asset_d3_license - 1);
    cv_out_str(o, "\nd3-flame-graph (embedded above):\n");
    cv_out_write(o, asset_flamegraph_license, sizeof asset_flamegraph_license - 1);
    cv_out_str(o, "</script>\n</head>\n<body>\n");
    cv_out_write(o, asset_report_html, sizeof asset_report_html - 1);
    cv_out_str(o, "<script id=\"trace-data\" type=\"application/json\">\n");
    if (write_data(x)) {
        cv_err("out of memory");
        return -1;
    }
    cv_out_str(o, "</script>\n<script>\n");
    cv_out_write(o, asset_report_js, sizeof asset_report_js - 1);
    cv_out_str(o, "\n</script>\n</body></html>\n");
    return 0;
}
