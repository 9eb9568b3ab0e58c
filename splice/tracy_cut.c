/* tracy_cut.c -- tracy-cut: a time range, processes or threads of a
 * trace into a new, valid trace. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "splice/output.h"
#include "prog/select.h"

static const char usage_text[] =
    "Usage: tracy-cut [OPTIONS] -o OUT.tracy IN.tracy\n"
    "Writes a part of a trace as a new trace: a time window, some processes,\n"
    "some threads. Zones already open where the window starts are kept, marked\n"
    "as cut (their beginning is the window's start); zones still open where it\n"
    "ends are left open-ended. Memory stays flat whatever the input's size.\n"
    "\n"
    "  -o, --output FILE    the new trace (required; never the input)\n"
    "  -f, --force          replace FILE when it exists\n"
    "      --from TIME      start of the window (default: the trace's start)\n"
    "      --to TIME        end of the window, included (default: its end)\n"
    "                       TIME is a number with a unit (ns, us, ms, s), counted\n"
    "                       from the trace's first event, e.g. 1.5s or 200ms; with\n"
    "                       --absolute, a timestamp in ns as the file holds it\n"
    "      --absolute       TIME values are timestamps, not offsets\n"
    "  -p, --process LIST   keep these processes only (indices, comma-separated)\n"
    "  -t, --thread LIST    keep these threads only: P:T (process and thread index)\n"
    "                       or a thread name, comma-separated\n"
    "      --level N        zstd level of rewritten blocks, 1..19 (default 3)\n"
    "  -q, --quiet          no summary line on standard error\n"
    "  -h, --help           print this help and exit\n"
    "  -V, --version        print the version and exit\n"
    "\n"
    "Exit status: 0 written, 1 usage, 2 input unreadable or not a trace,\n"
    "3 written, but the input was truncated, 4 the input is corrupt,\n"
    "5 cannot write the output (it is removed).\n";

typedef struct ct_opts {
    sc_output output;
    const char *in;
    const char *from_s, *to_s, *procs, *threads;
    int absolute;
} ct_opts;

/* tracy-cut's keep_thread callback over the shared selection. */
static int ct_keep_thread(void *ctx, uint32_t p, uint32_t t) {
    return cv_sel_keep_thread(ctx, p, t);
}

/* "1.5s", "200ms", "30us", "1000ns" (or a bare number of ns with
 * --absolute). Returns 0 or -1. */
static int ct_parse_time(const char *s, int absolute, uint64_t *ns) {
    if (absolute) return cv_parse_u64(s, ns);
    char *end;
    double v = strtod(s, &end);
    double mult = strcmp(end, "s") == 0    ? 1e9
                  : strcmp(end, "ms") == 0 ? 1e6
                  : strcmp(end, "us") == 0 ? 1e3
                  : strcmp(end, "ns") == 0 ? 1
                                           : -1;
    if (end == s || mult < 0 || !(v >= 0) || v * mult > 1.8e19) return -1;
    *ns = (uint64_t)(v * mult + 0.5);
    return 0;
}

static int ct_window(const ct_opts *o, lt_reader *r, uint64_t *from, uint64_t *to) {
    uint64_t base = o->absolute ? 0 : lt_reader_info(r)->first_ts, v;
    *from = 0;
    *to = UINT64_MAX;
    if (o->from_s) {
        if (ct_parse_time(o->from_s, o->absolute, &v) < 0)
            return cv_usage_error("--from: '%s' is not a time (e.g. 1.5s, 200ms)", o->from_s);
        *from = base + v;
    }
    if (o->to_s) {
        if (ct_parse_time(o->to_s, o->absolute, &v) < 0)
            return cv_usage_error("--to: '%s' is not a time (e.g. 1.5s, 200ms)", o->to_s);
        *to = base + v < base ? UINT64_MAX : base + v;
    }
    if (*from > *to) return cv_usage_error("the window ends (--to) before it starts (--from)");
    return 0;
}

static int ct_run(const ct_opts *o) {
    lt_reader *r = NULL;
    lt_splice *s = NULL;
    uint32_t *out = NULL;
    int64_t *shift = NULL;
    int code = cv_open(o->in, &r);
    if (code) return code;
    if ((code = cv_check_output(o->output.path))) goto out;
    int trunc = cv_check_complete(r, o->in, 1) == 0 && !lt_reader_info(r)->complete;
    cv_sel sel = {r, o->procs, o->threads};
    lt_splice_input in = {.r = r, .name = o->in, .keep_thread = ct_keep_thread, .ctx = &sel};
    if ((code = cv_sel_check(&sel)) || (code = ct_window(o, r, &in.from, &in.to))) goto out;
    uint32_t n = lt_reader_nprocesses(r), next = 0;
    out = calloc((size_t)n + 1, sizeof *out);
    shift = calloc((size_t)n + 1, sizeof *shift);
    if (!out || !shift) {
        cv_err("out of memory");
        code = CV_EXIT_INPUT;
        goto out;
    }
    for (uint32_t p = 1; p <= n; p++) {
        int any = 0; /* a process whose threads are all left out goes too */
        for (uint32_t t = 1; t <= lt_reader_nthreads(r, p) && !any; t++)
            any = ct_keep_thread(&sel, p, t);
        if (cv_sel_keep_proc(&sel, p) && (any || !o->threads)) out[p] = ++next;
    }
    in.proc_out = out;
    in.proc_shift = shift;
    if ((code = sc_open(&s, &o->output))) goto out;
    if (lt_splice_add(s, &in) < 0) {
        code = sc_abandon(s, o->output.path);
        goto out;
    }
    code = sc_finish(s, &o->output, trunc ? CV_EXIT_TRUNCATED : CV_EXIT_OK);
out:
    free(out);
    free(shift);
    lt_reader_free(r);
    return code;
}

enum { OPT_FROM = 256, OPT_TO, OPT_ABS };

int main(int argc, char **argv) {
    static const struct option longs[] = {
        {"from", required_argument, 0, OPT_FROM}, {"to", required_argument, 0, OPT_TO},
        {"absolute", no_argument, 0, OPT_ABS}, {"process", required_argument, 0, 'p'},
        {"thread", required_argument, 0, 't'}, SC_LONG_OPTIONS, {0, 0, 0, 0}};
    ct_opts o = {.output.level = 3};
    cv_opt procs = {0}, threads = {0}, from = {0}, to = {0}, absolute = {0};
    int c, code = 0;
    cv_prog = "tracy-cut";
    opterr = 0;
    while (!code && (c = cv_getopt(argc, argv, ":o:fp:t:qhV", longs)) != -1) {
        switch (c) {
        case 'p': code = cv_opt_set(&procs, optarg); o.procs = optarg; break;
        case 't': code = cv_opt_set(&threads, optarg); o.threads = optarg; break;
        case OPT_FROM: code = cv_opt_set(&from, optarg); o.from_s = optarg; break;
        case OPT_TO: code = cv_opt_set(&to, optarg); o.to_s = optarg; break;
        case OPT_ABS: code = cv_opt_set(&absolute, NULL); o.absolute = 1; break;
        default:
            if ((code = sc_option(c, &o.output, usage_text, argv)) != SC_MORE) return code;
            code = 0;
        }
    }
    if (code || (code = sc_check_args(&o.output, argc))) return code;
    if (!o.from_s && !o.to_s && (code = cv_opt_unused(&absolute, NULL, "--from or --to")))
        return code;
    if (argc - optind > 1) return cv_usage_error("one input trace only (tracy-merge joins several)");
    o.in = argv[optind];
    return ct_run(&o);
}
