/* check_splice.c -- tracy-cut and tracy-merge (libtrace/format/splice.c): windows,
 * cut zones, choice of processes and threads, clock alignment of hosts; the
 * writer's rotation to numbered files, which also writes cut zones. */
#include <check.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "trace.h"
#include "trace_builder.h"
#include "scratch.h"

static void setup_dir(void) { scratch_make("check_splice"); }

/* Runs a program of the build with arguments; returns its exit code. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...) {
    const char *build = getenv("LT_BUILD");
    ck_assert_msg(build != NULL, "LT_BUILD is not set (run through make check-c)");
    char args[1024], cmd[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && %s/bin/%s 2>>stderr.txt", scratch_dir, build, args);
    int st = system(cmd);
    ck_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* Runs a shell command in the test directory; returns its exit code. */
static int shell(const char *cmd) {
    char full[1400];
    snprintf(full, sizeof full, "cd '%s' && %s", scratch_dir, cmd);
    int st = system(full);
    ck_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* ---- Events as simple rows ---------------------------------------------- */

typedef struct row {
    uint8_t type, flags;
    uint32_t process, thread, loc, depth;
    uint64_t ts, begin_ts;
    char text[32];
} row;

typedef struct rows {
    row *v;
    size_t n, cap;
} rows;

static void rows_add(rows *r, const row *x) {
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 256;
        r->v = realloc(r->v, r->cap * sizeof *r->v);
        ck_assert_ptr_nonnull(r->v);
    }
    r->v[r->n++] = *x;
}

static row row_of(const lt_event *ev) {
    row x = {.type = ev->type, .flags = ev->flags, .process = ev->process,
             .thread = ev->thread, .ts = ev->ts, .loc = ev->loc, .depth = ev->depth,
             .begin_ts = ev->type == LT_EV_ZONE_END ? ev->begin_ts : 0};
    if (ev->text)
        snprintf(x.text, sizeof x.text, "%.*s", (int)(ev->text_len < 31 ? ev->text_len : 31),
                 ev->text);
    return x;
}

/* Every event of a file, in the reader's order. */
static rows read_all(const char *path) {
    lt_reader *r;
    char detail[256];
    ck_assert_msg(lt_reader_open(&r, path, detail, sizeof detail) == 0, "%s", detail);
    ck_assert(lt_reader_info(r)->complete);
    rows out = {0};
    lt_event ev;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0) {
        row x = row_of(&ev);
        rows_add(&out, &x);
    }
    ck_assert_msg(rc == 0, "%s", lt_reader_error(r));
    lt_reader_free(r);
    return out;
}

static void rows_eq(const rows *a, const rows *b) {
    ck_assert_uint_eq(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        const row *x = &a->v[i], *y = &b->v[i];
        ck_assert_msg(x->type == y->type && x->flags == y->flags && x->process == y->process &&
                          x->thread == y->thread && x->ts == y->ts && x->loc == y->loc &&
                          x->depth == y->depth && x->begin_ts == y->begin_ts &&
                          strcmp(x->text, y->text) == 0,
                      "event %zu differs: type %u/%u flags %u/%u ts %" PRIu64 "/%" PRIu64
                      " p%u.%u/p%u.%u begin %" PRIu64 "/%" PRIu64, i, x->type, y->type,
                      x->flags, y->flags, x->ts, y->ts, x->process, x->thread, y->process,
                      y->thread, x->begin_ts, y->begin_ts);
    }
}

/* ---- Traces -------------------------------------------------------------- */

/* Thread 1: A [100, 1000] { B [200, 300], C [400, 600] (text "c"),
 * D [700, 900] }, messages at 150 and 650. Thread 2: E [50, 2000]. */
