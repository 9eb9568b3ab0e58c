/* fuzz_capture.c -- libFuzzer target: the capture daemon's handling of one
 * client's messages, through the same code the daemon runs (capture/store.c:
 * cap_proc_meta, cap_proc_events, cap_proc_bye, cap_proc_end) with the
 * framing and HELLO decoding of capture/server.c redone here (server.c is
 * bound to libuv sockets and keeps them static).
 *
 * Input: wire messages (u32 length, u8 type, body) as a client sends them
 * after connecting. A first HELLO supplies the PROC_INFO; otherwise a fixed
 * one is used. Blocks go through a real lt_writer into an in-memory file
 * that is then read back. The oracle: whatever the daemon accepted must
 * make a file the reader accepts in full, and the events in it must be the
 * ones the daemon counted (plus the zones it aborted). */
#include <stdint.h>
#include <string.h>
#include "capture.h"
#include "fuzz_common.h"
#include "wire.h"

#define MAX_MESSAGE (1u << 20)
#define MAX_NAMES 4096u

/* ---- A synchronous stand-in for worker.c -------------------------------- */

struct cap_worker {
    cap_blk *head, *tail;
};

void cap_worker_push(cap_worker *wk, cap_blk *b) {
    b->next = NULL;
    if (wk->tail) wk->tail->next = b;
    else wk->head = b;
    wk->tail = b;
}

/* Writes what was queued and hands it back, as the worker thread and the
 * loop's async callback do. */
static void drain_worker(cap_worker *wk, cap_store *s, lt_writer *w) {
    cap_blk *list = wk->head;
    wk->head = wk->tail = NULL;
    for (cap_blk *b = list; b; b = b->next) {
        uint64_t before = lt_writer_bytes(w);
        b->rc = lt_writer_block(w, &b->desc, b->data, b->len);
        b->unit_bytes = lt_writer_bytes(w) - before;
        if (b->rc < 0) abort(); /* the daemon must only build valid blocks */
    }
    cap_store_done(s, list);
}

/* ---- HELLO, as server.c decodes it ------------------------------------- */

static const uint8_t default_info[] = {
    LT_TAG_PROC_INFO, 42, 1, 1, 'h', 4, 'p', 'r', 'o', 'g', 0, 1, 2, 1, 'c'};

/* Returns a PROC_INFO record (tag included) in *info, or -1 when the HELLO
 * would be refused. */
static int decode_hello(const uint8_t *body, size_t n, uint8_t **info,
                        size_t *len, uint64_t *anchor) {
    if (n < LT_WIRE_MAGIC_LEN + 4 || memcmp(body, LT_WIRE_MAGIC, LT_WIRE_MAGIC_LEN))
        return -1;
    if ((body[8] | body[9] << 8) != LT_WIRE_MAJOR) return -1;
    size_t fl = n - 12;
    uint8_t *p = malloc(fl + 1);
    p[0] = LT_TAG_PROC_INFO;
    memcpy(p + 1, body + 12, fl);
    const uint8_t *q = p;
    lt__meta_rec m;
    const char *why;
    if (lt__next_meta(&q, p + fl + 1, LT__META_BIT(LT_TAG_PROC_INFO), &m, &why) < 0) {
        free(p);
        return -1;
    }
    *info = p;
    *len = (size_t)(q - p);
    *anchor = m.anchor_mono_ns;
    return 0;
}

/* ---- Reading the result back ------------------------------------------- */

