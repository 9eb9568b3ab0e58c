/* csv.c -- tracy-csv: the op report (one row per zone, signpost and message)
 * and Tracy csvexport's --stats, --unwrap and --messages outputs. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "convert/calltree.h"
#include "convert/convert.h"

enum csv_mode { MODE_REPORT, MODE_STATS, MODE_UNWRAP, MODE_MESSAGES };

typedef struct csv_opts {
    const char *path, *output;
    int mode, self, case_sensitive, allow_truncated;
    const char *filter;
    size_t filter_len;
    char sep;
    uint64_t min_dur;
    uint64_t max_depth; /* levels kept, top level = 1; 0: no limit */
    const char *thread, *process;
} csv_opts;

typedef struct fstat_ {
    uint64_t count, total, min, max;
    double sum, sumsq; /* of every zone's time, for std_ns */
} fstat_;

typedef struct csv_state {
    const csv_opts *o;
    lt_reader *r;
    cv_out out;
    cv_zones *zones;
    uint64_t first_ts;
    /* Stream filter: keep[process][thread], NULL when every stream is kept. */
    unsigned char **keep;
    uint32_t nproc;
    cv_map *funcs;
    fstat_ *stats;
    size_t nstats;
    ct_active *active; /* --stats: which zones are outermost */
} csv_state;

static const char usage_text[] =
    "Usage: tracy-csv [OPTIONS] TRACE.tracy\n"
    "Converts a .tracy file to CSV on standard output (or -o FILE).\n"
    "\n"
    "Outputs (default: the op report, one row per zone, signpost and message):\n"
    "      --stats            per-function statistics: name,src_file,src_line,\n"
    "                         total_ns,total_perc,counts,mean_ns,min_ns,max_ns,std_ns\n"
    "                         (total_ns counts the outermost call of a recursion)\n"
    "  -u, --unwrap           one row per zone: name,src_file,src_line,\n"
    "                         ns_since_start,exec_time_ns,thread,value\n"
    "  -m, --messages         one row per message: MessageName,total_ns\n"
    "  -e, --self             use self time (zone time less its children's)\n"
    "\n"
    "Filters:\n"
    "  -f, --filter TEXT      keep zones whose name contains TEXT\n"
    "  -c, --case             --filter is case sensitive\n"
    "      --min-duration NS  keep zones lasting at least NS nanoseconds\n"
    "      --max-depth N      keep N levels of zones, the top level being 1, as\n"
    "                         python -m tracy --max-depth counts (0: no limit)\n"
    "      --thread T         keep the thread named T or with OS thread id T\n"
    "      --process P        keep the process with pid P or program P\n"
    "\n"
    "Other options:\n"
    "  -s, --sep SEP          field separator (one character, default ',')\n"
    "  -o, --output FILE      write to FILE instead of standard output\n"
    "      --allow-truncated  exit 0 on a truncated trace (still warns)\n"
    "  -h, --help             print this help and exit\n"
    "  -V, --version          print the version and exit\n"
    "\n"
    "Exit status: 0 ok, 1 usage, 2 cannot read input or not a trace,\n"
    "3 truncated input, 4 corrupt input, 5 cannot write output.\n";

/* ---- Filters ------------------------------------------------------------ */

static int contains(const char *s, size_t n, const char *pat, size_t m, int cs) {
    if (m == 0) return 1;
    for (size_t i = 0; i + m <= n; i++) {
        if (cs ? memcmp(s + i, pat, m) == 0 : strncasecmp(s + i, pat, m) == 0)
            return 1;
    }
    return 0;
}

static int process_matches(const lt_process *p, const char *want) {
    uint64_t v;
    if (cv_parse_u64(want, &v) == 0 && p->pid == v) return 1;
    if (!p->program) return 0;
    const char *base = strrchr(p->program, '/');
    return strcmp(p->program, want) == 0 || (base && strcmp(base + 1, want) == 0);
}

