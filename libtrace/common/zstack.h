/* zstack.h -- libtrace internal: walking event records one by one and
 * keeping a stream's open zones (location, name, text), for the writers
 * that start a trace in the middle of a stream (splice.c's windows, the
 * writer's rotation to a new file, the flight recorder), which write them
 * with lt__writer_cut(). */
#ifndef LIBTRACE_ZSTACK_H
#define LIBTRACE_ZSTACK_H

#include <stddef.h>
#include <stdint.h>

typedef struct lt__zent {
    uint32_t loc;
    char *name, *text;       /* malloc'd copies, NULL when never set */
    size_t name_len, text_len;
} lt__zent;

typedef struct lt__zstack {
    lt__zent *v;
    uint32_t depth, cap;
} lt__zstack;

/* Reads one event record at *p: its tag, whether it is timed (then *ts
 * advances by its delta and 1 is returned), its location (zone begins) or
 * count (LOST) in *loc, and its string (ZONE_TEXT / ZONE_NAME). Returns 1 (timed), 0 (untimed) or -1
 * for a truncated or unknown record. */
int lt__rec_next(const uint8_t **p, const uint8_t *end, uint8_t *tag, uint64_t *ts,
                 uint64_t *loc, const char **str, size_t *len);

/* Applies a record to the open zones. Returns 0, -1 (*why set: the record
 * does not fit the stack) or LT_ENOMEM. */
int lt__zstack_apply(lt__zstack *z, uint8_t tag, uint64_t loc, const char *str,
                     size_t len, const char **why);

/* Bytes lt__zstack_records() writes at most. */
size_t lt__zstack_size(const lt__zstack *z);
/* Writes a ZONE_BEGIN (delta 0) for every open zone, outermost first, each
 * followed by its ZONE_NAME and ZONE_TEXT. Returns the end of what was
 * written. */
uint8_t *lt__zstack_records(const lt__zstack *z, uint8_t *out);

/* Frees every zone. */
void lt__zstack_free(lt__zstack *z);

#endif /* LIBTRACE_ZSTACK_H */
