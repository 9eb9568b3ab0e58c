/* diff_profile.c -- reads the runs of one side of tracy-diff into rows:
 * per-call duration histograms, calls, total (outermost activations only)
 * and self time per run, for functions, phases and phase x op code. */
#include "convert/diff/diff_profile.h"

#include <stdio.h>
#include <stdlib.h>

#define START_PHASE "(start)"

/* Open zones of one thread: location, phase at its beginning, and whether
 * it is the outermost activation of its location on the thread. */
typedef struct frame {
    uint32_t loc, phase;
    uint32_t outer;
} frame;

/* Location -> row caches of one scope (a process, or a thread under
 * --by-thread): func[loc] is the function's row + 1, op[loc] the row + 1 of
 * the location in phase op_phase[loc] - 1. */
typedef struct unit {
    char *program, *thread;
    long *func, *op;
    uint32_t *op_phase;
    uint32_t nlocs;
} unit;

/* Open-addressing count of the open activations per location. */
typedef struct active {
    uint32_t *keys, *counts; /* key = loc + 1, 0 when empty */
    uint32_t cap, used;
} active;

typedef struct stream {
    frame *stack;
    uint32_t n, cap;
    active act;
    int ready;
    unit own_unit; /* under --by-thread; else the process's unit is used */
} stream;

typedef struct proc {
    stream *threads;
    uint32_t nthreads;
    unit u;
    uint32_t phase;          /* current phase id */
    uint64_t phase_start, last_ts;
    int seen;                /* any event yet */
} proc;

struct dp_profile {
    dp_opts o;
    dp_input *in;
    uint32_t nruns, run;
    cv_map *keys;
    dp_row *rows;
    size_t nrows, caprows;
    cv_map *phases;         /* phase names of this side -> id */
    char *keybuf;
    char err[600];
    /* The file being read. */
    lt_reader *r;
    proc *procs;
    uint32_t nprocs;
    int with_phases;
};

#define KEYBUF (6 * (LT_MAX_STRING + 1) + 16)

/* ---- Profile ------------------------------------------------------------- */

dp_profile *dp_profile_new(const dp_opts *o, dp_input *inputs, uint32_t nruns) {
    dp_profile *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->o = *o;
    p->in = inputs;
    p->nruns = nruns;
    p->keys = cv_map_new();
    p->phases = cv_map_new();
    p->keybuf = malloc(KEYBUF);
    int added;
    if (!p->keys || !p->phases || !p->keybuf ||
        cv_map_get(p->phases, START_PHASE, strlen(START_PHASE), &added) != 0) {
        dp_profile_free(p);
        return NULL;
    }
    return p;
}

static void row_free(dp_row *w) {
    ds_hist_free(&w->hist);
    ds_hist_free(&w->cur);
    ds_hist_free(&w->shist);
    ds_hist_free(&w->scur);
    free(w->calls);
    free(w->total);
    free(w->self);
    free(w->p50);
    free(w->s50);
}

void dp_profile_free(dp_profile *p) {
    if (!p) return;
    for (size_t i = 0; i < p->nrows; i++) row_free(&p->rows[i]);
    free(p->rows);
    for (uint32_t i = 0; i < p->nruns; i++) {
        lt_reader_free(p->in[i].r);
        p->in[i].r = NULL;
    }
    cv_map_free(p->keys);
    cv_map_free(p->phases);
    free(p->keybuf);
    free(p);
}

const char *dp_error(const dp_profile *p) { return p->err; }
uint32_t dp_runs(const dp_profile *p) { return p->nruns; }
const dp_input *dp_input_at(const dp_profile *p, uint32_t run) { return &p->in[run]; }
size_t dp_nrows(const dp_profile *p) { return p->nrows; }
dp_row *dp_row_at(dp_profile *p, size_t i) { return &p->rows[i]; }

/* ---- Rows ---------------------------------------------------------------- */

static size_t put(char *buf, size_t at, const char *s, size_t n) {
    if (n > LT_MAX_STRING) n = LT_MAX_STRING;
    memcpy(buf + at, s, n);
    buf[at + n] = '\0';
    return at + n + 1;
}