static int thread_matches(const lt_thread *t, const char *want) {
    uint64_t v;
    if (cv_parse_u64(want, &v) == 0 && t->tid == v) return 1;
    return t->name && strcmp(t->name, want) == 0;
}

/* Builds the per-stream keep table for --thread/--process. Returns how
 * many threads it keeps (1 without a table), or -1 on out-of-memory. */
static long build_keep(csv_state *s) {
    const csv_opts *o = s->o;
    long kept = 0;
    if (!o->thread && !o->process) return 1;
    s->nproc = lt_reader_nprocesses(s->r);
    s->keep = calloc(s->nproc + 1, sizeof *s->keep);
    if (!s->keep) return -1;
    for (uint32_t p = 1; p <= s->nproc; p++) {
        uint32_t nt = lt_reader_nthreads(s->r, p);
        const lt_process *pr = lt_reader_process(s->r, p);
        s->keep[p] = calloc(nt + 1, 1);
        if (!s->keep[p]) return -1;
        int pok = !o->process || (pr && process_matches(pr, o->process));
        for (uint32_t t = 1; t <= nt; t++) {
            const lt_thread *th = lt_reader_thread(s->r, p, t);
            s->keep[p][t] = pok && (!o->thread || (th && thread_matches(th, o->thread)));
            kept += s->keep[p][t];
        }
    }
    return kept;
}

/* A --thread or --process that selects nothing: one line, CV_EXIT_USAGE. */
static int selects_nothing(const csv_opts *o) {
    if (!o->process) return cv_usage_error("--thread: no thread '%s' in the trace", o->thread);
    if (!o->thread) return cv_usage_error("--process: no process '%s' in the trace", o->process);
    return cv_usage_error("--process and --thread together select no thread of the trace");
}

static int stream_kept(const csv_state *s, uint32_t p, uint32_t t) {
    if (!s->keep) return 1;
    if (p > s->nproc || !s->keep[p]) return 0;
    return t <= lt_reader_nthreads(s->r, p) && s->keep[p][t];
}

static int name_kept(const csv_state *s, const char *name, size_t len) {
    const csv_opts *o = s->o;
    return !o->filter || contains(name, len, o->filter, o->filter_len, o->case_sensitive);
}

/* ---- Rows --------------------------------------------------------------- */

static void field_sep(csv_state *s) { cv_out_ch(&s->out, s->o->sep); }

static void put_text(csv_state *s, const char *t, size_t n) {
    cv_out_csv(&s->out, t, n, s->o->sep);
    field_sep(s);
}

static void put_cstr(csv_state *s, const char *t) { put_text(s, t ? t : "", t ? strlen(t) : 0); }

static void put_u64(csv_state *s, uint64_t v) {
    cv_out_u64(&s->out, v);
    field_sep(s);
}

/* PROCESS, RANK, THREAD columns. */
static void put_who(csv_state *s, uint32_t process, uint32_t thread) {
    const lt_process *p = lt_reader_process(s->r, process);
    const lt_thread *t = lt_reader_thread(s->r, process, thread);
    put_u64(s, p ? p->pid : 0);
    if (p && p->rank >= 0) cv_out_i64(&s->out, p->rank);
    field_sep(s);
    put_u64(s, t ? t->tid : 0);
}

static void report_header(csv_state *s) {
    static const char *cols[] = {
        "OP CODE", "OP TYPE", "GLOBAL CALL COUNT", "PROCESS", "RANK", "THREAD",
        "ATTRIBUTES", "SRC FILE", "SRC LINE", "DEPTH", "HOST START TS",
        "HOST END TS", "HOST DURATION [ns]", "HOST SELF DURATION [ns]"};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) {
        if (i) field_sep(s);
        cv_out_csv(&s->out, cols[i], strlen(cols[i]), s->o->sep);
    }
    cv_out_ch(&s->out, '\n');
}

