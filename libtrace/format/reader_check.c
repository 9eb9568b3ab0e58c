/* reader_check.c -- lt_reader_check(): every event block decompressed and
 * checked, and the trailer compared with what the descriptors say, without
 * decoding a record. */
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

/* Every stream with blocks has exactly one summary; each summary agrees
 * with the stream's descriptors. */
static int lt__check_summaries(lt_reader *r) {
    uint64_t with_blocks = 0, summarised = 0;
    for (uint32_t i = 0; i < r->nstreams; i++)
        with_blocks += r->streams[i]->first_blk != LT__NONE;
    for (size_t i = 0; i < r->nsums; i++) {
        const lt_stream_summary *t = &r->sums[i];
        for (size_t k = 0; k < i; k++)
            if (r->sums[k].process == t->process && r->sums[k].thread == t->thread)
                return lt__mismatch(r, "summaries of one stream", 2, 1);
        int rc = lt__check_stream(r, t);
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

int lt_reader_check(lt_reader *r) {
    int rc = lt__check_frames(r);
    if (rc == 0 && r->info.complete) rc = lt__check_summaries(r);
    if (rc == 0 && r->info.complete) rc = lt__check_totals(r);
    if (rc == LT_ENOMEM) snprintf(r->errmsg, sizeof r->errmsg, "out of memory");
    return rc;
}
