/* diff_profile.h -- one side of tracy-diff: the runs (trace files) of BASE
 * or NEW read into rows of statistics, one row per function, per
 * signpost-delimited phase and per phase and op code. */
#ifndef CONVERT_DIFF_PROFILE_H
#define CONVERT_DIFF_PROFILE_H

#include <stdint.h>

#include "convert/convert.h"
#include "convert/diff/diff_stats.h"

enum dp_kind {
    DP_FUNC = 1,  /* a function (op code) over the whole run */
    DP_PHASE = 2, /* a phase: the time from its signpost to the next */
    DP_OP = 3     /* a function within one phase */
};

/* One row of one side. The identity (kind, program, thread, phase, name,
 * file) is the row's key; calls, total and self are per run. */
typedef struct dp_row {
    const char *key;     /* the identity as one string (keylen bytes) */
    size_t keylen;
    uint8_t kind;
    const char *program; /* basename of the process's program */
    const char *thread;  /* thread name under by_thread, else "" */
    const char *phase;   /* DP_PHASE / DP_OP: the signpost's header */
    const char *name;    /* op code: the zone's name, or the phase's */
    const char *file;    /* source file ("" when none) */
    uint32_t line;       /* first line seen (renames are matched by it) */
    ds_hist hist;        /* per-call durations of every run */
    ds_hist cur;         /* the run being read */
    ds_hist shist, scur; /* the same for self time (the drift estimate) */
    uint64_t *calls, *total, *self; /* per run */
    double *p50, *s50;   /* per run: median per-call duration and self time,
                            0 when absent */
} dp_row;

/* What one trace file held. */
typedef struct dp_input {
    const char *path;
    lt_reader *r;        /* owned until read */
    uint64_t zones, skipped, signposts, lost;
} dp_input;

typedef struct dp_profile dp_profile;

/* Options shared by both sides. */
typedef struct dp_opts {
    int self;      /* distributions of self time instead of inclusive time */
    int by_thread; /* rows per thread name, not merged per program */
} dp_opts;

/* A profile over `nruns` inputs (read later by dp_read). Returns NULL on
 * out-of-memory. The inputs array is borrowed; readers are freed by dp_read
 * or dp_profile_free. */
dp_profile *dp_profile_new(const dp_opts *o, dp_input *inputs, uint32_t nruns);
void dp_profile_free(dp_profile *p);

/* Reads every input in turn. Returns 0, or an exit code (CV_EXIT_CORRUPT,
 * CV_EXIT_INPUT, ...) with a one-line message retrievable by dp_error().
 * Prints nothing, so that two sides can be read at once. */
int dp_read(dp_profile *p);
const char *dp_error(const dp_profile *p);

uint32_t dp_runs(const dp_profile *p);
const dp_input *dp_input_at(const dp_profile *p, uint32_t run);
size_t dp_nrows(const dp_profile *p);
dp_row *dp_row_at(dp_profile *p, size_t i);

#endif /* CONVERT_DIFF_PROFILE_H */
