/* reader_check.c -- the trailer compared with what the descriptors say
 * (lt__check_trailer, when opening: every reader), and lt_reader_check():
 * every event block decompressed and checked, without decoding a record. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "reader_int.h"

/* Formats a mismatch between the trailer and the file; returns LT_ECORRUPT. */
static int lt__mismatch(lt_reader *r, const char *what, uint64_t trailer,
                        uint64_t file) {
    snprintf(r->errmsg, sizeof r->errmsg,
             "trailer does not match the file: %s %" PRIu64 " in the trailer, %" PRIu64
             " in the file",
             what, trailer, file);
    return LT_ECORRUPT;
}

/* Decompresses every event block (metadata and statistics blocks were
 * decoded when opening). */
static int lt__check_frames(lt_reader *r) {
    uint8_t *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (uint32_t i = 0; i < r->nblks && rc == 0; i++) {
        const lt__blk *b = &r->blks[i];
        const uint8_t *rec;
        uint64_t base;
        if (b->kind != LT_BLOCK_EVENTS) continue;
        rc = lt__load_block(r, b, &buf, &cap, &rec, &base);
        if (rc == 0 && b->n_events && base > b->first_ts)
            rc = lt__corrupt(r, b->off, "base_ts after the block's first timestamp");
    }
    free(buf);
    r->raw_held -= cap;
    return rc;
}

/* What the descriptors of one stream add up to. */
static void lt__stream_sums(const lt_reader *r, const lt__rstream *s,
                            lt_stream_summary *m) {
    memset(m, 0, sizeof *m);
    int have = 0;
    for (uint32_t i = s->first_blk; i != LT__NONE; i = r->blks[i].next) {
        const lt__blk *b = &r->blks[i];
        m->events += b->n_events;
        m->blocks++;
        m->raw_bytes += b->raw;
        m->comp_bytes += b->comp;
        if (b->n_events) {
            if (!have) m->first_ts = b->first_ts;
            m->last_ts = b->last_ts;
            have = 1;
        }
    }
}

static int lt__check_stream(lt_reader *r, const lt_stream_summary *t) {
    const lt_thread *th = lt_reader_thread(r, t->process, t->thread);
    lt_stream_summary f;
    memset(&f, 0, sizeof f);
    if (th) lt__stream_sums(r, r->procs[t->process]->threads[t->thread - 1], &f);
    char what[64];
    const struct {
        const char *name;
        uint64_t trailer, file;
    } v[] = {{"events", t->events, f.events},          {"blocks", t->blocks, f.blocks},
             {"raw_bytes", t->raw_bytes, f.raw_bytes}, {"comp_bytes", t->comp_bytes, f.comp_bytes},
             {"first_ts", t->first_ts, f.first_ts},    {"last_ts", t->last_ts, f.last_ts}};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
        if (v[k].trailer != v[k].file) {
            snprintf(what, sizeof what, "stream %u.%u %s", t->process, t->thread, v[k].name);
            return lt__mismatch(r, what, v[k].trailer, v[k].file);
        }
    return 0;
}

static int lt__cmp_key(const void *a, const void *b) {
    const uint64_t *x = a, *y = b; /* (process << 32 | thread), index */
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* The index of the first summary that repeats an earlier one's stream, or
 * nsums when none does. Linear in the summaries for streams of the file (a
 * mark on the stream), n log n for the rest (sorted): a trailer of a
 * million streams is checked in a fraction of a second. */
static int lt__first_repeat(lt_reader *r, size_t *first) {
    size_t nother = 0;
    uint64_t *other = NULL;
    *first = r->nsums;
    for (size_t i = 0; i < r->nsums; i++) {
        const lt_stream_summary *t = &r->sums[i];
        const lt_thread *th = lt_reader_thread(r, t->process, t->thread);
        if (th) {
            lt__rstream *s = r->procs[t->process]->threads[t->thread - 1];
            if (s->summarised && i < *first) *first = i;
            s->summarised = 1;
            continue;
        }
        if (!other && !(other = malloc(r->nsums * 2 * sizeof *other))) return LT_ENOMEM;
        other[2 * nother] = (uint64_t)t->process << 32 | t->thread;
        other[2 * nother++ + 1] = i;
    }
    if (nother > 1) qsort(other, nother, 2 * sizeof *other, lt__cmp_key);
    for (size_t k = 1; k < nother; k++)
        if (other[2 * k] == other[2 * k - 2] && other[2 * k + 1] < *first)
            *first = (size_t)other[2 * k + 1];
    free(other);
    for (size_t i = 0; i < r->nsums; i++) { /* marks cleared: checked again later */
        const lt_stream_summary *t = &r->sums[i];
        if (lt_reader_thread(r, t->process, t->thread))
            r->procs[t->process]->threads[t->thread - 1]->summarised = 0;
    }
    return 0;
}

/* Every stream with blocks has exactly one summary; each summary agrees
 * with the stream's descriptors. */
static int lt__check_summaries(lt_reader *r) {
    uint64_t with_blocks = 0, summarised = 0;
    size_t repeat;
    for (uint32_t i = 0; i < r->nstreams; i++)
        with_blocks += r->streams[i]->first_blk != LT__NONE;
    int rc = lt__first_repeat(r, &repeat);
    if (rc < 0) return rc;
    for (size_t i = 0; i < r->nsums; i++) {
        const lt_stream_summary *t = &r->sums[i];
        if (i == repeat) return lt__mismatch(r, "summaries of one stream", 2, 1);
        rc = lt__check_stream(r, t);
        if (rc < 0) return rc;
        summarised += t->blocks != 0;
    }
    if (summarised != with_blocks)
        return lt__mismatch(r, "streams with blocks", summarised, with_blocks);
    return 0;
}

static int lt__check_totals(lt_reader *r) {
    const lt_file_info *fi = &r->info;
    uint64_t raw_all = 0;
    for (uint32_t i = 0; i < r->nblks; i++) raw_all += r->blks[i].raw;
    const struct {
        const char *name;
        uint64_t file;
    } v[] = {{"events", fi->n_events},   {"threads", r->nstreams},
             {"raw_bytes", raw_all},     {"body_bytes", fi->body_bytes},
             {"first_ts", fi->first_ts}, {"last_ts", fi->last_ts}};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        uint64_t t;
        if (lt_reader_total(r, v[k].name, &t) && t != v[k].file)
            return lt__mismatch(r, v[k].name, t, v[k].file);
    }
    return 0;
}

int lt__check_trailer(lt_reader *r) {
    if (!r->info.complete) return 0;
    int rc = lt__check_summaries(r);
    return rc == 0 ? lt__check_totals(r) : rc;
}

int lt_reader_check(lt_reader *r) {
    int rc = lt__check_frames(r);
    /* The trailer was compared when opening (lt__check_trailer). */
    if (rc == 0) rc = lt_reader_sound(r);
    if (rc == LT_ENOMEM) snprintf(r->errmsg, sizeof r->errmsg, "out of memory");
    return rc;
}
