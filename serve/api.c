#define _GNU_SOURCE /* strcasestr */
/* api.c -- routing and the endpoints of serve/API.md over a session's
 * index: sessions, meta, view, functions, zone, find. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "serve.h"

#define MAX_TRACKS_PARAM 4096
#define MAX_PX 8192
#define MAX_T 9007199254740992.0 /* 2^53 */
#define MARKER_TEXT 256

static void json_answer(sv_answer *a, size_t limit) {
    jb_init(&a->body, limit);
    a->status = 200;
    a->type = "application/json; charset=utf-8";
}

int sv_time_param(const sv_req *q, sv_answer *a, const char *name, uint64_t *out) {
    char buf[64];
    long n = sv_param(q, name, buf, sizeof buf);
    if (n == -1) return 0;
    char *e;
    double v = n > 0 ? strtod(buf, &e) : NAN;
    if (n <= 0 || *e || !isfinite(v) || v < 0 || v > MAX_T) {
        sv_error(a, 400, "bad_param", "%s must be a number of ns in [0, 2^53]", name);
        return -1;
    }
    *out = (uint64_t)v;
    return 1;
}

static int uint_param(const sv_req *q, sv_answer *a, const char *name, uint64_t min, uint64_t max,
                      uint64_t *out) {
    char buf[32];
    long n = sv_param(q, name, buf, sizeof buf);
    if (n == -1) return 0;
    char *e;
    unsigned long long v = n > 0 && isdigit((unsigned char)buf[0]) ? strtoull(buf, &e, 10) : 0;
    if (n <= 0 || !isdigit((unsigned char)buf[0]) || *e || v < min || v > max) {
        sv_error(a, 400, "bad_param", "%s must be an integer in [%llu, %llu]", name,
                 (unsigned long long)min, (unsigned long long)max);
        return -1;
    }
    *out = v;
    return 1;
}

/* ---- /api/sessions ------------------------------------------------------ */

static void session_json(jb *j, sv_sessions *ss, sv_session *s) {
    int ok = sv_session_summary(ss, s) == 0;
    const sv_summary *m = &s->sum;
    jb_obj(j);
    jb_key(j, "id"), jb_str(j, s->id);
    jb_key(j, "path"), jb_str(j, s->rel);
    jb_key(j, "root"), jb_str(j, ss->roots[s->root]);
    jb_key(j, "size"), jb_u64(j, s->size);
    jb_key(j, "mtime_ns"), jb_u64s(j, s->mtime_ns);
    jb_key(j, "state"), jb_str(j, ok ? sv_session_state(s) : "error");
    jb_key(j, "error");
    if (ok) jb_null(j);
    else jb_str(j, s->error);
    if (ok) {
        jb_key(j, "programs"), jb_arr(j);
        for (uint32_t i = 0; i < m->nprograms; i++) jb_str(j, m->programs[i]);
        jb_end_arr(j);
        jb_key(j, "wall_start_ns"), jb_u64s(j, m->wall_start);
        jb_key(j, "duration_ns"), jb_u64(j, m->duration);
        jb_key(j, "processes"), jb_u64(j, m->processes);
        jb_key(j, "threads"), jb_u64(j, m->threads);
        jb_key(j, "zones"), jb_u64(j, m->zones);
        jb_key(j, "lost"), jb_u64(j, m->lost);
    } else {
        const char *k[] = {"programs", "wall_start_ns", "duration_ns", "processes", "threads", "zones", "lost"};
        for (size_t i = 0; i < sizeof k / sizeof *k; i++) jb_key(j, k[i]), jb_null(j);
    }
    jb_end_obj(j);
}

static int by_mtime(const void *a, const void *b) {
    const sv_session *x = *(sv_session *const *)a, *y = *(sv_session *const *)b;
    if (x->mtime_ns != y->mtime_ns) return x->mtime_ns > y->mtime_ns ? -1 : 1;
    return strcmp(x->rel, y->rel);
}