/* Key: kind, then program, thread, phase, name and file, NUL-separated. */
static size_t make_key(char *buf, uint8_t kind, const char *program, const char *thread,
                       const char *phase, const char *name, size_t nlen, const char *file) {
    size_t at = 0;
    buf[at++] = (char)('0' + kind);
    at = put(buf, at, program, strlen(program));
    at = put(buf, at, thread, strlen(thread));
    at = put(buf, at, phase, strlen(phase));
    at = put(buf, at, name, nlen);
    return put(buf, at, file, strlen(file)) - 1;
}

/* Points the row's fields into its stored key. */
static void row_fields(dp_row *w, const char *key) {
    const char *s = key + 1;
    w->kind = (uint8_t)(key[0] - '0');
    w->program = s;
    w->thread = s += strlen(s) + 1;
    w->phase = s += strlen(s) + 1;
    w->name = s += strlen(s) + 1;
    w->file = s + strlen(s) + 1;
}

static long row_new(dp_profile *p, long idx, uint32_t line) {
    if ((size_t)idx >= p->caprows) {
        size_t cap = p->caprows ? p->caprows * 2 : 256;
        dp_row *rows = realloc(p->rows, cap * sizeof *rows);
        if (!rows) return -1;
        p->rows = rows;
        p->caprows = cap;
    }
    dp_row *w = &p->rows[idx];
    memset(w, 0, sizeof *w);
    p->nrows = (size_t)idx + 1;
    w->calls = calloc(p->nruns, sizeof *w->calls);
    w->total = calloc(p->nruns, sizeof *w->total);
    w->self = calloc(p->nruns, sizeof *w->self);
    w->p50 = calloc(p->nruns, sizeof *w->p50);
    w->s50 = calloc(p->nruns, sizeof *w->s50);
    if (!w->calls || !w->total || !w->self || !w->p50 || !w->s50) return -1;
    w->key = cv_map_key(p->keys, (size_t)idx, &w->keylen);
    row_fields(w, w->key);
    w->line = line;
    return idx;
}

static long row_get(dp_profile *p, uint8_t kind, const char *program, const char *thread,
                    const char *phase, const char *name, size_t nlen, const char *file,
                    uint32_t line) {
    size_t klen = make_key(p->keybuf, kind, program, thread, phase, name, nlen, file);
    int added;
    long idx = cv_map_get(p->keys, p->keybuf, klen, &added);
    if (idx < 0 || !added) return idx;
    return row_new(p, idx, line);
}

static int row_add(dp_row *w, uint64_t v, uint64_t total, uint64_t self, uint32_t run) {
    if (ds_hist_add(&w->cur, v, 1) || ds_hist_add(&w->scur, self, 1)) return -1;
    w->calls[run]++;
    w->total[run] += total;
    w->self[run] += self;
    return 0;
}

/* ---- Per-file state ------------------------------------------------------ */

static int grow_arr(void **arr, uint32_t *cap, uint32_t want, size_t elem) {
    if (want <= *cap) return 0;
    uint32_t n = *cap ? *cap : 8;
    while (n < want) n *= 2;
    void *a = realloc(*arr, (size_t)n * elem);
    if (!a) return -1;
    memset((char *)a + (size_t)*cap * elem, 0, (size_t)(n - *cap) * elem);
    *arr = a;
    *cap = n;
    return 0;
}

static void unit_free(unit *u) {
    free(u->program);
    free(u->thread);
    free(u->func);
    free(u->op);
    free(u->op_phase);
}

static int unit_cover(unit *u, uint32_t loc) {
    if (loc < u->nlocs) return 0;
    uint32_t n = u->nlocs, n2 = u->nlocs, n3 = u->nlocs;
    if (grow_arr((void **)&u->func, &n, loc + 1, sizeof *u->func) ||
        grow_arr((void **)&u->op, &n2, loc + 1, sizeof *u->op) ||
        grow_arr((void **)&u->op_phase, &n3, loc + 1, sizeof *u->op_phase))
        return -1;
    u->nlocs = n;
    return 0;
}

