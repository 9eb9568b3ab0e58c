/* tracegen.c -- writes synthetic .tracy files with libtrace's trace builder:
 * sized traces for benchmarks (millions of zones) and small fixed traces for
 * the converters' golden tests. Timestamps are deterministic. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "trace_builder.h"

typedef struct gen_opts {
    const char *output, *fixed;
    uint64_t zones, messages, signposts, plots, frames, lost;
    uint32_t processes, threads, depth, locations;
    int force, no_trailer;
    uint32_t slow_loc, slow_pct, drop_loc, rename_loc; /* 0: none */
    const char *rename_to;
} gen_opts;

static const char usage_text[] =
    "Usage: tracegen [OPTIONS] -o OUT.tracy\n"
    "Writes a synthetic trace with deterministic timestamps.\n"
    "\n"
    "  -o, --output FILE     the trace to write (required)\n"
    "  -f, --force           overwrite an existing file\n"
    "  -z, --zones N         zones in all (default 1000)\n"
    "  -p, --processes N     processes (default 1)\n"
    "  -t, --threads N       threads per process (default 1)\n"
    "  -d, --depth N         deepest nesting of zones (default 4)\n"
    "  -l, --locations N     source locations per process (default 16)\n"
    "      --messages N      log messages in all (default 0)\n"
    "      --signposts N     signposts in all (default 0)\n"
    "      --plots N         plot samples in all (default 0)\n"
    "      --frames N        frame marks in all (default 0)\n"
    "      --lost N          LOST records in all (default 0)\n"
    "      --no-trailer      leave the trailer out (an incomplete file)\n"
    "      --slow LOC:PCT    zones of location LOC last PCT% longer (tracy-diff tests)\n"
    "      --drop LOC        record no zone of location LOC (its time stays)\n"
    "      --rename LOC:NAME name location LOC NAME instead of func_LOC\n"
    "      --fixed NAME      write a fixed trace instead: 'small' (two processes,\n"
    "                        every record type, quoting cases, an unclosed zone)\n"
    "                        or 'empty' (one process, one thread, no events)\n"
    "  -h, --help            print this help and exit\n";

#define BASE_TS 1000000000ull

static int check(int rc, const char *what) {
    if (rc < 0) fprintf(stderr, "tracegen: %s: %s\n", what, lt_strerror(rc));
    return rc < 0;
}

/* ---- Fixed traces ------------------------------------------------------- */