static void small_trace(const char *path, uint64_t mono0, uint64_t anchor_mono,
                        uint64_t anchor_wall, const char *host) {
    lt_builder *b;
    ck_assert_int_eq(lt_builder_open(&b, path, 0, "check_splice"), 0);
    int p = lt_builder_process(b, 42, 0, host, "prog", 0, NULL, anchor_mono, anchor_wall);
    ck_assert_int_eq(p, 1);
    ck_assert_int_eq(lt_builder_thread(b, 1, 100, "main"), 1);
    ck_assert_int_eq(lt_builder_thread(b, 1, 101, "worker"), 2);
    const char *names[] = {"A", "B", "C", "D", "E"};
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(lt_builder_loc(b, 1, LT_LOC_USER, names[i], "f.c", i + 1), i + 1);
    uint64_t t = mono0;
    ck_assert_int_eq(lt_builder_zone_begin(b, 1, 2, t + 50, 5), 0);
    ck_assert_int_eq(lt_builder_zone_begin(b, 1, 1, t + 100, 1), 0);
    ck_assert_int_eq(lt_builder_message(b, 1, 1, t + 150, "m1"), 0);
    ck_assert_int_eq(lt_builder_zone_begin(b, 1, 1, t + 200, 2), 0);
    ck_assert_int_eq(lt_builder_zone_end(b, 1, 1, t + 300), 0);
    ck_assert_int_eq(lt_builder_zone_begin(b, 1, 1, t + 400, 3), 0);
    ck_assert_int_eq(lt_builder_zone_text(b, 1, 1, "c"), 0);
    ck_assert_int_eq(lt_builder_zone_end(b, 1, 1, t + 600), 0);
    ck_assert_int_eq(lt_builder_message(b, 1, 1, t + 650, "m2"), 0);
    ck_assert_int_eq(lt_builder_zone_begin(b, 1, 1, t + 700, 4), 0);
    ck_assert_int_eq(lt_builder_zone_end(b, 1, 1, t + 900), 0);
    ck_assert_int_eq(lt_builder_zone_end(b, 1, 1, t + 1000), 0);
    ck_assert_int_eq(lt_builder_zone_end(b, 1, 2, t + 2000), 0);
    ck_assert_int_eq(lt_builder_close(b, 0), 0);
}

START_TEST(cut_window_keeps_whole_zones_and_marks_cut_ones) {
    small_trace(scratch_path("in.tracy"), 1000, 0, 0, "h");
    ck_assert_int_eq(run("tracy-cut -q --absolute --from 1500 --to 1800 -o w.tracy in.tracy"), 0);
    rows got = read_all(scratch_path("w.tracy"));
    /* E (thread 2) spans the window without an event inside it: it is
     * written cut at the start and left open. */
    const row want[] = {
        {LT_EV_ZONE_BEGIN, LT_EVF_CUT, 1, 1, 1, 0, 1500, 0, ""},       /* A */
        {LT_EV_ZONE_BEGIN, LT_EVF_CUT, 1, 1, 3, 1, 1500, 0, ""},       /* C */
        {LT_EV_ZONE_BEGIN, LT_EVF_CUT, 1, 2, 5, 0, 1500, 0, ""},       /* E */
        {LT_EV_ZONE_END, LT_EVF_CUT | LT_EVF_UNCLOSED, 1, 2, 5, 0, 1500, 1500, ""},
        {LT_EV_ZONE_END, LT_EVF_CUT, 1, 1, 3, 1, 1600, 1500, "c"},     /* C ends */
        {LT_EV_MESSAGE, 0, 1, 1, 0, 0, 1650, 0, "m2"},
        {LT_EV_ZONE_BEGIN, 0, 1, 1, 4, 1, 1700, 0, ""},                /* D */
        {LT_EV_ZONE_END, LT_EVF_UNCLOSED, 1, 1, 4, 1, 1700, 1700, ""}, /* D, open at 1800 */
        {LT_EV_ZONE_END, LT_EVF_CUT | LT_EVF_UNCLOSED, 1, 1, 1, 0, 1700, 1500, ""},
    };
    rows w = {(row *)want, sizeof want / sizeof *want, 0};
    rows_eq(&got, &w);
    /* The statistics say what the window left out; the version is 1.1. */
    lt_reader *r;
    ck_assert_int_eq(lt_reader_open(&r, scratch_path("w.tracy"), NULL, 0), 0);
    ck_assert_uint_eq(lt_reader_info(r)->minor, 1);
    ck_assert_ptr_nonnull(lt_reader_thread(r, 1, 2));
    ck_assert_str_eq(lt_reader_thread(r, 1, 2)->name, "worker");
    lt_reader_free(r);
    free(got.v);
}
END_TEST

START_TEST(cut_of_a_cut_keeps_the_marks) {
    small_trace(scratch_path("in.tracy"), 1000, 0, 0, "h");
    ck_assert_int_eq(run("tracy-cut -q --absolute --from 1500 -o w.tracy in.tracy"), 0);
    ck_assert_int_eq(run("tracy-cut -q -o w2.tracy w.tracy"), 0);
    rows a = read_all(scratch_path("w.tracy")), b = read_all(scratch_path("w2.tracy"));
    rows_eq(&a, &b);
    ck_assert_uint_eq(a.v[0].flags, LT_EVF_CUT);
    free(a.v);
    free(b.v);
}
END_TEST