static void api_sessions(sv_ctx *c, sv_answer *a) {
    sv_sessions *ss = c->ss;
    sv_sessions_scan(ss);
    int pending = 0;
    for (size_t i = 0; i < ss->n; i++) pending |= sv_session_summary(ss, &ss->s[i]) > 0;
    if (pending) { /* answered once every index is built */
        a->deferred = 1;
        return;
    }
    sv_session **order = malloc((ss->n + 1) * sizeof *order);
    if (!order) {
        sv_error(a, 500, "internal", "out of memory");
        return;
    }
    for (size_t i = 0; i < ss->n; i++) order[i] = &ss->s[i];
    qsort(order, ss->n, sizeof *order, by_mtime);
    json_answer(a, SV_MAX_ANSWER);
    jb_obj(&a->body);
    jb_key(&a->body, "sessions");
    jb_arr(&a->body);
    sv_captures_json(&a->body, ss);
    for (size_t i = 0; i < ss->n; i++) session_json(&a->body, ss, order[i]);
    jb_end_arr(&a->body);
    jb_end_obj(&a->body);
    free(order);
}

/* ---- /api/t/ID/meta ----------------------------------------------------- */

static const char *proc_status(int st) {
    switch (st) {
    case LT_PROC_CLEAN: return "clean";
    case LT_PROC_LOST: return "lost";
    case LT_PROC_REJECTED: return "rejected";
    case LT_PROC_STOPPED: return "stopped";
    default: return "running";
    }
}

static void meta_processes(jb *j, const sv_session *s) {
    jb_arr(j);
    for (uint32_t p = 1; p <= lt_reader_nprocesses(s->r); p++) {
        const lt_process *pr = lt_reader_process(s->r, p);
        if (!pr) continue;
        jb_obj(j);
        jb_key(j, "process"), jb_u64(j, p);
        jb_key(j, "pid"), jb_u64(j, pr->pid);
        jb_key(j, "rank"), jb_i64(j, pr->rank);
        jb_key(j, "hostname"), jb_str(j, pr->hostname ? pr->hostname : "");
        jb_key(j, "program"), jb_str(j, pr->program ? pr->program : "");
        jb_key(j, "argv"), jb_arr(j);
        for (uint32_t i = 0; i < pr->argc; i++) jb_str(j, pr->argv[i]);
        jb_end_arr(j);
        jb_key(j, "status"), jb_str(j, proc_status(pr->status));
        jb_key(j, "events_lost"), jb_u64(j, pr->events_lost);
        jb_end_obj(j);
    }
    jb_end_arr(j);
}

static void meta_tracks(jb *j, const sv_session *s) {
    jb_arr(j);
    for (uint32_t i = 0; i < vw_ntracks(s->ix); i++) {
        const vw_track *t = vw_track_at(s->ix, i);
        jb_obj(j);
        jb_key(j, "track"), jb_u64(j, i);
        jb_key(j, "process"), jb_u64(j, t->process);
        jb_key(j, "thread"), jb_u64(j, t->thread);
        jb_key(j, "tid"), jb_u64(j, t->tid);
        jb_key(j, "name"), jb_str(j, vw_string(s->ix, t->name, NULL));
        jb_key(j, "depths"), jb_u64(j, t->depths);
        jb_key(j, "zones"), jb_u64(j, t->zones);
        jb_key(j, "first"), jb_u64(j, t->first);
        jb_key(j, "last"), jb_u64(j, t->last);
        jb_end_obj(j);
    }
    jb_end_arr(j);
}

static void meta_plots_frames(jb *j, const sv_session *s) {
    jb_key(j, "plots"), jb_arr(j);
    for (uint32_t i = 0; i < vw_nplots(s->ix); i++) {
        const vw_plot *p = vw_plot_at(s->ix, i);
        jb_obj(j);
        jb_key(j, "plot"), jb_u64(j, i);
        jb_key(j, "process"), jb_u64(j, p->process);
        jb_key(j, "name"), jb_str(j, vw_string(s->ix, p->name, NULL));
        jb_key(j, "samples"), jb_u64(j, p->samples);
        jb_key(j, "min"), jb_dbl(j, p->min);
        jb_key(j, "max"), jb_dbl(j, p->max);
        jb_end_obj(j);
    }
    jb_end_arr(j);
    jb_key(j, "frames"), jb_arr(j);
    for (uint32_t i = 0; i < vw_nframes(s->ix); i++) {
        const vw_frame *f = vw_frame_at(s->ix, i);
        jb_obj(j);
        jb_key(j, "frame"), jb_u64(j, i);
        jb_key(j, "process"), jb_u64(j, f->process);
        jb_key(j, "name"), jb_str(j, vw_string(s->ix, f->name, NULL));
        jb_key(j, "marks"), jb_u64(j, f->marks);
        jb_end_obj(j);
    }
    jb_end_arr(j);
}