static int fixed_small(lt_builder *b) {
    static const char *argv1[] = {"python3", "train.py", "--epochs", "2"};
    static const char *argv2[] = {"python3", "train.py"};
    int rc = 0;
    int p1 = lt_builder_process(b, 1001, 0, "node0", "python3", 4, argv1, 5000000000ull,
                                1700000000000000000ull);
    int p2 = lt_builder_process(b, 2001, 1, "node1", "/usr/bin/python3", 2, argv2,
                                5000000100ull, 1700000000000000100ull);
    if (check(p1, "process") || check(p2, "process")) return -1;
    rc |= lt_builder_thread(b, 1, 1001, "MainThread") < 0;
    rc |= lt_builder_thread(b, 1, 1002, "worker") < 0;
    rc |= lt_builder_thread(b, 2, 2001, "MainThread") < 0;
    rc |= lt_builder_loc(b, 1, LT_LOC_PYTHON, "main", "train.py", 1) != 1;
    rc |= lt_builder_loc(b, 1, LT_LOC_PYTHON, "step", "train.py", 10) != 2;
    rc |= lt_builder_loc(b, 1, LT_LOC_C, "numpy.dot", "", 0) != 3;
    rc |= lt_builder_loc(b, 1, LT_LOC_LINE, "train.py:12", "train.py", 12) != 4;
    rc |= lt_builder_loc(b, 1, LT_LOC_USER, "load, \"batch\"", "data.py", 5) != 5;
    rc |= lt_builder_plot(b, 1, "loss") != 1;
    rc |= lt_builder_frame_name(b, 1, "epoch") != 1;
    rc |= lt_builder_loc(b, 2, LT_LOC_PYTHON, "main", "train.py", 1) != 1;
    rc |= lt_builder_loc(b, 2, LT_LOC_PYTHON, "step", "train.py", 10) != 2;
    if (rc) {
        fprintf(stderr, "tracegen: cannot define the fixed trace's metadata\n");
        return -1;
    }
    /* Process 1, thread 1. */
    rc |= lt_builder_zone_begin(b, 1, 1, BASE_TS + 1000, 1);
    rc |= lt_builder_signpost(b, 1, 1, BASE_TS + 1100, "epoch 1", "lr=0.1");
    rc |= lt_builder_zone_begin(b, 1, 1, BASE_TS + 1200, 2);
    rc |= lt_builder_zone_text(b, 1, 1, "i=0");
    rc |= lt_builder_zone_begin(b, 1, 1, BASE_TS + 1300, 3);
    rc |= lt_builder_zone_end(b, 1, 1, BASE_TS + 1500);
    rc |= lt_builder_zone_end(b, 1, 1, BASE_TS + 1600);
    rc |= lt_builder_plot_value(b, 1, 1, BASE_TS + 1650, 1, 0.5);
    rc |= lt_builder_zone_begin(b, 1, 1, BASE_TS + 1700, 2);
    rc |= lt_builder_zone_name(b, 1, 1, "step[1]");
    rc |= lt_builder_message(b, 1, 1, BASE_TS + 1800, "checkpoint saved");
    rc |= lt_builder_zone_end(b, 1, 1, BASE_TS + 1900);
    rc |= lt_builder_frame(b, 1, 1, BASE_TS + 2000, 1);
    rc |= lt_builder_plot_value(b, 1, 1, BASE_TS + 2050, 1, 0.25);
    rc |= lt_builder_zone_end(b, 1, 1, BASE_TS + 2100);
    /* Process 1, thread 2: text that needs quoting and escaping. */
    rc |= lt_builder_zone_begin(b, 1, 2, BASE_TS + 1050, 5);
    rc |= lt_builder_zone_text(b, 1, 2, "a,b\n\"q\"\t\x01 end");
    rc |= lt_builder_zone_begin(b, 1, 2, BASE_TS + 1250, 4);
    rc |= lt_builder_zone_end(b, 1, 2, BASE_TS + 1260);
    rc |= lt_builder_zone_end(b, 1, 2, BASE_TS + 1400);
    rc |= lt_builder_lost(b, 1, 2, BASE_TS + 1450, 3);
    rc |= lt_builder_process_end(b, 1, BASE_TS + 2200, LT_PROC_CLEAN, "");
    /* Process 2: one zone left open (the process was lost). */
    rc |= lt_builder_zone_begin(b, 2, 1, BASE_TS + 1010, 1);
    rc |= lt_builder_zone_begin(b, 2, 1, BASE_TS + 1500, 2);
    rc |= lt_builder_zone_end(b, 2, 1, BASE_TS + 1990);
    rc |= lt_builder_zone_begin(b, 2, 1, BASE_TS + 2010, 2);
    rc |= lt_builder_message(b, 2, 1, BASE_TS + 2020, "rank 1 \xc3\xa9t\xc3\xa9");
    rc |= lt_builder_process_end(b, 2, BASE_TS + 2300, LT_PROC_LOST, "connection reset");
    if (rc) {
        fprintf(stderr, "tracegen: cannot write the fixed trace's events\n");
        return -1;
    }
    return 0;
}

static int fixed_empty(lt_builder *b) {
    static const char *argv1[] = {"true"};
    if (check(lt_builder_process(b, 42, -1, "host", "true", 1, argv1, 1, 2), "process") ||
        check(lt_builder_thread(b, 1, 42, ""), "thread") ||
        check(lt_builder_process_end(b, 1, BASE_TS, LT_PROC_CLEAN, ""), "process end"))
        return -1;
    return 0;
}

/* ---- Sized traces ------------------------------------------------------- */

