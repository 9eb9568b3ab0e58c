/* resume.h -- reading a stream from one of its blocks on, with the zones
 * that were open there: what lets the level-of-detail index (view/) extend
 * itself over the blocks appended to a trace being written instead of
 * reading the whole trace again. Internal to the programs (lt__). */
#ifndef LIBTRACE_RESUME_H
#define LIBTRACE_RESUME_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/* A zone open where a stream resumes, outermost first. child_ns is the
 * time of its children that ended before that point. name / text: its
 * ZONE_NAME / ZONE_TEXT (NULL: none). */
typedef struct lt__open_zone {
    uint64_t begin_ts, child_ns;
    uint32_t loc;
    const char *name, *text;
    size_t name_len, text_len;
} lt__open_zone;

/* The number of event blocks of stream (process, thread) in the file; 0
 * for an unknown stream. */
uint32_t lt__stream_nblocks(const lt_reader *r, uint32_t process, uint32_t thread);

/* The file offset and last timestamp of event block k (0-based) of the
 * stream. Returns 0, or LT_EINVAL when there is no such block. */
int lt__stream_block(const lt_reader *r, uint32_t process, uint32_t thread, uint32_t k,
                     uint64_t *off, uint64_t *last_ts);

/* From now on (every lt_reader_select and rewind), the stream's events
 * start after its first `skip` event blocks, with the zones `z` (n of
 * them, copied) open, as they were at the end of block skip - 1: a zone
 * end closes the innermost of them, and those still open at the stream's
 * end close there with LT_EVF_UNCLOSED (at block skip - 1's last
 * timestamp when no block follows). Zones of a cut window (LT_EVF_CUT) are
 * not resumed: the caller starts such a file from its beginning.
 * Returns 0, LT_EINVAL (unknown stream, skip beyond its blocks, zones
 * without a block before them, a zone of location 0) or LT_ENOMEM. */
int lt__stream_resume(lt_reader *r, uint32_t process, uint32_t thread, uint32_t skip,
               const lt__open_zone *z, uint32_t n);

#endif /* LIBTRACE_RESUME_H */