static void report_zone(csv_state *s, const lt_event *ev, const lt_loc *loc,
                        const char *name, size_t nlen, uint64_t num) {
    uint64_t dur = ev->ts - ev->begin_ts;
    put_text(s, name, nlen);
    put_cstr(s, cv_kind_name(loc ? loc->kind : 0));
    put_u64(s, num);
    put_who(s, ev->process, ev->thread);
    put_text(s, ev->text ? ev->text : "", ev->text ? ev->text_len : 0);
    put_cstr(s, loc ? loc->file : "");
    put_u64(s, loc ? loc->line : 0);
    put_u64(s, ev->depth);
    put_u64(s, ev->begin_ts);
    put_u64(s, ev->ts);
    put_u64(s, dur);
    cv_out_u64(&s->out, dur >= ev->child_ns ? dur - ev->child_ns : 0);
    cv_out_ch(&s->out, '\n');
}

/* A signpost or message row: only name, type, who, attributes and time. */
static void report_instant(csv_state *s, const lt_event *ev, const char *type) {
    int sp = ev->type == LT_EV_SIGNPOST;
    put_text(s, ev->text, ev->text_len);
    put_cstr(s, type);
    field_sep(s);
    put_who(s, ev->process, ev->thread);
    put_text(s, sp ? ev->text2 : "", sp ? ev->text2_len : 0);
    for (int i = 0; i < 3; i++) field_sep(s); /* SRC FILE, SRC LINE, DEPTH */
    cv_out_u64(&s->out, ev->ts);
    for (int i = 0; i < 3; i++) field_sep(s);
    cv_out_ch(&s->out, '\n');
}

static void unwrap_zone(csv_state *s, const lt_event *ev, const lt_loc *loc,
                        const char *name, size_t nlen, uint64_t t) {
    const lt_thread *th = lt_reader_thread(s->r, ev->process, ev->thread);
    put_text(s, name, nlen);
    put_cstr(s, loc ? loc->file : "");
    put_u64(s, loc ? loc->line : 0);
    put_u64(s, ev->begin_ts - s->first_ts);
    put_u64(s, t);
    put_u64(s, th ? th->tid : 0);
    cv_out_csv(&s->out, ev->text ? ev->text : "", ev->text ? ev->text_len : 0, s->o->sep);
    cv_out_ch(&s->out, '\n');
}

/* ---- Statistics --------------------------------------------------------- */

/* Counts a zone; `outer` is 0 when an enclosing zone of its thread has the
 * same location: its time is then inside that zone's and does not add to
 * total_ns (self times never overlap and always add). */
static int stats_add(csv_state *s, const lt_loc *loc, const char *name, size_t nlen,
                     uint64_t t, int outer) {
    char key[LT_MAX_STRING * 2 + 32];
    const char *file = loc && loc->file ? loc->file : "";
    size_t flen = strlen(file);
    if (nlen > LT_MAX_STRING) nlen = LT_MAX_STRING;
    if (flen > LT_MAX_STRING) flen = LT_MAX_STRING;
    memcpy(key, name, nlen);
    key[nlen] = '\0';
    memcpy(key + nlen + 1, file, flen);
    size_t klen = nlen + 1 + flen;
    klen += (size_t)snprintf(key + klen, 16, "%c%u", 0, loc ? loc->line : 0);
    int added;
    long i = cv_map_get(s->funcs, key, klen, &added);
    if (i < 0) return -1;
    if ((size_t)i >= s->nstats) {
        size_t n = s->nstats ? s->nstats * 2 : 64;
        fstat_ *st = realloc(s->stats, n * sizeof *st);
        if (!st) return -1;
        s->stats = st;
        s->nstats = n;
    }
    fstat_ *f = &s->stats[i];
    if (added) {
        memset(f, 0, sizeof *f);
        f->min = UINT64_MAX;
    }
    f->count++;
    if (outer || s->o->self) f->total += t;
    f->min = t < f->min ? t : f->min;
    f->max = t > f->max ? t : f->max;
    f->sum += (double)t;
    f->sumsq += (double)t * (double)t;
    return 0;
}

static const csv_state *sort_state;

