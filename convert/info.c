/* info.c -- tracy-info: a summary of a trace for people and CI (--json),
 * whose exit code says whether the file is intact. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "convert/convert.h"

typedef struct info_opts {
    const char *path;
    int json, verify;
} info_opts;

typedef struct counts {
    int scanned;             /* counted by decoding every event */
    int corrupt;
    char error[256];         /* reader error when corrupt */
    uint64_t events, zones, plots, frames, lost;
    uint64_t messages;       /* messages and signposts, as the trailer counts */
    uint64_t signposts;
    uint64_t unclosed, aborted;
} counts;

static const char usage_text[] =
    "Usage: tracy-info [OPTIONS] TRACE.tracy\n"
    "Prints a summary of a .tracy file: format version, whether it is complete,\n"
    "processes, threads, event counts, lost and rejected events, time range and\n"
    "compression ratio. The counts come from the trailer of a complete file;\n"
    "a file without one is scanned. Every block is decompressed and its\n"
    "checksum checked, and the trailer is compared with the block descriptors.\n"
    "\n"
    "      --json     print the summary as JSON\n"
    "      --verify   also decode every event even when the trailer is present,\n"
    "                 checking every record and the trailer's counts\n"
    "  -h, --help     print this help and exit\n"
    "  -V, --version  print the version and exit\n"
    "\n"
    "Exit status: 0 complete and intact, nothing lost; 1 usage; 2 unreadable or\n"
    "not a trace; 3 truncated (no trailer); 4 corrupt; 5 cannot write output;\n"
    "6 complete and intact, but the file records lost data (lost events or a\n"
    "data_loss statistic: the counts are printed).\n";

/* ---- Counting ----------------------------------------------------------- */

static int from_trailer(lt_reader *r, counts *c) {
    uint64_t z, m, l;
    if (!lt_reader_info(r)->complete || !lt_reader_total(r, "zones", &z) ||
        !lt_reader_total(r, "messages", &m) || !lt_reader_total(r, "lost_events", &l))
        return -1;
    c->zones = z;
    c->messages = m;
    c->lost = l;
    c->events = lt_reader_info(r)->n_events;
    return 0;
}

static void set_corrupt(counts *c, const char *why) {
    c->corrupt = 1;
    snprintf(c->error, sizeof c->error, "%s", why);
}

static void scan(lt_reader *r, counts *c) {
    lt_event ev;
    int rc;
    c->scanned = 1;
    while ((rc = lt_reader_next(r, &ev)) > 0) {
        c->events++;
        switch (ev.type) {
        case LT_EV_ZONE_BEGIN: c->zones++; break;
        case LT_EV_ZONE_END:
            c->events--; /* a zone is two events in the file */
            if (ev.flags & LT_EVF_UNCLOSED) c->unclosed++;
            else c->events++;
            if (ev.flags & LT_EVF_ABORTED) c->aborted++;
            break;
        case LT_EV_MESSAGE: c->messages++; break;
        case LT_EV_SIGNPOST: c->signposts++, c->messages++; break; /* as the trailer */
        case LT_EV_PLOT: c->plots++; break;
        case LT_EV_FRAME: c->frames++; break;
        case LT_EV_LOST: c->lost = c->lost + ev.count < c->lost ? UINT64_MAX : c->lost + ev.count; break;
        default: break;
        }
    }
    if (rc < 0) set_corrupt(c, lt_reader_error(r));
}

/* After a scan of a complete file: the trailer's totals must be what the
 * records hold (a forged or damaged trailer is corruption). */
static void check_totals(lt_reader *r, counts *c) {
    const struct {
        const char *name;
        uint64_t have;
    } v[] = {{"events", c->events}, {"zones", c->zones},     {"messages", c->messages},
             {"plots", c->plots},   {"frames", c->frames},   {"lost_events", c->lost}};
    if (c->corrupt || !lt_reader_info(r)->complete) return;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint64_t t;
        if (lt_reader_total(r, v[i].name, &t) && t != v[i].have) {
            char why[160];
            snprintf(why, sizeof why,
                     "trailer does not match the file: %s %llu in the trailer, %llu in the file",
                     v[i].name, (unsigned long long)t, (unsigned long long)v[i].have);
            set_corrupt(c, why);
            return;
        }
    }
}

