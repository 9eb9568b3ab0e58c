/* check_reader.c -- builder -> reader round trips, merge order, cut files,
 * flipped bytes, version and format refusal, metadata look-ups. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "records.h"
#include "trace_builder.h"
#include "scratch.h"

/* ---- Helpers ----------------------------------------------------------- */

static void setup_dir(void) { scratch_make("check_reader"); }

/* What a test expects the reader to deliver. Strings are owned copies. */
typedef struct xev {
    uint8_t type, flags;
    uint32_t process, thread, loc, depth, id;
    uint64_t ts, begin_ts, child_ns, count;
    double value;
    char *text, *text2, *name;
    uint64_t seq;
} xev;

typedef struct model {
    xev *ev;
    size_t n, cap;
    uint64_t seq;
} model;

static xev *add(model *m, uint8_t type, uint32_t p, uint32_t t, uint64_t ts) {
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 1024;
        m->ev = realloc(m->ev, m->cap * sizeof *m->ev);
    }
    xev *e = &m->ev[m->n++];
    memset(e, 0, sizeof *e);
    e->type = type;
    e->process = p;
    e->thread = t;
    e->ts = ts;
    e->seq = m->seq++;
    return e;
}

static void model_free(model *m) {
    for (size_t i = 0; i < m->n; i++) {
        free(m->ev[i].text);
        free(m->ev[i].text2);
        free(m->ev[i].name);
    }
    free(m->ev);
}

static int xev_cmp(const void *a, const void *b) {
    const xev *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    if (x->process != y->process) return x->process < y->process ? -1 : 1;
    if (x->thread != y->thread) return x->thread < y->thread ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void check_str(const char *got, size_t len, const char *want) {
    if (!want) {
        ck_assert(got == NULL || len == 0);
        return;
    }
    ck_assert_ptr_nonnull(got);
    ck_assert_uint_eq(len, strlen(want));
    ck_assert_int_eq(memcmp(got, want, len), 0);
}

static void check_event(const lt_event *g, const xev *w, size_t i) {
    ck_assert_msg(g->type == w->type && g->process == w->process &&
                      g->thread == w->thread && g->ts == w->ts &&
                      g->flags == w->flags,
                  "event %zu: got type %d p%u t%u ts %llu flags %d, want type "
                  "%d p%u t%u ts %llu flags %d", i, g->type, g->process,
                  g->thread, (unsigned long long)g->ts, g->flags, w->type,
                  w->process, w->thread, (unsigned long long)w->ts, w->flags);
    switch (g->type) {
    case LT_EV_ZONE_BEGIN:
        ck_assert_uint_eq(g->loc, w->loc);
        ck_assert_uint_eq(g->depth, w->depth);
        break;
    case LT_EV_ZONE_END:
        ck_assert_uint_eq(g->loc, w->loc);
        ck_assert_uint_eq(g->depth, w->depth);
        ck_assert_uint_eq(g->begin_ts, w->begin_ts);
        ck_assert_uint_eq(g->child_ns, w->child_ns);
        check_str(g->name, g->name_len, w->name);
        check_str(g->text, g->text_len, w->text);
        break;
    case LT_EV_MESSAGE:
        check_str(g->text, g->text_len, w->text);
        break;
    case LT_EV_SIGNPOST:
        check_str(g->text, g->text_len, w->text);
        check_str(g->text2, g->text2_len, w->text2 ? w->text2 : "");
        break;
    case LT_EV_PLOT:
        ck_assert_uint_eq(g->id, w->id);
        ck_assert(g->value == w->value);
        break;
    case LT_EV_FRAME:
        ck_assert_uint_eq(g->id, w->id);
        break;
    case LT_EV_LOST:
        ck_assert_uint_eq(g->count, w->count);
        break;
    default:
        ck_abort_msg("unknown event type %d", g->type);
    }
}

/* Reads every event of the current selection and compares with m (in
 * merged order). */
static void expect_events(lt_reader *r, model *m) {
    qsort(m->ev, m->n, sizeof *m->ev, xev_cmp);
    lt_event ev;
    size_t i = 0;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) == 1) {
        ck_assert_msg(i < m->n, "more events than expected (%zu)", m->n);
        check_event(&ev, &m->ev[i], i);
        i++;
    }
    ck_assert_msg(rc == 0, "lt_reader_next: %s", lt_reader_error(r));
    ck_assert_uint_eq(i, m->n);
}

/* A builder and its model, with zone stacks per stream. */
#define MAXS 64
typedef struct gen {
    lt_builder *b;
    model m;
    struct {
        uint64_t ts;
        uint32_t depth;
        uint64_t *begin, *child;
        uint32_t *loc;
        char **text, **name;
        uint32_t cap;
    } st[4][MAXS];
} gen;

#define S(g, p, t) (&(g)->st[p][t])

