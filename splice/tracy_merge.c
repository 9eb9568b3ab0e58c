/* tracy_merge.c -- tracy-merge: several traces (from several daemons or hosts)
 * into one, the processes of different hosts put on one timeline by their
 * clock anchors, the alignment's error stated in the output's statistics. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "splice/output.h"

/* Floor of a host's alignment error: the gap between a process's reading of
 * CLOCK_MONOTONIC and of CLOCK_REALTIME for its anchor is not recorded. */
#define MG_READ_GAP_NS 1000

static const char usage_text[] =
    "Usage: tracy-merge [OPTIONS] -o OUT.tracy IN.tracy...\n"
    "Merges traces, for example from one capture daemon per host of an MPI job,\n"
    "into one. Processes are numbered in the order of the inputs. The timestamps\n"
    "of each host are moved onto the timeline of the host that booted first,\n"
    "using the clock anchors (a monotonic and a wall-clock reading) that every\n"
    "process recorded; the alignment's error is stated in the output's\n"
    "statistics (clock_align_error_ns). Memory stays flat whatever the inputs'\n"
    "size.\n"
    "\n"
    "  -o, --output FILE  the merged trace (required; never an input)\n"
    "  -f, --force        replace FILE when it exists\n"
    "      --no-align     keep every timestamp as recorded\n"
    "      --level N      zstd level of rewritten blocks, 1..19 (default 3)\n"
    "  -q, --quiet        no summary line on standard error\n"
    "  -h, --help         print this help and exit\n"
    "  -V, --version      print the version and exit\n"
    "\n"
    "Exit status: 0 merged, 1 usage, 2 an input unreadable or not a trace,\n"
    "3 merged, but an input was truncated (its complete units were merged),\n"
    "4 an input is corrupt, 5 cannot write the output (it is removed).\n";

typedef struct mg_opts {
    sc_output output;
    int no_align;
    char **inputs;
    int ninputs;
} mg_opts;

/* One host: the offsets (wall - mono) of its processes. */
typedef struct mg_host {
    const char *name;
    int64_t lo, hi;
    int anchored;              /* at least one process has an anchor */
    int64_t offset, shift;
    uint64_t error;
} mg_host;

typedef struct mg_state {
    lt_reader **r;
    mg_host *hosts;
    size_t nhosts;
} mg_state;

static mg_host *mg_host_of(mg_state *m, const char *name) {
    for (size_t i = 0; i < m->nhosts; i++)
        if (strcmp(m->hosts[i].name, name) == 0) return &m->hosts[i];
    mg_host *h = realloc(m->hosts, (m->nhosts + 1) * sizeof *h);
    if (!h) return NULL;
    m->hosts = h;
    h = &h[m->nhosts++];
    memset(h, 0, sizeof *h);
    h->name = name;
    return h;
}

/* Gathers the hosts and picks each one's offset (the middle of its
 * processes' offsets) and its shift onto the earliest-booted host's time:
 * every shift is then >= 0. */
static int mg_align(mg_state *m, const mg_opts *o) {
    for (int i = 0; i < o->ninputs; i++)
        for (uint32_t p = 1; p <= lt_reader_nprocesses(m->r[i]); p++) {
            const lt_process *pr = lt_reader_process(m->r[i], p);
            mg_host *h = pr ? mg_host_of(m, pr->hostname) : NULL;
            if (!pr) continue;
            if (!h) return -1;
            if (!pr->anchor_wall_ns || !pr->anchor_mono_ns) continue;
            int64_t off = (int64_t)(pr->anchor_wall_ns - pr->anchor_mono_ns);
            if (!h->anchored || off < h->lo) h->lo = off;
            if (!h->anchored || off > h->hi) h->hi = off;
            h->anchored = 1;
        }
    mg_host *ref = NULL;
    for (size_t i = 0; i < m->nhosts; i++) {
        mg_host *h = &m->hosts[i];
        if (!h->anchored) continue;
        h->offset = h->lo + (h->hi - h->lo) / 2;
        h->error = (uint64_t)(h->hi - h->lo + 1) / 2 + MG_READ_GAP_NS;
        if (!ref || h->offset < ref->offset) ref = h;
    }
    for (size_t i = 0; i < m->nhosts && !o->no_align && ref; i++) {
        mg_host *h = &m->hosts[i];
        if (!h->anchored) continue;
        h->shift = h->offset - ref->offset;
        if (h != ref) h->error += ref->error;
    }
    return 0;
}