static void meta_stats(jb *j, const sv_session *s) {
    static const char *sev[] = {"info", "data_loss", "error"};
    jb_arr(j);
    for (size_t i = 0; i < lt_reader_nstats(s->r); i++) {
        const lt_stat *st = lt_reader_stat(s->r, i);
        jb_obj(j);
        jb_key(j, "name"), jb_str(j, st->name);
        jb_key(j, "value"), jb_u64(j, st->value);
        jb_key(j, "severity"), jb_str(j, st->severity < 3 ? sev[st->severity] : "info");
        jb_end_obj(j);
    }
    jb_end_arr(j);
}

static void api_meta(sv_ctx *c, sv_session *s, sv_answer *a) {
    const vw_totals *t = vw_totals_of(s->ix);
    jb *j = &a->body;
    int have = sv_session_summary(c->ss, s) == 0;
    uint64_t l = have ? s->sum.lost : t->lost_events;
    json_answer(a, SV_MAX_ANSWER);
    jb_obj(j);
    jb_key(j, "id"), jb_str(j, s->id);
    jb_key(j, "path"), jb_str(j, s->rel);
    /* the figures below are the index's: while a newer one is being built
     * for a file that changed, they are still those of a trace being written */
    jb_key(j, "state"), jb_str(j, s->building || s->want_build ? "writing"
                                                               : sv_session_state(s));
    jb_key(j, "size"), jb_u64(j, s->size);
    jb_key(j, "generation"), jb_u64(j, s->generation);
    jb_key(j, "origin_ns"), jb_u64s(j, t->origin);
    jb_key(j, "wall_start_ns"), jb_u64s(j, have ? s->sum.wall_start : 0);
    jb_key(j, "duration_ns"), jb_u64(j, t->duration);
    jb_key(j, "zones"), jb_u64(j, t->zones);
    jb_key(j, "records"), jb_u64(j, vw_nrecs(s->ix));
    jb_key(j, "max_depth"), jb_u64(j, t->max_depth);
    jb_key(j, "functions"), jb_u64(j, vw_nfuncs(s->ix));
    jb_key(j, "processes"), meta_processes(j, s);
    jb_key(j, "tracks"), meta_tracks(j, s);
    meta_plots_frames(j, s);
    jb_key(j, "messages"), jb_u64(j, t->messages);
    jb_key(j, "signposts"), jb_u64(j, t->signposts);
    jb_key(j, "lost_ranges"), jb_u64(j, t->lost_records);
    jb_key(j, "lost_events"), jb_u64(j, l);
    jb_key(j, "unclosed"), jb_u64(j, t->unclosed);
    jb_key(j, "aborted"), jb_u64(j, t->aborted);
    jb_key(j, "stats"), meta_stats(j, s);
    jb_end_obj(j);
}

/* ---- /api/t/ID/view ----------------------------------------------------- */

static int tracks_fill(const sv_req *q, sv_answer *a, uint32_t n, uint8_t *sel) {
    char buf[MAX_TRACKS_PARAM * 8];
    long len = sv_param(q, "tracks", buf, sizeof buf);
    if (len == -1) {
        memset(sel, 1, n);
        return 0;
    }
    memset(sel, 0, n);
    if (len < 0) return sv_error(a, 400, "bad_param", "tracks: a comma list of track numbers"), -1;
    int count = 0;
    char *p = buf;
    while (*p) {
        char *e;
        if (!isdigit((unsigned char)*p)) return sv_error(a, 400, "bad_param", "tracks: not a number"), -1;
        unsigned long v = strtoul(p, &e, 10);
        if (v >= n) return sv_error(a, 400, "bad_param", "tracks: unknown track %lu", v), -1;
        if (++count > MAX_TRACKS_PARAM) return sv_error(a, 400, "bad_param", "tracks: too many"), -1;
        sel[v] = 1;
        p = e;
        if (*p == ',') p++;
        else if (*p) return sv_error(a, 400, "bad_param", "tracks: bad separator"), -1;
    }
    return 0;
}

uint8_t *sv_tracks_param(const sv_req *q, sv_answer *a, uint32_t n) {
    uint8_t *sel = malloc((size_t)n + 1);
    if (!sel) sv_error(a, 500, "internal", "out of memory");
    else if (tracks_fill(q, a, n, sel) < 0) free(sel), sel = NULL;
    return sel;
}