static void free_procs(dp_profile *p) {
    for (uint32_t i = 0; i < p->nprocs; i++) {
        proc *pr = &p->procs[i];
        for (uint32_t t = 0; t < pr->nthreads; t++) {
            free(pr->threads[t].stack);
            free(pr->threads[t].act.keys);
            free(pr->threads[t].act.counts);
            unit_free(&pr->threads[t].own_unit);
        }
        free(pr->threads);
        unit_free(&pr->u);
    }
    free(p->procs);
    p->procs = NULL;
    p->nprocs = 0;
}

static char *program_of(const lt_reader *r, uint32_t process) {
    const lt_process *pr = lt_reader_process(r, process);
    const char *prog = pr && pr->program && *pr->program ? pr->program : "?";
    const char *base = strrchr(prog, '/');
    return strdup(base && base[1] ? base + 1 : prog);
}

static char *thread_label(const lt_reader *r, uint32_t process, uint32_t thread) {
    const lt_thread *t = lt_reader_thread(r, process, thread);
    if (t && t->name && *t->name) return strdup(t->name);
    char buf[32];
    snprintf(buf, sizeof buf, "thread %u", thread);
    return strdup(buf);
}

static proc *proc_of(dp_profile *p, uint32_t process) {
    if (process >= p->nprocs &&
        grow_arr((void **)&p->procs, &p->nprocs, process + 1, sizeof *p->procs))
        return NULL;
    proc *pr = &p->procs[process];
    if (!pr->u.program) {
        pr->u.program = program_of(p->r, process);
        pr->u.thread = strdup("");
        if (!pr->u.program || !pr->u.thread) return NULL;
    }
    return pr;
}

static stream *stream_of(dp_profile *p, proc *pr, uint32_t process, uint32_t thread) {
    if (thread >= pr->nthreads &&
        grow_arr((void **)&pr->threads, &pr->nthreads, thread + 1, sizeof *pr->threads))
        return NULL;
    stream *s = &pr->threads[thread];
    if (s->ready) return s;
    if (p->o.by_thread) {
        s->own_unit.program = strdup(pr->u.program);
        s->own_unit.thread = thread_label(p->r, process, thread);
        if (!s->own_unit.program || !s->own_unit.thread) return NULL;
    }
    s->ready = 1;
    return s;
}

/* ---- Open activations per location --------------------------------------- */

static uint32_t *act_slot(active *a, uint32_t loc) {
    uint32_t key = loc + 1, h = (key * 2654435761u) & (a->cap - 1);
    while (a->keys[h] && a->keys[h] != key) h = (h + 1) & (a->cap - 1);
    if (!a->keys[h]) {
        a->keys[h] = key;
        a->used++;
    }
    return &a->counts[h];
}

/* Rebuilds the table with the open locations only, sized for 4 times as
 * many: its size follows the open activations, not the locations seen. */
static int act_grow(active *a) {
    active b = {0};
    uint32_t live = 0;
    for (uint32_t i = 0; i < a->cap; i++) live += a->keys[i] && a->counts[i];
    /* From 8 slots: a trace of a million threads with a zone or two each
     * keeps 64 bytes per thread here, not 512. */
    for (b.cap = 8; b.cap < 4 * (live + 1); b.cap *= 2) {}
    b.keys = calloc(b.cap, sizeof *b.keys);
    b.counts = calloc(b.cap, sizeof *b.counts);
    if (!b.keys || !b.counts) {
        free(b.keys);
        free(b.counts);
        return -1;
    }
    for (uint32_t i = 0; i < a->cap; i++)
        if (a->keys[i] && a->counts[i]) *act_slot(&b, a->keys[i] - 1) = a->counts[i];
    free(a->keys);
    free(a->counts);
    *a = b;
    return 0;
}

/* The count of open activations of loc; NULL on out-of-memory. */
static uint32_t *act_count(active *a, uint32_t loc) {
    if ((a->used + 1) * 2 > a->cap && act_grow(a)) return NULL;
    return act_slot(a, loc);
}

/* ---- Events -------------------------------------------------------------- */

static int on_begin(dp_profile *p, const lt_event *ev) {
    proc *pr = proc_of(p, ev->process);
    stream *s = pr ? stream_of(p, pr, ev->process, ev->thread) : NULL;
    if (!s) return -1;
    if (s->n == s->cap && grow_arr((void **)&s->stack, &s->cap, s->n + 1, sizeof *s->stack))
        return -1;
    uint32_t *cnt = act_count(&s->act, ev->loc);
    if (!cnt) return -1;
    s->stack[s->n++] = (frame){ev->loc, pr->phase, ++*cnt == 1};
    return 0;
}

