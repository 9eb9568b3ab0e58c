/* mkseeds.c -- writes the fuzzers' seed corpus (tests/fuzz/corpus/<target>/):
 * small valid traces made with lt_builder, record sequences and client
 * message sequences. Run by `make fuzz-seeds`; its output is committed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "records.h"
#include "trace.h"
#include "wire.h"
#include "trace_builder.h"

typedef struct buf {
    uint8_t p[8192];
    size_t n;
} buf;

static void put(buf *b, const void *d, size_t n) {
    if (b->n + n > sizeof b->p) abort();
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void var(buf *b, uint64_t v) {
    uint8_t t[10];
    put(b, t, (size_t)(lt__put_varint_(t, v) - t));
}
static void str(buf *b, const char *s) {
    var(b, strlen(s));
    put(b, s, strlen(s));
}
static void f64(buf *b, double d) { put(b, &d, 8); }

static void save(const char *dir, const char *name, const void *p, size_t n) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static void chk(int rc, const char *what) {
    if (rc < 0) {
        fprintf(stderr, "mkseeds: %s: %s\n", what, lt_strerror(rc));
        exit(1);
    }
}

/* A trace with every record type, two processes, three threads. */
static void trace_file(const char *path, int trailer, int end_status) {
    lt_builder *b;
    const char *argv[] = {"prog", "--x"};
    chk(lt_builder_open(&b, path, LT_WRITE_FORCE, "mkseeds"), "open");
    int p = lt_builder_process(b, 100, 0, "host", "prog", 2, argv, 1000, 2000);
    int q = lt_builder_process(b, 101, 1, "host", "prog2", 1, argv, 1000, 2000);
    int t1 = lt_builder_thread(b, (uint32_t)p, 7, "main");
    int t2 = lt_builder_thread(b, (uint32_t)p, 8, "worker");
    int u1 = lt_builder_thread(b, (uint32_t)q, 9, "main");
    int l1 = lt_builder_loc(b, (uint32_t)p, LT_LOC_PYTHON, "f", "a.py", 3);
    int l2 = lt_builder_loc(b, (uint32_t)p, LT_LOC_C, "g", "", 0);
    int m1 = lt_builder_loc(b, (uint32_t)q, LT_LOC_USER, "work", "w.c", 9);
    int pl = lt_builder_plot(b, (uint32_t)p, "queue");
    int fr = lt_builder_frame_name(b, (uint32_t)p, "render");
    chk(p | q | t1 | t2 | u1 | l1 | l2 | m1 | pl | fr, "define");
    uint64_t ts = 5000;
    for (int i = 0; i < 3; i++) {
        chk(lt_builder_zone_begin(b, p, t1, ts += 10, l1), "zb");
        chk(lt_builder_zone_text(b, p, t1, "arg=1"), "zt");
        chk(lt_builder_zone_begin(b, p, t1, ts += 3, l2), "zb");
        chk(lt_builder_zone_name(b, p, t1, "renamed"), "zn");
        chk(lt_builder_zone_end(b, p, t1, ts += 4), "ze");
        chk(lt_builder_zone_end(b, p, t1, ts += 1), "ze");
        chk(lt_builder_message(b, p, t2, ts, "hello"), "msg");
        chk(lt_builder_signpost(b, p, t2, ts + 1, "phase", i ? "body" : ""), "sp");
        chk(lt_builder_plot_value(b, p, t2, ts + 2, pl, i * 1.5), "plot");
        chk(lt_builder_frame(b, p, t2, ts + 3, i & 1 ? fr : 0), "frame");
        chk(lt_builder_zone_begin(b, q, u1, ts + 1, m1), "zb");
        chk(lt_builder_zone_end(b, q, u1, ts + 7), "ze");
    }
    chk(lt_builder_lost(b, p, t2, ts + 9, 12), "lost");
    chk(lt_builder_zone_begin(b, q, u1, ts + 20, m1), "zb"); /* left open */
    chk(lt_builder_process_end(b, p, ts + 30, LT_PROC_CLEAN, ""), "end");
    if (end_status >= 0)
        chk(lt_builder_process_end(b, q, ts + 30, end_status, "connection lost"), "end");
    chk(lt_builder_close(b, !trailer), "close");
}

