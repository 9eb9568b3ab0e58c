/* export_lines.c -- tracy-export -f lines: line_profiler's report from the
 * line zones `python -m tracy -l` records (kind "line", named "QUAL:LINE",
 * with the file and line of the code object). Per line: hits (zones), time
 * (their durations, calls made from the line included, as line_profiler
 * counts), per hit and share of the function's total; the source beside
 * the figures, read from the recorded path, unless it changed since the
 * run (the size and mtime `-l` records, FORMAT.md "Source stamps") or
 * cannot be read: then the figures alone and a line that says why.
 * One pass; memory grows with distinct lines (and threads with
 * --per-thread), never with zones. */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>

#include "convert/export/export.h"
#include "convert/export/lines_source.h"

#define PROFILED_NAME "tracy: profiled"

typedef struct lcount {
    uint64_t hits, ns;
} lcount;

/* Counters of one stream (all threads merged: one stream). */
typedef struct lstream {
    lcount *c;   /* by ct function */
    uint32_t n;
} lstream;

typedef struct lline {
    uint32_t line;
    uint64_t hits, ns;
} lline;

/* One function's lines (per thread with --per-thread). */
typedef struct lgroup {
    uint32_t stream;       /* dense thread index + 1, 0 when merged */
    const char *file;      /* the tree's */
    char *qual;
    uint32_t def_line;     /* co_firstlineno, 0 when unknown */
    lline *lines;
    size_t n, cap;
    uint64_t total;
} lgroup;

struct ex_lineset {
    ex_ctx *x;
    int per_thread;
    int limited;           /* only the functions @tracy.profile marked */
    lstream *streams;
    uint32_t nstreams;     /* 1 merged, else threads of the trace + 1 */
    uint32_t *first;       /* [p]: dense index of thread (p, 1) */
    uint32_t nprocs;
    lgroup *groups;
    size_t ngroups;
    cv_map *gmap;
};

static int count_line(lstream *s, uint32_t f, uint64_t dur) {
    if (f >= s->n) {
        uint32_t n = s->n ? s->n : 64;
        while (n <= f) n *= 2;
        lcount *c = realloc(s->c, (size_t)n * sizeof *c);
        if (!c) return -1;
        memset(c + s->n, 0, (size_t)(n - s->n) * sizeof *c);
        s->c = c;
        s->n = n;
    }
    s->c[f].hits++;
    s->c[f].ns += dur;
    return 0;
}

static int init_streams(ex_lineset *s) {
    lt_reader *r = s->x->r;
    s->nstreams = 1;
    if (!s->per_thread) return (s->streams = calloc(1, sizeof *s->streams)) ? 0 : -1;
    s->nprocs = lt_reader_nprocesses(r);
    s->first = calloc((size_t)s->nprocs + 2, sizeof *s->first);
    if (!s->first) return -1;
    for (uint32_t p = 1; p <= s->nprocs; p++) {
        s->first[p] = s->nstreams;
        s->nstreams += lt_reader_nthreads(r, p);
    }
    s->first[s->nprocs + 1] = s->nstreams;
    s->streams = calloc(s->nstreams, sizeof *s->streams);
    return s->streams ? 0 : -1;
}

/* The counters of an event's thread (stream 0: merged, or not in the
 * metadata). */
static lstream *stream_for(ex_lineset *s, const lt_event *ev) {
    if (s->nstreams == 1 || ev->process == 0 || ev->process > s->nprocs) return &s->streams[0];
    uint32_t i = s->first[ev->process] + ev->thread - 1;
    return ev->thread && i < s->first[ev->process + 1] ? &s->streams[i] : &s->streams[0];
}

int ex_lines_event(ex_lineset *s, const lt_event *ev) {
    if (ev->type != LT_EV_ZONE_END) return 0;
    long f = ct_tree_func_of(s->x->tree, ev->process, ev->loc);
    if (f < 0) return -1;
    if (ct_tree_func(s->x->tree, (size_t)f)->kind != LT_LOC_LINE) return 0;
    return count_line(stream_for(s, ev), (uint32_t)f, ev->ts - ev->begin_ts);
}