static int emit_item(void *ctx, const vw_item *it) {
    jb *j = ctx;
    jb_arr(j);
    jb_u64(j, it->start);
    jb_u64(j, it->dur);
    jb_u64(j, it->func_flags & VW_FUNC_MASK);
    jb_u64(j, it->id);
    jb_u64(j, it->count);
    jb_u64(j, it->count > 1 ? 0 : it->func_flags >> 29 == 0 ? 0 : (it->func_flags & VW_OPEN ? 1 : 0) |
                                                                  (it->func_flags & VW_ABORTED ? 2 : 0) |
                                                                  (it->func_flags & VW_CUT ? 4 : 0));
    jb_end_arr(j);
    return jb_failed(j);
}

/* Records of a marker/sample row in [t0, t1], merged per pixel: fn is
 * called with the first record of each pixel and how many it stands for. */
typedef void (*pix_fn)(jb *j, const vw_index *ix, uint32_t row, uint64_t first, uint64_t count);
static void per_pixel(jb *j, const vw_index *ix, long row, uint64_t t0, uint64_t t1, double npp, pix_fn fn) {
    if (row < 0) return;
    uint64_t n = vw_row_at(ix, (uint32_t)row)->n, px = npp < 1 ? 1 : (uint64_t)npp;
    uint64_t i = vw_lower_start(ix, (uint32_t)row, t0);
    while (i < n && !jb_failed(j)) {
        const uint64_t *r = vw_rec(ix, (uint32_t)row, i);
        if (r[0] > t1) break;
        uint64_t next = r[0] + px;
        uint64_t k = vw_lower_start(ix, (uint32_t)row, next);
        uint64_t end = vw_upper_start(ix, (uint32_t)row, t1);
        if (k > end) k = end;
        if (k <= i) k = i + 1;
        fn(j, ix, (uint32_t)row, i, k - i);
        i = k;
    }
}

static void px_marker(jb *j, const vw_index *ix, uint32_t row, uint64_t first, uint64_t count) {
    const vw_marker *m = vw_rec(ix, row, first);
    size_t len;
    const char *t = vw_string(ix, m->text, &len);
    jb_arr(j);
    jb_u64(j, m->t);
    jb_u64(j, m->track);
    jb_u64(j, m->kind);
    jb_u64(j, count);
    jb_strn(j, t, len > MARKER_TEXT ? MARKER_TEXT : len);
    t = vw_string(ix, m->text2, &len);
    jb_strn(j, t, len > MARKER_TEXT ? MARKER_TEXT : len);
    jb_end_arr(j);
}

static void px_plot(jb *j, const vw_index *ix, uint32_t row, uint64_t first, uint64_t count) {
    double mn = INFINITY, mx = -INFINITY, last = 0;
    /* count is at most the samples of one pixel, but bound the walk */
    uint64_t step = count > 64 ? count / 64 : 1;
    for (uint64_t k = 0; k < count; k += step) {
        const vw_sample *s = vw_rec(ix, row, first + k);
        if (s->value < mn) mn = s->value;
        if (s->value > mx) mx = s->value;
    }
    last = ((const vw_sample *)vw_rec(ix, row, first + count - 1))->value;
    if (last < mn) mn = last;
    if (last > mx) mx = last;
    jb_arr(j);
    jb_u64(j, ((const vw_sample *)vw_rec(ix, row, first))->t);
    jb_dbl(j, mn);
    jb_dbl(j, mx);
    jb_dbl(j, last);
    jb_end_arr(j);
}

static void px_frame(jb *j, const vw_index *ix, uint32_t row, uint64_t first, uint64_t count) {
    jb_arr(j);
    jb_u64(j, ((const vw_sample *)vw_rec(ix, row, first))->t);
    jb_u64(j, count);
    jb_end_arr(j);
}

static void px_lost(jb *j, const vw_index *ix, uint32_t row, uint64_t first, uint64_t count) {
    uint64_t sum = 0;
    for (uint64_t k = 0; k < count && k < 4096; k++)
        sum += ((const vw_sample *)vw_rec(ix, row, first + k))->count;
    const vw_sample *s = vw_rec(ix, row, first);
    jb_arr(j);
    jb_u64(j, s->t);
    jb_i64(j, s->track == UINT32_MAX ? -1 : (int64_t)s->track);
    jb_u64(j, sum);
    jb_end_arr(j);
}