/* The row of a zone: cached per location unless the zone was renamed. */
static long zone_row(dp_profile *p, unit *u, const lt_event *ev, uint8_t kind,
                     uint32_t phase) {
    int cached = !ev->name && !unit_cover(u, ev->loc);
    long *cache = kind == DP_FUNC ? u->func : u->op;
    if (cached && cache[ev->loc] && (kind == DP_FUNC || u->op_phase[ev->loc] == phase + 1))
        return cache[ev->loc] - 1;
    const lt_loc *loc = lt_reader_loc(p->r, ev->process, ev->loc);
    const char *name;
    size_t nlen;
    cv_zone_name(ev, loc, &name, &nlen);
    const char *ph = kind == DP_OP ? cv_map_key(p->phases, phase, NULL) : "";
    long row = row_get(p, kind, u->program, u->thread, ph, name, nlen,
                       loc && loc->file ? loc->file : "", loc ? loc->line : 0);
    if (row >= 0 && cached) {
        cache[ev->loc] = row + 1;
        if (kind == DP_OP) u->op_phase[ev->loc] = phase + 1;
    }
    return row;
}

static int on_end(dp_profile *p, const lt_event *ev, dp_input *in) {
    proc *pr = ev->process < p->nprocs ? &p->procs[ev->process] : NULL;
    stream *s = pr && ev->thread < pr->nthreads ? &pr->threads[ev->thread] : NULL;
    if (!s || !s->n) return 0; /* cannot happen with a valid reader */
    frame f = s->stack[--s->n];
    uint32_t *cnt = act_count(&s->act, f.loc);
    if (!cnt) return -1;
    --*cnt;
    if (ev->flags & (LT_EVF_ABORTED | LT_EVF_UNCLOSED)) {
        in->skipped++;
        return 0;
    }
    in->zones++;
    uint64_t dur = ev->ts - ev->begin_ts;
    uint64_t self = dur >= ev->child_ns ? dur - ev->child_ns : 0;
    uint64_t v = p->o.self ? self : dur, total = f.outer ? dur : 0;
    unit *u = p->o.by_thread ? &s->own_unit : &pr->u;
    long row = zone_row(p, u, ev, DP_FUNC, 0);
    if (row < 0 || row_add(&p->rows[row], v, total, self, p->run)) return -1;
    if (!p->with_phases) return 0;
    row = zone_row(p, u, ev, DP_OP, f.phase);
    return row < 0 || row_add(&p->rows[row], v, total, self, p->run) ? -1 : 0;
}

/* Ends the process's current phase at ts (one occurrence of its row). */
static int phase_close(dp_profile *p, proc *pr, uint64_t ts) {
    if (!pr->seen || ts == pr->phase_start) return 0; /* no time: no occurrence */
    const char *name = cv_map_key(p->phases, pr->phase, NULL);
    long row = row_get(p, DP_PHASE, pr->u.program, "", name, name, strlen(name), "", 0);
    uint64_t dur = ts - pr->phase_start;
    return row < 0 || row_add(&p->rows[row], dur, dur, dur, p->run) ? -1 : 0;
}

static int on_signpost(dp_profile *p, const lt_event *ev, dp_input *in) {
    proc *pr = proc_of(p, ev->process);
    if (!pr) return -1;
    in->signposts++;
    if (phase_close(p, pr, ev->ts)) return -1;
    int added;
    size_t n = ev->text_len > LT_MAX_STRING ? LT_MAX_STRING : ev->text_len;
    long id = cv_map_get(p->phases, ev->text, n, &added);
    if (id < 0) return -1;
    pr->phase = (uint32_t)id;
    pr->phase_start = ev->ts;
    pr->seen = 1;
    return 0;
}