static int by_total(const void *a, const void *b) {
    size_t ia = *(const size_t *)a, ib = *(const size_t *)b;
    const fstat_ *fa = &sort_state->stats[ia], *fb = &sort_state->stats[ib];
    if (fa->total != fb->total) return fa->total < fb->total ? 1 : -1;
    return strcmp(cv_map_key(sort_state->funcs, ia, NULL),
                  cv_map_key(sort_state->funcs, ib, NULL));
}

static int stats_print(csv_state *s) {
    const lt_file_info *fi = lt_reader_info(s->r);
    size_t n = cv_map_size(s->funcs);
    size_t *order = malloc((n + 1) * sizeof *order);
    if (!order) return -1;
    for (size_t i = 0; i < n; i++) order[i] = i;
    sort_state = s;
    qsort(order, n, sizeof *order, by_total);
    double span = fi->last_ts > fi->first_ts ? (double)(fi->last_ts - fi->first_ts) : 0;
    char sep = s->o->sep;
    cv_out_printf(&s->out, "name%csrc_file%csrc_line%ctotal_ns%ctotal_perc%ccounts"
                  "%cmean_ns%cmin_ns%cmax_ns%cstd_ns\n",
                  sep, sep, sep, sep, sep, sep, sep, sep, sep);
    for (size_t k = 0; k < n; k++) {
        size_t i = order[k], klen;
        const char *key = cv_map_key(s->funcs, i, &klen);
        const char *file = key + strlen(key) + 1;
        const char *line = file + strlen(file) + 1;
        const fstat_ *f = &s->stats[i];
        double mean = f->sum / (double)f->count;
        double var = f->sumsq / (double)f->count - mean * mean;
        put_text(s, key, strlen(key));
        put_text(s, file, strlen(file));
        put_cstr(s, line);
        put_u64(s, f->total);
        cv_out_printf(&s->out, "%.6f%c", span > 0 ? 100.0 * (double)f->total / span : 0.0, sep);
        put_u64(s, f->count);
        put_u64(s, f->total / f->count);
        put_u64(s, f->min);
        put_u64(s, f->max);
        cv_out_printf(&s->out, "%.6f\n", var > 0 ? sqrt(var) : 0.0);
    }
    free(order);
    return 0;
}

/* ---- Main loop ---------------------------------------------------------- */

static int on_zone_end(csv_state *s, const lt_event *ev) {
    uint64_t num, parent;
    if (cv_zones_end(s->zones, ev->process, ev->thread, &num, &parent)) num = 0;
    const csv_opts *o = s->o;
    int outer = o->mode == MODE_STATS ? ct_active_end(s->active, ev->process, ev->thread) : 1;
    uint64_t dur = ev->ts - ev->begin_ts;
    if (!stream_kept(s, ev->process, ev->thread) || dur < o->min_dur ||
        (o->max_depth && ev->depth >= o->max_depth))
        return 0;
    const lt_loc *loc = lt_reader_loc(s->r, ev->process, ev->loc);
    const char *name;
    size_t nlen;
    cv_zone_name(ev, loc, &name, &nlen);
    if (!name_kept(s, name, nlen)) return 0;
    uint64_t t = o->self ? (dur >= ev->child_ns ? dur - ev->child_ns : 0) : dur;
    switch (o->mode) {
    case MODE_REPORT: report_zone(s, ev, loc, name, nlen, num); break;
    case MODE_UNWRAP: unwrap_zone(s, ev, loc, name, nlen, t); break;
    case MODE_STATS: return stats_add(s, loc, name, nlen, t, outer != 0);
    }
    return 0;
}

static int on_instant(csv_state *s, const lt_event *ev) {
    if (!stream_kept(s, ev->process, ev->thread) || !name_kept(s, ev->text, ev->text_len))
        return 0;
    if (s->o->mode == MODE_REPORT) {
        report_instant(s, ev, ev->type == LT_EV_SIGNPOST ? "signpost" : "message");
    } else if (s->o->mode == MODE_MESSAGES && ev->type == LT_EV_MESSAGE) {
        put_text(s, ev->text, ev->text_len);
        cv_out_u64(&s->out, ev->ts - s->first_ts);
        cv_out_ch(&s->out, '\n');
    }
    return 0;
}

