/* file_int.h -- libtrace internals shared by the writer, builder and reader. */
#ifndef LIBTRACE_FILE_INT_H
#define LIBTRACE_FILE_INT_H

#include <stdint.h>
#include <string.h>
#include "records.h"

#define LT__MAGIC_HEADER 0x184D2A50u
#define LT__MAGIC_DESC 0x184D2A51u
#define LT__MAGIC_TRAILER 0x184D2A5Eu
#define LT__DESC_SIZE 40u
#define LT__UNIT_OVERHEAD (8u + LT__DESC_SIZE)
#define LT__FILE_MAGIC "TRCYFILE"
#define LT__TRAILER_MAGIC "TRCYTRLR"
#define LT__TRAILER_END "TRCYEND1"

/* Largest comp_size a reader accepts for a block of raw_size bytes. */
static inline uint64_t lt__comp_limit(uint64_t raw) {
    return raw + raw / 128 + 1024;
}

static inline void lt__le16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void lt__le32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void lt__le64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t lt__rd16(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t lt__rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}
static inline uint64_t lt__rd64(const uint8_t *p) {
    return (uint64_t)lt__rd32(p) | (uint64_t)lt__rd32(p + 4) << 32;
}

/* Varint read with a one-byte fast path; the slow path is lt__get_varint. */
static inline int lt__varint(const uint8_t **p, const uint8_t *end,
                             uint64_t *v) {
    const uint8_t *q = *p;
    if (__builtin_expect(q < end && *q < 0x80, 1)) {
        *v = *q;
        *p = q + 1;
        return 0;
    }
    return lt__get_varint(p, end, v);
}

static inline uint64_t lt__zigzag(int64_t v) {
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t lt__unzigzag(uint64_t v) {
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Bytes a varint of v takes. */
static inline size_t lt__varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Descriptor content (40 bytes) from a block description. */
void lt__desc_encode(uint8_t out[LT__DESC_SIZE], const lt_block_desc *d,
                     uint32_t raw_size, uint32_t comp_size);

/* Appends a unit whose data frame is already compressed (a valid zstd frame
 * with checksum and content size raw_size, block header matching *d):
 * copied from another trace. Returns 0 or LT_EINVAL, LT_EIO, LT_ENOSPC. */
int lt__writer_frame(lt_writer *w, const lt_block_desc *d, uint32_t raw_size,
                     const void *frame, size_t comp);

/* For the rotation (rotate.c): compress and append a unit through a buffer
 * of the caller's (the pending unit waits in the rotation's own), switch to
 * a new file (O_EXCL; header of format 1.1; the sums start again), the
 * current file's size. */
int lt__writer_replay(lt_writer *w, const lt_block_desc *d, const void *raw,
                      size_t raw_len, uint8_t **buf, size_t *cap, size_t *len);
int lt__writer_reopen(lt_writer *w, const char *path);
uint64_t lt__writer_bytes(const lt_writer *w);

/* ---- The trailer from the descriptors (writer_sums.c, writer.c) -------- */

/* The standard trailer totals, in their order (FORMAT.md, "Trailer"); the
 * last one, rotation_index, only in the files of a rotation. */
#define LT__N_STD 13
extern const char *const lt__std_totals[LT__N_STD];

/* One stream's sums in the current file. */
typedef struct lt__sstream {
    lt_stream_summary sum;
    uint64_t plots, frames;
} lt__sstream;

/* Every stream the writer has met, in the order met (a hash finds them). */
typedef struct lt__sums {
    lt__sstream *v;
    size_t n, cap;
    uint32_t *slots;          /* open addressing: index + 1, 0 = empty */
    size_t nslots;
    uint32_t max_proc;        /* highest process index of any block */
    uint64_t raw;             /* raw bytes of every block in the file */
    int sorted;               /* list the streams by (process, thread) */
} lt__sums;

/* The stream (process, thread), registered when new. NULL: out of memory. */
lt__sstream *lt__sums_stream(lt__sums *s, uint32_t process, uint32_t thread);
/* Counts one unit: `raw_len` raw and `comp` compressed bytes; an event
 * block adds its descriptor's counts to its stream. 0 or LT_ENOMEM. */
int lt__sums_add(lt__sums *s, const lt_block_desc *d, size_t raw_len, size_t comp);
/* A new file: every stream's counts back to 0, their order kept. */
void lt__sums_reset(lt__sums *s);
void lt__sums_free(lt__sums *s);
/* Fills out[] (room for every stream) with the summaries, only the streams
 * with a block in this file when `with_blocks`, and std[] with the standard
 * totals but body_bytes and rotation_index. Returns the number of streams. */
size_t lt__sums_summaries(const lt__sums *s, lt_stream_summary *out, int with_blocks,
                          uint64_t std[LT__N_STD]);

/* Registers the stream (process, thread) for the trailer lt__writer_finish
 * writes, which lists its streams in the order registered; an event block
 * registers its stream. Returns 0 or LT_ENOMEM. */
int lt__writer_stream(lt_writer *w, uint32_t process, uint32_t thread);
/* Makes the trailer list its streams by (process, thread). */
void lt__writer_sort_streams(lt_writer *w);
/* Writes the trailer the descriptors make (every registered stream; the
 * standard totals; a standard total among `totals`, "processes" or
 * "threads" say, replaces the writer's figure, the others follow it in
 * their order), then closes as lt_writer_close. In the files of a rotation
 * after the first, the trailer is the rotation's. Returns as
 * lt_writer_close. */
int lt__writer_finish(lt_writer *w, const lt_total *totals, size_t n_totals);
/* Writes the current file's trailer for a rotation: the streams with a block
 * in it, the 13 standard totals (`processes`, `threads` and `index` given),
 * then the non-standard ones of `extra`; then syncs. */
int lt__writer_rot_trailer(lt_writer *w, uint64_t processes, uint64_t threads,
                           unsigned index, const lt_total *extra, size_t n_extra);

/* Writes zones open at `ts` as cut zones of stream (process, thread): a cut
 * block saying there are `depth`, then, when `open` is given (its depth is
 * `depth`), an event block of their ZONE_BEGIN records (names and texts
 * included) at `ts`, which counts as `depth` events and zones. Without
 * `open` only the cut block is written (copying another file's). Not for a
 * rotating writer's own calls but the rotation's. Returns 0 or an LT_E*
 * code. */
struct lt__zstack;
int lt__writer_cut(lt_writer *w, uint32_t process, uint32_t thread, uint64_t ts,
                   uint64_t depth, const struct lt__zstack *open);

#endif /* LIBTRACE_FILE_INT_H */
