/* export.c -- tracy-export: a .tracy file in the formats other viewers read
 * (cProfile's pstats, callgrind, folded stacks, speedscope JSON), a
 * self-contained HTML report, and two text reports (line by line, rank by
 * rank). One pass builds the aggregated call tree (calltree.c); the
 * writers are export_*.c. --process / --thread (prog/select.c) restrict every
 * format; --split process writes one file per process. */
#include <errno.h>
#include <getopt.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convert/export/export.h"

static const char usage_text[] =
    "Usage: tracy-export [OPTIONS] -o OUTPUT TRACE.tracy\n"
    "Writes a .tracy file in a format another viewer reads, as an HTML report,\n"
    "or as a line-by-line or rank-by-rank text report.\n"
    "\n"
    "  -f, --format FMT       pstats     cProfile's stats file (pstats.Stats, SnakeViz,\n"
    "                                    gprof2dot, tuna)\n"
    "                         callgrind  KCachegrind, QCachegrind, callgrind_annotate\n"
    "                         folded     folded stacks 'a;b;c self_ns' (flamegraph.pl,\n"
    "                                    inferno, speedscope)\n"
    "                         speedscope speedscope's JSON, a profile per thread\n"
    "                         html       one self-contained page: summary, function\n"
    "                                    table, flame graph, timeline\n"
    "                         lines      line_profiler's report of the line zones\n"
    "                                    python -m tracy -l records, with the source\n"
    "                         ranks      per function and signpost phase: time per\n"
    "                                    rank (or process), min, mean, max, imbalance\n"
    "                         (default: from the output name: .prof .pstats,\n"
    "                         .callgrind or callgrind.out.*, .folded, .speedscope.json,\n"
    "                         .html; pstats with --split)\n"
    "  -o, --output FILE      write to FILE ('-': standard output); with --split,\n"
    "                         the folder of the files (created when missing)\n"
    "  -p, --process LIST     only these processes (indices, comma-separated)\n"
    "  -t, --thread LIST      only these threads: P:T (process and thread index)\n"
    "                         or a thread name, comma-separated (tracy-cut's lists)\n"
    "      --split process    a file per process: NAME.rankR.EXT, or\n"
    "                         NAME.processP.EXT for a process without an MPI rank\n"
    "      --per-thread       folded: a stack per thread, under 'PROGRAM PID' and\n"
    "                         'THREAD' frames; lines: a report per thread\n"
    "                         (default: every thread merged)\n"
    "      --function RE      lines, ranks: only functions (and phases) whose name\n"
    "                         matches the extended regular expression RE\n"
    "      --sort time        lines: functions by total time, largest first\n"
    "                         (default, --sort file: by file and first line)\n"
    "      --top N            lines, ranks: only the first N functions (rows)\n"
    "      --all-functions    lines: every function, not only those decorated with\n"
    "                         @tracy.profile when the trace marks some\n"
    "      --csv              ranks: CSV (times in ns) instead of a text table\n"
    "      --period NS        folded: weights in samples of NS nanoseconds (self time\n"
    "                         / NS, rounded; stacks under half a sample left out)\n"
    "      --allow-truncated  exit 0 on a truncated trace (still warns)\n"
    "  -h, --help             print this help and exit\n"
    "  -V, --version          print the version and exit\n"
    "\n"
    "Exit status: 0 ok, 1 usage or a selection that matches nothing, 2 cannot\n"
    "read input or not a trace (lines: no line zones), 3 truncated input,\n"
    "4 corrupt input, 5 cannot write output.\n";

enum ex_format { FMT_PSTATS, FMT_CALLGRIND, FMT_FOLDED, FMT_SPEEDSCOPE, FMT_HTML, FMT_LINES,
                 FMT_RANKS, FMT_NONE };

static const char *const format_names[] = {"pstats", "callgrind", "folded", "speedscope",
                                           "html", "lines", "ranks"};
/* The file name ending of each format under --split. */
static const char *const format_ext[] = {".prof", ".callgrind", ".folded", ".speedscope.json",
                                         ".html", ".lines.txt", ".ranks.txt"};

/* Whether s ends with suffix, in either case (report.HTML, run.PROF). */
static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

static int format_of_name(const char *name) {
    for (int f = 0; f < FMT_NONE; f++)
        if (strcmp(name, format_names[f]) == 0) return f;
    return FMT_NONE;
}