static uint64_t stat_value(lt_reader *r, const char *name) {
    uint64_t v = 0;
    lt_reader_total(r, name, &v);
    return v;
}

static uint64_t nthreads_total(lt_reader *r) {
    uint64_t n = 0;
    for (uint32_t p = 1; p <= lt_reader_nprocesses(r); p++) n += lt_reader_nthreads(r, p);
    return n;
}

static double ratio(const lt_file_info *fi) {
    return fi->body_bytes ? (double)fi->raw_bytes / (double)fi->body_bytes : 0.0;
}

/* ---- Human output ------------------------------------------------------- */

static const char *state_text(const lt_file_info *fi, const counts *c, char *buf, size_t n) {
    if (c->corrupt)
        snprintf(buf, n, "corrupt (%s)", c->error);
    else if (fi->complete)
        snprintf(buf, n, "complete");
    else
        snprintf(buf, n, "truncated (no trailer; %llu bytes ignored after the last complete unit)",
                 (unsigned long long)fi->bytes_ignored);
    return buf;
}

static void print_human(lt_reader *r, const char *path, const counts *c, cv_out *o) {
    const lt_file_info *fi = lt_reader_info(r);
    char buf[640];
    time_t secs = (time_t)(fi->created_wall_ns / 1000000000u);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
    cv_out_printf(o, "file:             %s\n", path);
    cv_out_printf(o, "format:           %u.%u\n", fi->major, fi->minor);
    char t1[1024], t2[1024];
    cv_out_printf(o, "creator:          %s\n", cv_shown(fi->creator, t1, sizeof t1));
    cv_out_printf(o, "created:          %s\n", buf);
    cv_out_printf(o, "state:            %s\n", state_text(fi, c, buf, sizeof buf));
    cv_out_printf(o, "file size:        %llu bytes\n", (unsigned long long)fi->file_size);
    cv_out_printf(o, "data:             %llu bytes in %llu blocks, %llu bytes raw (compression ratio %.2f)\n",
                  (unsigned long long)fi->body_bytes, (unsigned long long)fi->n_blocks,
                  (unsigned long long)fi->raw_bytes, ratio(fi));
    cv_out_printf(o, "time range:       %llu .. %llu ns (%.6f s)\n",
                  (unsigned long long)fi->first_ts, (unsigned long long)fi->last_ts,
                  (double)(fi->last_ts - fi->first_ts) / 1e9);
    cv_out_printf(o, "counted from:     %s\n", c->scanned ? "a scan of every event" : "the trailer");
    cv_out_printf(o, "events:           %llu\n", (unsigned long long)c->events);
    cv_out_printf(o, "zones:            %llu\n", (unsigned long long)c->zones);
    cv_out_printf(o, "messages:         %llu (signposts included)\n", (unsigned long long)c->messages);
    if (c->scanned) {
        cv_out_printf(o, "  signposts:      %llu\n", (unsigned long long)c->signposts);
        cv_out_printf(o, "plot samples:     %llu\n", (unsigned long long)c->plots);
        cv_out_printf(o, "frame marks:      %llu\n", (unsigned long long)c->frames);
        cv_out_printf(o, "unclosed zones:   %llu\n", (unsigned long long)c->unclosed);
        cv_out_printf(o, "aborted zones:    %llu\n", (unsigned long long)c->aborted);
    }
    cv_out_printf(o, "lost events:      %llu\n", (unsigned long long)c->lost);
    cv_out_printf(o, "rejected events:  %llu\n", (unsigned long long)stat_value(r, "events_rejected"));
    cv_out_printf(o, "processes:        %u\n", lt_reader_nprocesses(r));
    for (uint32_t p = 1; p <= lt_reader_nprocesses(r); p++) {
        const lt_process *pr = lt_reader_process(r, p);
        if (!pr || !pr->has_info) {
            cv_out_printf(o, "  %u: no metadata (the file ends before it)\n", p);
            continue;
        }
        cv_out_printf(o, "  %u: pid %llu", p, (unsigned long long)pr->pid);
        if (pr->rank >= 0) cv_out_printf(o, ", rank %lld", (long long)pr->rank);
        cv_out_printf(o, ", %s on %s, %s", cv_shown(pr->program, t1, sizeof t1),
                      cv_shown(pr->hostname, t2, sizeof t2), cv_status_name(pr->status));
        if (pr->status != LT_PROC_RUNNING)
            cv_out_printf(o, "%s%s, events received %llu sent %llu lost %llu",
                          pr->end_reason && *pr->end_reason ? ": " : "",
                          cv_shown(pr->end_reason, t1, sizeof t1),
                          (unsigned long long)pr->events_received,
                          (unsigned long long)pr->events_sent,
                          (unsigned long long)pr->events_lost);
        cv_out_ch(o, '\n');
    }
    cv_out_printf(o, "threads:          %llu\n", (unsigned long long)nthreads_total(r));
    for (uint32_t p = 1; p <= lt_reader_nprocesses(r); p++)
        for (uint32_t t = 1; t <= lt_reader_nthreads(r, p); t++) {
            const lt_thread *th = lt_reader_thread(r, p, t);
            if (th)
                cv_out_printf(o, "  %u.%u: tid %llu%s%s\n", p, t, (unsigned long long)th->tid,
                              th->name && *th->name ? " " : "", cv_shown(th->name, t1, sizeof t1));
        }
    if (lt_reader_nstats(r)) {
        cv_out_printf(o, "capture statistics:\n");
        for (size_t i = 0; i < lt_reader_nstats(r); i++) {
            const lt_stat *st = lt_reader_stat(r, i);
            cv_out_printf(o, "  %s: %llu\n", cv_shown(st->name, t1, sizeof t1),
                          (unsigned long long)st->value);
        }
    }
}