static void reader_seeds(const char *dir) {
    char path[600];
    snprintf(path, sizeof path, "%s/full.tracy", dir);
    trace_file(path, 1, LT_PROC_LOST);
    snprintf(path, sizeof path, "%s/no_trailer.tracy", dir);
    trace_file(path, 0, -1);
    /* A cut copy of the first. */
    snprintf(path, sizeof path, "%s/full.tracy", dir);
    FILE *f = fopen(path, "rb");
    static uint8_t data[1 << 16];
    size_t n = f ? fread(data, 1, sizeof data, f) : 0;
    if (f) fclose(f);
    save(dir, "cut.tracy", data, n * 2 / 3);
    lt_builder *b;
    snprintf(path, sizeof path, "%s/empty.tracy", dir);
    chk(lt_builder_open(&b, path, LT_WRITE_FORCE, "mkseeds"), "open");
    chk(lt_builder_close(b, 0), "close");
}

/* Event records (no thread varint) using loc 1..2, plot 1, frame 1. */
static void events(buf *b) {
    u8(b, 0x81), var(b, 1000);
    u8(b, LT_TAG_ZONE_TEXT), str(b, "text");
    u8(b, LT_TAG_ZONE_BEGIN), var(b, 5), var(b, 2);
    u8(b, LT_TAG_ZONE_NAME), str(b, "name");
    u8(b, LT_TAG_ZONE_END), var(b, 3);
    u8(b, LT_TAG_ZONE_END), var(b, 1);
    u8(b, LT_TAG_MESSAGE), var(b, 2), str(b, "message");
    u8(b, LT_TAG_SIGNPOST), var(b, 2), str(b, "head"), str(b, "body");
    u8(b, LT_TAG_PLOT), var(b, 1), var(b, 1), f64(b, 2.5);
    u8(b, LT_TAG_FRAME), var(b, 1), var(b, 1);
    u8(b, LT_TAG_FRAME), var(b, 1), var(b, 0);
    u8(b, LT_TAG_LOST), var(b, 1), var(b, 9);
    u8(b, 0x82), var(b, 1);
}

static void meta(buf *b, int with_info) {
    if (with_info) {
        u8(b, LT_TAG_PROC_INFO);
        var(b, 1), var(b, 1), str(b, "h"), str(b, "p"), var(b, 1), str(b, "p");
        var(b, 1), var(b, 2), str(b, "c");
    }
    u8(b, LT_TAG_THREAD_INFO), var(b, 1), var(b, 11), str(b, "main");
    u8(b, LT_TAG_THREAD_INFO), var(b, 2), var(b, 12), str(b, "w\xc3\xa9");
    u8(b, LT_TAG_LOC_DEF), var(b, 1), u8(b, 1), var(b, 3), str(b, "f"), str(b, "a.py");
    u8(b, LT_TAG_LOC_DEF), var(b, 2), u8(b, 4), var(b, 0), str(b, "g"), str(b, "");
    u8(b, LT_TAG_PLOT_DEF), var(b, 1), str(b, "queue");
    u8(b, LT_TAG_FRAME_DEF), var(b, 1), str(b, "frame");
}

static void block(buf *out, uint8_t kind, uint8_t proc, uint8_t thr,
                  const buf *recs) {
    uint8_t h[6] = {kind, proc, thr, 1, (uint8_t)recs->n, (uint8_t)(recs->n >> 8)};
    put(out, h, 6);
    put(out, recs->p, recs->n);
}

/* Block-mode inputs of fuzz_reader (see there): blocks it compresses. */
static void reader_block_seeds(const char *dir) {
    buf out = {.n = 0}, b = {.n = 0};
    u8(&out, 0xB1);
    meta(&b, 1);
    block(&out, LT_BLOCK_META, 1, 0, &b);
    for (int t = 1; t <= 2; t++) {
        b.n = 0;
        events(&b);
        block(&out, LT_BLOCK_EVENTS, 1, (uint8_t)t, &b);
    }
    b.n = 0;
    u8(&b, LT_TAG_ZONE_END_ABORTED), var(&b, 4);
    block(&out, LT_BLOCK_EVENTS, 1, 1, &b);
    b.n = 0;
    u8(&b, LT_TAG_PROC_END), var(&b, 99), u8(&b, 1), str(&b, "lost"), var(&b, 1), var(&b, 2), var(&b, 3);
    block(&out, LT_BLOCK_META, 1, 0, &b);
    b.n = 0;
    u8(&b, LT_TAG_STAT), str(&b, "clients_lost"), u8(&b, 1), var(&b, 1), str(&b, "d");
    block(&out, LT_BLOCK_STATS, 0, 0, &b);
    save(dir, "blocks", out.p, out.n);
}

