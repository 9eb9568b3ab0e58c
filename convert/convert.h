/* convert.h -- shared by the converters (tracy-csv, tracy-sql, tracy-json,
 * tracy-info, tracy-diff, tracy-export): names and per-thread zone
 * numbering. The messages, exit codes, reading a trace event by event and
 * the output helpers are the program layer's (prog/). */
#ifndef CONVERT_CONVERT_H
#define CONVERT_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"
#include "prog/prog.h"
#include "prog/input.h"
#include "prog/out.h"
#include "convert/strmap.h"

/* ---- Names -------------------------------------------------------------- */

/* "python", "c", "line", "user", "internal" or "unknown". */
const char *cv_kind_name(uint8_t kind);
/* "running", "clean", "lost", "rejected", "stopped", "crashed" or
 * "unknown". */
const char *cv_status_name(int status);
/* Zone name of a ZONE_END event: the ZONE_NAME override or the location's
 * name (loc may be NULL: "?"). */
void cv_zone_name(const lt_event *ev, const lt_loc *loc, const char **s,
                  size_t *len);

/* ---- Zone numbering ------------------------------------------------------
 * Zones are numbered 1, 2, ... in the order they begin (merged time order);
 * since they complete in end order, each stream keeps a stack of the numbers
 * of its open zones. Memory: the open zones only. */

typedef struct cv_zones cv_zones;

cv_zones *cv_zones_new(void);
void cv_zones_free(cv_zones *z);
/* Numbers a beginning zone; returns its number or 0 on out-of-memory. */
uint64_t cv_zones_begin(cv_zones *z, uint32_t process, uint32_t thread);
/* Pops the innermost open zone of the stream: *id gets its number, *parent
 * the number of the enclosing zone (0 when top-level). Returns 0, or -1 when
 * the stream has no open zone (cannot happen with a valid reader). */
int cv_zones_end(cv_zones *z, uint32_t process, uint32_t thread, uint64_t *id,
                 uint64_t *parent);
/* Numbers handed out so far. */
uint64_t cv_zones_count(const cv_zones *z);

#endif /* CONVERT_CONVERT_H */