/* Share of `total` for item `i` of `n`. */
static uint64_t share(uint64_t total, uint64_t i, uint64_t n) {
    return total / n + (i < total % n);
}

typedef struct quota {
    uint64_t zones, messages, signposts, plots, frames, lost;
} quota;

/* Number of top-level calls the zone quota makes. */
static uint64_t top_calls(uint64_t zones, uint32_t depth) {
    uint64_t k = 0;
    while (zones) {
        uint64_t d = 1 + k % depth;
        zones -= d < zones ? d : zones;
        k++;
    }
    return k;
}

/* Extra records between top-level calls, spread evenly: one of a kind is
 * due at top-level call k when k is a multiple of its stride; drain emits
 * whatever is left. */
static int extras(lt_builder *b, uint32_t p, uint32_t t, uint64_t *ts, quota *q,
                  const quota *stride, uint64_t k, int drain) {
    int rc = 0;
    char text[64];
    do {
        if (q->messages && (drain || k % stride->messages == 0)) {
            snprintf(text, sizeof text, "message %llu", (unsigned long long)q->messages);
            rc |= lt_builder_message(b, p, t, *ts += 5, text) < 0;
            q->messages--;
        }
        if (q->signposts && (drain || k % stride->signposts == 0)) {
            snprintf(text, sizeof text, "phase %llu", (unsigned long long)q->signposts);
            rc |= lt_builder_signpost(b, p, t, *ts += 5, text, "") < 0;
            q->signposts--;
        }
        if (q->plots && (drain || k % stride->plots == 0)) {
            rc |= lt_builder_plot_value(b, p, t, *ts += 5, 1, (double)(k % 100) / 4) < 0;
            q->plots--;
        }
        if (q->frames && (drain || k % stride->frames == 0)) {
            rc |= lt_builder_frame(b, p, t, *ts += 5, 0) < 0;
            q->frames--;
        }
        if (q->lost && (drain || k % stride->lost == 0)) {
            rc |= lt_builder_lost(b, p, t, *ts += 5, 1 + k % 3) < 0;
            q->lost--;
        }
    } while (drain && !rc && (q->messages || q->signposts || q->plots || q->frames || q->lost));
    return rc;
}

static uint64_t stride_of(uint64_t tops, uint64_t n) {
    return n && tops / n ? tops / n : 1;
}

static int gen_thread(lt_builder *b, const gen_opts *o, uint32_t p, uint32_t t, quota q) {
    uint64_t ts = BASE_TS + 1000 * (uint64_t)t + 100 * (uint64_t)p;
    uint64_t tops = top_calls(q.zones, o->depth), k = 0;
    quota stride = {0, stride_of(tops, q.messages), stride_of(tops, q.signposts),
                    stride_of(tops, q.plots), stride_of(tops, q.frames), stride_of(tops, q.lost)};
    int rc = 0;
    for (; q.zones > 0 && !rc; k++) {
        uint64_t d = 1 + k % o->depth;
        if (d > q.zones) d = q.zones;
        rc |= extras(b, p, t, &ts, &q, &stride, k, 0);
        unsigned char kept[1000];
        for (uint64_t i = 0; i < d; i++) {
            uint32_t loc = 1 + (uint32_t)((k * 7 + i) % o->locations);
            uint64_t own = 40 + (k * 13 + i * 7) % 200;
            kept[i] = loc != o->drop_loc;
            if (kept[i]) rc |= lt_builder_zone_begin(b, p, t, ts, loc) < 0;
            if (kept[i] && k % 16 == 0 && i == 0) rc |= lt_builder_zone_text(b, p, t, "args") < 0;
            ts += own + (loc == o->slow_loc ? own * o->slow_pct / 100 : 0);
        }
        for (uint64_t i = 0; i < d; i++) {
            if (kept[d - 1 - i]) rc |= lt_builder_zone_end(b, p, t, ts) < 0;
            ts += 10 + i;
        }
        q.zones -= d;
    }
    rc |= extras(b, p, t, &ts, &q, &stride, k, 1);
    return rc ? -1 : 0;
}