/* An array of the rows 0..n-1 of one kind (plots, frames), each an object
 * {id_key: its number, list_key: its items per pixel}. */
static void numbered_rows(jb *j, const vw_index *ix, uint32_t kind, uint32_t n, const char *id_key,
                          const char *list_key, uint64_t t0, uint64_t t1, double npp,
                          pix_fn fn) {
    jb_arr(j);
    for (uint32_t k = 0; k < n; k++) {
        jb_obj(j);
        jb_key(j, id_key), jb_u64(j, k);
        jb_key(j, list_key), jb_arr(j);
        per_pixel(j, ix, vw_find_row(ix, kind, k, 0), t0, t1, npp, fn);
        jb_end_arr(j);
        jb_end_obj(j);
    }
    jb_end_arr(j);
}

static void api_view(sv_session *s, const sv_req *q, sv_answer *a) {
    uint64_t t0 = 0, t1 = 0, px = 0;
    int r0 = sv_time_param(q, a, "t0", &t0), r1 = r0 < 0 ? -1 : sv_time_param(q, a, "t1", &t1);
    int rp = r1 < 0 ? -1 : uint_param(q, a, "px", 1, MAX_PX, &px);
    if (r0 < 0 || r1 < 0 || rp < 0) return;
    if (!r0 || !r1 || !rp || t1 <= t0) {
        sv_error(a, 400, "bad_param", "view needs t0 < t1 and px in 1..%d", MAX_PX);
        return;
    }
    const vw_index *ix = s->ix;
    uint32_t nt = vw_ntracks(ix);
    uint8_t *sel = sv_tracks_param(q, a, nt);
    if (!sel) return;
    double npp = (double)(t1 - t0) / (double)px;
    json_answer(a, SV_MAX_ANSWER);
    jb *j = &a->body;
    jb_obj(j);
    jb_key(j, "t0"), jb_u64(j, t0);
    jb_key(j, "t1"), jb_u64(j, t1);
    jb_key(j, "px"), jb_u64(j, px);
    jb_key(j, "generation"), jb_u64(j, s->generation);
    jb_key(j, "tracks"), jb_arr(j);
    for (uint32_t t = 0; t < nt && !jb_failed(j); t++) {
        if (!sel[t]) continue;
        jb_obj(j);
        jb_key(j, "track"), jb_u64(j, t);
        jb_key(j, "depths"), jb_arr(j);
        for (uint32_t d = 0; d < vw_track_at(ix, t)->depths; d++) {
            jb_arr(j);
            long row = vw_find_row(ix, VW_ROW_ZONES, t, d);
            if (row >= 0) vw_view_row(ix, (uint32_t)row, t0, t1, npp, emit_item, j);
            jb_end_arr(j);
        }
        jb_end_arr(j);
        jb_end_obj(j);
    }
    jb_end_arr(j);
    jb_key(j, "markers"), jb_arr(j);
    for (uint32_t t = 0; t < nt; t++)
        if (sel[t]) per_pixel(j, ix, vw_find_row(ix, VW_ROW_MARKERS, t, 0), t0, t1, npp, px_marker);
    jb_end_arr(j);
    jb_key(j, "plots");
    numbered_rows(j, ix, VW_ROW_PLOT, vw_nplots(ix), "plot", "points", t0, t1, npp, px_plot);
    jb_key(j, "frames");
    numbered_rows(j, ix, VW_ROW_FRAME, vw_nframes(ix), "frame", "marks", t0, t1, npp, px_frame);
    jb_key(j, "lost"), jb_arr(j);
    per_pixel(j, ix, vw_find_row(ix, VW_ROW_LOST, 0, 0), t0, t1, npp, px_lost);
    jb_end_arr(j);
    jb_end_obj(j);
    free(sel);
}

/* ---- /api/t/ID/functions ------------------------------------------------- */

static const char *kind_name(uint32_t k) {
    static const char *n[] = {"?", "python", "c", "line", "user", "internal"};
    return k < 6 ? n[k] : "?";
}

