/* splice.h -- libtrace internal: copies the blocks of traces into a new
 * trace without decoding them into events: processes and threads renumbered
 * or dropped, timestamps shifted, a time window cut out. The engine under
 * tracy-merge and tracy-cut (and the flight recorder's dump).
 *
 * Memory: one decompressed block per input, one output buffer, and per
 * output stream its counters and, while a window's start is being sought,
 * the zones open so far. Whatever the inputs' length it stays flat.
 */
#ifndef LIBTRACE_SPLICE_H
#define LIBTRACE_SPLICE_H

#include <stdint.h>
#include "trace.h"

typedef struct lt_splice lt_splice;

/* How one input goes into the output. Arrays are indexed by the input's
 * process index (1 .. lt_reader_nprocesses) and are copied by
 * lt_splice_add. */
typedef struct lt_splice_input {
    lt_reader *r;                 /* stays owned by the caller */
    const char *name;             /* for messages (the input's path) */
    const uint32_t *proc_out;     /* output process index, 0 = dropped */
    const int64_t *proc_shift;    /* ns added to the process's timestamps */
    /* Threads to keep (NULL: every thread of a kept process). */
    int (*keep_thread)(void *ctx, uint32_t process, uint32_t thread);
    void *ctx;
    /* Window in the input's time, both ends included: events outside are
     * dropped, zones open at `from` are written as cut zones (FORMAT.md,
     * block kind 17), zones open at `to` are left open-ended. 0 and
     * UINT64_MAX for no window. */
    uint64_t from, to;
    /* A stream with no event from `from` on (a thread inside a long call
     * throughout) keeps its zones open at `from` as cut zones too (else it
     * is left out), provided the input's events reach `from`. */
    int keep_idle;
} lt_splice_input;

/* Creates the output file (flags as lt_writer_open: LT_WRITE_FORCE or 0;
 * never replaces an existing file without it). Returns 0 or an LT_E* code. */
int lt_splice_open(lt_splice **out, const char *path, int flags,
                   const char *creator, int level);

/* Registers an input. Output process indices must be unique over all inputs
 * and dense from 1. Returns 0, LT_EINVAL or LT_ENOMEM. */
int lt_splice_add(lt_splice *s, const lt_splice_input *in);

/* Adds a statistic to the output's statistics block (written at close,
 * after the inputs' statistics, which are summed by name; names starting
 * with "clock_" take the largest value instead). Returns 0 or LT_ENOMEM. */
int lt_splice_stat(lt_splice *s, const char *name, uint8_t severity,
                   uint64_t value, const char *description);

/* Copies every registered input, their blocks interleaved by time, each
 * input's blocks kept in their order. Returns 0 or an LT_E* code;
 * lt_splice_error() then says what failed (with the input's path index and
 * file offset for a corrupt input). */
int lt_splice_run(lt_splice *s);

/* Events and zones written so far, and events of the inputs left out (by
 * the window or the choice of processes and threads). */
uint64_t lt_splice_events(const lt_splice *s);
uint64_t lt_splice_dropped(const lt_splice *s);

/* Writes the statistics block and the trailer and closes the output (with
 * `abandon`, closes it without them: the file is then a cut trace). Returns
 * 0 or the first error met (lt_splice_error says more). A second call does
 * nothing. */
int lt_splice_close(lt_splice *s, int abandon);

/* Frees the splice (closing the output without a trailer if still open).
 * Accepts NULL. The inputs' readers stay the caller's. */
void lt_splice_free(lt_splice *s);

/* One line describing the last failure. Never NULL. */
const char *lt_splice_error(const lt_splice *s);

#endif /* LIBTRACE_SPLICE_H */