static int gen_sized(lt_builder *b, const gen_opts *o) {
    uint64_t nstreams = (uint64_t)o->processes * o->threads;
    for (uint32_t p = 1; p <= o->processes; p++) {
        char prog[32], host[32];
        const char *argv1[] = {prog};
        snprintf(prog, sizeof prog, "app%u", p);
        snprintf(host, sizeof host, "node%u", p - 1);
        if (check(lt_builder_process(b, 10000 + p, (int64_t)p - 1, host, prog, 1, argv1,
                                     BASE_TS, 1700000000000000000ull), "process"))
            return -1;
        for (uint32_t t = 1; t <= o->threads; t++) {
            char name[32];
            snprintf(name, sizeof name, t == 1 ? "MainThread" : "worker-%u", t - 1);
            if (check(lt_builder_thread(b, p, 10000 * (uint64_t)p + t, name), "thread"))
                return -1;
        }
        for (uint32_t l = 1; l <= o->locations; l++) {
            char name[256], file[32];
            snprintf(name, sizeof name, "func_%u", l);
            if (l == o->rename_loc) snprintf(name, sizeof name, "%s", o->rename_to);
            snprintf(file, sizeof file, "src/mod_%u.py", l % 5);
            if (check(lt_builder_loc(b, p, (uint8_t)(1 + l % 4), name, file, 10 * l), "location"))
                return -1;
        }
        if (check(lt_builder_plot(b, p, "memory"), "plot")) return -1;
    }
    for (uint32_t p = 1; p <= o->processes; p++)
        for (uint32_t t = 1; t <= o->threads; t++) {
            uint64_t i = (uint64_t)(p - 1) * o->threads + (t - 1);
            quota q = {share(o->zones, i, nstreams), share(o->messages, i, nstreams),
                       share(o->signposts, i, nstreams), share(o->plots, i, nstreams),
                       share(o->frames, i, nstreams), share(o->lost, i, nstreams)};
            if (gen_thread(b, o, p, t, q)) {
                fprintf(stderr, "tracegen: cannot write events\n");
                return -1;
            }
        }
    return 0;
}

/* ---- Main --------------------------------------------------------------- */

static int parse_count(const char *s, uint64_t *v, uint64_t min, const char *opt) {
    char *end;
    unsigned long long x = strtoull(s, &end, 10);
    if (!*s || *end || x < min || s[0] == '-') {
        fprintf(stderr, "tracegen: %s: not a valid count: '%s'\n", opt, s);
        return -1;
    }
    *v = x;
    return 0;
}

enum { OPT_MSG = 256, OPT_SIGN, OPT_PLOTS, OPT_FRAMES, OPT_LOST, OPT_NOTRAILER, OPT_FIXED,
       OPT_SLOW, OPT_DROP, OPT_RENAME };

/* "LOC:REST": the location number, and REST in *rest. */
static int parse_loc_arg(const char *s, uint32_t *loc, const char **rest, const char *opt) {
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (end == s || v == 0 || v > 1000000 || (rest ? *end != ':' : *end != '\0')) {
        fprintf(stderr, "tracegen: %s: not valid: '%s'\n", opt, s);
        return -1;
    }
    *loc = (uint32_t)v;
    if (rest) *rest = end + 1;
    return 0;
}