/* ---- JSON output -------------------------------------------------------- */

static void jkey(cv_out *o, const char *k) {
    cv_out_json(o, k, strlen(k));
    cv_out_ch(o, ':');
}

static void jstr(cv_out *o, const char *k, const char *v) {
    jkey(o, k);
    if (v) cv_out_json(o, v, strlen(v));
    else cv_out_str(o, "null");
    cv_out_ch(o, ',');
}

static void jnum(cv_out *o, const char *k, uint64_t v) {
    jkey(o, k);
    cv_out_u64(o, v);
    cv_out_ch(o, ',');
}

static void json_process(lt_reader *r, uint32_t p, cv_out *o) {
    const lt_process *pr = lt_reader_process(r, p);
    cv_out_ch(o, '{');
    jnum(o, "index", p);
    jkey(o, "metadata");
    if (!pr || !pr->has_info) { /* a cut file: only the index is known */
        cv_out_str(o, "false,\"threads\":[]}");
        return;
    }
    cv_out_str(o, "true,");
    jnum(o, "pid", pr->pid);
    jkey(o, "rank");
    if (pr->rank >= 0) cv_out_i64(o, pr->rank);
    else cv_out_str(o, "null");
    cv_out_ch(o, ',');
    jstr(o, "hostname", pr->hostname);
    jstr(o, "program", pr->program);
    jkey(o, "argv");
    cv_out_ch(o, '[');
    for (uint32_t i = 0; i < pr->argc; i++) {
        if (i) cv_out_ch(o, ',');
        cv_out_json(o, pr->argv[i], strlen(pr->argv[i]));
    }
    cv_out_str(o, "],");
    jstr(o, "client", pr->client);
    jstr(o, "status", cv_status_name(pr->status));
    if (pr->status != LT_PROC_RUNNING) {
        jstr(o, "end_reason", pr->end_reason);
        jnum(o, "end_ts", pr->end_ts);
        jnum(o, "events_received", pr->events_received);
        jnum(o, "events_sent", pr->events_sent);
        jnum(o, "events_lost", pr->events_lost);
    }
    jkey(o, "threads");
    cv_out_ch(o, '[');
    for (uint32_t t = 1; t <= lt_reader_nthreads(r, p); t++) {
        const lt_thread *th = lt_reader_thread(r, p, t);
        if (t > 1) cv_out_ch(o, ',');
        cv_out_ch(o, '{');
        jnum(o, "index", t);
        jnum(o, "tid", th ? th->tid : 0);
        jkey(o, "name");
        cv_out_json(o, th && th->name ? th->name : "", th && th->name ? strlen(th->name) : 0);
        cv_out_ch(o, '}');
    }
    cv_out_str(o, "]}");
}

