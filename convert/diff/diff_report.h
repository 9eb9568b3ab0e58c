/* diff_report.h -- tracy-diff's comparison of two sides: rows matched by
 * identity, then by file, then renames; the drift; the verdict per row. */
#ifndef CONVERT_DIFF_REPORT_H
#define CONVERT_DIFF_REPORT_H

#include "convert/convert.h"
#include "convert/diff/diff_profile.h"

enum dr_format { DR_TABLE, DR_MARKDOWN, DR_JSON, DR_CSV };
enum dr_test { DR_TEST_AUTO, DR_TEST_CALLS, DR_TEST_RUNS };

typedef struct dr_opts {
    double threshold;    /* relative change of the median, 0.05 = 5% */
    double min_time;     /* ns per run the per-call change must cost */
    double alpha;        /* significance level of the test: family-wise over
                            every tested row unless no_correction */
    int no_correction;   /* each row at alpha on its own (no Holm) */
    uint64_t min_calls;  /* per side, for the per-call test */
    int test;            /* enum dr_test */
    int format;          /* enum dr_format */
    int all;             /* list unchanged rows too (table, Markdown) */
    int self;            /* distributions are self times (for the headings) */
    int no_normalize;    /* compare raw times, not relative to the drift */
} dr_opts;

enum dr_status {
    DR_REGRESSION, DR_IMPROVEMENT, DR_UNCHANGED, DR_RENAMED, DR_ADDED, DR_REMOVED
};

/* One side of a compared row; calls, total and self are means per run. */
typedef struct dr_side {
    double calls, total, self, mean, p50, p95;
    uint64_t n;          /* calls over every run */
} dr_side;

typedef struct dr_item {
    dp_row *a, *b;       /* base and new rows (NULL when absent) */
    dr_side sa, sb;
    int status;          /* enum dr_status */
    const char *why;     /* why a compared row is not a regression */
    const char *test;    /* "mann-whitney", "student" or NULL */
    double p;            /* p-value, 1 when untested */
    double p_adj;        /* p after Holm's adjustment over every tested row
                            (equal to p with no_correction) */
    double rel;          /* relative change of the median per call, against
                            the drift */
    double raw_rel;      /* the same without the drift */
    double cost;         /* change of the median x new calls per run, ns */
    int calls_changed;
} dr_item;

typedef struct dr_report dr_report;

/* Matches the rows of the two sides and decides every verdict. The
 * profiles must outlive the report. Returns NULL on out-of-memory. */
dr_report *dr_compare(dp_profile *base, dp_profile *next, const dr_opts *o);
void dr_report_free(dr_report *r);

size_t dr_count(const dr_report *r, int status);
size_t dr_calls_changed(const dr_report *r);
/* NEW's overall speed over BASE's (> 1: slower) and the number of
 * functions it was measured on (1 when too few). */
double dr_drift(const dr_report *r, size_t *nfuncs);

/* The rows, sorted: regressions, improvements, unchanged, renamed, added,
 * removed; within each the largest change first. */
size_t dr_nitems(const dr_report *r);
const dr_item *dr_item_at(const dr_report *r, size_t i);
const dr_opts *dr_options(const dr_report *r);
dp_profile *dr_base(const dr_report *r);
dp_profile *dr_new(const dr_report *r);
/* 1 when rows are tested per run (Student), 0 per call (Mann-Whitney). */
int dr_per_run(const dr_report *r);

/* Functions needed to measure the drift; with fewer it is 1. */
#define DR_DRIFT_MIN 10

/* The row that names an item: the new one, or the base one when removed. */
static inline const dp_row *dr_row_of(const dr_item *it) { return it->b ? it->b : it->a; }
/* The part of a path after its last '/'. */
const char *dr_basename(const char *path);

#endif /* CONVERT_DIFF_REPORT_H */