static int parse_args(int argc, char **argv, gen_opts *o) {
    static const struct option longs[] = {
        {"output", required_argument, 0, 'o'}, {"force", no_argument, 0, 'f'},
        {"zones", required_argument, 0, 'z'}, {"processes", required_argument, 0, 'p'},
        {"threads", required_argument, 0, 't'}, {"depth", required_argument, 0, 'd'},
        {"locations", required_argument, 0, 'l'}, {"messages", required_argument, 0, OPT_MSG},
        {"signposts", required_argument, 0, OPT_SIGN}, {"plots", required_argument, 0, OPT_PLOTS},
        {"frames", required_argument, 0, OPT_FRAMES}, {"lost", required_argument, 0, OPT_LOST},
        {"no-trailer", no_argument, 0, OPT_NOTRAILER}, {"fixed", required_argument, 0, OPT_FIXED},
        {"slow", required_argument, 0, OPT_SLOW}, {"drop", required_argument, 0, OPT_DROP},
        {"rename", required_argument, 0, OPT_RENAME},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    uint64_t v;
    while ((c = getopt_long(argc, argv, "o:fz:p:t:d:l:h", longs, NULL)) != -1) {
        switch (c) {
        case 'o': o->output = optarg; break;
        case 'f': o->force = 1; break;
        case 'z': if (parse_count(optarg, &o->zones, 0, "--zones")) return 1; break;
        case 'p': if (parse_count(optarg, &v, 1, "--processes") || v > 100000) return 1;
            o->processes = (uint32_t)v; break;
        case 't': if (parse_count(optarg, &v, 1, "--threads") || v > 4194304) return 1;
            o->threads = (uint32_t)v; break;
        case 'd': if (parse_count(optarg, &v, 1, "--depth") || v > 1000) return 1;
            o->depth = (uint32_t)v; break;
        case 'l': if (parse_count(optarg, &v, 1, "--locations") || v > 1000000) return 1;
            o->locations = (uint32_t)v; break;
        case OPT_MSG: if (parse_count(optarg, &o->messages, 0, "--messages")) return 1; break;
        case OPT_SIGN: if (parse_count(optarg, &o->signposts, 0, "--signposts")) return 1; break;
        case OPT_PLOTS: if (parse_count(optarg, &o->plots, 0, "--plots")) return 1; break;
        case OPT_FRAMES: if (parse_count(optarg, &o->frames, 0, "--frames")) return 1; break;
        case OPT_LOST: if (parse_count(optarg, &o->lost, 0, "--lost")) return 1; break;
        case OPT_NOTRAILER: o->no_trailer = 1; break;
        case OPT_FIXED: o->fixed = optarg; break;
        case OPT_SLOW: {
            const char *pct;
            if (parse_loc_arg(optarg, &o->slow_loc, &pct, "--slow") ||
                parse_count(pct, &v, 0, "--slow") || v > 100000) return 1;
            o->slow_pct = (uint32_t)v;
            break;
        }
        case OPT_DROP: if (parse_loc_arg(optarg, &o->drop_loc, NULL, "--drop")) return 1; break;
        case OPT_RENAME:
            if (parse_loc_arg(optarg, &o->rename_loc, &o->rename_to, "--rename") ||
                !*o->rename_to || strlen(o->rename_to) > 200) return 1;
            break;
        case 'h': fputs(usage_text, stdout); exit(0);
        default: fputs("Try 'tracegen --help'.\n", stderr); return 1;
        }
    }
    if (!o->output || optind != argc) {
        fputs("tracegen: give -o OUT.tracy and no other arguments\n", stderr);
        return 1;
    }
    if (o->fixed && strcmp(o->fixed, "small") && strcmp(o->fixed, "empty")) {
        fprintf(stderr, "tracegen: unknown fixed trace '%s' (small, empty)\n", o->fixed);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    gen_opts o = {.zones = 1000, .processes = 1, .threads = 1, .depth = 4, .locations = 16};
    if (parse_args(argc, argv, &o)) return 1;
    lt_builder *b;
    int rc = lt_builder_open(&b, o.output, o.force ? LT_WRITE_FORCE : 0, "tracegen " LT_VERSION_STRING);
    if (rc < 0) {
        fprintf(stderr, "tracegen: %s: %s\n", o.output, lt_strerror(rc));
        return 2;
    }
    if (!o.fixed) rc = gen_sized(b, &o);
    else if (strcmp(o.fixed, "small") == 0) rc = fixed_small(b);
    else rc = fixed_empty(b);
    int crc = lt_builder_close(b, o.no_trailer);
    if (rc == 0 && crc < 0) {
        fprintf(stderr, "tracegen: %s: %s\n", o.output, lt_strerror(crc));
        rc = -1;
    }
    return rc ? 2 : 0;
}