static void g_begin(gen *g, uint32_t p, uint32_t t, uint64_t ts, uint32_t loc) {
    ck_assert_int_eq(lt_builder_zone_begin(g->b, p, t, ts, loc), 0);
    typeof(S(g, p, t)) s = S(g, p, t);
    if (s->depth == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->begin = realloc(s->begin, s->cap * sizeof *s->begin);
        s->child = realloc(s->child, s->cap * sizeof *s->child);
        s->loc = realloc(s->loc, s->cap * sizeof *s->loc);
        s->text = realloc(s->text, s->cap * sizeof *s->text);
        s->name = realloc(s->name, s->cap * sizeof *s->name);
    }
    xev *e = add(&g->m, LT_EV_ZONE_BEGIN, p, t, ts);
    e->loc = loc;
    e->depth = s->depth;
    s->begin[s->depth] = ts;
    s->child[s->depth] = 0;
    s->loc[s->depth] = loc;
    s->text[s->depth] = s->name[s->depth] = NULL;
    s->depth++;
    s->ts = ts;
}

static void g_close(gen *g, uint32_t p, uint32_t t, uint64_t ts, uint8_t flags) {
    typeof(S(g, p, t)) s = S(g, p, t);
    uint32_t d = --s->depth;
    xev *e = add(&g->m, LT_EV_ZONE_END, p, t, ts);
    e->flags = flags;
    e->loc = s->loc[d];
    e->depth = d;
    e->begin_ts = s->begin[d];
    e->child_ns = s->child[d];
    e->text = s->text[d];
    e->name = s->name[d];
    if (d) s->child[d - 1] += ts - s->begin[d];
    s->ts = ts;
}

static void g_end(gen *g, uint32_t p, uint32_t t, uint64_t ts) {
    ck_assert_int_eq(lt_builder_zone_end(g->b, p, t, ts), 0);
    g_close(g, p, t, ts, 0);
}

static void g_text(gen *g, uint32_t p, uint32_t t, const char *text, int is_name) {
    typeof(S(g, p, t)) s = S(g, p, t);
    char **slot = is_name ? &s->name[s->depth - 1] : &s->text[s->depth - 1];
    if (is_name)
        ck_assert_int_eq(lt_builder_zone_name(g->b, p, t, text), 0);
    else
        ck_assert_int_eq(lt_builder_zone_text(g->b, p, t, text), 0);
    free(*slot);
    *slot = strdup(text);
}

/* Zones still open at the end close at the stream's last ts. */
static void g_unclosed(gen *g) {
    for (uint32_t p = 0; p < 4; p++)
        for (uint32_t t = 0; t < MAXS; t++)
            while (S(g, p, t)->depth) g_close(g, p, t, S(g, p, t)->ts, LT_EVF_UNCLOSED);
}

static void g_free(gen *g) {
    for (uint32_t p = 0; p < 4; p++)
        for (uint32_t t = 0; t < MAXS; t++) {
            typeof(S(g, p, t)) s = S(g, p, t);
            free(s->begin);
            free(s->child);
            free(s->loc);
            free(s->text);
            free(s->name);
        }
    model_free(&g->m);
}

static lt_reader *open_ok(const char *path) {
    lt_reader *r = NULL;
    char d[256];
    int rc = lt_reader_open(&r, path, d, sizeof d);
    ck_assert_msg(rc == 0, "open %s: %s (%s)", path, lt_strerror(rc), d);
    return r;
}

/* ---- Round trips ------------------------------------------------------- */