static void records_seeds(const char *dir) {
    buf b = {.n = 0};
    u8(&b, 0), u8(&b, 0x82), u8(&b, 1), u8(&b, 1), u8(&b, 8);
    events(&b);
    u8(&b, LT_TAG_ZONE_END_ABORTED), var(&b, 0);
    save(dir, "events", b.p, b.n);
    b.n = 0;
    u8(&b, 1), u8(&b, 0xff), u8(&b, 0xff), u8(&b, 0x01), u8(&b, 0);
    meta(&b, 1);
    u8(&b, LT_TAG_PROC_END), var(&b, 99), u8(&b, 1), str(&b, "lost"), var(&b, 1), var(&b, 2), var(&b, 3);
    u8(&b, LT_TAG_STAT), str(&b, "clients_lost"), u8(&b, 1), var(&b, 1), str(&b, "d");
    save(dir, "meta", b.p, b.n);
    b.n = 0;
    u8(&b, 2), u8(&b, 0), u8(&b, 0), u8(&b, 0), u8(&b, 0);
    var(&b, 300), str(&b, "abc"), var(&b, UINT64_MAX), str(&b, "\xe2\x82\xac");
    save(dir, "prims", b.p, b.n);
}

static void msg(buf *out, uint8_t type, const buf *body) {
    uint32_t len = (uint32_t)body->n + 1;
    uint8_t h[5] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                    (uint8_t)(len >> 24), type};
    put(out, h, 5);
    put(out, body->p, body->n);
}

static void hello(buf *out) {
    buf b = {.n = 0};
    put(&b, LT_WIRE_MAGIC, 8);
    u8(&b, 1), u8(&b, 0), u8(&b, 0), u8(&b, 0);
    var(&b, 4242), var(&b, 4), str(&b, "host"), str(&b, "prog");
    var(&b, 2), str(&b, "prog"), str(&b, "-x"), var(&b, 100), var(&b, 200);
    str(&b, "seed 1"), str(&b, "");
    msg(out, LT_MSG_HELLO, &b);
}

static void capture_seeds(const char *dir) {
    buf out = {.n = 0}, b = {.n = 0};
    hello(&out);
    meta(&b, 0);
    msg(&out, LT_MSG_META, &b);
    for (int t = 1; t <= 2; t++) {
        b.n = 0;
        var(&b, (uint64_t)t);
        events(&b);
        u8(&b, LT_TAG_ZONE_END), var(&b, 1);
        msg(&out, LT_MSG_EVENTS, &b);
    }
    size_t before_bye = out.n;
    b.n = 0;
    var(&b, 26), var(&b, 0);
    msg(&out, LT_MSG_BYE, &b);
    save(dir, "clean", out.p, out.n);
    /* Lost connection with zones open (one still open per thread). */
    out.n = before_bye;
    b.n = 0;
    var(&b, 1), u8(&b, 0x81), var(&b, 5), u8(&b, 0x82), var(&b, 5);
    msg(&out, LT_MSG_EVENTS, &b);
    save(dir, "lost_open_zones", out.p, out.n);
    /* Rejected: a zone end with none open. */
    b.n = 0;
    var(&b, 2), u8(&b, LT_TAG_ZONE_END), var(&b, 1);
    msg(&out, LT_MSG_EVENTS, &b);
    save(dir, "rejected", out.p, out.n);
    /* No HELLO: the default process. */
    out.n = 0;
    b.n = 0;
    meta(&b, 0);
    msg(&out, LT_MSG_META, &b);
    b.n = 0;
    var(&b, 1);
    events(&b);
    msg(&out, LT_MSG_EVENTS, &b);
    save(dir, "no_hello", out.p, out.n);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: mkseeds CORPUS_DIR\n");
        return 1;
    }
    char d[512];
    snprintf(d, sizeof d, "%s/reader", argv[1]);
    reader_seeds(d);
    reader_block_seeds(d);
    snprintf(d, sizeof d, "%s/records", argv[1]);
    records_seeds(d);
    snprintf(d, sizeof d, "%s/capture", argv[1]);
    capture_seeds(d);
    return 0;
}