static int format_of_path(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (ends_with(path, ".prof") || ends_with(path, ".pstats")) return FMT_PSTATS;
    if (ends_with(path, ".callgrind") || strncmp(base, "callgrind.out", 13) == 0)
        return FMT_CALLGRIND;
    if (ends_with(path, ".folded")) return FMT_FOLDED;
    if (ends_with(path, ".speedscope.json")) return FMT_SPEEDSCOPE;
    if (ends_with(path, ".html") || ends_with(path, ".htm")) return FMT_HTML;
    return FMT_NONE;
}

int ex_next(ex_ctx *x, lt_event *ev) {
    int rc, err = 0;
    while ((rc = cv_next(x->r, ev, x->o->path, &err)) > 0)
        if (cv_sel_table_keeps(x->sel, ev->process, ev->thread)) return 1;
    if (rc < 0) x->read_exit = cv_exit_for(err) ? cv_exit_for(err) : CV_EXIT_CORRUPT;
    return rc;
}

/* The one pass that builds the tree (and the report's extras). */
static int read_all(ex_ctx *x) {
    lt_event ev;
    while (ex_next(x, &ev) > 0) {
        if (ct_tree_event(x->tree, &ev) || (x->html && ex_html_event(x->html, &ev))) {
            cv_err("out of memory");
            return -1;
        }
    }
    ct_tree_finish(x->tree);
    return 0;
}

static int write_format(ex_ctx *x, int fmt) {
    if (fmt == FMT_SPEEDSCOPE) return ex_speedscope(x);
    if (fmt == FMT_LINES) return ex_lines(x);
    if (fmt == FMT_RANKS) return ex_ranks(x);
    if (read_all(x)) return -1;
    switch (fmt) {
    case FMT_PSTATS: return ex_pstats(x);
    case FMT_CALLGRIND: return ex_callgrind(x);
    case FMT_FOLDED: return ex_folded(x);
    default: return ex_html_write(x);
    }
}

/* One output file from the threads `sel` keeps; returns its exit code (0,
 * or the worst of reading and writing). */
static int export_one(const ex_opts *o, lt_reader *r, int fmt, const char *path,
                      const cv_sel_table *sel) {
    ex_ctx x;
    memset(&x, 0, sizeof x);
    x.o = o;
    x.r = r;
    x.sel = sel;
    int code = 0;
    const char *out = strcmp(path, "-") ? path : NULL;
    int merged = fmt != FMT_HTML && !(fmt == FMT_FOLDED && o->per_thread) &&
                 !(fmt == FMT_LINES && o->per_thread);
    lt_reader_select(r, 0, 0); /* rewinds: a pass per file */
    x.tree = ct_tree_new(r, merged);
    if (!x.tree || (fmt == FMT_HTML && !(x.html = ex_html_new(&x)))) {
        cv_err("out of memory");
        code = CV_EXIT_INPUT;
        goto done;
    }
    if ((code = cv_out_open(&x.out, out))) goto done;
    int rc = write_format(&x, fmt);
    if (cv_out_close(&x.out, out ? out : "standard output")) code = CV_EXIT_OUTPUT;
    else if (rc > 0) code = rc;
    else if (rc) code = x.read_exit ? x.read_exit : CV_EXIT_INPUT;
    else code = x.read_exit;
    if (rc > 0 && out) unlink(out); /* a report that says nothing is not left */
done:
    ex_html_free(x.html);
    ct_tree_free(x.tree);
    return code;
}

/* The trace's name without its folder and ".tracy". */
static void trace_stem(const char *path, char *buf, size_t n) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(buf, n, "%s", base);
    size_t len = strlen(buf);
    if (len > 6 && strcmp(buf + len - 6, ".tracy") == 0) buf[len - 6] = '\0';
}