START_TEST(round_trip_edge_values) {
    static char big[LT_MAX_STRING + 1];
    memset(big, 'n', LT_MAX_STRING);
    big[LT_MAX_STRING] = '\0';
    gen *g = calloc(1, sizeof *g);
    const char *path = scratch_path("edge.tracy");
    ck_assert_int_eq(lt_builder_open(&g->b, path, 0, "check"), 0);
    const char *argv[] = {"prog", "", "caf\xc3\xa9"};
    ck_assert_int_eq(lt_builder_process(g->b, UINT64_MAX, -1, "", big, 3, argv,
                                        0, LT_MAX_TS), 1);
    ck_assert_int_eq(lt_builder_thread(g->b, 1, 0, ""), 1);
    ck_assert_int_eq(lt_builder_thread(g->b, 1, UINT64_MAX, big), 2);
    ck_assert_int_eq(lt_builder_loc(g->b, 1, LT_LOC_PYTHON, "", "", 0), 1);
    ck_assert_int_eq(lt_builder_loc(g->b, 1, LT_LOC_C, big, big, UINT32_MAX), 2);
    for (int i = 3; i <= 300; i++) /* ids past the one-byte short form */
        ck_assert_int_eq(lt_builder_loc(g->b, 1, LT_LOC_USER, "u", "f.c", (uint32_t)i), i);
    ck_assert_int_eq(lt_builder_plot(g->b, 1, "mem"), 1);
    ck_assert_int_eq(lt_builder_frame_name(g->b, 1, "frame"), 1);

    /* thread 1: ts from 0 to LT_MAX_TS (2^63 - 1), every event kind */
    g_begin(g, 1, 1, 0, 1);
    g_text(g, 1, 1, "", 0);
    g_text(g, 1, 1, "second text wins", 0);
    g_begin(g, 1, 1, 0, 300);
    g_text(g, 1, 1, big, 1);
    g_end(g, 1, 1, 1);
    ck_assert_int_eq(lt_builder_message(g->b, 1, 1, 1, ""), 0);
    add(&g->m, LT_EV_MESSAGE, 1, 1, 1)->text = strdup("");
    ck_assert_int_eq(lt_builder_message(g->b, 1, 1, 2, big), 0);
    add(&g->m, LT_EV_MESSAGE, 1, 1, 2)->text = strdup(big);
    ck_assert_int_eq(lt_builder_signpost(g->b, 1, 1, 3, "phase", NULL), 0);
    add(&g->m, LT_EV_SIGNPOST, 1, 1, 3)->text = strdup("phase");
    ck_assert_int_eq(lt_builder_signpost(g->b, 1, 1, 3, "h", "body"), 0);
    xev *e = add(&g->m, LT_EV_SIGNPOST, 1, 1, 3);
    e->text = strdup("h");
    e->text2 = strdup("body");
    ck_assert_int_eq(lt_builder_plot_value(g->b, 1, 1, 4, 1, -1.5e300), 0);
    e = add(&g->m, LT_EV_PLOT, 1, 1, 4);
    e->id = 1;
    e->value = -1.5e300;
    ck_assert_int_eq(lt_builder_frame(g->b, 1, 1, 5, 0), 0);
    add(&g->m, LT_EV_FRAME, 1, 1, 5);
    ck_assert_int_eq(lt_builder_frame(g->b, 1, 1, 5, 1), 0);
    add(&g->m, LT_EV_FRAME, 1, 1, 5)->id = 1;
    ck_assert_int_eq(lt_builder_lost(g->b, 1, 1, 6, UINT64_MAX), 0);
    add(&g->m, LT_EV_LOST, 1, 1, 6)->count = UINT64_MAX;
    g_begin(g, 1, 1, LT_MAX_TS - 1, 2); /* a delta near 2^63 */
    g_end(g, 1, 1, LT_MAX_TS);
    /* One more nanosecond would not fit a signed 64-bit integer. */
    ck_assert_int_eq(lt_builder_zone_end(g->b, 1, 1, LT_MAX_TS + 1), LT_EINVAL);
    g_end(g, 1, 1, LT_MAX_TS);
    /* thread 2: nesting 12000 deep, left open at the end */
    for (uint32_t i = 0; i < 12000; i++) g_begin(g, 1, 2, 10 + i, 1 + i % 300);
    for (uint32_t i = 0; i < 6000; i++) g_end(g, 1, 2, 20000 + i);
    g_unclosed(g);
    ck_assert_int_eq(lt_builder_close(g->b, 0), 0);

    lt_reader *r = open_ok(path);
    const lt_file_info *fi = lt_reader_info(r);
    ck_assert_int_eq(fi->complete, 1);
    ck_assert_uint_eq(fi->bytes_ignored, 0);
    ck_assert_uint_eq(fi->first_ts, 0);
    ck_assert_uint_eq(fi->last_ts, LT_MAX_TS);
    ck_assert_str_eq(fi->creator, "check");
    const lt_process *pr = lt_reader_process(r, 1);
    ck_assert_ptr_nonnull(pr);
    ck_assert_uint_eq(pr->pid, UINT64_MAX);
    ck_assert_int_eq(pr->rank, -1);
    ck_assert_str_eq(pr->hostname, "");
    ck_assert_str_eq(pr->program, big);
    ck_assert_uint_eq(pr->argc, 3);
    ck_assert_str_eq(pr->argv[2], "caf\xc3\xa9");
    ck_assert_ptr_null(pr->argv[3]);
    ck_assert_uint_eq(pr->anchor_wall_ns, LT_MAX_TS);
    ck_assert_int_eq(pr->status, LT_PROC_RUNNING);
    ck_assert_str_eq(lt_reader_thread(r, 1, 2)->name, big);
    ck_assert_uint_eq(lt_reader_thread(r, 1, 2)->tid, UINT64_MAX);
    const lt_loc *l = lt_reader_loc(r, 1, 2);
    ck_assert_uint_eq(l->line, UINT32_MAX);
    ck_assert_str_eq(l->file, big);
    ck_assert_uint_eq(lt_reader_loc(r, 1, 300)->line, 300);
    ck_assert_ptr_null(lt_reader_loc(r, 1, 301));
    ck_assert_str_eq(lt_reader_plot_name(r, 1, 1), "mem");
    ck_assert_str_eq(lt_reader_frame_name(r, 1, 1), "frame");
    uint64_t v = 0;
    ck_assert_int_eq(lt_reader_total(r, "events", &v), 1);
    ck_assert_uint_eq(v, fi->n_events);
    ck_assert_int_eq(lt_reader_total(r, "lost_events", &v), 1);
    ck_assert_uint_eq(v, UINT64_MAX);
    ck_assert_int_eq(lt_reader_total(r, "no such total", &v), 0);
    expect_events(r, &g->m);
    /* a rewind delivers the same again */
    ck_assert_int_eq(lt_reader_rewind(r), 0);
    lt_event ev;
    size_t n = 0;
    while (lt_reader_next(r, &ev) == 1) n++;
    ck_assert_uint_eq(n, g->m.n);
    lt_reader_free(r);
    g_free(g);
    free(g);
}
END_TEST

