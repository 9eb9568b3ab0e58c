/* fuzz_common.h -- helpers shared by the libFuzzer targets: an in-memory
 * file (memfd) that the path-based reader and writer APIs can open. */
#ifndef TESTS_FUZZ_COMMON_H
#define TESTS_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <unistd.h>
#include "records.h"
#include "trace.h"

#define FZ_BLOCK_MODE 0xB1

/* One memfd per process, reused by every input: "/proc/self/fd/N". */
static inline int fz_memfd(char *path, size_t n) {
    static int fd = -1;
    if (fd < 0) {
        fd = memfd_create("fuzz", 0);
        if (fd < 0) {
            perror("memfd_create");
            abort();
        }
    }
    snprintf(path, n, "/proc/self/fd/%d", fd);
    return fd;
}

/* Replaces the memfd's content with data[0..n). */
static inline void fz_fill(int fd, const void *data, size_t n) {
    const char *p = data;
    if (ftruncate(fd, 0) != 0) abort();
    size_t off = 0;
    while (off < n) {
        ssize_t w = pwrite(fd, p + off, n - off, (off_t)off);
        if (w <= 0) abort();
        off += (size_t)w;
    }
}

/* Writes the blocks of a block-mode input as a file at `path`. */
static inline void fz_write_blocks(const char *path, const uint8_t *q, const uint8_t *end) {
    lt_writer *w = NULL;
    if (lt_writer_open(&w, path, LT_WRITE_FORCE, "fuzz", 1) != 0) abort();
    static uint8_t raw[65536 + 64];
    /* Open-zone depth per stream, so that a block can close zones opened
     * in an earlier one (as the daemon's blocks do). */
    struct { uint8_t proc, thr; uint32_t depth; } depth[64];
    size_t ndepth = 0;
    while (end - q >= 6) {
        uint8_t kind = q[0], proc = q[1], thr = q[2];
        uint64_t base = (uint64_t)q[3] * 1000;
        size_t len = (size_t)q[4] | (size_t)q[5] << 8;
        q += 6;
        if (len > (size_t)(end - q)) len = (size_t)(end - q);
        if (kind == 0) kind = 1;
        size_t h = lt_block_header(raw, kind, proc, thr, kind == 1 ? base : 0);
        memcpy(raw + h, q, len);
        q += len;
        lt_block_desc d = {.kind = kind, .process = proc, .thread = thr};
        if (kind == LT_BLOCK_EVENTS) {
            size_t k = 0;
            while (k < ndepth && (depth[k].proc != proc || depth[k].thr != thr)) k++;
            if (k == ndepth && ndepth < 64) depth[ndepth++] = (__typeof__(depth[0])){proc, thr, 0};
            /* Descriptor values that agree with the records when they scan. */
            lt__stream_state st = {.last_ts = base, .depth = k < 64 ? depth[k].depth : 0};
            lt__scan_limits lim = {UINT32_MAX, UINT32_MAX, UINT32_MAX, LT_MAX_DEPTH, 1, 0, 0};
            const char *why;
            size_t off;
            if (lt__scan_events(raw + h, len, &st, &lim, &why, &off) == 0 && st.events) {
                d.n_events = (uint32_t)st.events;
                d.first_ts = st.first_ts;
                d.last_ts = st.last_ts;
                if (k < 64) depth[k].depth = st.depth;
            }
        }
        lt_writer_block(w, &d, raw, h + len);
    }
    lt_writer_close(w, NULL, 0, NULL, 0);
}

/* Puts the input in the memfd: as is, or (block mode) as a file of the
 * blocks it lists. */
static inline void fz_input(int fd, const char *path, const uint8_t *data, size_t size) {
    if (size > 0 && data[0] == FZ_BLOCK_MODE) {
        fz_fill(fd, "", 0);
        fz_write_blocks(path, data + 1, data + size);
    } else {
        fz_fill(fd, data, size);
    }
}

#endif