static void api_functions(sv_session *s, sv_answer *a) {
    json_answer(a, SV_MAX_ANSWER);
    jb *j = &a->body;
    jb_obj(j);
    jb_key(j, "functions"), jb_arr(j);
    for (uint32_t i = 0; i < vw_nfuncs(s->ix); i++) {
        const vw_func *f = vw_func_at(s->ix, i);
        jb_obj(j);
        jb_key(j, "func"), jb_u64(j, i);
        jb_key(j, "name"), jb_str(j, vw_string(s->ix, f->name, NULL));
        jb_key(j, "file"), jb_str(j, vw_string(s->ix, f->file, NULL));
        jb_key(j, "line"), jb_u64(j, f->line);
        jb_key(j, "kind"), jb_str(j, kind_name(f->kind));
        jb_key(j, "zones"), jb_u64(j, f->zones);
        jb_end_obj(j);
    }
    jb_end_arr(j);
    jb_end_obj(j);
}

/* ---- /api/t/ID/zone ------------------------------------------------------ */

/* Opens an object with the zone's id, track, depth, func, name, start and
 * dur; the caller closes it. The name is the zone's own when renamed. */
static void zone_brief(jb *j, const vw_index *ix, uint32_t row, uint64_t i) {
    const vw_zone *z = vw_rec(ix, row, i);
    const vw_func *f = vw_func_at(ix, z->func_flags & VW_FUNC_MASK);
    uint64_t name = UINT64_MAX, text = UINT64_MAX;
    vw_zone_text(ix, z->text, &name, &text);
    jb_obj(j);
    jb_key(j, "id"), jb_u64(j, vw_rec_id(ix, row, i));
    jb_key(j, "track"), jb_u64(j, vw_row_at(ix, row)->key);
    jb_key(j, "depth"), jb_u64(j, vw_row_at(ix, row)->depth);
    jb_key(j, "func"), jb_u64(j, z->func_flags & VW_FUNC_MASK);
    jb_key(j, "name");
    jb_str(j, name != UINT64_MAX ? vw_string(ix, name, NULL) : f ? vw_string(ix, f->name, NULL) : "");
    jb_key(j, "start"), jb_u64(j, z->start);
    jb_key(j, "dur"), jb_u64(j, z->dur);
}

static void api_zone(sv_session *s, const sv_req *q, sv_answer *a) {
    uint64_t id = 0;
    int r = uint_param(q, a, "id", 0, UINT64_MAX >> 11, &id);
    if (r < 0) return;
    const vw_index *ix = s->ix;
    uint32_t row;
    uint64_t i;
    if (!r) {
        sv_error(a, 400, "bad_param", "zone needs id");
        return;
    }
    if (vw_locate(ix, id, &row, &i) < 0 || vw_row_at(ix, row)->kind != VW_ROW_ZONES) {
        sv_error(a, 404, "not_found", "no zone %llu", (unsigned long long)id);
        return;
    }
    const vw_zone *z = vw_rec(ix, row, i);
    const vw_track *t = vw_track_at(ix, vw_row_at(ix, row)->key);
    const vw_func *f = vw_func_at(ix, z->func_flags & VW_FUNC_MASK);
    uint64_t name = UINT64_MAX, text = UINT64_MAX;
    vw_zone_text(ix, z->text, &name, &text);
    json_answer(a, SV_MAX_ANSWER);
    jb *j = &a->body;
    zone_brief(j, ix, row, i);
    jb_key(j, "process"), jb_u64(j, t ? t->process : 0);
    jb_key(j, "thread"), jb_u64(j, t ? t->thread : 0);
    jb_key(j, "self"), jb_u64(j, z->self);
    jb_key(j, "function"), jb_str(j, f ? vw_string(ix, f->name, NULL) : "");
    jb_key(j, "file"), jb_str(j, f ? vw_string(ix, f->file, NULL) : "");
    jb_key(j, "line"), jb_u64(j, f ? f->line : 0);
    jb_key(j, "text");
    if (text == UINT64_MAX) jb_null(j);
    else jb_str(j, vw_string(ix, text, NULL));
    jb_key(j, "flags"), jb_u64(j, (z->func_flags & VW_OPEN ? 1 : 0) | (z->func_flags & VW_ABORTED ? 2 : 0) |
                                      (z->func_flags & VW_CUT ? 4 : 0));
    jb_key(j, "callers"), jb_arr(j);
    uint32_t pr = row;
    uint64_t pi = i;
    while (vw_parent(ix, pr, pi, &pr, &pi) == 0) {
        zone_brief(j, ix, pr, pi);
        jb_end_obj(j);
    }
    jb_end_arr(j);
    jb_end_obj(j);
}