/* Many streams, interleaved timestamps with ties: the merge is ordered by
 * (ts, process, thread, stream order), and select() gives one stream. */
START_TEST(merge_orders_many_streams) {
    gen *g = calloc(1, sizeof *g);
    const char *path = scratch_path("merge.tracy");
    ck_assert_int_eq(lt_builder_open(&g->b, path, 0, NULL), 0);
    uint32_t seed = 12345;
    for (uint32_t p = 1; p <= 3; p++) {
        ck_assert_int_eq(lt_builder_process(g->b, 100 + p, p, "h", "x", 0, NULL, 0, 0), (int)p);
        for (int i = 1; i <= 200; i++)
            ck_assert_int_eq(lt_builder_loc(g->b, p, LT_LOC_PYTHON, "f", "f.py", 1), i);
        ck_assert_int_eq(lt_builder_plot(g->b, p, "p"), 1);
        for (uint32_t t = 1; t <= 20; t++)
            ck_assert_int_eq(lt_builder_thread(g->b, p, t, "w"), (int)t);
    }
    /* enough events that streams span several blocks */
    for (int round = 0; round < 120000; round++) {
        seed = seed * 1103515245u + 12345u;
        uint32_t p = 1 + (seed >> 8) % 3, t = 1 + (seed >> 12) % 20;
        uint64_t ts = S(g, p, t)->ts + ((seed >> 20) % 4);
        uint32_t d = S(g, p, t)->depth;
        if (d > 0 && ((seed >> 16) & 1)) {
            g_end(g, p, t, ts);
        } else if ((seed >> 24) % 50 == 0) {
            ck_assert_int_eq(lt_builder_plot_value(g->b, p, t, ts, 1, round), 0);
            xev *e = add(&g->m, LT_EV_PLOT, p, t, ts);
            e->id = 1;
            e->value = round;
            S(g, p, t)->ts = ts;
        } else {
            g_begin(g, p, t, ts, 1 + (seed >> 3) % 200);
            if ((seed >> 28) == 0) g_text(g, p, t, "txt", 0);
        }
    }
    g_unclosed(g);
    ck_assert_int_eq(lt_builder_process_end(g->b, 2, 99, LT_PROC_LOST, "gone"), 0);
    ck_assert_int_eq(lt_builder_close(g->b, 0), 0);
    lt_reader *r = open_ok(path);
    ck_assert_uint_eq(lt_reader_nprocesses(r), 3);
    ck_assert_uint_eq(lt_reader_nthreads(r, 3), 20);
    ck_assert_int_eq(lt_reader_process(r, 2)->status, LT_PROC_LOST);
    ck_assert_str_eq(lt_reader_process(r, 2)->end_reason, "gone");
    ck_assert_int_eq(lt_reader_process(r, 1)->status, LT_PROC_RUNNING);
    ck_assert_uint_gt(lt_reader_info(r)->n_blocks, 60);
    expect_events(r, &g->m);

    /* one stream alone */
    ck_assert_int_eq(lt_reader_select(r, 2, 7), 0);
    model one = {0};
    for (size_t i = 0; i < g->m.n; i++)
        if (g->m.ev[i].process == 2 && g->m.ev[i].thread == 7) {
            xev *e = add(&one, 0, 0, 0, 0);
            *e = g->m.ev[i];
            e->text = e->text ? strdup(e->text) : NULL;
            e->name = NULL;
            e->text2 = NULL;
        }
    ck_assert_uint_gt(one.n, 100);
    expect_events(r, &one);
    model_free(&one);
    ck_assert_int_eq(lt_reader_select(r, 2, 21), LT_EINVAL);
    ck_assert_int_eq(lt_reader_select(r, 4, 1), LT_EINVAL);
    ck_assert_int_eq(lt_reader_select(r, 0, 0), 0);
    expect_events(r, &g->m);
    lt_reader_free(r);
    g_free(g);
    free(g);
}
END_TEST