static void print_json(lt_reader *r, const char *path, const counts *c, cv_out *o) {
    const lt_file_info *fi = lt_reader_info(r);
    char ver[32];
    snprintf(ver, sizeof ver, "%u.%u", fi->major, fi->minor);
    cv_out_ch(o, '{');
    jstr(o, "file", path);
    jstr(o, "format_version", ver);
    jstr(o, "creator", fi->creator);
    jnum(o, "created_wall_ns", fi->created_wall_ns);
    jstr(o, "state", c->corrupt ? "corrupt" : fi->complete ? "complete" : "truncated");
    jkey(o, "complete");
    cv_out_str(o, fi->complete && !c->corrupt ? "true," : "false,");
    jnum(o, "bytes_ignored", fi->bytes_ignored);
    jstr(o, "error", c->corrupt ? c->error : NULL);
    jnum(o, "file_size", fi->file_size);
    jnum(o, "body_bytes", fi->body_bytes);
    jnum(o, "raw_bytes", fi->raw_bytes);
    jnum(o, "blocks", fi->n_blocks);
    cv_out_printf(o, "\"compression_ratio\":%.4f,", ratio(fi));
    jnum(o, "first_ts", fi->first_ts);
    jnum(o, "last_ts", fi->last_ts);
    jnum(o, "duration_ns", fi->last_ts - fi->first_ts);
    jstr(o, "counted_from", c->scanned ? "scan" : "trailer");
    jnum(o, "events", c->events);
    jnum(o, "zones", c->zones);
    jnum(o, "messages", c->messages);
    if (c->scanned) {
        jnum(o, "signposts", c->signposts);
        jnum(o, "plot_samples", c->plots);
        jnum(o, "frame_marks", c->frames);
        jnum(o, "unclosed_zones", c->unclosed);
        jnum(o, "aborted_zones", c->aborted);
    }
    jnum(o, "lost_events", c->lost);
    jnum(o, "rejected_events", stat_value(r, "events_rejected"));
    jnum(o, "threads", nthreads_total(r));
    jkey(o, "processes");
    cv_out_ch(o, '[');
    for (uint32_t p = 1; p <= lt_reader_nprocesses(r); p++) {
        if (p > 1) cv_out_ch(o, ',');
        json_process(r, p, o);
    }
    cv_out_str(o, "],");
    jkey(o, "stats");
    cv_out_ch(o, '[');
    for (size_t i = 0; i < lt_reader_nstats(r); i++) {
        const lt_stat *st = lt_reader_stat(r, i);
        static const char *sev[] = {"info", "data_loss", "error"};
        if (i) cv_out_ch(o, ',');
        cv_out_ch(o, '{');
        jstr(o, "name", st->name);
        jstr(o, "severity", st->severity < 3 ? sev[st->severity] : "unknown");
        jkey(o, "value");
        cv_out_u64(o, st->value);
        cv_out_ch(o, '}');
    }
    cv_out_str(o, "]}\n");
}

/* ---- Main --------------------------------------------------------------- */