/* --split process: each selected process into DIR/NAME.rankR.EXT. */
static int export_split(const ex_opts *o, lt_reader *r, int fmt, const cv_sel *base) {
    if (mkdir(o->output, 0777) < 0 && errno != EEXIST) {
        cv_err("%s: cannot create the folder: %s", o->output, strerror(errno));
        return CV_EXIT_OUTPUT;
    }
    char stem[256], path[4096], procs[16];
    trace_stem(o->path, stem, sizeof stem);
    int worst = 0;
    uint32_t np = lt_reader_nprocesses(r);
    for (uint32_t p = 1; p <= np; p++) {
        if (!cv_sel_keep_proc(base, p)) continue;
        snprintf(procs, sizeof procs, "%u", p);
        cv_sel one = {r, procs, base->threads};
        cv_sel_table t;
        if (cv_sel_table_init(&t, &one)) {
            cv_err("out of memory");
            return CV_EXIT_INPUT;
        }
        const lt_process *pr = lt_reader_process(r, p);
        const char *sep = o->output[strlen(o->output) - 1] == '/' ? "" : "/";
        if (pr && pr->rank >= 0)
            snprintf(path, sizeof path, "%s%s%s.rank%lld%s", o->output, sep, stem,
                     (long long)pr->rank, format_ext[fmt]);
        else
            snprintf(path, sizeof path, "%s%s%s.process%u%s", o->output, sep, stem, p,
                     format_ext[fmt]);
        int code = t.kept ? export_one(o, r, fmt, path, &t) : 0;
        cv_sel_table_free(&t);
        if (code > worst) worst = code;
        if (code == CV_EXIT_OUTPUT || code == CV_EXIT_CORRUPT) break;
    }
    return worst;
}

static int run(const ex_opts *o, int fmt) {
    lt_reader *r;
    int code = cv_open(o->path, &r);
    if (code) return code;
    int trunc = cv_check_complete(r, o->path, o->allow_truncated);
    cv_sel sel = {r, o->procs, o->threads};
    cv_sel_table t = {0};
    if ((code = cv_sel_check(&sel))) goto done;
    if (cv_sel_table_init(&t, &sel)) {
        cv_err("out of memory");
        code = CV_EXIT_INPUT;
        goto done;
    }
    code = o->split ? export_split(o, r, fmt, &sel) : export_one(o, r, fmt, o->output, &t);
    code = cv_final_exit(code, trunc);
done:
    cv_sel_table_free(&t);
    lt_reader_free(r);
    return code;
}

/* ---- Command line ------------------------------------------------------- */

enum { OPT_PER_THREAD = 256, OPT_ALLOW, OPT_PERIOD, OPT_SPLIT, OPT_FUNCTION, OPT_SORT, OPT_TOP,
       OPT_CSV, OPT_ALL_FUNCTIONS };

/* --function RE must compile (extended regular expression). */
static int check_regex(const char *re) {
    regex_t rx;
    int rc = regcomp(&rx, re, REG_EXTENDED | REG_NOSUB);
    if (rc) {
        char msg[256];
        regerror(rc, &rx, msg, sizeof msg);
        return cv_usage_error("--function: bad regular expression '%s': %s", re, msg);
    }
    regfree(&rx);
    return 0;
}

/* The slots of the options (prog.h): which option set each setting, and
 * how it was spelt. */
typedef struct ex_given {
    cv_opt format, output, procs, threads, split, function, sort, top, period;
    cv_opt per_thread, csv, all_functions;
} ex_given;

static int parse_more(int c, ex_opts *o, ex_given *g) {
    switch (c) {
    case 'p': o->procs = optarg; return cv_opt_set(&g->procs, optarg);
    case 't': o->threads = optarg; return cv_opt_set(&g->threads, optarg);
    case OPT_SPLIT:
        if (strcmp(optarg, "process") != 0)
            return cv_usage_error("--split: 'process' is the one way to split, not '%s'", optarg);
        o->split = 1;
        return cv_opt_set(&g->split, optarg);
    case OPT_FUNCTION:
        o->function = optarg;
        return check_regex(optarg) ? CV_EXIT_USAGE : cv_opt_set(&g->function, optarg);
    case OPT_SORT:
        if (strcmp(optarg, "time") != 0 && strcmp(optarg, "file") != 0)
            return cv_usage_error("--sort: 'time' or 'file', not '%s'", optarg);
        o->sort_time = strcmp(optarg, "time") == 0;
        return cv_opt_set(&g->sort, optarg);
    case OPT_TOP:
        if (cv_parse_u64(optarg, &o->top) || o->top == 0)
            return cv_usage_error("--top: not a positive number: '%s'", optarg);
        return cv_opt_set(&g->top, optarg);
    case OPT_CSV: o->csv = 1; return cv_opt_set(&g->csv, NULL);
    case OPT_ALL_FUNCTIONS: o->all_functions = 1; return cv_opt_set(&g->all_functions, NULL);
    case OPT_PER_THREAD: o->per_thread = 1; return cv_opt_set(&g->per_thread, NULL);
    case OPT_PERIOD:
        if (cv_parse_u64(optarg, &o->period) || o->period == 0)
            return cv_usage_error("--period: not a number of nanoseconds: '%s'", optarg);
        return cv_opt_set(&g->period, optarg);
    case 'f': o->format = optarg; return cv_opt_set(&g->format, optarg);
    case 'o': o->output = optarg; return cv_opt_set(&g->output, optarg);
    default: return -1;
    }
}