/* One event; -1 when out of memory. */
static int on_event(void *ctx, const lt_event *ev) {
    csv_state *s = ctx;
    switch (ev->type) {
    case LT_EV_ZONE_BEGIN:
        if (!cv_zones_begin(s->zones, ev->process, ev->thread)) return -1;
        if (s->o->mode == MODE_STATS &&
            ct_active_begin(s->active, ev->process, ev->thread, ev->loc))
            return -1;
        return 0;
    case LT_EV_ZONE_END: return on_zone_end(s, ev) ? -1 : 0;
    case LT_EV_SIGNPOST:
    case LT_EV_MESSAGE: on_instant(s, ev); return 0;
    default: return 0;
    }
}

static int convert(csv_state *s, int *read_exit) {
    const csv_opts *o = s->o;
    if (o->mode == MODE_REPORT) report_header(s);
    if (o->mode == MODE_UNWRAP)
        cv_out_printf(&s->out, "name%csrc_file%csrc_line%cns_since_start%cexec_time_ns"
                      "%cthread%cvalue\n", o->sep, o->sep, o->sep, o->sep, o->sep, o->sep);
    if (o->mode == MODE_MESSAGES) cv_out_printf(&s->out, "MessageName%ctotal_ns\n", o->sep);
    if (cv_each_event(s->r, o->path, read_exit, on_event, s, &s->out.err) < 0) {
        cv_err("out of memory");
        *read_exit = CV_EXIT_INPUT;
        return -1;
    }
    if (o->mode == MODE_STATS && stats_print(s)) {
        cv_err("out of memory");
        *read_exit = CV_EXIT_INPUT;
    }
    return 0;
}

static int run(const csv_opts *o) {
    csv_state s;
    memset(&s, 0, sizeof s);
    s.o = o;
    cv_run run;
    int code = cv_run_open(&run, o->path, o->allow_truncated ? CV_TRUNC_ALLOW : CV_TRUNC_REFUSE);
    if (code) return code;
    s.r = run.r;
    s.first_ts = lt_reader_info(s.r)->first_ts;
    s.zones = cv_zones_new();
    s.funcs = cv_map_new();
    s.active = ct_active_new();
    long kept = s.zones && s.funcs && s.active ? build_keep(&s) : -1;
    if (kept < 0) {
        cv_err("out of memory");
        code = CV_EXIT_INPUT;
        goto out;
    }
    if (kept == 0) {
        code = selects_nothing(o);
        goto out;
    }
    if ((code = cv_out_open(&s.out, o->output))) goto out;
    convert(&s, &run.read_exit);
    code = cv_run_exit(&run, cv_out_close(&s.out, o->output) != 0);
out:
    if (s.keep)
        for (uint32_t p = 0; p <= s.nproc; p++) free(s.keep[p]);
    free(s.keep);
    free(s.stats);
    cv_map_free(s.funcs);
    ct_active_free(s.active);
    cv_zones_free(s.zones);
    cv_run_close(&run);
    return code;
}

/* ---- Command line ------------------------------------------------------- */

enum { OPT_STATS = 256, OPT_MIN_DUR, OPT_MAX_DEPTH, OPT_THREAD, OPT_PROCESS, OPT_ALLOW };