/* The pass: hits and time of every line location. Returns 0 or -1. */
static int count_all(ex_lineset *s) {
    lt_event ev;
    while (ex_next(s->x, &ev) > 0)
        if (ex_lines_event(s, &ev)) return -1;
    return 0;
}

/* ---- Functions ------------------------------------------------------------ */

/* The function part of a line location's name "QUAL:LINE". */
static size_t qual_len(const char *name) {
    const char *c = strrchr(name, ':');
    return c ? (size_t)(c - name) : strlen(name);
}

static char *join_key(uint32_t stream, const char *file, const char *qual, size_t qlen,
                      size_t *klen) {
    size_t flen = strlen(file);
    char *k = malloc(4 + flen + 1 + qlen + 1);
    if (!k) return NULL;
    memcpy(k, &stream, 4);
    memcpy(k + 4, file, flen + 1);
    memcpy(k + 5 + flen, qual, qlen);
    *klen = 5 + flen + qlen;
    return k;
}

static lgroup *group_of(ex_lineset *s, uint32_t stream, const ct_func *fn) {
    size_t qlen = qual_len(fn->name), klen;
    char *key = join_key(stream, fn->file, fn->name, qlen, &klen);
    if (!key) return NULL;
    int added;
    long g = cv_map_get(s->gmap, key, klen, &added);
    free(key);
    if (g < 0) return NULL;
    if (added) {
        lgroup *p = realloc(s->groups, ((size_t)g + 1) * sizeof *p);
        if (!p) return NULL;
        s->groups = p;
        memset(&p[g], 0, sizeof p[g]);
        p[g].stream = stream;
        p[g].file = fn->file;
        p[g].qual = strndup(fn->name, qlen);
        if (!p[g].qual) return NULL;
        s->ngroups = (size_t)g + 1;
    }
    return &s->groups[g];
}

static int add_line(lgroup *g, uint32_t line, const lcount *c) {
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        lline *p = realloc(g->lines, cap * sizeof *p);
        if (!p) return -1;
        g->lines = p;
        g->cap = cap;
    }
    g->lines[g->n++] = (lline){line, c->hits, c->ns};
    g->total += c->ns;
    return 0;
}

/* Each function's first line: the Python location with its file and name
 * (the function's own zones). */
/* A Python location's function name: --label file,line appends
 * " [FILE:LINE]" (or " [LINE]", " [FILE]"), which line locations lack. */
static size_t python_name_len(const char *name) {
    size_t n = strlen(name);
    const char *open = strstr(name, " [");
    return n && name[n - 1] == ']' && open ? (size_t)(open - name) : n;
}

static void find_def_lines(ex_lineset *s) {
    const ct_tree *t = s->x->tree;
    cv_map *m = cv_map_new();
    if (!m) return;
    size_t nf = ct_tree_nfuncs(t);
    uint32_t *line = calloc(nf + 1, sizeof *line);
    for (size_t f = 0; f < nf && line; f++) {
        const ct_func *fn = ct_tree_func(t, f);
        if (fn->kind != LT_LOC_PYTHON) continue;
        size_t klen;
        char *key = join_key(0, fn->file, fn->name, python_name_len(fn->name), &klen);
        int added;
        long i = key ? cv_map_get(m, key, klen, &added) : -1;
        free(key);
        if (i >= 0 && (added || fn->line < line[i])) line[i] = fn->line;
    }
    for (size_t g = 0; g < s->ngroups && line; g++) {
        lgroup *gr = &s->groups[g];
        size_t klen;
        char *key = join_key(0, gr->file, gr->qual, strlen(gr->qual), &klen);
        int added;
        long i = key ? cv_map_get(m, key, klen, &added) : -1;
        free(key);
        if (i >= 0 && !added) gr->def_line = line[i];
    }
    free(line);
    cv_map_free(m);
}

static int by_line(const void *a, const void *b) {
    const lline *x = a, *y = b;
    return x->line < y->line ? -1 : x->line > y->line;
}

static int group_cmp_time(const void *a, const void *b) {
    const lgroup *x = a, *y = b;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    return strcmp(x->qual, y->qual);
}