/* A trace of several processes and threads with random nesting, texts and
 * messages, and the events a window of it must hold, derived from the
 * original's events. */
static void random_trace(const char *path, unsigned seed, uint64_t *first, uint64_t *last) {
    lt_builder *b;
    ck_assert_int_eq(lt_builder_open(&b, path, 0, "check_splice"), 0);
    srand(seed);
    for (int p = 1; p <= 2; p++) {
        ck_assert_int_eq(lt_builder_process(b, 10 + p, p - 1, "h", "prog", 0, NULL, 0, 0), p);
        for (int t = 1; t <= 3; t++) ck_assert_int_eq(lt_builder_thread(b, p, t, "th"), t);
        for (int l = 1; l <= 200; l++)
            ck_assert_int_eq(lt_builder_loc(b, p, LT_LOC_PYTHON, "f", "x.py", l), l);
    }
    uint64_t ts[7] = {0}, depth[7] = {0};
    *first = UINT64_MAX;
    *last = 0;
    for (int i = 0; i < 300000; i++) {
        int s = rand() % 6, p = 1 + s / 3, t = 1 + s % 3;
        uint64_t now = (ts[s] += 1 + (uint64_t)(rand() % 50)) + 1000000;
        if (now < *first) *first = now;
        if (now > *last) *last = now;
        int k = rand() % 100;
        if (k < 48 && depth[s] < 40) {
            ck_assert_int_eq(lt_builder_zone_begin(b, p, t, now, 1 + rand() % 200), 0);
            depth[s]++;
            if (k < 3) ck_assert_int_eq(lt_builder_zone_text(b, p, t, "txt"), 0);
        } else if (k < 97 && depth[s] > 0) {
            ck_assert_int_eq(lt_builder_zone_end(b, p, t, now), 0);
            depth[s]--;
        } else {
            ck_assert_int_eq(lt_builder_message(b, p, t, now, "msg"), 0);
        }
    }
    ck_assert_int_eq(lt_builder_close(b, 0), 0);
}

typedef struct zref {
    uint64_t begin;
    int cut;
} zref;

/* What the reader must deliver for the window [from, to] of `all`, per
 * stream (p, t): zones begun before `from` and open at it come first, cut at
 * `from`; zones open at `to` end unclosed at the stream's last event. */
static rows expect_window(const rows *all, uint32_t p, uint32_t t, uint64_t from, uint64_t to) {
    rows out = {0};
    zref stack[64];
    uint32_t locs[64];
    int depth = 0, started = 0, crossed = 0;
    uint64_t lastts = 0;
    for (size_t i = 0; i < all->n; i++) {
        const row *x = &all->v[i];
        if (x->process != p || x->thread != t || (x->flags & LT_EVF_UNCLOSED)) continue;
        if (x->ts > to) {
            crossed = 1;
            break;
        }
        if (x->ts >= from && !started) {
            started = 1;
            for (int k = 0; k < depth; k++) {
                row c = {LT_EV_ZONE_BEGIN, LT_EVF_CUT, p, t, locs[k], (uint32_t)k, from, 0, ""};
                rows_add(&out, &c);
                stack[k] = (zref){from, 1};
            }
        }
        if (x->type == LT_EV_ZONE_BEGIN) {
            locs[depth] = x->loc;
            stack[depth++] = (zref){x->ts, 0};
        } else if (x->type == LT_EV_ZONE_END) {
            depth--;
        }
        if (!started) continue;
        row c = *x;
        if (x->type == LT_EV_ZONE_BEGIN) {
            /* as read */
        } else if (x->type == LT_EV_ZONE_END) {
            c.begin_ts = stack[depth].begin;
            c.flags |= stack[depth].cut ? LT_EVF_CUT : 0;
        }
        rows_add(&out, &c);
        lastts = x->ts;
    }
    /* zones across the whole window (not those left open at the stream's
     * end before it: they end there, unclosed) */
    if (!started && crossed && depth > 0) {
        for (int k = 0; k < depth; k++) {
            row c = {LT_EV_ZONE_BEGIN, LT_EVF_CUT, p, t, locs[k], (uint32_t)k, from, 0, ""};
            rows_add(&out, &c);
            stack[k] = (zref){from, 1};
        }
        started = 1;
        lastts = from;
    }
    for (int k = depth - 1; started && k >= 0; k--) {
        row c = {LT_EV_ZONE_END, (uint8_t)(LT_EVF_UNCLOSED | (stack[k].cut ? LT_EVF_CUT : 0)),
                 p, t, locs[k], (uint32_t)k, lastts, stack[k].begin, ""};
        rows_add(&out, &c);
    }
    return out;
}