static void read_back(const char *path, uint64_t want_events) {
    lt_reader *r = NULL;
    char detail[256];
    int rc = lt_reader_open(&r, path, detail, sizeof detail);
    if (rc != 0) {
        fprintf(stderr, "daemon output unreadable: %s: %s\n", lt_strerror(rc), detail);
        abort();
    }
    if (!lt_reader_info(r)->complete || lt_reader_nprocesses(r) != 1) abort();
    const lt_process *p = lt_reader_process(r, 1);
    if (!p || p->status == LT_PROC_RUNNING) abort();
    lt_event ev;
    uint64_t n = 0;
    while ((rc = lt_reader_next(r, &ev)) > 0)
        if (!(ev.flags & LT_EVF_UNCLOSED)) n++;
    if (rc < 0) {
        fprintf(stderr, "daemon output corrupt: %s\n", lt_reader_error(r));
        abort();
    }
    uint64_t total = 0;
    lt_reader_total(r, "events", &total);
    if (n != want_events || total != want_events) {
        fprintf(stderr, "events: read %llu, trailer %llu, daemon %llu\n",
                (unsigned long long)n, (unsigned long long)total,
                (unsigned long long)want_events);
        abort();
    }
    lt_reader_free(r);
}

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[64];
    int fd = fz_memfd(path, sizeof path);
    fz_fill(fd, "", 0);
    lt_writer *w = NULL;
    if (lt_writer_open(&w, path, LT_WRITE_FORCE, "fuzz_capture", 1) != 0) abort();
    cap_worker wk = {0};
    cap_store *s = cap_store_new(&wk, MAX_NAMES);

    const uint8_t *q = data, *end = data + size;
    uint8_t *info = NULL;
    size_t info_len = sizeof default_info;
    uint64_t anchor = 1, received = 0;
    int has_proc = 0;
    if (end - q >= 5 && q[4] == LT_MSG_HELLO && rd32(q) >= 1 &&
        rd32(q) <= (size_t)(end - q) - 4) {
        uint32_t len = rd32(q);
        if (decode_hello(q + 5, len - 1, &info, &info_len, &anchor) < 0) {
            /* Refused before a process exists: nothing but statistics. */
            cap_store_stat_add(s, CAP_ST_CLIENTS_REFUSED, 1);
            goto finish;
        }
        q += 4 + len;
    }
    cap_proc *p = cap_proc_new(s, 1, info ? info : default_info, info_len, anchor);
    has_proc = 1;
    cap_store_stat_add(s, CAP_ST_CLIENTS_CONNECTED, 1);
    int status = LT_PROC_LOST;
    const char *reason = "connection closed without goodbye";
    cap_why why;
    while (end - q >= 5) {
        uint32_t len = rd32(q);
        if (len == 0 || len > MAX_MESSAGE) {
            status = LT_PROC_REJECTED;
            reason = "bad length";
            break;
        }
        if ((size_t)(end - q) - 4 < len) break; /* partial: connection lost */
        uint8_t type = q[4];
        const uint8_t *body = q + 5;
        size_t n = len - 1;
        q += 4 + len;
        int rc;
        memset(&why, 0, sizeof why);
        if (type == LT_MSG_EVENTS) rc = cap_proc_events(s, p, body, n, &why);
        else if (type == LT_MSG_META) rc = cap_proc_meta(s, p, body, n, &why);
        else if (type == LT_MSG_BYE) {
            if (cap_proc_bye(p, body, n) == 0) {
                status = cap_proc_crash_sig(p) ? LT_PROC_CRASHED : LT_PROC_CLEAN;
                reason = cap_proc_crash_sig(p) ? "crashed" : "";
            } else {
                status = LT_PROC_REJECTED;
                reason = "malformed BYE";
            }
            break;
        } else {
            status = LT_PROC_REJECTED;
            reason = "unknown message type";
            break;
        }
        if (rc == -1) {
            if (!why.text || !*why.text) abort(); /* a reason is always given */
            cap_store_stat_add(s, CAP_ST_CLIENTS_REJECTED, 1);
            cap_store_stat_add(s, CAP_ST_EVENTS_REJECTED, why.events);
            status = LT_PROC_REJECTED;
            reason = why.text;
            break;
        }
        if (rc < 0) abort(); /* out of memory: not expected here */
        /* The periodic flush, now and then. */
        if ((len & 7) == 0) cap_store_flush_proc(s, p);
        cap_store_stats_block(s);
        drain_worker(&wk, s, w);
    }
    received = cap_proc_received(p);
    cap_proc_end(s, p, status, reason);
finish:
    cap_store_stats_block(s);
    drain_worker(&wk, s, w);
    uint64_t aborted = cap_store_stat(s, CAP_ST_ZONES_ABORTED);
    free(info);
    if (cap_store_error(s)) abort();
    if (cap_store_close_writer(s, w) != 0) abort();
    cap_store_free(s);
    if (has_proc) read_back(path, received + aborted);
    return 0;
}