static int on_event(dp_profile *p, const lt_event *ev, dp_input *in) {
    if (p->with_phases) {
        proc *pr = proc_of(p, ev->process);
        if (!pr) return -1;
        if (!pr->seen) {
            pr->seen = 1;
            pr->phase_start = ev->ts;
        }
        pr->last_ts = ev->ts;
    }
    switch (ev->type) {
    case LT_EV_ZONE_BEGIN: return on_begin(p, ev);
    case LT_EV_ZONE_END: return on_end(p, ev, in);
    case LT_EV_SIGNPOST: return p->with_phases ? on_signpost(p, ev, in) : 0;
    case LT_EV_LOST: in->lost += ev->count; return 0;
    default: return 0;
    }
}

/* ---- Runs ---------------------------------------------------------------- */

/* Closes the run: per-run medians, then the run's histograms join the
 * side's. */
static int end_run(dp_profile *p) {
    for (uint32_t i = 1; p->with_phases && i < p->nprocs; i++)
        if (p->procs[i].u.program && phase_close(p, &p->procs[i], p->procs[i].last_ts))
            return -1;
    for (size_t i = 0; i < p->nrows; i++) {
        dp_row *w = &p->rows[i];
        if (!w->cur.count) continue;
        w->p50[p->run] = ds_hist_quantile(&w->cur, 0.5);
        w->s50[p->run] = ds_hist_quantile(&w->scur, 0.5);
        if (ds_hist_move(&w->hist, &w->cur) || ds_hist_move(&w->shist, &w->scur)) return -1;
    }
    return 0;
}

/* Reads the selected streams to their end. Returns 0 or an exit code. */
static int read_events(dp_profile *p, dp_input *in) {
    lt_event ev;
    int rc;
    while ((rc = lt_reader_next(p->r, &ev)) > 0)
        if (on_event(p, &ev, in)) {
            snprintf(p->err, sizeof p->err, "out of memory");
            return CV_EXIT_INPUT;
        }
    if (rc < 0) {
        snprintf(p->err, sizeof p->err, "%s: %s", in->path, lt_reader_error(p->r));
        return cv_exit_for(rc) ? cv_exit_for(rc) : CV_EXIT_CORRUPT;
    }
    return 0;
}

/* Without phases the order across threads does not matter: each stream is
 * read on its own, which spares the reader its merge of every stream by
 * time (about half its work). */
static int read_streams(dp_profile *p, dp_input *in) {
    if (p->with_phases) return read_events(p, in);
    for (uint32_t pr = 1; pr <= lt_reader_nprocesses(p->r); pr++)
        for (uint32_t t = 1; t <= lt_reader_nthreads(p->r, pr); t++) {
            if (!lt_reader_thread(p->r, pr, t)) continue;
            int code = lt_reader_select(p->r, pr, t) ? CV_EXIT_INPUT : read_events(p, in);
            if (pr < p->nprocs && t < p->procs[pr].nthreads) { /* read: its state goes */
                stream *s = &p->procs[pr].threads[t];
                free(s->stack);
                free(s->act.keys);
                free(s->act.counts);
                s->stack = NULL;
                s->act = (active){0};
                s->n = s->cap = 0;
            }
            if (code) {
                if (!p->err[0]) snprintf(p->err, sizeof p->err, "%s: cannot select a thread", in->path);
                return code;
            }
        }
    return 0;
}

static int read_one(dp_profile *p, dp_input *in) {
    uint64_t msgs = 1;
    p->r = in->r;
    /* A complete file whose trailer counts no message has no signpost:
     * the phase rows (which would repeat the function rows) are skipped. */
    p->with_phases = !lt_reader_info(p->r)->complete ||
                     !lt_reader_total(p->r, "messages", &msgs) || msgs > 0;
    int code = read_streams(p, in);
    if (code) return code;
    uint64_t lost;
    if (lt_reader_total(p->r, "lost_events", &lost) && lost > in->lost) in->lost = lost;
    if (end_run(p)) {
        snprintf(p->err, sizeof p->err, "out of memory");
        return CV_EXIT_INPUT;
    }
    return 0;
}

int dp_read(dp_profile *p) {
    for (p->run = 0; p->run < p->nruns; p->run++) {
        dp_input *in = &p->in[p->run];
        int code = read_one(p, in);
        free_procs(p);
        lt_reader_free(in->r);
        in->r = NULL;
        p->r = NULL;
        if (code) return code;
    }
    return 0;
}