static int mg_stats(lt_splice *s, const mg_state *m, const mg_opts *o) {
    char name[512], desc[700];
    uint64_t worst = 0, unanchored = 0;
    int rc = 0;
    for (size_t i = 0; i < m->nhosts && rc == 0; i++) {
        const mg_host *h = &m->hosts[i];
        if (!h->anchored) {
            unanchored++;
            continue;
        }
        if (h->shift && h->error > worst) worst = h->error;
        snprintf(name, sizeof name, "clock_shift_ns:%s", h->name);
        snprintf(desc, sizeof desc, "ns added to the timestamps of host '%s'", h->name);
        rc = lt_splice_stat(s, name, LT_SEV_INFO, (uint64_t)h->shift, desc);
        snprintf(name, sizeof name, "clock_align_error_ns:%s", h->name);
        snprintf(desc, sizeof desc, "bound of the error of host '%s' against the "
                 "reference host, from the processes' clock anchors", h->name);
        if (rc == 0) rc = lt_splice_stat(s, name, LT_SEV_INFO, h->shift ? h->error : 0, desc);
    }
    if (rc == 0)
        rc = lt_splice_stat(s, "clock_align_error_ns", LT_SEV_INFO, o->no_align ? 0 : worst,
                            o->no_align ? "hosts not aligned (--no-align)"
                                        : "largest alignment error between hosts: half the "
                                          "spread of each host's anchors plus 1 us of anchor "
                                          "reading, for the host and the reference host; the "
                                          "hosts' own wall-clock disagreement (NTP) not included");
    if (rc == 0)
        rc = lt_splice_stat(s, "clock_unanchored_hosts", LT_SEV_INFO, unanchored,
                            "hosts without clock anchors, left unaligned");
    if (rc == 0)
        rc = lt_splice_stat(s, "merge_inputs", LT_SEV_INFO, (uint64_t)o->ninputs,
                            "traces merged into this one");
    return rc;
}

static int64_t mg_shift_of(const mg_state *m, const lt_process *pr) {
    for (size_t i = 0; i < m->nhosts; i++)
        if (strcmp(m->hosts[i].name, pr->hostname) == 0) return m->hosts[i].shift;
    return 0;
}

/* Registers every input with its processes renumbered after the previous
 * inputs' and shifted by their host's shift. */
static int mg_add_inputs(lt_splice *s, const mg_state *m, const mg_opts *o) {
    uint32_t next = 0;
    for (int i = 0; i < o->ninputs; i++) {
        uint32_t n = lt_reader_nprocesses(m->r[i]);
        uint32_t *out = calloc((size_t)n + 1, sizeof *out);
        int64_t *shift = calloc((size_t)n + 1, sizeof *shift);
        int rc = out && shift ? 0 : LT_ENOMEM;
        for (uint32_t p = 1; p <= n && rc == 0; p++) {
            const lt_process *pr = lt_reader_process(m->r[i], p);
            out[p] = ++next;
            shift[p] = pr ? mg_shift_of(m, pr) : 0;
        }
        lt_splice_input in = {.r = m->r[i], .name = o->inputs[i], .proc_out = out,
                              .proc_shift = shift, .from = 0, .to = UINT64_MAX};
        if (rc == 0) rc = lt_splice_add(s, &in);
        free(out);
        free(shift);
        if (rc < 0) return rc;
    }
    return 0;
}

static int mg_run(const mg_opts *o) {
    mg_state m = {0};
    lt_splice *s = NULL;
    int code = 0, trunc = 0;
    m.r = calloc((size_t)o->ninputs, sizeof *m.r);
    if (!m.r) {
        cv_err("out of memory");
        return CV_EXIT_INPUT;
    }
    for (int i = 0; i < o->ninputs && code == 0; i++) {
        code = cv_open(o->inputs[i], &m.r[i]);
        if (code == 0 && cv_check_complete(m.r[i], o->inputs[i], 1) == 0 &&
            !lt_reader_info(m.r[i])->complete)
            trunc = 1;
    }
    if (!code) code = cv_check_output(o->output.path);
    if (code) goto out;
    if (mg_align(&m, o) < 0) {
        cv_err("out of memory");
        code = CV_EXIT_INPUT;
        goto out;
    }
    if ((code = sc_open(&s, &o->output))) goto out;
    if (mg_add_inputs(s, &m, o) < 0 || mg_stats(s, &m, o) < 0) {
        code = sc_abandon(s, o->output.path);
        goto out;
    }
    code = sc_finish(s, &o->output, trunc ? CV_EXIT_TRUNCATED : CV_EXIT_OK);
out:
    for (int i = 0; i < o->ninputs; i++) lt_reader_free(m.r[i]);
    free(m.r);
    free(m.hosts);
    return code;
}

enum { OPT_NO_ALIGN = 256 };

int main(int argc, char **argv) {
    static const struct option longs[] = {
        {"no-align", no_argument, 0, OPT_NO_ALIGN}, SC_LONG_OPTIONS, {0, 0, 0, 0}};
    mg_opts o = {.output.level = 3};
    int c, code;
    cv_prog = "tracy-merge";
    opterr = 0;
    while ((c = cv_getopt(argc, argv, ":o:fqhV", longs)) != -1) {
        switch (c) {
        case OPT_NO_ALIGN: o.no_align = 1; break;
        default:
            if ((code = sc_option(c, &o.output, usage_text, argv)) != SC_MORE) return code;
        }
    }
    if ((code = sc_check_args(&o.output, argc))) return code;
    o.inputs = argv + optind;
    o.ninputs = argc - optind;
    return mg_run(&o);
}
