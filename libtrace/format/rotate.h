/* rotate.h -- libtrace internal: the writer's rotation to numbered files
 * (lt_writer_set_rotation). Runs in the writer's calls, on its thread. */
#ifndef LIBTRACE_ROTATE_H
#define LIBTRACE_ROTATE_H

#include <stddef.h>
#include <stdint.h>
#include "trace.h"

typedef struct lt__rot lt__rot;

int lt__rot_new(lt__rot **out, const char *path, uint64_t max_bytes);
void lt__rot_free(lt__rot *r);
/* The buffer the writer compresses a unit into while rotating. */
void lt__rot_pending(lt__rot *r, uint8_t ***buf, size_t **cap);
/* Before appending a unit of `len` bytes: ends the file and starts the next
 * one when the unit would take it past the limit. Returns 0 or an LT_E*
 * code. */
int lt__rot_before(lt_writer *w, lt__rot *r, size_t len);
/* After appending: keeps what a next file must repeat (metadata, open
 * zones, statistics). Returns 0 or an LT_E* code. */
int lt__rot_after(lt__rot *r, const lt_block_desc *d, const void *raw, size_t raw_len);
/* 1 for the first file, 2 for the second, ... */
unsigned lt__rot_index(const lt__rot *r);
/* Writes the current file's trailer (lt__writer_rot_trailer): the
 * processes with metadata in it and, of the caller's totals, those that are
 * not standard (its statistics); without them (NULL), the last statistics
 * block's. */
int lt__rot_trailer(lt_writer *w, lt__rot *r, const lt_total *extra, size_t n_extra);

#endif /* LIBTRACE_ROTATE_H */