static int group_cmp_file(const void *a, const void *b) {
    const lgroup *x = a, *y = b;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    int c = strcmp(x->file, y->file);
    if (c) return c;
    uint32_t lx = x->n ? x->lines[0].line : 0, ly = y->n ? y->lines[0].line : 0;
    if (x->def_line != y->def_line) return x->def_line < y->def_line ? -1 : 1;
    return lx < ly ? -1 : lx > ly;
}

/* The functions @tracy.profile marked under -l (keys: line, file), NULL
 * when none (or out of memory: then every function is shown). */
static cv_map *profiled_marks(lt_reader *r) {
    cv_map *m = NULL;
    uint32_t p = 0, id = 0;
    const lt_loc *l;
    while ((l = ls_next_internal(r, &p, &id, PROFILED_NAME)) != NULL) {
        if (strcmp(l->name, PROFILED_NAME) != 0 || !l->file) continue;
        size_t klen;
        char *key = join_key(l->line, l->file, "", 0, &klen);
        int added;
        if (!key || (!m && !(m = cv_map_new())) || cv_map_get(m, key, klen, &added) < 0) {
            free(key);
            cv_map_free(m);
            return NULL;
        }
        free(key);
    }
    return m;
}

/* Whether group g is one of the marked functions. */
static int marked(cv_map *marks, const lgroup *g) {
    size_t klen;
    char *key = join_key(g->def_line, g->file, "", 0, &klen);
    int added = 0;
    long i = key ? cv_map_get(marks, key, klen, &added) : -1;
    free(key);
    return i >= 0 && !added;
}

/* Builds the functions from the counters; drops those --function leaves
 * out, and those not marked by @tracy.profile when some are (unless
 * `all`). Returns 0 or -1. */
static int build_groups(ex_lineset *s, const regex_t *rx, int sort_time, int all) {
    const ct_tree *t = s->x->tree;
    if (!(s->gmap = cv_map_new())) return -1;
    for (uint32_t st = 0; st < s->nstreams; st++) {
        lstream *ls = &s->streams[st];
        for (uint32_t f = 0; f < ls->n; f++) {
            if (!ls->c[f].hits) continue;
            const ct_func *fn = ct_tree_func(t, f);
            lgroup *g = group_of(s, s->nstreams == 1 ? 0 : st, fn);
            if (!g || add_line(g, fn->line, &ls->c[f])) return -1;
        }
    }
    find_def_lines(s);
    cv_map *marks = all ? NULL : profiled_marks(s->x->r);
    s->limited = marks != NULL;
    size_t k = 0;
    for (size_t g = 0; g < s->ngroups; g++) {
        lgroup *gr = &s->groups[g];
        if ((rx && regexec(rx, gr->qual, 0, NULL, 0) != 0) || (marks && !marked(marks, gr))) {
            free(gr->qual);
            free(gr->lines);
            continue;
        }
        qsort(gr->lines, gr->n, sizeof *gr->lines, by_line);
        s->groups[k++] = *gr;
    }
    s->ngroups = k;
    cv_map_free(marks);
    if (k) qsort(s->groups, k, sizeof *s->groups,
                 sort_time ? group_cmp_time : group_cmp_file);
    return 0;
}

/* ---- Report ----------------------------------------------------------------- */

static void row(cv_out *o, uint32_t line, const lline *l, uint64_t total, const char *text) {
    char hits[24] = "", time[32] = "", per[32] = "", pct[16] = "";
    if (l) {
        snprintf(hits, sizeof hits, "%llu", (unsigned long long)l->hits);
        snprintf(time, sizeof time, "%5.1f", (double)l->ns / 1e3);
        snprintf(per, sizeof per, "%5.1f", (double)l->ns / 1e3 / (double)l->hits);
        if (total) snprintf(pct, sizeof pct, "%5.1f", 100.0 * (double)l->ns / (double)total);
    }
    char buf[128];
    int n = snprintf(buf, sizeof buf, "%6u %9s %12s %8s %8s", line, hits, time, per, pct);
    while (n > 0 && buf[n - 1] == ' ' && !(text && *text)) n--; /* no trailing blanks */
    cv_out_write(o, buf, (size_t)n);
    if (text && *text) {
        cv_out_write(o, "  ", 2);
        cv_out_text(o, text, strlen(text));
    }
    cv_out_ch(o, '\n');
}