START_TEST(builder_refuses_invalid_sequences) {
    lt_builder *b;
    ck_assert_int_eq(lt_builder_open(&b, scratch_path("bad.tracy"), 0, NULL), 0);
    ck_assert_int_eq(lt_builder_process(b, 1, 0, "h", "p", 0, NULL, 0, 0), 1);
    ck_assert_int_eq(lt_builder_thread(b, 1, 1, "t"), 1);
    ck_assert_int_eq(lt_builder_loc(b, 1, LT_LOC_USER, "z", "z.c", 1), 1);
    ck_assert_int_eq(lt_builder_zone_end(b, 1, 1, 5), LT_EINVAL);
    ck_assert_int_eq(lt_builder_zone_text(b, 1, 1, "x"), LT_EINVAL);
    ck_assert_int_eq(lt_builder_zone_begin(b, 1, 1, 5, 2), LT_EINVAL);
    ck_assert_int_eq(lt_builder_zone_begin(b, 1, 2, 5, 1), LT_EINVAL);
    ck_assert_int_eq(lt_builder_zone_begin(b, 2, 1, 5, 1), LT_EINVAL);
    ck_assert_int_eq(lt_builder_zone_begin(b, 1, 1, 5, 1), 0);
    ck_assert_int_eq(lt_builder_zone_end(b, 1, 1, 4), LT_EINVAL);
    ck_assert_int_eq(lt_builder_message(b, 1, 1, 6, "\xff"), LT_EINVAL);
    ck_assert_int_eq(lt_builder_plot_value(b, 1, 1, 6, 1, 0), LT_EINVAL);
    ck_assert_int_eq(lt_builder_frame(b, 1, 1, 6, 1), LT_EINVAL);
    ck_assert_int_eq(lt_builder_process_end(b, 1, 6, 7, ""), LT_EINVAL);
    ck_assert_int_eq(lt_builder_zone_end(b, 1, 1, 6), 0);
    ck_assert_int_eq(lt_builder_close(b, 1), 0);
    lt_reader *r = open_ok(scratch_path("bad.tracy"));
    ck_assert_int_eq(lt_reader_info(r)->complete, 0);
    ck_assert_uint_eq(lt_reader_info(r)->n_events, 2);
    lt_reader_free(r);
}
END_TEST

/* ---- A small multi-block file written unit by unit ------------------- */

#define NB 9
typedef struct small {
    uint64_t header_end, unit_end[NB + 1];
    uint32_t thread[NB];        /* 0 for the metadata unit */
    uint32_t n_events[NB];
    size_t size;                /* with the trailer */
} small;

static size_t put_meta(uint8_t *buf) {
    uint8_t *p = buf + lt_block_header(buf, LT_BLOCK_META, 1, 0, 0);
    *p++ = LT_TAG_PROC_INFO;
    p = lt__put_varint_(p, 77);
    p = lt__put_varint_(p, 0);
    p = lt__put_str(p, "host", 4);
    p = lt__put_str(p, "prog", 4);
    p = lt__put_varint_(p, 0);
    p = lt__put_varint_(p, 5);
    p = lt__put_varint_(p, 6);
    p = lt__put_str(p, "c", 1);
    for (int t = 1; t <= 2; t++) {
        *p++ = LT_TAG_THREAD_INFO;
        p = lt__put_varint_(p, (uint64_t)t);
        p = lt__put_varint_(p, 1000 + (uint64_t)t);
        p = lt__put_str(p, "th", 2);
    }
    for (int l = 1; l <= 2; l++) {
        *p++ = LT_TAG_LOC_DEF;
        p = lt__put_varint_(p, (uint64_t)l);
        *p++ = LT_LOC_PYTHON;
        p = lt__put_varint_(p, 10);
        p = lt__put_str(p, "f", 1);
        p = lt__put_str(p, "f.py", 4);
    }
    return (size_t)(p - buf);
}

/* Event block k of a thread: 3 begins (one with text), 2 ends, a message:
 * zones stay open across blocks. */
static size_t put_events(uint8_t *buf, uint32_t thread, uint64_t base,
                         lt_block_desc *d) {
    uint8_t *p = buf + lt_block_header(buf, LT_BLOCK_EVENTS, 1, thread, base);
    uint64_t ts = base;
    d->kind = LT_BLOCK_EVENTS;
    d->process = 1;
    d->thread = thread;
    d->first_ts = base + 1;
    for (int i = 0; i < 3; i++) {
        *p++ = 0x81 + (uint8_t)(i & 1);
        *p++ = 1;
        ts++;
        if (i == 1) {
            *p++ = LT_TAG_ZONE_TEXT;
            p = lt__put_str(p, "arg", 3);
        }
    }
    for (int i = 0; i < 2; i++) {
        *p++ = LT_TAG_ZONE_END;
        *p++ = 2;
        ts += 2;
    }
    *p++ = LT_TAG_MESSAGE;
    *p++ = 0;
    p = lt__put_str(p, "msg", 3);
    d->n_events = 6;
    d->last_ts = ts;
    return (size_t)(p - buf);
}