static int parse_args(int argc, char **argv, csv_opts *o, int *done) {
    static const struct option longs[] = {
        {"stats", no_argument, 0, OPT_STATS},
        {"unwrap", no_argument, 0, 'u'},
        {"messages", no_argument, 0, 'm'},
        {"self", no_argument, 0, 'e'},
        {"filter", required_argument, 0, 'f'},
        {"case", no_argument, 0, 'c'},
        {"sep", required_argument, 0, 's'},
        {"output", required_argument, 0, 'o'},
        {"min-duration", required_argument, 0, OPT_MIN_DUR},
        {"max-depth", required_argument, 0, OPT_MAX_DEPTH},
        {"thread", required_argument, 0, OPT_THREAD},
        {"process", required_argument, 0, OPT_PROCESS},
        {"allow-truncated", no_argument, 0, OPT_ALLOW},
        CV_STD_LONG_OPTIONS,
        {0, 0, 0, 0}};
    /* What one option sets (slots: prog.h): the output kind, and every
     * option with a value. */
    cv_opt mode = {0}, self = {0}, filter = {0}, cs = {0}, sep = {0}, out = {0}, min = {0},
           depth = {0}, thread = {0}, process = {0};
    uint64_t v;
    int c, rc = 0;
    *done = 0;
    opterr = 0;
    while (!rc && (c = cv_getopt(argc, argv, ":umef:cs:o:hV", longs)) != -1) {
        switch (c) {
        case OPT_STATS: rc = cv_opt_set(&mode, NULL); o->mode = MODE_STATS; break;
        case 'u': rc = cv_opt_set(&mode, NULL); o->mode = MODE_UNWRAP; break;
        case 'm': rc = cv_opt_set(&mode, NULL); o->mode = MODE_MESSAGES; break;
        case 'e': rc = cv_opt_set(&self, NULL); o->self = 1; break;
        case 'f':
            rc = cv_opt_set(&filter, optarg);
            o->filter = optarg;
            o->filter_len = strlen(optarg);
            break;
        case 'c': rc = cv_opt_set(&cs, NULL); o->case_sensitive = 1; break;
        case 's':
            if (strlen(optarg) != 1 || optarg[0] == '"' || optarg[0] == '\n' || optarg[0] == '\r')
                return cv_usage_error("--sep takes one character other than a quote or newline");
            rc = cv_opt_set(&sep, optarg);
            o->sep = optarg[0];
            break;
        case 'o': rc = cv_opt_set(&out, optarg); o->output = optarg; break;
        case OPT_MIN_DUR:
            if (cv_parse_u64(optarg, &o->min_dur))
                return cv_usage_error("--min-duration: not a number of nanoseconds: '%s'", optarg);
            rc = cv_opt_set(&min, optarg);
            break;
        case OPT_MAX_DEPTH:
            if (cv_parse_u64(optarg, &v) || v > LT_MAX_DEPTH)
                return cv_usage_error("--max-depth: not a depth: '%s'", optarg);
            rc = cv_opt_set(&depth, optarg);
            o->max_depth = v;
            break;
        case OPT_THREAD: rc = cv_opt_set(&thread, optarg); o->thread = optarg; break;
        case OPT_PROCESS: rc = cv_opt_set(&process, optarg); o->process = optarg; break;
        case OPT_ALLOW: o->allow_truncated = 1; break;
        default: *done = 1; return cv_std_option(c, usage_text, argv);
        }
    }
    if (rc) return rc;
    /* Options the output kind does not use: self time is a column of
     * --stats and -u only; -m prints no zones for the zone filters. */
    const cv_opt *zoneless = o->mode == MODE_MESSAGES ? &mode : NULL;
    if ((o->mode != MODE_STATS && o->mode != MODE_UNWRAP &&
         (rc = cv_opt_unused(&self, &mode, "--stats or -u"))) ||
        (!o->filter && (rc = cv_opt_unused(&cs, NULL, "-f"))) ||
        (zoneless && ((rc = cv_opt_unused(&min, zoneless, "an output of zones")) ||
                      (rc = cv_opt_unused(&depth, zoneless, "an output of zones")))))
        return rc;
    if (cv_one_trace(argc, argv, &o->path)) return CV_EXIT_USAGE;
    return 0;
}

int main(int argc, char **argv) {
    csv_opts o = {.sep = ',', .mode = MODE_REPORT};
    int done;
    cv_prog = "tracy-csv";
    int code = parse_args(argc, argv, &o, &done);
    if (code || done) return code;
    return run(&o);
}
