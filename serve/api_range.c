/* api_range.c -- /api/t/ID/range, /api/diff and /api/trend (API.md).
 *
 * A range is aggregated with the converters' call tree model
 * (convert/calltree.h): the index's zones of the range, clipped to it, are
 * fed to a merged ct_tree per track in nesting order (a depth-first walk of
 * the per-depth rows by binary search). The diff is tracy-diff's engine
 * (convert/diff_profile.h, diff_report.h) over the two traces. */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "diff_profile.h"
#include "diff_report.h"
#include "serve.h"

#define RANGE_MAX_ZONES 20000000ull /* beyond: 413, narrow the range */
#define RANGE_MAX_DEPTH 8192u
#define TREND_FUNCS 20
#define TREND_SESSIONS 100

typedef struct durs {
    uint64_t *v;
    size_t n, cap;
} durs;

typedef struct walk {
    const vw_index *ix;
    ct_tree *ct;
    uint32_t *ctf;       /* vw func -> ct func + 1 */
    durs *d;             /* per vw func: clipped durations (NULL: not kept) */
    uint64_t *sum;       /* per vw func: their sum */
    uint64_t t0, t1, zones;
    uint32_t process, thread, track;
    int failed, too_deep;
} walk;

static int push_dur(durs *d, uint64_t v) {
    if (d->n == d->cap) {
        size_t c = d->cap ? d->cap * 2 : 16;
        uint64_t *p = realloc(d->v, c * sizeof *p);
        if (!p) return -1;
        d->v = p;
        d->cap = c;
    }
    d->v[d->n++] = v;
    return 0;
}

static long func_in_tree(walk *w, uint32_t f) {
    if (w->ctf[f]) return (long)w->ctf[f] - 1;
    const vw_func *vf = vw_func_at(w->ix, f);
    lt_loc loc = {f, (uint8_t)vf->kind, vf->line, vw_string(w->ix, vf->name, NULL),
                  vw_string(w->ix, vf->file, NULL)};
    long c = ct_tree_add_func(w->ct, &loc);
    if (c >= 0) w->ctf[f] = (uint32_t)c + 1;
    return c;
}

/* Feeds the zones of `depth` within [lo, hi] (inside their parent
 * [plo, phi]); returns the sum of their clipped durations. */
static uint64_t walk_depth(walk *w, uint32_t depth, uint64_t lo, uint64_t hi, uint64_t plo, uint64_t phi) {
    if (w->failed) return 0;
    if (depth >= RANGE_MAX_DEPTH) {
        w->too_deep = 1;
        return 0;
    }
    long row = vw_find_row(w->ix, VW_ROW_ZONES, w->track, depth);
    if (row < 0) return 0;
    uint64_t n = vw_row_at(w->ix, (uint32_t)row)->n, sum = 0;
    for (uint64_t i = vw_lower_end(w->ix, (uint32_t)row, lo); i < n && !w->failed; i++) {
        const vw_zone *z = vw_rec(w->ix, (uint32_t)row, i);
        if (z->start > hi) break;
        if (z->start < plo || z->start + z->dur > phi) continue; /* not a child of this parent */
        if (++w->zones > RANGE_MAX_ZONES) {
            w->failed = 2;
            return 0;
        }
        uint64_t b = z->start > w->t0 ? z->start : w->t0;
        uint64_t e = z->start + z->dur < w->t1 ? z->start + z->dur : w->t1;
        if (e < b) e = b;
        uint32_t f = z->func_flags & VW_FUNC_MASK;
        long cf = func_in_tree(w, f);
        if (cf < 0 || ct_tree_begin(w->ct, w->process, w->thread, (uint32_t)cf, b) < 0) {
            w->failed = 1;
            return 0;
        }
        uint64_t child = walk_depth(w, depth + 1, b, e, z->start, z->start + z->dur);
        lt_event ev;
        memset(&ev, 0, sizeof ev);
        ev.type = LT_EV_ZONE_END;
        ev.process = w->process;
        ev.thread = w->thread;
        ev.ts = e;
        ev.begin_ts = b;
        ev.child_ns = child;
        if (ct_tree_event(w->ct, &ev) < 0 || (w->d && push_dur(&w->d[f], e - b) < 0)) w->failed = 1;
        w->sum[f] += e - b;
        sum += e - b;
    }
    return sum;
}

