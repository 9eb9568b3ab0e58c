/* diff.c -- tracy-diff: compares the runs of BASE with those of NEW per
 * function, phase and op code, and exits 1 when something became slower. */
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "convert/convert.h"
#include "convert/diff/diff_output.h"
#include "convert/diff/diff_profile.h"
#include "convert/diff/diff_report.h"

/* tracy-diff's own exit codes: 1 means "regression found", so a bad command
 * line, 1 for the other converters, is 6 here; 2 to 5 mean what they mean
 * for the other converters. */
enum {
    DIFF_EXIT_OK = 0,
    DIFF_EXIT_REGRESSION = 1,
    DIFF_EXIT_USAGE = 6
};

typedef struct diff_opts {
    dp_opts prof;
    dr_opts rep;
    const char *output;
    int allow_truncated;
    const char **base, **next;
    uint32_t nbase, nnext;
} diff_opts;

static const char usage_text[] =
    "Usage: tracy-diff [OPTIONS] BASE.tracy NEW.tracy\n"
    "       tracy-diff [OPTIONS] -b BASE1.tracy -b BASE2.tracy ... -n NEW1.tracy ...\n"
    "Compares the runs of BASE with those of NEW per function, per signpost-delimited\n"
    "phase and per phase and op code: calls, total, self, mean, p50 and p95 of the\n"
    "durations per call, and their changes. A row is a regression when its median\n"
    "time per call is slower with p < --alpha (Mann-Whitney on the per-call\n"
    "durations; Student's t on the per-run medians when each side has 3 runs or\n"
    "more; p adjusted by Holm's method over every tested row, so that --alpha\n"
    "bounds the chance of any false flag in the report), by at least --threshold,\n"
    "and the change costs at least --min-time per run. Changes are measured against the drift: the whole run faster or slower,\n"
    "the median over the functions of their change of self time per call.\n"
    "Functions added, removed or renamed and call counts that changed are listed\n"
    "too. Every input is checked first, as tracy-info --verify does. On a shared\n"
    "machine give 3 runs a side or more (5 when busy): one run cannot tell noise\n"
    "from change.\n"
    "\n"
    "  -b, --base FILE        a run of the base side (repeat for several runs)\n"
    "  -n, --new FILE         a run of the new side (repeat for several runs)\n"
    "  -f, --format FMT       table (default), markdown, json or csv\n"
    "  -o, --output FILE      write to FILE instead of standard output\n"
    "  -t, --threshold PCT    smallest relative change of the median (default 5)\n"
    "  -m, --min-time TIME    smallest cost per run of a change (default 100us;\n"
    "                         units ns, us, ms, s; a bare number is ns)\n"
    "      --alpha P          significance level of the whole report (default 0.05)\n"
    "      --no-correction    test each row at --alpha on its own (no Holm)\n"
    "      --min-calls N      calls each side needs for the per-call test (default 10)\n"
    "      --test TEST        auto (default), calls (Mann-Whitney on per-call\n"
    "                         durations) or runs (Student's t on per-run medians)\n"
    "  -e, --self             compare self time (less the children's) per call\n"
    "      --no-normalize     compare raw times, without the drift correction\n"
    "      --by-thread        one row per thread name, not per program\n"
    "  -a, --all              list unchanged rows too (table, markdown)\n"
    "      --allow-truncated  accept inputs cut short (still warns)\n"
    "  -h, --help             print this help and exit\n"
    "  -V, --version          print the version and exit\n"
    "\n"
    "Exit status: 0 no regression, 1 regression found, 2 cannot read an input or\n"
    "not a trace, 3 an input is truncated, 4 an input is corrupt, 5 cannot write\n"
    "the output, 6 bad command line.\n";

/* ---- Options ------------------------------------------------------------- */

static int usage_error(const char *fmt, const char *arg) {
    cv_usage_error(fmt, arg);
    return DIFF_EXIT_USAGE;
}

/* "100us", "1.5ms", "2s", "250ns" or "250" (ns) -> ns. */
static int parse_time(const char *s, double *ns) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0) || isinf(v)) return -1;
    static const struct { const char *u; double f; } units[] = {
        {"", 1}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (strcmp(end, units[i].u) == 0) {
            *ns = v * units[i].f;
            return 0;
        }
    return -1;
}

