/* internal.h -- libtrace internals shared by the writer, builder and reader. */
#ifndef LIBTRACE_INTERNAL_H
#define LIBTRACE_INTERNAL_H

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
 * of the caller's (the pending unit stays in the writer's own), write a
 * trailer and sync, switch to a new file (O_EXCL; header of format 1.1),
 * the current file's size. */
int lt__writer_replay(lt_writer *w, const lt_block_desc *d, const void *raw,
                      size_t raw_len, uint8_t **buf, size_t *cap, size_t *len);
int lt__writer_trailer(lt_writer *w, const lt_stream_summary *s, size_t ns,
                       const lt_total *t, size_t nt);
int lt__writer_reopen(lt_writer *w, const char *path);
uint64_t lt__writer_bytes(const lt_writer *w);

#endif /* LIBTRACE_INTERNAL_H */