static void thread_line(ex_lineset *s, uint32_t stream) {
    lt_reader *r = s->x->r;
    for (uint32_t p = 1; p <= s->nprocs; p++) {
        if (stream < s->first[p] || stream >= s->first[p + 1]) continue;
        uint32_t t = stream - s->first[p] + 1;
        const lt_process *pr = lt_reader_process(r, p);
        const lt_thread *th = lt_reader_thread(r, p, t);
        cv_out_printf(&s->x->out, "Thread: %u:%u", p, t);
        if (th && th->name && *th->name) {
            cv_out_ch(&s->x->out, ' ');
            cv_out_text(&s->x->out, th->name, strlen(th->name));
        }
        cv_out_printf(&s->x->out, " (pid %llu", (unsigned long long)(pr ? pr->pid : 0));
        if (pr && pr->rank >= 0) cv_out_printf(&s->x->out, ", rank %lld", (long long)pr->rank);
        cv_out_str(&s->x->out, ")\n");
    }
}

static void show_group(ex_lineset *s, lgroup *g, ls_source *src) {
    cv_out *o = &s->x->out;
    static const char header[] = "Line #      Hits         Time  Per Hit   % Time  Line Contents";
    cv_out_printf(o, "Total time: %g s\nFile: ", (double)g->total / 1e9);
    cv_out_text(o, g->file, strlen(g->file));
    cv_out_str(o, "\nFunction: ");
    cv_out_text(o, g->qual, strlen(g->qual));
    uint32_t first = g->def_line ? g->def_line : g->lines[0].line;
    if (g->lines[0].line < first) first = g->lines[0].line;
    cv_out_printf(o, " at line %u\n", first);
    if (g->stream) thread_line(s, g->stream);
    int text = !src->why[0] && src->line;
    if (!text) cv_out_printf(o, "(%s)\n", src->why);
    else if (src->unchecked)
        cv_out_str(o, "(source not checked: the trace holds no size and mtime for it)\n");
    uint32_t last = g->lines[g->n - 1].line;
    if (text) last = (uint32_t)ls_block_end(src, first, last);
    if (text && last > src->n) {
        cv_out_str(o, "(source not shown: the recorded lines go past the file's end)\n");
        text = 0;
        last = g->lines[g->n - 1].line;
    }
    cv_out_printf(o, "\n%s\n", header);
    for (size_t i = 0; i < sizeof header - 1; i++) cv_out_ch(o, '=');
    cv_out_ch(o, '\n');
    size_t k = 0;
    for (uint32_t line = first; line <= last; line++) {
        while (k < g->n && g->lines[k].line < line) k++;
        const lline *l = k < g->n && g->lines[k].line == line ? &g->lines[k] : NULL;
        if (!text && !l) continue;
        row(o, line, l, g->total, text ? src->line[line - 1] : NULL);
    }
    cv_out_ch(o, '\n');
}

void ex_lines_free(ex_lineset *s) {
    if (!s) return;
    for (uint32_t i = 0; i < s->nstreams && s->streams; i++) free(s->streams[i].c);
    free(s->streams);
    free(s->first);
    for (size_t g = 0; g < s->ngroups; g++) {
        free(s->groups[g].qual);
        free(s->groups[g].lines);
    }
    free(s->groups);
    cv_map_free(s->gmap);
    free(s);
}

ex_lineset *ex_lines_new(ex_ctx *x, int per_thread) {
    ex_lineset *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->x = x;
    s->per_thread = per_thread;
    if (init_streams(s)) {
        ex_lines_free(s);
        return NULL;
    }
    return s;
}