/* Events the file records as lost: LOST records (or the trailer's count)
 * and every capture statistic of severity data_loss. Writes a one-line
 * account into buf; returns 1 when anything was lost. */
static int data_lost(lt_reader *r, const counts *c, char *buf, size_t n) {
    size_t len = (size_t)snprintf(buf, n, "%llu lost events", (unsigned long long)c->lost);
    int lost = c->lost > 0;
    for (size_t i = 0; i < lt_reader_nstats(r); i++) {
        const lt_stat *st = lt_reader_stat(r, i);
        char t[64];
        if (st->severity != LT_SEV_DATA_LOSS || st->value == 0) continue;
        lost = 1;
        if (len < n)
            len += (size_t)snprintf(buf + len, n - len, ", %s %llu", cv_shown(st->name, t, sizeof t),
                                    (unsigned long long)st->value);
    }
    return lost;
}

/* Counts from the trailer, or from a scan of every event (--verify, or no
 * trailer); the cheap checks of lt_reader_check() always. */
static void count(lt_reader *r, const info_opts *opt, counts *c) {
    char bad[256] = "";
    if (lt_reader_check(r) < 0) snprintf(bad, sizeof bad, "%s", lt_reader_error(r));
    memset(c, 0, sizeof *c);
    if (opt->verify || from_trailer(r, c)) {
        memset(c, 0, sizeof *c);
        scan(r, c);
        check_totals(r, c);
    }
    if (bad[0] && !c->corrupt) set_corrupt(c, bad);
}

/* The exit code, with its one line on stderr: corrupt 4, truncated 3,
 * data lost 6, else 0. */
static int verdict(lt_reader *r, const info_opts *opt, const counts *c) {
    char lost[512];
    if (c->corrupt) {
        cv_err("%s: %s", opt->path, c->error);
        return CV_EXIT_CORRUPT;
    }
    if (!lt_reader_info(r)->complete) {
        cv_warn("%s: truncated: %llu bytes ignored after the last complete unit", opt->path,
                (unsigned long long)lt_reader_info(r)->bytes_ignored);
        return CV_EXIT_TRUNCATED;
    }
    if (data_lost(r, c, lost, sizeof lost)) {
        cv_warn("%s: data lost while capturing: %s", opt->path, lost);
        return CV_EXIT_LOST;
    }
    return CV_EXIT_OK;
}

static int run(const info_opts *opt) {
    cv_run run;
    counts c;
    cv_out o;
    /* Truncation is this program's own verdict: reported after the summary. */
    int code = cv_run_open(&run, opt->path, CV_TRUNC_SILENT);
    if (code) return code;
    count(run.r, opt, &c);
    if (cv_out_open(&o, NULL)) {
        cv_run_close(&run);
        return CV_EXIT_OUTPUT;
    }
    if (opt->json) print_json(run.r, opt->path, &c, &o);
    else print_human(run.r, opt->path, &c, &o);
    int out_failed = cv_out_close(&o, NULL) != 0;
    code = verdict(run.r, opt, &c);
    if (out_failed) code = CV_EXIT_OUTPUT;
    cv_run_close(&run);
    return code;
}

enum { OPT_JSON = 256, OPT_VERIFY };

int main(int argc, char **argv) {
    static const struct option longs[] = {
        {"json", no_argument, 0, OPT_JSON},
        {"verify", no_argument, 0, OPT_VERIFY},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0}};
    info_opts o = {0};
    int c;
    cv_prog = "tracy-info";
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hV", longs, NULL)) != -1) {
        switch (c) {
        case OPT_JSON: o.json = 1; break;
        case OPT_VERIFY: o.verify = 1; break;
        case 'h': fputs(usage_text, stdout); return CV_EXIT_OK;
        case 'V': return cv_print_version();
        default: return cv_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return cv_usage_error(optind >= argc ? "no trace file given" : "too many arguments");
    o.path = argv[optind];
    return run(&o);
}
