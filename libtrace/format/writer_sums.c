/* writer_sums.c -- what the writer adds up from block descriptors for the
 * trailer: a summary per stream, in the order the streams were registered,
 * and the file's standard totals (FORMAT.md, "Trailer"). */
#include <stdlib.h>
#include <string.h>
#include "file_int.h"

/* The standard totals, in the order every trailer lists them. */
const char *const lt__std_totals[LT__N_STD] = {
    "processes", "threads", "events", "zones", "messages", "plots", "frames",
    "lost_events", "first_ts", "last_ts", "raw_bytes", "body_bytes", "rotation_index"};

static uint64_t ws_key(uint32_t process, uint32_t thread) {
    return (uint64_t)process << 32 | thread;
}

static size_t ws_hash(uint64_t key, size_t mask) {
    key *= 0x9E3779B97F4A7C15ull;
    return (size_t)(key >> 29) & mask;
}

/* The slot of (process, thread): its stream's index + 1, or an empty 0. */
static uint32_t *ws_slot(const lt__sums *s, uint32_t process, uint32_t thread) {
    uint64_t key = ws_key(process, thread);
    size_t mask = s->nslots - 1, i = ws_hash(key, mask);
    while (s->slots[i]) {
        const lt__sstream *t = &s->v[s->slots[i] - 1];
        if (t->sum.process == process && t->sum.thread == thread) break;
        i = (i + 1) & mask;
    }
    return &s->slots[i];
}

static int ws_rehash(lt__sums *s) {
    size_t n = s->nslots ? s->nslots * 2 : 64;
    uint32_t *old = s->slots;
    s->slots = calloc(n, sizeof *s->slots);
    if (!s->slots) {
        s->slots = old;
        return LT_ENOMEM;
    }
    s->nslots = n;
    for (size_t i = 0; i < s->n; i++)
        *ws_slot(s, s->v[i].sum.process, s->v[i].sum.thread) = (uint32_t)i + 1;
    free(old);
    return 0;
}

lt__sstream *lt__sums_stream(lt__sums *s, uint32_t process, uint32_t thread) {
    if (process > s->max_proc) s->max_proc = process;
    if ((s->n + 1) * 2 > s->nslots && ws_rehash(s) < 0) return NULL;
    uint32_t *slot = ws_slot(s, process, thread);
    if (*slot) return &s->v[*slot - 1];
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        lt__sstream *v = realloc(s->v, cap * sizeof *v);
        if (!v) return NULL;
        s->v = v;
        s->cap = cap;
    }
    lt__sstream *t = &s->v[s->n];
    memset(t, 0, sizeof *t);
    t->sum.process = process;
    t->sum.thread = thread;
    *slot = (uint32_t)++s->n;
    return t;
}

int lt__sums_add(lt__sums *s, const lt_block_desc *d, size_t raw_len, size_t comp) {
    s->raw += raw_len;
    if (d->process > s->max_proc) s->max_proc = d->process;
    if (d->kind != LT_BLOCK_EVENTS) return 0;
    lt__sstream *t = lt__sums_stream(s, d->process, d->thread);
    if (!t) return LT_ENOMEM;
    lt_stream_summary *m = &t->sum;
    if (d->n_events) {
        if (m->events == 0) m->first_ts = d->first_ts;
        m->last_ts = d->last_ts;
    }
    m->events += d->n_events;
    m->zones += d->zones;
    m->messages += d->messages;
    m->lost = lt__sat_add(m->lost, d->lost);
    t->plots += d->plots;
    t->frames += d->frames;
    m->blocks++;
    m->raw_bytes += raw_len;
    m->comp_bytes += comp;
    return 0;
}

void lt__sums_reset(lt__sums *s) {
    s->raw = 0;
    for (size_t i = 0; i < s->n; i++) {
        lt__sstream *t = &s->v[i];
        t->sum = (lt_stream_summary){.process = t->sum.process, .thread = t->sum.thread};
        t->plots = t->frames = 0;
    }
}

void lt__sums_free(lt__sums *s) {
    free(s->v);
    free(s->slots);
    memset(s, 0, sizeof *s);
}

static int ws_cmp(const void *a, const void *b) {
    const lt_stream_summary *x = a, *y = b;
    uint64_t kx = ws_key(x->process, x->thread), ky = ws_key(y->process, y->thread);
    return kx < ky ? -1 : kx > ky;
}

size_t lt__sums_summaries(const lt__sums *s, lt_stream_summary *out, int with_blocks,
                          uint64_t std[LT__N_STD]) {
    size_t ns = 0;
    int any = 0;
    memset(std, 0, LT__N_STD * sizeof *std);
    for (size_t i = 0; i < s->n; i++) {
        const lt__sstream *t = &s->v[i];
        const lt_stream_summary *m = &t->sum;
        if (with_blocks && !m->blocks) continue;
        out[ns++] = *m;
        std[2] += m->events, std[3] += m->zones, std[4] += m->messages;
        std[5] += t->plots, std[6] += t->frames;
        std[7] = lt__sat_add(std[7], m->lost);
        if (!m->events) continue;
        if (!any || m->first_ts < std[8]) std[8] = m->first_ts;
        if (!any || m->last_ts > std[9]) std[9] = m->last_ts;
        any = 1;
    }
    if (s->sorted) qsort(out, ns, sizeof *out, ws_cmp);
    std[0] = s->max_proc;
    std[1] = ns;
    std[10] = s->raw;
    return ns;
}