static int parse_args(int argc, char **argv, ex_opts *o, ex_given *g, int *done) {
    static const struct option longs[] = {
        {"format", required_argument, 0, 'f'},
        {"output", required_argument, 0, 'o'},
        {"per-thread", no_argument, 0, OPT_PER_THREAD},
        {"period", required_argument, 0, OPT_PERIOD},
        {"allow-truncated", no_argument, 0, OPT_ALLOW},
        {"process", required_argument, 0, 'p'},
        {"thread", required_argument, 0, 't'},
        {"split", required_argument, 0, OPT_SPLIT},
        {"function", required_argument, 0, OPT_FUNCTION},
        {"sort", required_argument, 0, OPT_SORT},
        {"top", required_argument, 0, OPT_TOP},
        {"csv", no_argument, 0, OPT_CSV},
        {"all-functions", no_argument, 0, OPT_ALL_FUNCTIONS},
        CV_STD_LONG_OPTIONS,
        {0, 0, 0, 0}};
    int c;
    *done = 0;
    opterr = 0;
    while ((c = cv_getopt(argc, argv, ":f:o:p:t:hV", longs)) != -1) {
        int more = parse_more(c, o, g);
        if (more > 0) return more;
        if (more == 0) continue;
        switch (c) {
        case OPT_ALLOW: o->allow_truncated = 1; break;
        default: *done = 1; return cv_std_option(c, usage_text, argv);
        }
    }
    if (cv_one_trace(argc, argv, &o->path)) return CV_EXIT_USAGE;
    if (!o->output) return cv_usage_error("no output given (-o FILE, or -o - with -f)");
    return 0;
}

/* Refuses the options that format fmt does not use; `chose` is the option
 * that chose it (-f, or -o or --split when they tell the format). */
static int check_unused(const ex_given *g, int fmt, const cv_opt *chose) {
    int lines = fmt == FMT_LINES, ranks = fmt == FMT_RANKS;
    int rc = 0;
    if ((fmt != FMT_FOLDED && !lines &&
         (rc = cv_opt_unused(&g->per_thread, chose, "-f folded or lines"))) ||
        (fmt != FMT_FOLDED && (rc = cv_opt_unused(&g->period, chose, "-f folded"))) ||
        (!lines && !ranks && (rc = cv_opt_unused(&g->function, chose, "-f lines or ranks"))) ||
        (!lines && !ranks && (rc = cv_opt_unused(&g->top, chose, "-f lines or ranks"))) ||
        (!lines && (rc = cv_opt_unused(&g->sort, chose, "-f lines"))) ||
        (!lines && (rc = cv_opt_unused(&g->all_functions, chose, "-f lines"))) ||
        (!ranks && (rc = cv_opt_unused(&g->csv, chose, "-f ranks"))))
        return rc;
    return 0;
}

int main(int argc, char **argv) {
    ex_opts o = {0};
    ex_given g;
    memset(&g, 0, sizeof g);
    int done;
    cv_prog = "tracy-export";
    int code = parse_args(argc, argv, &o, &g, &done);
    if (code || done) return code;
    int fmt = o.format ? format_of_name(o.format) : o.split ? FMT_PSTATS
                                                            : format_of_path(o.output);
    if (fmt == FMT_NONE && o.format)
        return cv_usage_error("unknown format '%s' (pstats, callgrind, folded, speedscope, "
                              "html, lines, ranks)", o.format);
    if (o.split && (fmt == FMT_RANKS || !strcmp(o.output, "-")))
        return cv_usage_error(fmt == FMT_RANKS ? "--split: the ranks table compares the "
                                                 "processes in one file"
                                               : "--split writes files: -o names a folder");
    if (fmt == FMT_NONE)
        return cv_usage_error("cannot tell the format from '%s': give -f FORMAT", o.output);
    const cv_opt *chose = o.format ? &g.format : o.split ? &g.split : &g.output;
    if ((code = check_unused(&g, fmt, chose))) return code;
    return run(&o, fmt);
}