/* ---- /api/t/ID/find ------------------------------------------------------ */

static void api_find(sv_session *s, const sv_req *q, sv_answer *a) {
    const vw_index *ix = s->ix;
    uint32_t nf = vw_nfuncs(ix), nt = vw_ntracks(ix);
    uint8_t *want = calloc((size_t)nf + 1, 1);
    if (!want) {
        sv_error(a, 500, "internal", "out of memory");
        return;
    }
    uint64_t fid = 0, after = 0, before = 0, track = 0;
    char text[260];
    int rf = uint_param(q, a, "func", 0, UINT32_MAX, &fid);
    long ql = rf < 0 ? -1 : sv_param(q, "q", text, sizeof text);
    int ra = rf < 0 ? -1 : sv_time_param(q, a, "after", &after);
    int rb = ra < 0 ? -1 : sv_time_param(q, a, "before", &before);
    int rt = rb < 0 ? -1 : uint_param(q, a, "track", 0, nt ? nt - 1 : 0, &track);
    if (rf < 0 || ra < 0 || rb < 0 || rt < 0) goto out;
    if (rt && track >= nt) {
        sv_error(a, 404, "not_found", "no track %llu", (unsigned long long)track);
        goto out;
    }
    if ((rf > 0) == (ql > 0) || (ra && rb)) {
        sv_error(a, 400, "bad_param", "find needs func or q (1..256 bytes), and at most one of after/before");
        goto out;
    }
    if (rf) {
        if (fid >= nf) {
            sv_error(a, 404, "not_found", "no function %llu", (unsigned long long)fid);
            goto out;
        }
        want[fid] = 1;
    } else {
        for (uint32_t f = 0; f < nf; f++)
            want[f] = strcasestr(vw_string(ix, vw_func_at(ix, f)->name, NULL), text) != NULL;
    }
    json_answer(a, SV_MAX_ANSWER);
    jb *j = &a->body;
    /* count: the index's per-function totals (a walk of the track's rows
     * when one track is asked); the nearest zone: each row scanned from T
     * in the asked direction, up to its first match or the best so far */
    uint64_t count = 0, best_t = 0;
    long best_row = -1;
    uint64_t best_i = 0;
    for (uint32_t f = 0; f < nf && !rt; f++)
        if (want[f]) count += vw_func_at(ix, f)->zones;
    for (uint32_t r = 0; vw_row_at(ix, r); r++) {
        const vw_row *w = vw_row_at(ix, r);
        if (w->kind != VW_ROW_ZONES || (rt && w->key != track)) continue;
        for (uint64_t i = 0; rt && i < w->n; i++)
            count += want[((const vw_zone *)vw_rec(ix, r, i))->func_flags & VW_FUNC_MASK];
        if (rb) {
            for (uint64_t i = vw_lower_start(ix, r, before); i-- > 0;) {
                const vw_zone *z = vw_rec(ix, r, i);
                if (best_row >= 0 && z->start <= best_t) break;
                if (want[z->func_flags & VW_FUNC_MASK]) {
                    best_row = r, best_i = i, best_t = z->start;
                    break;
                }
            }
        } else {
            for (uint64_t i = ra ? vw_upper_start(ix, r, after) : 0; i < w->n; i++) {
                const vw_zone *z = vw_rec(ix, r, i);
                if (best_row >= 0 && z->start >= best_t) break;
                if (want[z->func_flags & VW_FUNC_MASK]) {
                    best_row = r, best_i = i, best_t = z->start;
                    break;
                }
            }
        }
    }
    /* index: 1 + the matching zones that start before the one returned */
    uint64_t index = 0;
    for (uint32_t r = 0; best_row >= 0 && vw_row_at(ix, r); r++) {
        const vw_row *w = vw_row_at(ix, r);
        if (w->kind != VW_ROW_ZONES || (rt && w->key != track)) continue;
        uint64_t end = vw_lower_start(ix, r, best_t);
        for (uint64_t i = 0; i < end; i++)
            index += want[((const vw_zone *)vw_rec(ix, r, i))->func_flags & VW_FUNC_MASK];
    }
    jb_obj(j);
    jb_key(j, "count"), jb_u64(j, count);
    jb_key(j, "index"), jb_u64(j, best_row >= 0 ? index + 1 : 0);
    jb_key(j, "funcs"), jb_arr(j);
    for (uint32_t f = 0; f < nf; f++)
        if (want[f]) jb_u64(j, f);
    jb_end_arr(j);
    jb_key(j, "zone");
    if (best_row < 0) jb_null(j);
    else zone_brief(j, ix, (uint32_t)best_row, best_i), jb_end_obj(j);
    jb_end_obj(j);
out:
    free(want);
}