/* Aggregates [t0, t1] of the selected tracks (sel NULL: all) into w->ct. */
static int walk_range(walk *w, sv_session *s, uint64_t t0, uint64_t t1, const uint8_t *sel, int keep) {
    uint32_t nf = vw_nfuncs(s->ix);
    memset(w, 0, sizeof *w);
    w->ix = s->ix;
    w->t0 = t0;
    w->t1 = t1;
    w->ct = ct_tree_new(s->r, 1);
    w->ctf = calloc((size_t)nf + 1, sizeof *w->ctf);
    w->sum = calloc((size_t)nf + 1, sizeof *w->sum);
    w->d = keep ? calloc((size_t)nf + 1, sizeof *w->d) : NULL;
    if (!w->ct || !w->ctf || !w->sum || (keep && !w->d)) return -1;
    for (uint32_t t = 0; t < vw_ntracks(s->ix) && !w->failed; t++) {
        if (sel && !sel[t]) continue;
        const vw_track *tr = vw_track_at(s->ix, t);
        w->track = t;
        w->process = tr->process;
        w->thread = tr->thread;
        walk_depth(w, 0, t0, t1, 0, UINT64_MAX);
    }
    if (!w->failed) ct_tree_finish(w->ct);
    return w->failed ? -1 : 0;
}