static rows stream_of(const rows *all, uint32_t p, uint32_t t) {
    rows out = {0};
    for (size_t i = 0; i < all->n; i++)
        if (all->v[i].process == p && all->v[i].thread == t) rows_add(&out, &all->v[i]);
    return out;
}

static void clear_text(rows *r) {
    for (size_t i = 0; i < r->n; i++) r->v[i].text[0] = 0;
}

START_TEST(cut_random_windows_equal_the_filtered_original) {
    uint64_t first, last;
    random_trace(scratch_path("in.tracy"), 7, &first, &last);
    rows all = read_all(scratch_path("in.tracy"));
    clear_text(&all);
    uint64_t span = last - first;
    const uint64_t win[][2] = {{first + span / 3, first + span / 2},
                               {first + span / 10, first + span / 10 + 2000},
                               {first, first + span / 4},
                               {first + span - 5000, UINT64_MAX / 2}};
    for (size_t w = 0; w < sizeof win / sizeof *win; w++) {
        char name[32];
        snprintf(name, sizeof name, "w%zu.tracy", w);
        ck_assert_int_eq(run("tracy-cut -q --absolute --from %" PRIu64 " --to %" PRIu64
                             " -o %s in.tracy", win[w][0], win[w][1], name), 0);
        rows got = read_all(scratch_path(name));
        clear_text(&got);
        for (uint32_t p = 1; p <= 2; p++)
            for (uint32_t t = 1; t <= 3; t++) {
                rows e = expect_window(&all, p, t, win[w][0], win[w][1]);
                rows g = stream_of(&got, p, t);
                ck_assert_msg(e.n > 0 || w == 3, "window %zu, stream %u.%u: empty", w, p, t);
                ck_assert_msg(g.n == e.n, "window %zu, stream %u.%u: %zu events, want %zu", w,
                              p, t, g.n, e.n);
                rows_eq(&g, &e);
                free(e.v);
                free(g.v);
            }
        free(got.v);
    }
    free(all.v);
}
END_TEST

START_TEST(cut_by_process_and_thread_renumbers) {
    uint64_t first, last;
    random_trace(scratch_path("in.tracy"), 9, &first, &last);
    ck_assert_int_eq(run("tracy-cut -q -t 2:3,1:2 -o t.tracy in.tracy"), 0);
    ck_assert_int_eq(run("tracy-cut -q -p 2 -o p.tracy in.tracy"), 0);
    rows all = read_all(scratch_path("in.tracy"));
    rows t = read_all(scratch_path("t.tracy")), p = read_all(scratch_path("p.tracy"));
    /* threads 1.2 and 2.3 become 1.1 and 2.1; process 2 becomes 1 */
    rows a = stream_of(&all, 1, 2), b = stream_of(&t, 1, 1);
    for (size_t i = 0; i < a.n; i++) a.v[i].thread = 1;
    rows_eq(&b, &a);
    free(a.v), free(b.v);
    a = stream_of(&all, 2, 3), b = stream_of(&t, 2, 1);
    for (size_t i = 0; i < a.n; i++) a.v[i].thread = 1;
    rows_eq(&b, &a);
    rows t11 = stream_of(&t, 1, 1);
    ck_assert_uint_eq(t.n, t11.n + b.n);
    free(a.v), free(b.v), free(t11.v);
    for (uint32_t th = 1; th <= 3; th++) {
        a = stream_of(&all, 2, th), b = stream_of(&p, 1, th);
        for (size_t i = 0; i < a.n; i++) a.v[i].process = 1;
        rows_eq(&b, &a);
        free(a.v), free(b.v);
    }
    lt_reader *r;
    ck_assert_int_eq(lt_reader_open(&r, scratch_path("p.tracy"), NULL, 0), 0);
    ck_assert_uint_eq(lt_reader_nprocesses(r), 1);
    ck_assert_uint_eq(lt_reader_process(r, 1)->pid, 12);
    lt_reader_free(r);
    /* names that are not in the trace are refused */
    ck_assert_int_eq(run("tracy-cut -q -t 3:1 -o x.tracy in.tracy"), 1);
    ck_assert_int_eq(run("tracy-cut -q -p 0 -o x.tracy in.tracy"), 1);
    ck_assert_int_eq(run("tracy-cut -q --from 2s --to 1s -o x.tracy in.tracy"), 1);
    free(all.v), free(t.v), free(p.v);
}
END_TEST