/* ---- Routing ------------------------------------------------------------- */

static int path_is(const sv_req *q, const char *p) {
    return q->path_len == strlen(p) && !memcmp(q->path, p, q->path_len);
}

static void route_session(sv_ctx *c, const sv_req *q, sv_answer *a) {
    /* /api/t/<16 hex>/<what> */
    const char *p = q->path + 7;
    size_t left = q->path_len - 7;
    char id[17];
    if (left < 18 || p[16] != '/') {
        sv_error(a, 404, "not_found", "no such route");
        return;
    }
    for (int i = 0; i < 16; i++)
        if (!isxdigit((unsigned char)p[i]) || isupper((unsigned char)p[i])) {
            sv_error(a, 404, "not_found", "no such session");
            return;
        }
    memcpy(id, p, 16);
    id[16] = 0;
    const char *what = p + 17;
    size_t wl = left - 17;
    sv_session *s = sv_session_find(c->ss, id);
    const sv_capture *k = s ? NULL : sv_capture_find(c->ss, id);
    if (k && k->state == SV_CAP_RECORDING) {
        sv_error(a, 409, "capturing", "%s is being recorded", k->rel);
        return;
    }
    if (k) {
        sv_unreadable(a, k->rel, k->error);
        return;
    }
    if (!s) {
        sv_error(a, 404, "not_found", "no session %s", id);
        return;
    }
#define IS(w) (wl == strlen(w) && !memcmp(what, w, wl))
    if (!IS("meta") && !IS("view") && !IS("functions") && !IS("zone") && !IS("find") && !IS("range") &&
        !IS("lines")) {
        sv_error(a, 404, "not_found", "no such route");
        return;
    }
    int rc = sv_session_open(c->ss, s);
    if (rc > 0) {
        a->deferred = 1;
        return;
    }
    if (rc < 0) {
        sv_unreadable(a, s->rel, s->error);
        return;
    }
    if (IS("meta")) api_meta(c, s, a);
    else if (IS("view")) api_view(s, q, a);
    else if (IS("functions")) api_functions(s, a);
    else if (IS("zone")) api_zone(s, q, a);
    else if (IS("find")) api_find(s, q, a);
    else if (IS("lines")) sv_api_lines(c, s, q, a);
    else sv_api_range(c, s, q, a);
    vw_release(s->ix); /* the answer is built: the index's pages can go */
#undef IS
}

static void serve_asset(const sv_req *q, sv_answer *a) {
    const char *name = q->path + 1;
    size_t len = q->path_len - 1;
    if (!len) name = "index.html", len = 10;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '.' && name[i] != '-' && name[i] != '_') {
            sv_error(a, 404, "not_found", "no such file");
            return;
        }
    if (name[0] == '.' || sv_asset(name, len, &a->static_body, &a->static_len, &a->type) < 0) {
        sv_error(a, 404, "not_found", "no such file");
        return;
    }
    a->status = 200;
}

void sv_route(sv_ctx *c, const sv_req *q, sv_answer *a) {
    int get = !strcmp(q->method, "GET"), post = !strcmp(q->method, "POST");
    if (path_is(q, "/api/capture")) {
        if (!post) sv_error(a, 405, "method", "POST only");
        else sv_api_capture(c, q, a);
        return;
    }
    if (!get) {
        sv_error(a, 405, "method", "GET only");
        return;
    }
    if (path_is(q, "/api/sessions")) api_sessions(c, a);
    else if (path_is(q, "/api/diff")) sv_api_diff(c, q, a);
    else if (path_is(q, "/api/trend")) sv_api_trend(c, q, a);
    else if (q->path_len > 7 && !memcmp(q->path, "/api/t/", 7)) route_session(c, q, a);
    else if (q->path_len >= 4 && !memcmp(q->path, "/api", 4)) sv_error(a, 404, "not_found", "no such route");
    else serve_asset(q, a);
}