static void write_small(const char *path, small *s) {
    lt_writer *w;
    uint8_t buf[512];
    memset(s, 0, sizeof *s);
    ck_assert_int_eq(lt_writer_open(&w, path, 0, "small", 0), 0);
    s->header_end = lt_writer_bytes(w);
    lt_block_desc md = {.kind = LT_BLOCK_META, .process = 1};
    ck_assert_int_eq(lt_writer_block(w, &md, buf, put_meta(buf)), 0);
    s->unit_end[0] = lt_writer_bytes(w);
    uint64_t base[3] = {0, 100, 100}, events = 0;
    /* The trailer agrees with the units: readers refuse one that does not. */
    lt_stream_summary sum[2] = {{.process = 1, .thread = 1}, {.process = 1, .thread = 2}};
    for (int k = 1; k < NB; k++) {
        lt_block_desc d;
        uint32_t t = 1 + (uint32_t)(k % 2);
        size_t n = put_events(buf, t, base[t], &d);
        base[t] = d.last_ts;
        uint64_t before = lt_writer_bytes(w);
        ck_assert_int_eq(lt_writer_block(w, &d, buf, n), 0);
        s->unit_end[k] = lt_writer_bytes(w);
        s->thread[k] = t;
        s->n_events[k] = d.n_events;
        lt_stream_summary *m = &sum[t - 1];
        if (d.n_events && !m->events) m->first_ts = d.first_ts;
        if (d.n_events) m->last_ts = d.last_ts;
        m->events += d.n_events;
        m->blocks++;
        m->raw_bytes += n;
        m->comp_bytes += s->unit_end[k] - before - 48;
        events += d.n_events;
    }
    lt_total tot[] = {{"events", events}};
    ck_assert_int_eq(lt_writer_close(w, sum, 2, tot, 1), 0);
    size_t len;
    free(slurp(path, &len));
    s->size = len;
}

/* Events of one stream, as the reader delivers them. */
typedef struct got {
    lt_event ev[64];
    char text[64][8];
    size_t n;
} got;

static int read_stream(lt_reader *r, uint32_t thread, got *g) {
    lt_event ev;
    int rc;
    g->n = 0;
    ck_assert_int_eq(lt_reader_select(r, 1, thread), 0);
    while ((rc = lt_reader_next(r, &ev)) == 1) {
        ck_assert_uint_lt(g->n, 64);
        g->ev[g->n] = ev;
        snprintf(g->text[g->n], 8, "%.*s", (int)ev.text_len, ev.text ? ev.text : "");
        g->ev[g->n].text = g->ev[g->n].name = g->ev[g->n].text2 = NULL;
        g->n++;
    }
    return rc;
}

START_TEST(cut_file_recovers_complete_units) {
    small s;
    const char *path = scratch_path("small.tracy"), *cut = scratch_path("cut.tracy");
    write_small(path, &s);
    size_t len;
    uint8_t *data = slurp(path, &len);
    lt_reader *r = open_ok(path);
    ck_assert_int_eq(lt_reader_info(r)->complete, 1);
    got *full[3] = {NULL, calloc(1, sizeof(got)), calloc(1, sizeof(got))};
    for (uint32_t t = 1; t <= 2; t++) ck_assert_int_eq(read_stream(r, t, full[t]), 0);
    lt_reader_free(r);
    got *part = calloc(1, sizeof *part);

    for (size_t c = 0; c <= len; c++) {
        spit(cut, data, c);
        char d[256];
        int rc = lt_reader_open(&r, cut, d, sizeof d);
        if (c == 0) { /* nothing shows that it is a trace */
            ck_assert_msg(rc == LT_EFORMAT, "cut at %zu: %d", c, rc);
            ck_assert_ptr_null(r);
            continue;
        }
        /* Cut inside the header too: a trace with no complete unit. */
        ck_assert_msg(rc == 0, "cut at %zu: %s", c, d);
        const lt_file_info *fi = lt_reader_info(r);
        int units = 0;
        uint64_t end = c < s.header_end ? 0 : s.header_end;
        while (units < NB && s.unit_end[units] <= c) end = s.unit_end[units++];
        ck_assert_int_eq(fi->complete, c == len);
        ck_assert_msg(fi->bytes_ignored == (c == len ? 0 : c - end),
                      "cut at %zu: ignored %llu", c, (unsigned long long)fi->bytes_ignored);
        ck_assert_uint_eq(fi->n_blocks, (uint64_t)units);
        for (uint32_t t = 1; t <= 2; t++) {
            size_t want = 0;
            for (int k = 1; k < units; k++)
                if (s.thread[k] == t) want += s.n_events[k];
            if (units == 0) {
                ck_assert_int_eq(lt_reader_select(r, 1, t), LT_EINVAL);
                continue;
            }
            ck_assert_int_eq(read_stream(r, t, part), 0);
            /* exactly the recorded events, then the open zones closed */
            ck_assert_uint_ge(part->n, want);
            for (size_t i = 0; i < want; i++) {
                ck_assert_int_eq(part->ev[i].type, full[t]->ev[i].type);
                ck_assert_uint_eq(part->ev[i].ts, full[t]->ev[i].ts);
                ck_assert_uint_eq(part->ev[i].depth, full[t]->ev[i].depth);
                ck_assert_str_eq(part->text[i], full[t]->text[i]);
                ck_assert_int_eq(part->ev[i].flags, 0);
            }
            uint64_t last = want ? part->ev[want - 1].ts : 0;
            ck_assert_uint_eq(part->n - want, want / 6); /* one open zone per block */
            for (size_t i = want; i < part->n; i++) {
                ck_assert_int_eq(part->ev[i].type, LT_EV_ZONE_END);
                ck_assert_int_eq(part->ev[i].flags, LT_EVF_UNCLOSED);
                ck_assert_uint_eq(part->ev[i].ts, last);
            }
        }
        lt_reader_free(r);
    }
    free(part);
    free(full[1]);
    free(full[2]);
    free(data);
}
END_TEST