int ex_lines(ex_ctx *x) {
    ex_lineset *s = ex_lines_new(x, x->o->per_thread);
    regex_t rx;
    int have_rx = x->o->function && regcomp(&rx, x->o->function, REG_EXTENDED | REG_NOSUB) == 0;
    int rc = -1;
    ls_source src;
    memset(&src, 0, sizeof src);
    if (!s || count_all(s) || build_groups(s, have_rx ? &rx : NULL, x->o->sort_time, x->o->all_functions)) {
        cv_err("out of memory");
        goto out;
    }
    rc = 0;
    if (x->read_exit) goto out;
    if (s->ngroups == 0 && !cv_map_size(s->gmap)) {
        cv_err("%s: no line zones in the trace (record with python -m tracy -l)", x->o->path);
        rc = CV_EXIT_INPUT;
        goto out;
    }
    if (s->ngroups == 0) {
        if (x->o->function)
            cv_err("--function '%s' matches no function of the line zones%s", x->o->function,
                   s->limited ? " decorated with @tracy.profile (--all-functions: all)" : "");
        else
            cv_err("no function decorated with @tracy.profile has line zones "
                   "(--all-functions: all)");
        rc = CV_EXIT_USAGE;
        goto out;
    }
    cv_out_str(&x->out, "Timer unit: 1e-06 s\n\n");
    if (s->limited)
        cv_out_str(&x->out, "(functions decorated with @tracy.profile only; --all-functions "
                            "for every one)\n\n");
    size_t n = x->o->top && x->o->top < s->ngroups ? (size_t)x->o->top : s->ngroups;
    for (size_t g = 0; g < n && !x->out.err; g++) {
        if (ls_source_load(&src, x->r, s->groups[g].file)) {
            cv_err("out of memory");
            rc = -1;
            break;
        }
        show_group(s, &s->groups[g], &src);
    }
out:
    ls_source_drop(&src);
    if (have_rx) regfree(&rx);
    ex_lines_free(s);
    return rc;
}

/* ---- The HTML report's line view ---------------------------------------- */

#define JSON_TEXT_MAX 240   /* bytes of a source line in the report */
#define JSON_LINES_MAX 400  /* lines of a function in the report */

int ex_lines_json(ex_lineset *s, size_t max_funcs) {
    cv_out *o = &s->x->out;
    if (build_groups(s, NULL, 1, 0)) return -1;
    ls_source src;
    memset(&src, 0, sizeof src);
    cv_out_str(o, "\"lines\":[");
    size_t n = s->ngroups < max_funcs ? s->ngroups : max_funcs;
    int rc = 0;
    for (size_t gi = 0; gi < n && !rc; gi++) {
        lgroup *g = &s->groups[gi];
        if ((rc = ls_source_load(&src, s->x->r, g->file))) break;
        uint32_t first = g->def_line && g->def_line < g->lines[0].line ? g->def_line
                                                                       : g->lines[0].line;
        uint32_t last = g->lines[g->n - 1].line;
        int text = !src.why[0] && src.line;
        if (text) last = (uint32_t)ls_block_end(&src, first, last);
        if (text && last > src.n) text = 0, last = g->lines[g->n - 1].line;
        if (last - first >= JSON_LINES_MAX) text = 0; /* hit lines only */
        cv_out_str(o, gi ? ",\n{\"file\":" : "\n{\"file\":");
        ex_html_str(o, g->file);
        cv_out_str(o, ",\"func\":");
        ex_html_str(o, g->qual);
        cv_out_printf(o, ",\"first\":%u,\"total\":%llu,\"note\":", first,
                      (unsigned long long)g->total);
        ex_html_str(o, text ? (src.unchecked ? "source not checked: the trace holds no size "
                                               "and mtime for it" : "")
                            : src.why[0] ? src.why : "source lines left out (too many)");
        cv_out_str(o, ",\"rows\":[");
        size_t k = 0, w = 0;
        for (uint32_t line = first; line <= last; line++) {
            while (k < g->n && g->lines[k].line < line) k++;
            const lline *l = k < g->n && g->lines[k].line == line ? &g->lines[k] : NULL;
            if (!text && !l) continue;
            cv_out_printf(o, "%s[%u,%llu,%llu,", w++ ? "," : "", line,
                          (unsigned long long)(l ? l->hits : 0),
                          (unsigned long long)(l ? l->ns : 0));
            if (text) {
                char cut[JSON_TEXT_MAX + 1];
                snprintf(cut, sizeof cut, "%s", src.line[line - 1]);
                ex_html_str(o, cut);
            } else {
                cv_out_str(o, "null");
            }
            cv_out_ch(o, ']');
        }
        cv_out_str(o, "]}");
    }
    cv_out_ch(o, ']');
    ls_source_drop(&src);
    return rc;
}