static void walk_free(walk *w, uint32_t nf) {
    ct_tree_free(w->ct);
    free(w->ctf);
    free(w->sum);
    if (w->d)
        for (uint32_t f = 0; f < nf; f++) free(w->d[f].v);
    free(w->d);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v. */
static uint64_t pct(const uint64_t *v, size_t n, double p) {
    if (!n) return 0;
    size_t k = (size_t)ceil(p * (double)n);
    return v[k ? k - 1 : 0];
}

typedef struct frow {
    uint32_t func;
    uint64_t total;
} frow;

static int by_total(const void *a, const void *b) {
    const frow *x = a, *y = b;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    return x->func < y->func ? -1 : x->func > y->func;
}

static void range_json(jb *j, walk *w, const vw_index *ix) {
    uint32_t nf = vw_nfuncs(ix);
    size_t nct = ct_tree_nfuncs(w->ct);
    ct_total *tot = calloc(nct + 1, sizeof *tot);
    frow *rows = calloc((size_t)nf + 1, sizeof *rows);
    if (!tot || !rows) {
        free(tot), free(rows);
        jb_null(j);
        return;
    }
    ct_tree_totals(w->ct, tot);
    size_t nr = 0;
    for (uint32_t f = 0; f < nf; f++)
        if (w->ctf[f]) rows[nr].func = f, rows[nr++].total = tot[w->ctf[f] - 1].cum;
    qsort(rows, nr, sizeof *rows, by_total);
    jb_arr(j);
    for (size_t i = 0; i < nr; i++) {
        uint32_t f = rows[i].func;
        const ct_total *t = &tot[w->ctf[f] - 1];
        durs *d = &w->d[f];
        qsort(d->v, d->n, sizeof *d->v, cmp_u64);
        jb_obj(j);
        jb_key(j, "func"), jb_u64(j, f);
        jb_key(j, "name"), jb_str(j, vw_string(ix, vw_func_at(ix, f)->name, NULL));
        jb_key(j, "calls"), jb_u64(j, t->calls);
        jb_key(j, "total"), jb_u64(j, t->cum);
        jb_key(j, "self"), jb_u64(j, t->self);
        jb_key(j, "mean"), jb_dbl(j, d->n ? (double)w->sum[f] / (double)d->n : 0);
        jb_key(j, "p50"), jb_u64(j, pct(d->v, d->n, 0.5));
        jb_key(j, "p95"), jb_u64(j, pct(d->v, d->n, 0.95));
        jb_end_obj(j);
    }
    jb_end_arr(j);
    free(tot);
    free(rows);
}

/* The tree as a flat list: [node, parent, func, calls, total, self]; node 0
 * is the root (func -1). */
static void tree_json(jb *j, walk *w) {
    size_t nct = ct_tree_nfuncs(w->ct);
    uint32_t *back = calloc(nct + 1, sizeof *back); /* ct func -> vw func */
    if (!back) {
        jb_null(j);
        return;
    }
    for (uint32_t f = 0; f < vw_nfuncs(w->ix); f++)
        if (w->ctf[f]) back[w->ctf[f] - 1] = f;
    jb_arr(j);
    for (size_t i = 0; i < ct_tree_nnodes(w->ct) && !jb_failed(j); i++) {
        const ct_node *n = ct_tree_node(w->ct, i);
        jb_arr(j);
        jb_u64(j, i);
        jb_i64(j, n->func == CT_ROOT ? -1 : (int64_t)n->parent);
        jb_i64(j, n->func == CT_ROOT ? -1 : (int64_t)back[n->func]);
        jb_u64(j, n->calls);
        jb_u64(j, n->total);
        jb_u64(j, n->self);
        jb_end_arr(j);
    }
    jb_end_arr(j);
    free(back);
}

static int time_arg(const sv_req *q, sv_answer *a, const char *name, uint64_t *out) {
    char buf[64], *e;
    long n = sv_param(q, name, buf, sizeof buf);
    double v = n > 0 ? strtod(buf, &e) : NAN;
    if (n <= 0 || *e || !isfinite(v) || v < 0 || v > 9007199254740992.0) {
        sv_error(a, 400, "bad_param", "%s must be a number of ns in [0, 2^53]", name);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

void sv_api_range(sv_ctx *c, sv_session *s, const sv_req *q, sv_answer *a) {
    (void)c;
    uint64_t t0, t1;
    if (time_arg(q, a, "t0", &t0) < 0 || time_arg(q, a, "t1", &t1) < 0) return;
    if (t1 <= t0) {
        sv_error(a, 400, "bad_param", "range needs t0 < t1");
        return;
    }
    uint32_t nt = vw_ntracks(s->ix), nf = vw_nfuncs(s->ix);
    uint8_t *sel = calloc((size_t)nt + 1, 1);
    char buf[4096];
    long len = sv_param(q, "tracks", buf, sizeof buf);
    if (!sel) {
        sv_error(a, 500, "internal", "out of memory");
        return;
    }
    if (len == -2) {
        sv_error(a, 400, "bad_param", "tracks: too long");
        free(sel);
        return;
    }
    for (char *p = buf; len >= 0 && *p;) {
        char *e;
        unsigned long v = isdigit((unsigned char)*p) ? strtoul(p, &e, 10) : (e = p, ULONG_MAX);
        if (v >= nt || (*e && *e != ',')) {
            sv_error(a, 400, "bad_param", "tracks: a comma list of track numbers");
            free(sel);
            return;
        }
        sel[v] = 1;
        p = *e ? e + 1 : e;
    }
    walk w;
    int rc = walk_range(&w, s, t0, t1, len >= 0 ? sel : NULL, 1);
    if (rc < 0) {
        if (w.failed == 2)
            sv_error(a, 413, "too_large", "more than %llu zones in the range: narrow it",
                     (unsigned long long)RANGE_MAX_ZONES);
        else sv_error(a, 500, "internal", "out of memory");
    } else {
        jb_init(&a->body, SV_MAX_ANSWER);
        a->status = 200;
        jb *j = &a->body;
        jb_obj(j);
        jb_key(j, "t0"), jb_u64(j, t0);
        jb_key(j, "t1"), jb_u64(j, t1);
        jb_key(j, "zones"), jb_u64(j, w.zones);
        jb_key(j, "truncated_depth"), jb_bool(j, w.too_deep);
        jb_key(j, "functions"), range_json(j, &w, s->ix);
        jb_key(j, "tree"), tree_json(j, &w);
        jb_end_obj(j);
    }
    walk_free(&w, nf);
    free(sel);
}

/* ---- /api/diff ------------------------------------------------------------ */

static int open_side(sv_sessions *ss, const char *id, dp_input *in, sv_answer *a) {
    sv_session *s = sv_session_find(ss, id);
    if (!s) return sv_error(a, 404, "not_found", "no session %s", id), -1;
    char detail[256] = "";
    int rc = lt_reader_open(&in->r, s->path, detail, sizeof detail);
    if (rc < 0) return sv_error(a, 422, "unreadable", "%s: %s", s->rel, detail), -1;
    in->path = s->path;
    return 0;
}

static void side_json(jb *j, const char *k, const dr_side *s, int present) {
    jb_key(j, k);
    if (!present) {
        jb_null(j);
        return;
    }
    jb_obj(j);
    jb_key(j, "calls"), jb_dbl(j, s->calls);
    jb_key(j, "total"), jb_dbl(j, s->total);
    jb_key(j, "self"), jb_dbl(j, s->self);
    jb_key(j, "p50"), jb_dbl(j, s->p50);
    jb_key(j, "p95"), jb_dbl(j, s->p95);
    jb_end_obj(j);
}

void sv_api_diff(sv_ctx *c, const sv_req *q, sv_answer *a) {
    static const char *status[] = {"regression", "improvement", "unchanged", "renamed", "added", "removed"};
    char ida[32], idb[32];
    if (sv_param(q, "a", ida, sizeof ida) != 16 || sv_param(q, "b", idb, sizeof idb) != 16) {
        sv_error(a, 400, "bad_param", "diff needs a=ID&b=ID");
        return;
    }
    dp_input ia, ib;
    memset(&ia, 0, sizeof ia);
    memset(&ib, 0, sizeof ib);
    if (open_side(c->ss, ida, &ia, a) < 0 || open_side(c->ss, idb, &ib, a) < 0) {
        lt_reader_free(ia.r);
        lt_reader_free(ib.r);
        return;
    }
    dp_opts po = {0, 0};
    dr_opts ro = {.threshold = 0.05, .min_time = 100e3, .alpha = 0.05, .min_calls = 10,
                  .test = DR_TEST_AUTO, .format = DR_JSON};
    dp_profile *pa = dp_profile_new(&po, &ia, 1), *pb = dp_profile_new(&po, &ib, 1);
    dr_report *r = NULL;
    if (!pa || !pb) {
        lt_reader_free(pa ? NULL : ia.r);
        lt_reader_free(pb ? NULL : ib.r);
        sv_error(a, 500, "internal", "out of memory");
    } else if (dp_read(pa) || dp_read(pb)) {
        sv_error(a, 422, "unreadable", "%s", dp_error(pa)[0] ? dp_error(pa) : dp_error(pb));
    } else if (!(r = dr_compare(pa, pb, &ro))) {
        sv_error(a, 500, "internal", "out of memory");
    } else {
        jb_init(&a->body, SV_MAX_ANSWER);
        a->status = 200;
        jb *j = &a->body;
        jb_obj(j);
        jb_key(j, "a"), jb_str(j, ida);
        jb_key(j, "b"), jb_str(j, idb);
        size_t nd;
        jb_key(j, "drift"), jb_dbl(j, dr_drift(r, &nd));
        jb_key(j, "functions"), jb_arr(j);
        for (size_t i = 0; i < dr_nitems(r); i++) {
            const dr_item *it = dr_item_at(r, i);
            const dp_row *row = dr_row_of(it);
            if (row->kind != DP_FUNC) continue;
            jb_obj(j);
            jb_key(j, "name"), jb_str(j, row->name);
            jb_key(j, "file"), jb_str(j, row->file);
            jb_key(j, "line"), jb_u64(j, row->line);
            jb_key(j, "program"), jb_str(j, row->program);
            jb_key(j, "status"), jb_str(j, status[it->status]);
            side_json(j, "a", &it->sa, it->a != NULL);
            side_json(j, "b", &it->sb, it->b != NULL);
            jb_key(j, "delta_total"), jb_dbl(j, it->sb.total - it->sa.total);
            jb_key(j, "rel"), jb_dbl(j, it->rel);
            jb_key(j, "p"), jb_dbl(j, it->p);
            jb_end_obj(j);
        }
        jb_end_arr(j);
        jb_end_obj(j);
    }
    dr_report_free(r);
    dp_profile_free(pa);
    dp_profile_free(pb);
}

/* ---- /api/trend ---------------------------------------------------------- */

static int has_program(const sv_session *s, const char *name) {
    for (uint32_t p = 1; p <= lt_reader_nprocesses(s->r); p++) {
        const lt_process *pr = lt_reader_process(s->r, p);
        if (pr && pr->program && !strcmp(pr->program, name)) return 1;
    }
    return 0;
}

typedef struct tfunc {
    char *key;          /* name \0 file \0 line */
    char *name, *file;
    uint32_t line;
    uint64_t all;
    uint64_t *per;      /* per session, UINT64_MAX: absent */
} tfunc;

static int by_all(const void *a, const void *b) {
    const tfunc *x = a, *y = b;
    return x->all != y->all ? (x->all > y->all ? -1 : 1) : strcmp(x->name, y->name);
}

static int by_start(const void *a, const void *b) {
    const sv_session *x = *(sv_session *const *)a, *y = *(sv_session *const *)b;
    return x->mtime_ns != y->mtime_ns ? (x->mtime_ns < y->mtime_ns ? -1 : 1) : strcmp(x->rel, y->rel);
}

static long tfunc_find(tfunc **fs, size_t *n, size_t *cap, const char *name, const char *file, uint32_t line,
                       size_t nsess) {
    for (size_t i = 0; i < *n; i++)
        if ((*fs)[i].line == line && !strcmp((*fs)[i].name, name) && !strcmp((*fs)[i].file, file))
            return (long)i;
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        tfunc *p = realloc(*fs, c * sizeof *p);
        if (!p) return -1;
        *fs = p;
        *cap = c;
    }
    tfunc *f = &(*fs)[*n];
    memset(f, 0, sizeof *f);
    f->name = strdup(name);
    f->file = strdup(file);
    f->line = line;
    f->per = malloc(nsess * sizeof *f->per);
    if (!f->name || !f->file || !f->per) return -1;
    for (size_t k = 0; k < nsess; k++) f->per[k] = UINT64_MAX;
    return (long)(*n)++;
}

void sv_api_trend(sv_ctx *c, const sv_req *q, sv_answer *a) {
    char prog[512];
    if (sv_param(q, "program", prog, sizeof prog) <= 0) {
        sv_error(a, 400, "bad_param", "trend needs program=NAME");
        return;
    }
    sv_sessions *ss = c->ss;
    sv_sessions_scan(ss);
    sv_session **list = calloc(ss->n + 1, sizeof *list);
    size_t n = 0;
    for (size_t i = 0; list && i < ss->n; i++)
        if (sv_session_open(ss, &ss->s[i]) == 0 && has_program(&ss->s[i], prog)) list[n++] = &ss->s[i];
    if (!list) {
        sv_error(a, 500, "internal", "out of memory");
        return;
    }
    qsort(list, n, sizeof *list, by_start);
    if (n > TREND_SESSIONS) memmove(list, list + n - TREND_SESSIONS, TREND_SESSIONS * sizeof *list), n = TREND_SESSIONS;
    tfunc *fs = NULL;
    size_t nfs = 0, capfs = 0;
    int fail = 0;
    for (size_t k = 0; k < n && !fail; k++) {
        sv_session *s = list[k];
        walk w;
        uint32_t nf = vw_nfuncs(s->ix);
        if (walk_range(&w, s, 0, vw_totals_of(s->ix)->duration, NULL, 0) == 0) {
            size_t nct = ct_tree_nfuncs(w.ct);
            ct_total *tot = calloc(nct + 1, sizeof *tot);
            if (tot) ct_tree_totals(w.ct, tot);
            for (uint32_t f = 0; tot && f < nf && !fail; f++) {
                if (!w.ctf[f]) continue;
                const vw_func *vf = vw_func_at(s->ix, f);
                long i = tfunc_find(&fs, &nfs, &capfs, vw_string(s->ix, vf->name, NULL),
                                    vw_string(s->ix, vf->file, NULL), vf->line, n);
                if (i < 0) fail = 1;
                else {
                    uint64_t v = tot[w.ctf[f] - 1].cum;
                    fs[i].per[k] = fs[i].per[k] == UINT64_MAX ? v : fs[i].per[k] + v;
                    fs[i].all += v;
                }
            }
            free(tot);
        }
        walk_free(&w, nf);
    }
    if (fail) {
        sv_error(a, 500, "internal", "out of memory");
    } else {
        qsort(fs, nfs, sizeof *fs, by_all);
        jb_init(&a->body, SV_MAX_ANSWER);
        a->status = 200;
        jb *j = &a->body;
        jb_obj(j);
        jb_key(j, "program"), jb_str(j, prog);
        jb_key(j, "sessions"), jb_arr(j);
        for (size_t k = 0; k < n; k++) {
            jb_obj(j);
            jb_key(j, "id"), jb_str(j, list[k]->id);
            jb_key(j, "path"), jb_str(j, list[k]->rel);
            jb_key(j, "mtime_ns"), jb_u64s(j, list[k]->mtime_ns);
            jb_key(j, "duration_ns"), jb_u64(j, vw_totals_of(list[k]->ix)->duration);
            jb_end_obj(j);
        }
        jb_end_arr(j);
        jb_key(j, "functions"), jb_arr(j);
        for (size_t i = 0; i < nfs && i < TREND_FUNCS; i++) {
            jb_obj(j);
            jb_key(j, "name"), jb_str(j, fs[i].name);
            jb_key(j, "file"), jb_str(j, fs[i].file);
            jb_key(j, "line"), jb_u64(j, fs[i].line);
            jb_key(j, "total"), jb_arr(j);
            for (size_t k = 0; k < n; k++)
                if (fs[i].per[k] == UINT64_MAX) jb_null(j);
                else jb_u64(j, fs[i].per[k]);
            jb_end_arr(j);
            jb_end_obj(j);
        }
        jb_end_arr(j);
        jb_end_obj(j);
    }
    for (size_t i = 0; i < nfs; i++) free(fs[i].name), free(fs[i].file), free(fs[i].per);
    free(fs);
    free(list);
}
