/* api_range.c -- /api/t/ID/range, /api/diff and /api/trend (API.md).
 *
 * A range is aggregated with the converters' call tree model
 * (convert/calltree.h): the index's zones of the range, clipped to it, are
 * fed to a merged ct_tree per track in nesting order (a depth-first walk of
 * the per-depth rows by binary search). The diff is tracy-diff's engine
 * (convert/diff/diff_profile.h, diff_report.h) over the two traces. */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/calltree.h"
#include "convert/diff/diff_profile.h"
#include "convert/diff/diff_report.h"
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
    uint64_t t1_track;   /* where zones open at t1 end on this track */
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
        uint64_t e = z->start + z->dur <= w->t1 ? z->start + z->dur : w->t1_track;
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

/* The last time at or before t of an event of track `track`: a zone's
 * beginning or end, a message or signpost, a plot sample, a frame mark or
 * a LOST record (samples of other tracks are skipped, at most SCAN_BACK of
 * them per row). A zone still open at the end of a range ends there, as
 * tracy-cut's window closes it. */
#define SCAN_BACK 4096
static uint64_t last_event(const vw_index *ix, uint32_t track, uint64_t t) {
    uint64_t best = 0;
    const vw_track *tr = vw_track_at(ix, track);
    for (uint32_t d = 0; d < tr->depths; d++) {
        long r = vw_find_row(ix, VW_ROW_ZONES, track, d);
        if (r < 0) continue;
        uint64_t k = vw_upper_start(ix, (uint32_t)r, t); /* zones starting by t */
        if (k) {
            const vw_zone *z = vw_rec(ix, (uint32_t)r, k - 1);
            if (z->start > best) best = z->start;
            uint64_t e = vw_lower_end(ix, (uint32_t)r, t + 1); /* zones ending by t */
            if (e) {
                const vw_zone *y = vw_rec(ix, (uint32_t)r, e - 1);
                if (y->start + y->dur > best) best = y->start + y->dur;
            }
        }
    }
    long m = vw_find_row(ix, VW_ROW_MARKERS, track, 0);
    if (m >= 0) {
        uint64_t k = vw_upper_start(ix, (uint32_t)m, t);
        if (k) {
            const vw_marker *mk = vw_rec(ix, (uint32_t)m, k - 1);
            if (mk->t > best) best = mk->t;
        }
    }
    for (uint32_t r = 0; vw_row_at(ix, r); r++) {
        uint32_t kind = vw_row_at(ix, r)->kind;
        if (kind != VW_ROW_PLOT && kind != VW_ROW_FRAME && kind != VW_ROW_LOST) continue;
        uint64_t k = vw_upper_start(ix, r, t);
        for (uint64_t i = k, n = 0; i-- > 0 && n < SCAN_BACK; n++) {
            const vw_sample *sm = vw_rec(ix, r, i);
            if (sm->t <= best) break;
            if (sm->track == track) {
                best = sm->t;
                break;
            }
        }
    }
    return best;
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
        w->t1_track = last_event(s->ix, t, t1);
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
        if (d->n) qsort(d->v, d->n, sizeof *d->v, cmp_u64);
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

/* A time parameter that must be present. */
static int time_arg(const sv_req *q, sv_answer *a, const char *name, uint64_t *out) {
    int r = sv_time_param(q, a, name, out);
    if (!r) sv_error(a, 400, "bad_param", "%s is required", name);
    return r > 0 ? 0 : -1;
}

/* The answer of /range (any thread: reads the index and reader only). */
static void range_compute(sv_session *s, uint64_t t0, uint64_t t1, const uint8_t *sel, sv_answer *a) {
    uint32_t nf = vw_nfuncs(s->ix);
    walk w;
    int rc = walk_range(&w, s, t0, t1, sel, 1);
    if (rc < 0) {
        if (w.failed == 2)
            sv_error(a, 413, "too_large", "more than %llu zones in the range: narrow it",
                     (unsigned long long)RANGE_MAX_ZONES);
        else sv_error(a, 500, "internal", "out of memory");
    } else {
        jb_init(&a->body, SV_MAX_ANSWER);
        a->status = 200;
        a->type = "application/json; charset=utf-8";
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
}

/* ---- Jobs: /range, /lines and /api/trend on the thread pool --------------- */

/* One job runs at a time, the others wait in order; the request that asked
 * for one waits parked (as for an index build) and takes its answer by its
 * serial. The sessions a job reads are copies whose index and reader are
 * lent (sv_session_lend): a session closed meanwhile leaves them open. */
enum { JOB_RANGE, JOB_TREND, JOB_LINES };
typedef struct sv_job {
    uv_work_t work;
    sv_sessions *ss;
    uint64_t serial;
    int kind, started, done;
    sv_session *list;       /* copies (rel duplicated) */
    size_t n;
    uint64_t t0, t1;
    uint32_t func;          /* JOB_LINES */
    uint8_t *sel;
    char prog[512];
    sv_answer ans;
    struct sv_job *next;
} sv_job;

static sv_job *jobs; /* in arrival order; the first one runs */

static void trend_compute(sv_session *list, size_t n, const char *prog, sv_answer *a);

static void job_free_one(sv_job *j) {
    for (size_t i = 0; i < j->n; i++) {
        sv_session_return(j->ss, j->list[i].ix);
        free(j->list[i].rel);
    }
    free(j->list);
    free(j->sel);
    jb_free(&j->ans.body);
    free(j);
}

static void job_unlink(sv_job *j) {
    for (sv_job **p = &jobs; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            return;
        }
}

static void on_job(uv_work_t *w) {
    sv_job *j = w->data;
    if (j->kind == JOB_RANGE) range_compute(&j->list[0], j->t0, j->t1, j->sel, &j->ans);
    else if (j->kind == JOB_LINES) sv_lines_compute(&j->list[0], j->func, &j->ans);
    else trend_compute(j->list, j->n, j->prog, &j->ans);
}

static void start_job(sv_sessions *ss);

static void after_job(uv_work_t *w, int status) {
    sv_job *j = w->data;
    sv_sessions *ss = j->ss;
    if (status < 0) sv_error(&j->ans, 500, "internal", "the job was cancelled");
    j->done = 1;
    uint64_t serial = j->serial; /* j is freed when its request takes it */
    if (ss->built) ss->built(ss->built_ctx);
    for (sv_job *k = jobs; k; k = k->next)
        if (k->serial == serial) { /* not taken: its client went away */
            job_unlink(k);
            job_free_one(k);
            break;
        }
    start_job(ss);
}

static void start_job(sv_sessions *ss) {
    sv_job *j = jobs;
    if (!j || j->started) return;
    j->started = 1;
    j->work.data = j;
    if (uv_queue_work(ss->loop, &j->work, on_job, after_job) < 0) {
        sv_error(&j->ans, 500, "internal", "cannot queue the job");
        j->done = 1;
        if (ss->built) ss->built(ss->built_ctx);
    }
}

/* The job of request q: 1 with its answer moved into a (done), 1 with a
 * deferred (waiting), 0 when there is none. */
int sv_job_take(const sv_req *q, sv_answer *a) {
    for (sv_job *j = jobs; j; j = j->next) {
        if (j->serial != q->serial) continue;
        if (!j->done) {
            a->deferred = 1;
            return 1;
        }
        *a = j->ans; /* the body moves to the answer */
        memset(&j->ans, 0, sizeof j->ans);
        job_unlink(j);
        job_free_one(j);
        return 1;
    }
    return 0;
}

/* Queues a job over the sessions list[0..n) (lent to it); the answer is
 * deferred, or set to an error. Takes sel. */
static void job_queue(sv_sessions *ss, const sv_req *q, sv_answer *a, sv_job *j, sv_session *const *list,
                      size_t n) {
    j->ss = ss;
    j->serial = q->serial;
    j->list = calloc(n + 1, sizeof *j->list);
    for (size_t i = 0; j->list && i < n; i++) {
        if (sv_session_lend(ss, list[i]) < 0) break;
        j->list[i] = *list[i];
        j->n = i + 1;
        if (!(j->list[i].rel = strdup(list[i]->rel))) break;
    }
    if (!j->list || j->n != n || (n && !j->list[n - 1].rel)) {
        job_free_one(j);
        sv_error(a, 500, "internal", "out of memory");
        return;
    }
    if (!ss->loop) { /* no thread pool: here and now */
        on_job(&j->work);
        *a = j->ans;
        memset(&j->ans, 0, sizeof j->ans);
        job_free_one(j);
        return;
    }
    sv_job **p = &jobs;
    while (*p) p = &(*p)->next;
    *p = j;
    a->deferred = 1;
    start_job(ss);
}

void sv_api_range(sv_ctx *c, sv_session *s, const sv_req *q, sv_answer *a) {
    if (sv_job_take(q, a)) return;
    uint64_t t0, t1;
    if (time_arg(q, a, "t0", &t0) < 0 || time_arg(q, a, "t1", &t1) < 0) return;
    if (t1 <= t0) {
        sv_error(a, 400, "bad_param", "range needs t0 < t1");
        return;
    }
    uint8_t *sel = sv_tracks_param(q, a, vw_ntracks(s->ix));
    if (!sel) return;
    sv_job *j = calloc(1, sizeof *j);
    if (!j) {
        free(sel);
        sv_error(a, 500, "internal", "out of memory");
        return;
    }
    j->kind = JOB_RANGE;
    j->t0 = t0, j->t1 = t1, j->sel = sel;
    job_queue(c->ss, q, a, j, &s, 1);
}

void sv_job_lines(sv_ctx *c, sv_session *s, const sv_req *q, sv_answer *a, uint32_t func) {
    sv_job *j = calloc(1, sizeof *j);
    if (!j) {
        sv_error(a, 500, "internal", "out of memory");
        return;
    }
    j->kind = JOB_LINES;
    j->func = func;
    job_queue(c->ss, q, a, j, &s, 1);
}

/* ---- /api/diff ------------------------------------------------------------ */

/* Opens one side's trace (in a worker thread: no session state used). */
static int open_side(const char *path, dp_input *in, sv_answer *a) {
    char detail[256] = "";
    int rc = lt_reader_open(&in->r, path, detail, sizeof detail);
    if (rc < 0) return sv_unreadable(a, dr_basename(path), detail), -1;
    in->path = path;
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

/* The diff of two traces into a (any thread). */
static void diff_compute(const char *path_a, const char *path_b, const char *ida, const char *idb,
                         sv_answer *a) {
    static const char *status[] = {"regression", "improvement", "unchanged", "renamed", "added", "removed"};
    dp_input ia, ib;
    memset(&ia, 0, sizeof ia);
    memset(&ib, 0, sizeof ib);
    if (open_side(path_a, &ia, a) < 0 || open_side(path_b, &ib, a) < 0) {
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

/* A diff runs on the thread pool, one at a time; the request that asked
 * for it waits parked (as for an index build) and takes its answer. A
 * finished answer nobody took is dropped when another diff is asked. */
typedef struct diff_job {
    uv_work_t work;
    sv_sessions *ss;
    char key[128];          /* both ids and both files' size and mtime */
    char ida[17], idb[17];
    char *path_a, *path_b;
    sv_answer ans;
    int done;
} diff_job;

static diff_job *job;

static void job_free(diff_job *j) {
    free(j->path_a);
    free(j->path_b);
    jb_free(&j->ans.body);
    free(j);
}

static void on_diff(uv_work_t *w) {
    diff_job *j = w->data;
    diff_compute(j->path_a, j->path_b, j->ida, j->idb, &j->ans);
}

static void after_diff(uv_work_t *w, int status) {
    diff_job *j = w->data;
    if (status < 0) sv_error(&j->ans, 500, "internal", "the diff was cancelled");
    j->done = 1;
    if (j->ss->built) j->ss->built(j->ss->built_ctx);
}

void sv_api_diff(sv_ctx *c, const sv_req *q, sv_answer *a) {
    char ida[32], idb[32];
    if (sv_param(q, "a", ida, sizeof ida) != 16 || sv_param(q, "b", idb, sizeof idb) != 16) {
        sv_error(a, 400, "bad_param", "diff needs a=ID&b=ID");
        return;
    }
    sv_session *sa = sv_session_find(c->ss, ida);
    sv_session *sb = sa ? sv_session_find(c->ss, idb) : NULL;
    if (sa && sb) sa = sv_session_find(c->ss, ida); /* the second find may rescan */
    if (!sa || !sb) {
        sv_error(a, 404, "not_found", "no session %s", sa ? idb : ida);
        return;
    }
    if (sv_session_summary(c->ss, sa) < 0 && sa->error[0]) {
        sv_unreadable(a, sa->rel, sa->error);
        return;
    }
    if (sv_session_summary(c->ss, sb) < 0 && sb->error[0]) {
        sv_unreadable(a, sb->rel, sb->error);
        return;
    }
    char key[128];
    snprintf(key, sizeof key, "%s %s %llu %llu %llu %llu", ida, idb, (unsigned long long)sa->size,
             (unsigned long long)sa->mtime_ns, (unsigned long long)sb->size,
             (unsigned long long)sb->mtime_ns);
    if (job && !strcmp(job->key, key)) {
        if (!job->done) {
            a->deferred = 1;
            return;
        }
        *a = job->ans; /* the body moves to the answer */
        memset(&job->ans, 0, sizeof job->ans);
        job_free(job);
        job = NULL;
        return;
    }
    if (job && !job->done) { /* another diff runs: this one waits its turn */
        a->deferred = 1;
        return;
    }
    if (job) job_free(job);
    job = calloc(1, sizeof *job);
    if (!job || !(job->path_a = strdup(sa->path)) || !(job->path_b = strdup(sb->path))) {
        if (job) job_free(job);
        job = NULL;
        sv_error(a, 500, "internal", "out of memory");
        return;
    }
    memcpy(job->key, key, sizeof key);
    memcpy(job->ida, ida, 17);
    memcpy(job->idb, idb, 17);
    job->ss = c->ss;
    job->work.data = job;
    if (!c->ss->loop || uv_queue_work(c->ss->loop, &job->work, on_diff, after_diff) < 0) {
        diff_compute(job->path_a, job->path_b, ida, idb, a); /* no thread pool: here */
        job_free(job);
        job = NULL;
        return;
    }
    a->deferred = 1;
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
    if (sv_job_take(q, a)) return;
    char prog[512];
    if (sv_param(q, "program", prog, sizeof prog) <= 0) {
        sv_error(a, 400, "bad_param", "trend needs program=NAME");
        return;
    }
    sv_sessions *ss = c->ss;
    sv_sessions_scan(ss);
    sv_session **list = calloc(ss->n + 1, sizeof *list);
    size_t n = 0;
    int pending = 0;
    sv_session *no_fds = NULL; /* one not opened for want of descriptors */
    for (size_t i = 0; list && i < ss->n; i++) {
        int rc = sv_session_open(ss, &ss->s[i]);
        pending |= rc > 0;
        if (rc < 0 && sv_no_fds(ss->s[i].error)) no_fds = &ss->s[i];
        if (rc == 0 && has_program(&ss->s[i], prog)) list[n++] = &ss->s[i];
    }
    if (no_fds) { /* not a trend with sessions missing */
        free(list);
        sv_unreadable(a, no_fds->rel, no_fds->error);
        return;
    }
    if (!list) {
        sv_error(a, 500, "internal", "out of memory");
        return;
    }
    if (pending) { /* answered once every index is built */
        free(list);
        a->deferred = 1;
        return;
    }
    if (n) qsort(list, n, sizeof *list, by_start);
    if (n > TREND_SESSIONS) memmove(list, list + n - TREND_SESSIONS, TREND_SESSIONS * sizeof *list), n = TREND_SESSIONS;
    sv_job *j = calloc(1, sizeof *j);
    if (!j) {
        free(list);
        sv_error(a, 500, "internal", "out of memory");
        return;
    }
    j->kind = JOB_TREND;
    memcpy(j->prog, prog, sizeof prog);
    job_queue(ss, q, a, j, list, n);
    free(list);
}

/* The answer of /api/trend over the sessions list[0..n), oldest first (any
 * thread: reads their indexes and readers only). */
static void trend_compute(sv_session *list, size_t n, const char *prog, sv_answer *a) {
    tfunc *fs = NULL;
    size_t nfs = 0, capfs = 0;
    int fail = 0;
    for (size_t k = 0; k < n && !fail; k++) {
        sv_session *s = &list[k];
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
        if (nfs) qsort(fs, nfs, sizeof *fs, by_all);
        jb_init(&a->body, SV_MAX_ANSWER);
        a->status = 200;
        a->type = "application/json; charset=utf-8";
        jb *j = &a->body;
        jb_obj(j);
        jb_key(j, "program"), jb_str(j, prog);
        jb_key(j, "sessions"), jb_arr(j);
        for (size_t k = 0; k < n; k++) {
            jb_obj(j);
            jb_key(j, "id"), jb_str(j, list[k].id);
            jb_key(j, "path"), jb_str(j, list[k].rel);
            jb_key(j, "mtime_ns"), jb_u64s(j, list[k].mtime_ns);
            jb_key(j, "duration_ns"), jb_u64(j, vw_totals_of(list[k].ix)->duration);
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
}