/* Every byte flipped, one at a time: open and a full read either succeed or
 * fail cleanly; never a crash, a hang or a leak. */
START_TEST(flipped_bytes_never_crash) {
    small s;
    const char *path = scratch_path("small.tracy"), *bad = scratch_path("flip.tracy");
    write_small(path, &s);
    size_t len;
    uint8_t *data = slurp(path, &len);
    static const uint8_t masks[] = {0x01, 0x80, 0xFF};
    int errors = 0, clean = 0;
    for (size_t i = 0; i < len; i++) {
        for (size_t m = 0; m < sizeof masks; m++) {
            data[i] ^= masks[m];
            spit(bad, data, len);
            data[i] ^= masks[m];
            lt_reader *r;
            char d[256] = "";
            int rc = lt_reader_open(&r, bad, d, sizeof d);
            if (rc < 0) {
                ck_assert_msg(d[0] != '\0', "no detail for error %d", rc);
                errors++;
                continue;
            }
            lt_event ev;
            size_t n = 0;
            while ((rc = lt_reader_next(r, &ev)) == 1) ck_assert_uint_lt(++n, 1000);
            if (rc < 0) {
                ck_assert_int_eq(rc, LT_ECORRUPT);
                /* a unit names its offset; a trailer its disagreement */
                ck_assert_msg(strstr(lt_reader_error(r), "offset") ||
                                  strstr(lt_reader_error(r), "trailer does not match"),
                              "%s", lt_reader_error(r));
                ck_assert_int_eq(lt_reader_next(r, &ev), rc); /* sticky */
                errors++;
            } else {
                clean++;
            }
            lt_reader_free(r);
        }
    }
    /* the frames' checksums catch flips in the data */
    ck_assert_int_gt(errors, (int)len);
    ck_assert_int_gt(clean, 0);
    free(data);
}
END_TEST

