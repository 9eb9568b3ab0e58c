/* gentrace.c -- benchmark helper: writes a synthetic .tracy file of a given
 * number of zones with lt_builder, shaped like a profiled program: 4
 * threads, each a sequence of nested call trees (depth up to 8) over 40
 * source locations, a message every 10000 zones. Deterministic.
 *
 *     gentrace OUT.tracy ZONES
 *
 * Exit codes: 0 ok, 1 write error, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>

#include "trace.h"

#define THREADS 4
#define LOCS 40
#define MAX_DEPTH 8

typedef struct gen {
    lt_builder *b;
    uint32_t proc, thread[THREADS];
    uint32_t loc[LOCS];
    uint64_t ts[THREADS];
    uint64_t rng, zones, target;
    int err;
} gen;

static uint32_t rnd(gen *g, uint32_t n) {
    g->rng = g->rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g->rng >> 33) % n;
}

/* One call tree on thread t: a zone and 0-3 children, depth-limited. */
static void tree(gen *g, int t, int depth) {
    if (g->err || g->zones >= g->target)
        return;
    g->zones++;
    g->ts[t] += 20 + rnd(g, 200);
    g->err = lt_builder_zone_begin(g->b, g->proc, g->thread[t], g->ts[t],
                                   g->loc[rnd(g, LOCS)]);
    int kids = depth < MAX_DEPTH ? (int)rnd(g, 4) : 0;
    for (int i = 0; i < kids && !g->err; i++)
        tree(g, t, depth + 1);
    g->ts[t] += 20 + rnd(g, 300);
    if (!g->err)
        g->err = lt_builder_zone_end(g->b, g->proc, g->thread[t], g->ts[t]);
    if (!g->err && g->zones % 10000 == 0)
        g->err = lt_builder_message(g->b, g->proc, g->thread[t], g->ts[t], "checkpoint");
}

static int setup(gen *g) {
    static const char *const argv[] = {"gentrace"};
    int rc = lt_builder_process(g->b, 4242, -1, "bench-host", "gentrace", 1, argv,
                                1000000, 1700000000000000000ull);
    if (rc < 0)
        return rc;
    g->proc = (uint32_t)rc;
    for (int t = 0; t < THREADS; t++) {
        char name[32];
        snprintf(name, sizeof name, "worker-%d", t);
        if ((rc = lt_builder_thread(g->b, g->proc, 5000 + (uint64_t)t, name)) < 0)
            return rc;
        g->thread[t] = (uint32_t)rc;
        g->ts[t] = 1000000;
    }
    for (int i = 0; i < LOCS; i++) {
        char name[32];
        snprintf(name, sizeof name, "module.func_%02d", i);
        if ((rc = lt_builder_loc(g->b, g->proc, LT_LOC_PYTHON, name, "/src/module.py",
                                 (uint32_t)(10 * i + 1))) < 0)
            return rc;
        g->loc[i] = (uint32_t)rc;
    }
    return 0;
}

static uint64_t last_ts(const gen *g) {
    uint64_t m = 0;
    for (int t = 0; t < THREADS; t++)
        m = g->ts[t] > m ? g->ts[t] : m;
    return m;
}

int main(int argc, char **argv) {
    if (argc != 3 || atoll(argv[2]) <= 0) {
        fprintf(stderr, "usage: gentrace OUT.tracy ZONES\n");
        return 2;
    }
    gen g = {.rng = 42, .target = (uint64_t)atoll(argv[2])};
    int rc = lt_builder_open(&g.b, argv[1], LT_WRITE_FORCE, "gentrace");
    if (rc == 0)
        rc = setup(&g);
    while (rc == 0 && !g.err && g.zones < g.target)
        tree(&g, (int)rnd(&g, THREADS), 0);
    if (rc == 0)
        rc = g.err;
    if (rc == 0)
        rc = lt_builder_process_end(g.b, g.proc, last_ts(&g) + 1000, LT_PROC_CLEAN, "");
    int crc = lt_builder_close(g.b, 0);
    if (rc == 0)
        rc = crc;
    if (rc < 0) {
        fprintf(stderr, "gentrace: %s: %s\n", argv[1], lt_strerror(rc));
        return 1;
    }
    return 0;
}