static int parse_double(const char *s, double lo, double hi, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || (*end && strcmp(end, "%")) || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

static int parse_choice(const char *s, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

static int add_file(const char ***list, uint32_t *n, const char *path) {
    const char **l = realloc(*list, (*n + 1) * sizeof *l);
    if (!l) return -1;
    l[(*n)++] = path;
    *list = l;
    return 0;
}

enum { OPT_ALPHA = 256, OPT_MIN_CALLS, OPT_TEST, OPT_BY_THREAD, OPT_ALLOW, OPT_NO_NORM,
       OPT_NO_CORR };

/* The slots of the options that hold one value (prog.h). */
typedef struct diff_given {
    cv_opt format, output, threshold, min_time, alpha, min_calls, test, all;
} diff_given;

/* cv_opt_set with tracy-diff's usage exit code. */
static int once(cv_opt *slot, const char *value) {
    return cv_opt_set(slot, value) ? DIFF_EXIT_USAGE : 0;
}

static int parse_opt(int c, diff_opts *o, diff_given *g, int *done) {
    static const char *const formats[] = {"table", "markdown", "json", "csv"};
    static const char *const tests[] = {"auto", "calls", "runs"};
    double v;
    uint64_t u;
    switch (c) {
    case 'b': return add_file(&o->base, &o->nbase, optarg) ? usage_error("%s", "out of memory") : 0;
    case 'n': return add_file(&o->next, &o->nnext, optarg) ? usage_error("%s", "out of memory") : 0;
    case 'f':
        if ((o->rep.format = parse_choice(optarg, formats, 4)) < 0)
            return usage_error("--format: not table, markdown, json or csv: '%s'", optarg);
        return once(&g->format, optarg);
    case 'o': o->output = optarg; return once(&g->output, optarg);
    case 't':
        if (parse_double(optarg, 0, 1e6, &v))
            return usage_error("--threshold: not a percentage: '%s'", optarg);
        o->rep.threshold = v / 100;
        return once(&g->threshold, optarg);
    case 'm':
        if (parse_time(optarg, &o->rep.min_time))
            return usage_error("--min-time: not a duration (e.g. 100us, 2ms): '%s'", optarg);
        return once(&g->min_time, optarg);
    case OPT_ALPHA:
        if (parse_double(optarg, 0, 1, &o->rep.alpha) || strchr(optarg, '%'))
            return usage_error("--alpha: not a probability between 0 and 1: '%s'", optarg);
        return once(&g->alpha, optarg);
    case OPT_MIN_CALLS:
        if (cv_parse_u64(optarg, &u) || u < 2)
            return usage_error("--min-calls: not a count of 2 or more: '%s'", optarg);
        o->rep.min_calls = u;
        return once(&g->min_calls, optarg);
    case OPT_TEST:
        if ((o->rep.test = parse_choice(optarg, tests, 3)) < 0)
            return usage_error("--test: not auto, calls or runs: '%s'", optarg);
        return once(&g->test, optarg);
    case 'e': o->prof.self = o->rep.self = 1; return 0;
    case OPT_BY_THREAD: o->prof.by_thread = 1; return 0;
    case OPT_NO_NORM: o->rep.no_normalize = 1; return 0;
    case OPT_NO_CORR: o->rep.no_correction = 1; return 0;
    case 'a': o->rep.all = 1; return once(&g->all, NULL);
    case OPT_ALLOW: o->allow_truncated = 1; return 0;
    case 'h': fputs(usage_text, stdout); *done = 1; return 0;
    case 'V': cv_print_version(); *done = 1; return 0;
    default: return -1;
    }
}

static int parse_args(int argc, char **argv, diff_opts *o, int *done) {
    static const struct option longs[] = {
        {"base", required_argument, 0, 'b'},        {"new", required_argument, 0, 'n'},
        {"format", required_argument, 0, 'f'},      {"output", required_argument, 0, 'o'},
        {"threshold", required_argument, 0, 't'},   {"min-time", required_argument, 0, 'm'},
        {"alpha", required_argument, 0, OPT_ALPHA}, {"min-calls", required_argument, 0, OPT_MIN_CALLS},
        {"test", required_argument, 0, OPT_TEST},   {"self", no_argument, 0, 'e'},
        {"by-thread", no_argument, 0, OPT_BY_THREAD}, {"all", no_argument, 0, 'a'},
        {"allow-truncated", no_argument, 0, OPT_ALLOW}, {"help", no_argument, 0, 'h'},
        {"no-normalize", no_argument, 0, OPT_NO_NORM},
        {"no-correction", no_argument, 0, OPT_NO_CORR},
        {"version", no_argument, 0, 'V'},           {0, 0, 0, 0}};
    diff_given g;
    int c;
    memset(&g, 0, sizeof g);
    *done = 0;
    opterr = 0;
    while ((c = cv_getopt(argc, argv, ":b:n:f:o:t:m:eahV", longs)) != -1) {
        if (c == ':') return usage_error("option '%s' needs an argument", argv[optind - 1]);
        int rc = parse_opt(c, o, &g, done);
        if (rc < 0) return usage_error("unknown option '%s'", argv[optind - 1]);
        if (rc || *done) return rc;
    }
    int npos = argc - optind;
    if (npos && (o->nbase || o->nnext))
        return usage_error("%s", "give the runs either as BASE NEW or with --base and --new");
    if (npos == 2) {
        if (add_file(&o->base, &o->nbase, argv[optind]) ||
            add_file(&o->next, &o->nnext, argv[optind + 1]))
            return usage_error("%s", "out of memory");
    } else if (npos) {
        return usage_error("%s", npos < 2 ? "give two traces: BASE NEW" : "too many arguments "
                           "(several runs per side: --base and --new)");
    }
    if (!o->nbase || !o->nnext)
        return usage_error("%s", !o->nbase && !o->nnext ? "no trace files given"
                                 : !o->nbase ? "no base run (--base)" : "no new run (--new)");
    /* JSON and CSV always hold every row. */
    if (o->rep.format != DR_TABLE && o->rep.format != DR_MARKDOWN &&
        cv_opt_unused(&g.all, &g.format, "-f table or markdown"))
        return DIFF_EXIT_USAGE;
    return 0;
}

/* ---- Running ------------------------------------------------------------- */

/* Opens every input and checks its header, metadata and trailer before any
 * event is read: the first failure is the exit code. */
static int open_inputs(const char **paths, uint32_t n, dp_input *in, int allow_truncated) {
    for (uint32_t i = 0; i < n; i++) {
        in[i].path = paths[i];
        int code = cv_open(paths[i], &in[i].r);
        if (!code) code = cv_check_complete(in[i].r, paths[i], allow_truncated);
        if (code) return code;
    }
    return 0;
}

static void *read_side(void *arg) {
    dp_profile *p = arg;
    return (void *)(intptr_t)dp_read(p);
}

/* Reads both sides at once (the base on a second thread); reports the
 * base's error first. */
static int read_both(dp_profile *a, dp_profile *b) {
    pthread_t th;
    int threaded = pthread_create(&th, NULL, read_side, a) == 0;
    int cb = dp_read(b);
    void *ret = NULL;
    int ca = threaded ? (pthread_join(th, &ret), (int)(intptr_t)ret) : dp_read(a);
    if (ca) cv_err("%s", dp_error(a));
    if (cb) cv_err("%s", dp_error(b));
    return ca ? ca : cb;
}

static void warn_lost(const dp_profile *p) {
    for (uint32_t i = 0; i < dp_runs(p); i++) {
        const dp_input *in = dp_input_at(p, i);
        if (in->lost)
            cv_warn("%s: %llu events were lost while recording: calls are missing", in->path,
                    (unsigned long long)in->lost);
    }
}

static int report(const diff_opts *o, dp_profile *a, dp_profile *b) {
    dr_report *r = dr_compare(a, b, &o->rep);
    cv_out out;
    if (!r) {
        cv_err("out of memory");
        return CV_EXIT_INPUT;
    }
    if (cv_out_open(&out, o->output)) {
        dr_report_free(r);
        return CV_EXIT_OUTPUT;
    }
    dr_write(r, &out);
    int code = dr_count(r, DR_REGRESSION) ? DIFF_EXIT_REGRESSION : DIFF_EXIT_OK;
    if (cv_out_close(&out, o->output ? o->output : "standard output")) code = CV_EXIT_OUTPUT;
    dr_report_free(r);
    return code;
}

static int run(const diff_opts *o) {
    dp_input *ia = calloc(o->nbase, sizeof *ia), *ib = calloc(o->nnext, sizeof *ib);
    dp_profile *a = NULL, *b = NULL;
    int code = CV_EXIT_INPUT;
    if (!ia || !ib) {
        cv_err("out of memory");
        goto out;
    }
    code = open_inputs(o->base, o->nbase, ia, o->allow_truncated);
    if (!code) code = open_inputs(o->next, o->nnext, ib, o->allow_truncated);
    if (!code && cv_check_output(o->output)) code = DIFF_EXIT_USAGE;
    if (code) goto out;
    a = dp_profile_new(&o->prof, ia, o->nbase);
    b = dp_profile_new(&o->prof, ib, o->nnext);
    if (!a || !b) {
        cv_err("out of memory");
        code = CV_EXIT_INPUT;
        goto out;
    }
    code = read_both(a, b);
    if (code) goto out;
    warn_lost(a);
    warn_lost(b);
    code = report(o, a, b);
out:
    for (uint32_t i = 0; !a && ia && i < o->nbase; i++) lt_reader_free(ia[i].r);
    for (uint32_t i = 0; !b && ib && i < o->nnext; i++) lt_reader_free(ib[i].r);
    dp_profile_free(a);
    dp_profile_free(b);
    free(ia);
    free(ib);
    return code;
}

int main(int argc, char **argv) {
    diff_opts o = {.rep = {.threshold = 0.05, .min_time = 100e3, .alpha = 0.05,
                           .min_calls = 10, .test = DR_TEST_AUTO, .format = DR_TABLE}};
    int done;
    cv_prog = "tracy-diff";
    int code = parse_args(argc, argv, &o, &done);
    if (!code && !done) code = run(&o);
    free(o.base);
    free(o.next);
    return code;
}
