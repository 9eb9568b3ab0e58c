/* tracerotate.c -- copies a trace's blocks through a writer that rotates to
 * numbered files (lt_writer_set_rotation), as capture-release --rotate
 * does with what it receives: the same blocks give the same files, without
 * a daemon or a clock, for tests/identity/.
 *
 * Usage: tracerotate --max-size BYTES -o OUT.tracy IN.tracy
 * Exit codes: 0, 1 usage, 2 input unreadable or corrupt, 5 write error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/file_int.h"
#include "format/reader_int.h"

typedef struct tr_copy {
    lt_reader *r;
    lt_writer *w;
    lt__stream_state **st;    /* [process][thread - 1] */
    uint8_t *raw;
    size_t cap;
} tr_copy;

/* An event block's descriptor, its counts from its records. */
static int tr_events(tr_copy *c, const lt__blk *b, const uint8_t *rec, uint64_t base,
                     lt_block_desc *d) {
    lt__stream_state *st = &c->st[b->process][b->thread - 1];
    lt__scan_limits lim = {UINT32_MAX, UINT32_MAX, UINT32_MAX, LT_MAX_DEPTH, 1, 0, 0};
    const lt__stream_state before = *st;
    const char *why;
    size_t off;
    st->last_ts = base;
    if (lt__scan_events(rec, (size_t)(c->raw + b->raw - rec), st, &lim, &why, &off) < 0) {
        fprintf(stderr, "tracerotate: corrupt block at offset %llu: %s\n",
                (unsigned long long)b->off, why);
        return 2;
    }
    lt__desc_counts(d, &before, st);
    return 0;
}

static int tr_block(tr_copy *c, const lt__blk *b) {
    const uint8_t *rec;
    uint64_t base;
    if (lt__load_block(c->r, b, &c->raw, &c->cap, &rec, &base) < 0) {
        fprintf(stderr, "tracerotate: %s\n", lt_reader_error(c->r));
        return 2;
    }
    lt_block_desc d = {.kind = b->kind, .process = b->process, .thread = b->thread,
                       .first_ts = b->first_ts, .last_ts = b->last_ts};
    int rc = b->kind == LT_BLOCK_EVENTS ? tr_events(c, b, rec, base, &d) : 0;
    if (rc) return rc;
    if (b->kind == LT_BLOCK_EVENTS && d.n_events != b->n_events) {
        fprintf(stderr, "tracerotate: block at offset %llu: event count differs\n",
                (unsigned long long)b->off);
        return 2;
    }
    if ((rc = lt_writer_block(c->w, &d, c->raw, b->raw)) < 0) {
        fprintf(stderr, "tracerotate: cannot write: %s\n", lt_strerror(rc));
        return 5;
    }
    return 0;
}

/* Copies every block, then the trailer (the processes and threads as the
 * input declares them). */
static int tr_run(tr_copy *c) {
    uint32_t np = lt_reader_nprocesses(c->r);
    uint64_t threads = 0;
    c->st = calloc((size_t)np + 1, sizeof *c->st);
    if (!c->st) return 5;
    for (uint32_t p = 1; p <= np; p++) {
        uint32_t n = lt_reader_nthreads(c->r, p);
        threads += n;
        if (!(c->st[p] = calloc(n ? n : 1, sizeof **c->st))) return 5;
    }
    for (uint32_t i = 0; i < c->r->nblks; i++) {
        int rc = tr_block(c, &c->r->blks[i]);
        if (rc) return rc;
    }
    const lt_total t[] = {{"processes", np}, {"threads", threads}};
    int rc = lt__writer_finish(c->w, t, 2);
    c->w = NULL;
    if (rc < 0) fprintf(stderr, "tracerotate: cannot write: %s\n", lt_strerror(rc));
    return rc < 0 ? 5 : 0;
}

int main(int argc, char **argv) {
    const char *out = NULL, *in = NULL;
    unsigned long long max = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out = argv[++i];
        else if (strcmp(argv[i], "--max-size") == 0 && i + 1 < argc)
            max = strtoull(argv[++i], NULL, 10);
        else if (argv[i][0] != '-' && !in) in = argv[i];
        else in = out = NULL, i = argc;
    }
    if (!out || !in || !max) {
        fprintf(stderr, "usage: tracerotate --max-size BYTES -o OUT.tracy IN.tracy\n");
        return 1;
    }
    char why[256];
    tr_copy c = {0};
    if (lt_reader_open(&c.r, in, why, sizeof why) < 0) {
        fprintf(stderr, "tracerotate: %s: %s\n", in, why);
        return 2;
    }
    int rc = lt_writer_open(&c.w, out, LT_WRITE_FORCE, "tracerotate", 0);
    if (rc == 0) rc = lt_writer_set_rotation(c.w, out, max);
    if (rc < 0) {
        fprintf(stderr, "tracerotate: cannot write %s: %s\n", out, lt_strerror(rc));
        rc = 5;
    } else {
        rc = tr_run(&c);
    }
    lt_writer_close(c.w, NULL, 0, NULL, 0);
    for (uint32_t p = 0; c.st && p <= lt_reader_nprocesses(c.r); p++) free(c.st[p]);
    free(c.st);
    c.r->raw_held -= c.cap;
    free(c.raw);
    lt_reader_free(c.r);
    return rc;
}