START_TEST(corrupt_descriptor_sizes_are_refused) {
    small s;
    const char *path = scratch_path("small.tracy"), *bad = scratch_path("desc.tracy");
    write_small(path, &s);
    size_t len;
    uint8_t *data = slurp(path, &len);
    uint64_t d0 = s.header_end + 8; /* first descriptor's content */
    static const struct { size_t off; uint32_t v; } cases[] = {
        {12, LT_MAX_BLOCK_RAW + 1}, /* raw_size */
        {16, 0xFFFFFFF0u},          /* comp_size */
        {16, 3000},                 /* comp_size larger than allowed for raw */
        {0, 0},                     /* kind 0 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t save[4];
        memcpy(save, data + d0 + cases[i].off, 4);
        for (int k = 0; k < 4; k++)
            data[d0 + cases[i].off + k] = (uint8_t)(cases[i].v >> (8 * k));
        if (cases[i].off == 0) data[d0] = 0;
        spit(bad, data, len);
        memcpy(data + d0 + cases[i].off, save, 4);
        lt_reader *r;
        char d[256];
        ck_assert_int_eq(lt_reader_open(&r, bad, d, sizeof d), LT_ECORRUPT);
        char want[64];
        snprintf(want, sizeof want, "offset %llu", (unsigned long long)s.header_end);
        ck_assert_msg(strstr(d, want), "detail: %s", d);
    }
    free(data);
}
END_TEST

START_TEST(newer_major_version_is_refused) {
    small s;
    const char *path = scratch_path("small.tracy"), *bad = scratch_path("v2.tracy");
    write_small(path, &s);
    size_t len;
    uint8_t *data = slurp(path, &len);
    data[16] = 2; /* major */
    data[18] = 3; /* minor */
    spit(bad, data, len);
    lt_reader *r;
    char d[256];
    ck_assert_int_eq(lt_reader_open(&r, bad, d, sizeof d), LT_EVERSION);
    ck_assert_ptr_nonnull(strstr(d, "2.3"));
    ck_assert_ptr_nonnull(strstr(d, "1.0"));
    /* a newer minor version is fine */
    data[16] = 1;
    spit(bad, data, len);
    r = open_ok(bad);
    ck_assert_uint_eq(lt_reader_info(r)->minor, 3);
    lt_reader_free(r);
    free(data);
}
END_TEST

START_TEST(non_trace_files_are_refused) {
    lt_reader *r = (lt_reader *)1;
    char d[256];
    spit(scratch_path("text"), (const uint8_t *)"hello, world\n", 13);
    ck_assert_int_eq(lt_reader_open(&r, scratch_path("text"), d, sizeof d), LT_EFORMAT);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(d, "not a .tracy file"));
    spit(scratch_path("empty"), (const uint8_t *)"", 0);
    ck_assert_int_eq(lt_reader_open(&r, scratch_path("empty"), d, sizeof d), LT_EFORMAT);
    ck_assert_int_eq(lt_reader_open(&r, scratch_path("missing"), d, sizeof d), LT_EOPEN);
    ck_assert_int_eq(lt_reader_open(&r, scratch_dir, NULL, 0), LT_EOPEN);
    /* a zstd skippable frame that is not our header */
    uint8_t f[16] = {0x50, 0x2A, 0x4D, 0x18, 8, 0, 0, 0, 'N', 'O', 'T', 'T', 'R', 'A', 'C', 'E'};
    spit(scratch_path("skip"), f, sizeof f);
    ck_assert_int_eq(lt_reader_open(&r, scratch_path("skip"), d, sizeof d), LT_EFORMAT);
}
END_TEST

START_TEST(statistics_blocks_and_trailer_totals) {
    lt_writer *w;
    uint8_t buf[256];
    const char *path = scratch_path("stats.tracy");
    ck_assert_int_eq(lt_writer_open(&w, path, 0, NULL, 0), 0);
    for (int k = 1; k <= 2; k++) {
        uint8_t *p = buf + lt_block_header(buf, LT_BLOCK_STATS, 0, 0, 0);
        *p++ = LT_TAG_STAT;
        p = lt__put_str(p, "clients_lost", 12);
        *p++ = LT_SEV_DATA_LOSS;
        p = lt__put_varint_(p, (uint64_t)k);
        p = lt__put_str(p, "lost", 4);
        lt_block_desc d = {.kind = LT_BLOCK_STATS};
        ck_assert_int_eq(lt_writer_block(w, &d, buf, (size_t)(p - buf)), 0);
    }
    /* a block of a kind from a future minor version is skipped */
    lt_block_desc fut = {.kind = 16, .process = 9};
    ck_assert_int_eq(lt_writer_block(w, &fut, "\x10\x0b\x0b", 3), 0);
    ck_assert_int_eq(lt_writer_close(w, NULL, 0, NULL, 0), 0);
    lt_reader *r = open_ok(path);
    ck_assert_int_eq(lt_reader_info(r)->complete, 0);
    ck_assert_uint_eq(lt_reader_nstats(r), 1);
    const lt_stat *st = lt_reader_stat(r, 0);
    ck_assert_str_eq(st->name, "clients_lost");
    ck_assert_uint_eq(st->value, 2);
    ck_assert_str_eq(st->description, "lost");
    ck_assert_ptr_null(lt_reader_stat(r, 1));
    uint64_t v;
    ck_assert_int_eq(lt_reader_total(r, "clients_lost", &v), 1);
    ck_assert_uint_eq(v, 2);
    lt_event ev;
    ck_assert_int_eq(lt_reader_next(r, &ev), 0);
    lt_reader_free(r);
}
END_TEST

Suite *reader_suite(void) {
    Suite *s = suite_create("reader");
    TCase *t = tcase_create("round_trip");
    tcase_add_checked_fixture(t, setup_dir, scratch_remove);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, round_trip_edge_values);
    tcase_add_test(t, merge_orders_many_streams);
    tcase_add_test(t, builder_refuses_invalid_sequences);
    tcase_add_test(t, statistics_blocks_and_trailer_totals);
    suite_add_tcase(s, t);
    t = tcase_create("damage");
    tcase_add_checked_fixture(t, setup_dir, scratch_remove);
    tcase_set_timeout(t, 300);
    tcase_add_test(t, cut_file_recovers_complete_units);
    tcase_add_test(t, flipped_bytes_never_crash);
    tcase_add_test(t, corrupt_descriptor_sizes_are_refused);
    tcase_add_test(t, newer_major_version_is_refused);
    tcase_add_test(t, non_trace_files_are_refused);
    suite_add_tcase(s, t);
    return s;
}