START_TEST(output_never_replaces_a_file_unasked) {
    small_trace(scratch_path("in.tracy"), 1000, 0, 0, "h");
    FILE *f = fopen(scratch_path("keep.txt"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("precious\n", f);
    fclose(f);
    ck_assert_int_eq(run("tracy-cut -q -o keep.txt in.tracy"), 5);
    ck_assert_int_eq(run("tracy-merge -q -o keep.txt in.tracy"), 5);
    char buf[32] = "";
    f = fopen(scratch_path("keep.txt"), "r");
    ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
    fclose(f);
    ck_assert_str_eq(buf, "precious\n");
    /* the input itself, even with -f and under another name */
    ck_assert_int_eq(shell("ln -s in.tracy alias.tracy"), 0);
    ck_assert_int_eq(run("tracy-cut -q -f -o alias.tracy in.tracy"), 1);
    ck_assert_int_eq(run("tracy-merge -q -f -o ./in.tracy in.tracy"), 1);
    ck_assert_int_eq(run("tracy-cut -q -f -o keep.txt in.tracy"), 0);
}
END_TEST

/* Two hosts watch the same moments: host b's monotonic clock reads D less
 * than host a's (it booted D later); their wall clocks agree. */
START_TEST(merge_aligns_hosts_by_their_anchors) {
    const uint64_t D = 3600000000000ull, W = 1700000000000000000ull;
    small_trace(scratch_path("a.tracy"), 10000000000000ull, 10000000000000ull, W, "node-a");
    small_trace(scratch_path("b.tracy"), 10000000000000ull - D, 10000000000000ull - D, W, "node-b");
    ck_assert_int_eq(run("tracy-merge -q -o m.tracy a.tracy b.tracy"), 0);
    rows m = read_all(scratch_path("m.tracy")), a = read_all(scratch_path("a.tracy"));
    ck_assert_uint_eq(m.n, 2 * a.n);
    /* process 2 (host b) is now on host a's timeline: every event at the
     * same time as its twin of process 1, exactly */
    rows m1 = stream_of(&m, 1, 1), m2 = stream_of(&m, 2, 1);
    for (size_t i = 0; i < m2.n; i++) m2.v[i].process = 1;
    rows_eq(&m1, &m2);
    lt_reader *r;
    ck_assert_int_eq(lt_reader_open(&r, scratch_path("m.tracy"), NULL, 0), 0);
    uint64_t v = 0;
    ck_assert(lt_reader_total(r, "clock_shift_ns:node-b", &v));
    ck_assert_uint_eq(v, D);
    ck_assert(lt_reader_total(r, "clock_shift_ns:node-a", &v));
    ck_assert_uint_eq(v, 0);
    ck_assert(lt_reader_total(r, "clock_align_error_ns", &v));
    ck_assert_uint_eq(v, 2000); /* one process per host: the 1 us floor each */
    ck_assert(lt_reader_total(r, "merge_inputs", &v));
    ck_assert_uint_eq(v, 2);
    const lt_process *p2 = lt_reader_process(r, 2);
    ck_assert_str_eq(p2->hostname, "node-b");
    ck_assert_uint_eq(p2->anchor_mono_ns, 10000000000000ull); /* moved with its events */
    ck_assert_uint_eq(p2->anchor_wall_ns, W);
    lt_reader_free(r);
    /* --no-align keeps the recorded times */
    ck_assert_int_eq(run("tracy-merge -q --no-align -o n.tracy b.tracy a.tracy"), 0);
    rows n = read_all(scratch_path("n.tracy"));
    ck_assert_uint_eq(n.v[0].ts, 10000000000000ull - D + 50);
    free(m.v), free(a.v), free(m1.v), free(m2.v), free(n.v);
}
END_TEST

START_TEST(merge_refuses_corrupt_input_and_leaves_no_output) {
    small_trace(scratch_path("a.tracy"), 1000, 0, 0, "h");
    ck_assert_int_eq(shell("cp a.tracy bad.tracy && printf '\\377\\377\\377\\377' | "
                           "dd of=bad.tracy bs=1 seek=$(( $(stat -c %s a.tracy) - 400 )) "
                           "conv=notrunc status=none"), 0);
    int rc = run("tracy-merge -q -o m.tracy a.tracy bad.tracy");
    ck_assert_msg(rc == 4 || rc == 2, "exit %d", rc);
    ck_assert_int_eq(access(scratch_path("m.tracy"), F_OK), -1);
}
END_TEST

/* ---- Rotation -------------------------------------------------------------- */

/* A rotating writer (tools/tracerotate copies blocks as capture-release
 * --rotate writes them): every file is sound, its trailer counts the thread
 * that recorded nothing in it, the messages of the files add up to the
 * input's, and each file after the first holds the open zone as a cut one. */
START_TEST(rotated_files_count_idle_threads) {
    lt_builder *b;
    ck_assert_int_eq(lt_builder_open(&b, scratch_path("in.tracy"), 0, NULL), 0);
    ck_assert_int_eq(lt_builder_process(b, 1, 0, "h", "p", 0, NULL, 0, 0), 1);
    ck_assert_int_eq(lt_builder_thread(b, 1, 1, "busy"), 1);
    ck_assert_int_eq(lt_builder_thread(b, 1, 2, "idle"), 2);
    ck_assert_int_eq(lt_builder_loc(b, 1, LT_LOC_USER, "z", "z.c", 1), 1);
    ck_assert_int_eq(lt_builder_zone_begin(b, 1, 2, 1, 1), 0);
    ck_assert_int_eq(lt_builder_zone_end(b, 1, 2, 2), 0);
    ck_assert_int_eq(lt_builder_zone_begin(b, 1, 1, 5, 1), 0); /* never closed */
    const uint64_t n = 200000;
    for (uint64_t i = 0; i < n; i++) {
        char text[48];
        snprintf(text, sizeof text, "message %" PRIu64 " %" PRIx64, i, i * 2654435761u);
        ck_assert_int_eq(lt_builder_message(b, 1, 1, 10 + i, text), 0);
    }
    ck_assert_int_eq(lt_builder_close(b, 0), 0);
    ck_assert_int_eq(run("../tools/tracerotate --max-size 100000 -o out.tracy in.tracy"), 0);
    uint64_t messages = 0, zones = 0, files = 0;
    for (;; files++) {
        char name[32];
        snprintf(name, sizeof name, files ? "out.%" PRIu64 ".tracy" : "out.tracy", files);
        if (access(scratch_path(name), F_OK) != 0) break;
        lt_reader *r;
        uint64_t threads = 0, m = 0, z = 0;
        ck_assert_int_eq(lt_reader_open(&r, scratch_path(name), NULL, 0), 0);
        ck_assert_msg(lt_reader_sound(r) == 0, "%s: %s", name, lt_reader_error(r));
        ck_assert(lt_reader_total(r, "threads", &threads) && lt_reader_total(r, "messages", &m) &&
                  lt_reader_total(r, "zones", &z));
        ck_assert_uint_eq(threads, 2);
        messages += m;
        zones += z;
        lt_reader_free(r);
    }
    ck_assert_uint_gt(files, 2);
    ck_assert_uint_eq(messages, n);
    ck_assert_uint_eq(zones, 2 + (files - 1));
}
END_TEST

Suite *splice_suite(void) {
    Suite *s = suite_create("splice");
    TCase *c = tcase_create("cut");
    tcase_add_checked_fixture(c, setup_dir, scratch_remove);
    tcase_set_timeout(c, 60);
    tcase_add_test(c, cut_window_keeps_whole_zones_and_marks_cut_ones);
    tcase_add_test(c, cut_of_a_cut_keeps_the_marks);
    tcase_add_test(c, cut_random_windows_equal_the_filtered_original);
    tcase_add_test(c, cut_by_process_and_thread_renumbers);
    tcase_add_test(c, output_never_replaces_a_file_unasked);
    suite_add_tcase(s, c);
    c = tcase_create("merge");
    tcase_add_checked_fixture(c, setup_dir, scratch_remove);
    tcase_set_timeout(c, 60);
    tcase_add_test(c, merge_aligns_hosts_by_their_anchors);
    tcase_add_test(c, merge_refuses_corrupt_input_and_leaves_no_output);
    suite_add_tcase(s, c);
    c = tcase_create("rotate");
    tcase_add_checked_fixture(c, setup_dir, scratch_remove);
    tcase_set_timeout(c, 60);
    tcase_add_test(c, rotated_files_count_idle_threads);
    suite_add_tcase(s, c);
    return s;
}
