/* export.c -- tracy-export: a .tracy file in the formats other viewers read
 * (cProfile's pstats, callgrind, folded stacks, speedscope JSON) and a
 * self-contained HTML report. One pass builds the aggregated call tree
 * (calltree.c); the writers are export_*.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "export.h"

static const char usage_text[] =
    "Usage: tracy-export [OPTIONS] -o OUTPUT TRACE.tracy\n"
    "Writes a .tracy file in a format another viewer reads, or as an HTML report.\n"
    "\n"
    "  -f, --format FMT       pstats     cProfile's stats file (pstats.Stats, SnakeViz,\n"
    "                                    gprof2dot, tuna)\n"
    "                         callgrind  KCachegrind, QCachegrind, callgrind_annotate\n"
    "                         folded     folded stacks 'a;b;c self_ns' (flamegraph.pl,\n"
    "                                    inferno, speedscope)\n"
    "                         speedscope speedscope's JSON, a profile per thread\n"
    "                         html       one self-contained page: summary, function\n"
    "                                    table, flame graph, timeline\n"
    "                         (default: from the output name: .prof .pstats,\n"
    "                         .callgrind or callgrind.out.*, .folded, .speedscope.json,\n"
    "                         .html)\n"
    "  -o, --output FILE      write to FILE ('-': standard output)\n"
    "      --per-thread       folded: a stack per thread, under 'PROGRAM PID' and\n"
    "                         'THREAD' frames (default: every thread merged)\n"
    "      --period NS        folded: weights in samples of NS nanoseconds (self time\n"
    "                         / NS, rounded; stacks under half a sample left out)\n"
    "      --allow-truncated  exit 0 on a truncated trace (still warns)\n"
    "  -h, --help             print this help and exit\n"
    "  -V, --version          print the version and exit\n"
    "\n"
    "Exit status: 0 ok, 1 usage, 2 cannot read input or not a trace,\n"
    "3 truncated input, 4 corrupt input, 5 cannot write output.\n";

enum ex_format { FMT_PSTATS, FMT_CALLGRIND, FMT_FOLDED, FMT_SPEEDSCOPE, FMT_HTML, FMT_NONE };

static const char *const format_names[] = {"pstats", "callgrind", "folded", "speedscope",
                                           "html"};

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
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

void ex_label(cv_out *o, const ct_func *f) {
    cv_out_str(o, f->name);
    if (!*f->file) return;
    cv_out_write(o, " (", 2);
    cv_out_str(o, f->file);
    cv_out_ch(o, ':');
    cv_out_u64(o, f->line);
    cv_out_ch(o, ')');
}

/* The one pass that builds the tree (and the report's extras). */
static int read_all(ex_ctx *x) {
    lt_event ev;
    int rc, err = 0;
    while ((rc = cv_next(x->r, &ev, x->o->path, &err)) > 0) {
        if (ct_tree_event(x->tree, &ev) || (x->html && ex_html_event(x->html, &ev))) {
            cv_err("out of memory");
            return -1;
        }
    }
    if (rc < 0) x->read_exit = cv_exit_for(err) ? cv_exit_for(err) : CV_EXIT_CORRUPT;
    ct_tree_finish(x->tree);
    return 0;
}

static int write_format(ex_ctx *x, int fmt) {
    if (fmt == FMT_SPEEDSCOPE) return ex_speedscope(x);
    if (read_all(x)) return -1;
    switch (fmt) {
    case FMT_PSTATS: return ex_pstats(x);
    case FMT_CALLGRIND: return ex_callgrind(x);
    case FMT_FOLDED: return ex_folded(x);
    default: return ex_html_write(x);
    }
}

static int run(const ex_opts *o, int fmt) {
    ex_ctx x;
    memset(&x, 0, sizeof x);
    x.o = o;
    int code = cv_open(o->path, &x.r);
    if (code) return code;
    int trunc = cv_check_complete(x.r, o->path, o->allow_truncated);
    const char *out = strcmp(o->output, "-") ? o->output : NULL;
    int merged = fmt != FMT_HTML && !(fmt == FMT_FOLDED && o->per_thread);
    x.tree = ct_tree_new(x.r, merged);
    if (!x.tree || (fmt == FMT_HTML && !(x.html = ex_html_new(x.r, x.tree)))) {
        cv_err("out of memory");
        code = CV_EXIT_INPUT;
        goto done;
    }
    if ((code = cv_out_open(&x.out, out))) goto done;
    int rc = write_format(&x, fmt);
    if (cv_out_close(&x.out, out ? out : "standard output")) code = CV_EXIT_OUTPUT;
    else if (rc) code = x.read_exit ? x.read_exit : CV_EXIT_INPUT;
    else code = cv_final_exit(x.read_exit, trunc);
done:
    ex_html_free(x.html);
    ct_tree_free(x.tree);
    lt_reader_free(x.r);
    return code;
}

/* ---- Command line ------------------------------------------------------- */

enum { OPT_PER_THREAD = 256, OPT_ALLOW, OPT_PERIOD };

static int parse_args(int argc, char **argv, ex_opts *o, int *done) {
    static const struct option longs[] = {
        {"format", required_argument, 0, 'f'},
        {"output", required_argument, 0, 'o'},
        {"per-thread", no_argument, 0, OPT_PER_THREAD},
        {"period", required_argument, 0, OPT_PERIOD},
        {"allow-truncated", no_argument, 0, OPT_ALLOW},
        CV_STD_LONG_OPTIONS,
        {0, 0, 0, 0}};
    int c;
    *done = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:o:hV", longs, NULL)) != -1) {
        switch (c) {
        case 'f': o->format = optarg; break;
        case 'o': o->output = optarg; break;
        case OPT_PER_THREAD: o->per_thread = 1; break;
        case OPT_PERIOD:
            if (cv_parse_u64(optarg, &o->period) || o->period == 0)
                return cv_usage_error("--period: not a number of nanoseconds: '%s'", optarg);
            break;
        case OPT_ALLOW: o->allow_truncated = 1; break;
        default: *done = 1; return cv_std_option(c, usage_text, argv);
        }
    }
    if (cv_one_trace(argc, argv, &o->path)) return CV_EXIT_USAGE;
    if (!o->output) return cv_usage_error("no output given (-o FILE, or -o - with -f)");
    return 0;
}

int main(int argc, char **argv) {
    ex_opts o = {0};
    int done;
    cv_prog = "tracy-export";
    int code = parse_args(argc, argv, &o, &done);
    if (code || done) return code;
    int fmt = o.format ? format_of_name(o.format) : format_of_path(o.output);
    if (fmt == FMT_NONE && o.format)
        return cv_usage_error("unknown format '%s' (pstats, callgrind, folded, speedscope, "
                              "html)", o.format);
    if (fmt == FMT_NONE)
        return cv_usage_error("cannot tell the format from '%s': give -f FORMAT", o.output);
    return run(&o, fmt);
}
