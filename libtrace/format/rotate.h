/* rotate.h -- libtrace internal: the writer's rotation to numbered files
 * (lt_writer_set_rotation). Runs in the writer's calls, on its thread. */
#ifndef LIBTRACE_ROTATE_H
#define LIBTRACE_ROTATE_H

#include <stddef.h>
#include <stdint.h>
#include "trace.h"

typedef struct lt__rot lt__rot;

/* `header_bytes`: the size of the first file's header. */
int lt__rot_new(lt__rot **out, const char *path, uint64_t max_bytes,
                uint64_t header_bytes);
void lt__rot_free(lt__rot *r);
/* The buffer the writer compresses a unit into while rotating. */
void lt__rot_pending(lt__rot *r, uint8_t ***buf, size_t **cap);
/* Before appending a unit of `len` bytes: ends the file and starts the next
 * one when the unit would take it past the limit. Returns 0 or an LT_E*
 * code. */
int lt__rot_before(lt_writer *w, lt__rot *r, size_t len);
/* After appending: keeps what a next file must repeat (metadata, open
 * zones, statistics) and this file's summary. Returns 0 or an LT_E* code. */
int lt__rot_after(lt__rot *r, const lt_block_desc *d, const void *raw,
                  size_t raw_len, size_t unit_len);
/* 1 for the first file, 2 for the second, ... */
unsigned lt__rot_index(const lt__rot *r);
/* Writes the current file's trailer: its own summary and totals, with the
 * caller's totals that are not the standard ones (its statistics). */
int lt__rot_trailer(lt_writer *w, lt__rot *r, const lt_total *extra, size_t n_extra);

#endif /* LIBTRACE_ROTATE_H */
