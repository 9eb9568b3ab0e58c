/* reader_bench.c -- decoding speed and on-disk size of a call-heavy trace.
 *
 * Builds a synthetic trace shaped like a profiled recursive fib (zones of
 * one Python location nested ~25 deep, 50-150 ns apart with jitter, a
 * builtin call now and then) with lt_builder, then times lt_reader_next
 * over every event, merged and per stream.
 *
 *     reader_bench [EVENTS [THREADS [OUT.tracy]]]
 *
 * Defaults: 10000000 events, 1 thread, a temporary file removed at exit.
 * Prints one "key: value" per line. Exit codes: 0 ok, 1 error, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "trace.h"
#include "trace_builder.h"

typedef struct gen {
    lt_builder *b;
    uint32_t proc, thread, fib, builtin;
    uint64_t ts, rng, events, target;
    int err;
} gen;

static uint32_t rnd(gen *g, uint32_t n) {
    g->rng ^= g->rng << 13;
    g->rng ^= g->rng >> 7;
    g->rng ^= g->rng << 17;
    return (uint32_t)(g->rng % n);
}

static void step(gen *g) { g->ts += 50 + rnd(g, 101); }

/* fib(n) as the Python hook records it: a zone per call. */
static void fib(gen *g, int n) {
    if (g->err || g->events + 2 > g->target) return;
    step(g);
    g->err = lt_builder_zone_begin(g->b, g->proc, g->thread, g->ts, g->fib);
    g->events++;
    if (n >= 2) {
        fib(g, n - 1);
        fib(g, n - 2);
    } else if (rnd(g, 16) == 0 && !g->err) { /* an occasional builtin */
        step(g);
        g->err = lt_builder_zone_begin(g->b, g->proc, g->thread, g->ts, g->builtin);
        step(g);
        if (!g->err) g->err = lt_builder_zone_end(g->b, g->proc, g->thread, g->ts);
        g->events += 2;
    }
    step(g);
    if (!g->err) g->err = lt_builder_zone_end(g->b, g->proc, g->thread, g->ts);
    g->events++;
}

static double clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }
/* CPU time of the process: what descheduling on a loaded machine does not
 * inflate */
static double cpu_s(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static int build(const char *path, uint64_t events, int threads) {
    gen g = {.rng = 0x9E3779B97F4A7C15ull, .ts = 1000000};
    int rc = lt_builder_open(&g.b, path, LT_WRITE_FORCE, "reader_bench");
    if (rc < 0) return rc;
    const char *argv[] = {"python3", "fib.py"};
    int p = lt_builder_process(g.b, 4242, -1, "bench", "python3", 2, argv,
                               1000000, 1700000000000000000ull);
    if (p < 0) return p;
    g.proc = (uint32_t)p;
    g.fib = (uint32_t)lt_builder_loc(g.b, g.proc, LT_LOC_PYTHON, "fib", "fib.py", 1);
    g.builtin = (uint32_t)lt_builder_loc(g.b, g.proc, LT_LOC_C, "len", "<builtin>", 0);
    uint64_t per = events / (uint64_t)threads;
    for (int t = 0; t < threads && !g.err; t++) {
        int th = lt_builder_thread(g.b, g.proc, 100 + (uint64_t)t, "worker");
        if (th < 0) return th;
        g.thread = (uint32_t)th;
        g.events = 0;
        g.target = per;
        g.ts = 1000000 + (uint64_t)t * 7;
        while (!g.err && g.events + 2 <= g.target) fib(&g, 25);
    }
    int rc2 = lt_builder_close(g.b, 0);
    return g.err ? g.err : rc2;
}

static int run(lt_reader *r, uint64_t *n, double *secs, double *cpu) {
    lt_event ev;
    int rc;
    uint64_t sum = 0;
    double t0 = now_s(), c0 = cpu_s();
    *n = 0;
    while ((rc = lt_reader_next(r, &ev)) == 1) {
        sum += ev.child_ns;
        (*n)++;
    }
    *secs = now_s() - t0;
    *cpu = cpu_s() - c0;
    if (sum == 1) puts(""); /* keeps the loop from being optimised away */
    return rc;
}

int main(int argc, char **argv) {
    uint64_t events = 10000000;
    int threads = 1;
    char path[64] = "/tmp/reader_bench.XXXXXX";
    int tmp = 1;
    if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        puts("usage: reader_bench [EVENTS [THREADS [OUT.tracy]]]");
        return 0;
    }
    if (argc > 1) events = strtoull(argv[1], NULL, 10);
    if (argc > 2) threads = atoi(argv[2]);
    if (argc > 4 || events < 2 || threads < 1 || threads > 1024) {
        fputs("usage: reader_bench [EVENTS [THREADS [OUT.tracy]]]\n", stderr);
        return 2;
    }
    if (argc > 3) {
        snprintf(path, sizeof path, "%s", argv[3]);
        tmp = 0;
    } else {
        int fd = mkstemp(path);
        if (fd < 0) {
            perror("mkstemp");
            return 1;
        }
        close(fd);
    }
    double t0 = now_s();
    int rc = build(path, events, threads);
    double tb = now_s() - t0;
    if (rc < 0) {
        fprintf(stderr, "reader_bench: write %s: %s\n", path, lt_strerror(rc));
        return 1;
    }
    lt_reader *r;
    char detail[256];
    if ((rc = lt_reader_open(&r, path, detail, sizeof detail)) < 0) {
        fprintf(stderr, "reader_bench: %s\n", detail);
        return 1;
    }
    const lt_file_info *fi = lt_reader_info(r);
    uint64_t n;
    double secs, cpu, best = 1e9, best_cpu = 1e9;
    for (int i = 0; i < 3; i++) {
        if ((rc = run(r, &n, &secs, &cpu)) < 0) {
            fprintf(stderr, "reader_bench: %s\n", lt_reader_error(r));
            return 1;
        }
        if (secs < best) best = secs;
        if (cpu < best_cpu) best_cpu = cpu;
        lt_reader_rewind(r);
    }
    printf("events: %llu\n", (unsigned long long)n);
    printf("threads: %d\n", threads);
    printf("file_bytes: %llu\n", (unsigned long long)fi->file_size);
    printf("bytes_per_event: %.3f\n", (double)fi->file_size / (double)n);
    printf("raw_bytes_per_event: %.3f\n", (double)fi->raw_bytes / (double)n);
    printf("build_events_per_s: %.0f\n", (double)n / tb);
    printf("decode_events_per_s: %.0f\n", (double)n / best);
    printf("decode_events_per_cpu_s: %.0f\n", (double)n / best_cpu);
    lt_reader_free(r);
    if (tmp) unlink(path);
    return 0;
}
