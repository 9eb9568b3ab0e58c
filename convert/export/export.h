/* export.h -- tracy-export's formats: each writer takes the aggregated call
 * tree (or, speedscope, the reader itself) and writes one file. */
#ifndef CONVERT_EXPORT_H
#define CONVERT_EXPORT_H

#include "convert/calltree.h"
#include "convert/convert.h"
#include "prog/select.h"

typedef struct ex_opts {
    const char *path, *output, *format;
    int per_thread, allow_truncated;
    uint64_t period;   /* folded: weights in samples of this many ns (0: ns) */
    const char *procs, *threads; /* --process, --thread (select.h) */
    int split;         /* --split process: a file per process into -o DIR */
    const char *function; /* lines, ranks: --function RE (extended regex) */
    int sort_time;     /* lines: --sort time (default: by file and line) */
    uint64_t top;      /* lines, ranks: --top N (0: all) */
    int csv;           /* ranks: --csv */
    int all_functions; /* lines: --all-functions (not only @tracy.profile's) */
} ex_opts;

/* What the HTML report keeps besides the tree (export_html.c). */
typedef struct ex_html ex_html;

typedef struct ex_ctx {
    const ex_opts *o;
    lt_reader *r;
    ct_tree *tree;
    cv_out out;
    ex_html *html;
    const cv_sel_table *sel; /* the threads whose events count */
    int read_exit;   /* exit code of a read error, 0 when none */
} ex_ctx;

/* Each returns 0, or -1 after printing an error (out of memory). */
int ex_pstats(ex_ctx *x);
int ex_callgrind(ex_ctx *x);
int ex_folded(ex_ctx *x);
/* Reads the trace itself, one thread at a time. */
int ex_speedscope(ex_ctx *x);
/* Read the trace themselves (through ex_next), with x->tree for function
 * numbers only. Return 0, -1 after printing an error (out of memory), or
 * an exit code > 0 after one line (no line zones: CV_EXIT_INPUT; nothing
 * matches --function: CV_EXIT_USAGE). */
int ex_lines(ex_ctx *x);
int ex_ranks(ex_ctx *x);

/* The collectors behind -f lines and -f ranks, which the HTML report feeds
 * too: _new (NULL on out-of-memory) over the context whose reader, tree
 * and output they use; _event takes every event of the pass (0, or -1 on
 * out-of-memory); _json writes the report's "lines" (the max_funcs
 * functions with the most time, with their source) or "ranks" (the
 * max_rows rows that lose the most to imbalance; no rows with fewer than
 * two processes) member, once, after the pass (0 or -1). */
typedef struct ex_lineset ex_lineset;
ex_lineset *ex_lines_new(ex_ctx *x, int per_thread);
int ex_lines_event(ex_lineset *l, const lt_event *ev);
int ex_lines_json(ex_lineset *l, size_t max_funcs);
void ex_lines_free(ex_lineset *l);
typedef struct ex_rankset ex_rankset;
ex_rankset *ex_ranks_new(ex_ctx *x);
int ex_ranks_event(ex_rankset *r, const lt_event *ev);
int ex_ranks_json(ex_rankset *r, size_t max_rows);
void ex_ranks_free(ex_rankset *r);

/* A JSON string safe inside the report's <script> ('<' as \u003c). */
void ex_html_str(cv_out *o, const char *s);

/* The next event of a selected thread: cv_next's 1, 0 or -1 (x->read_exit
 * set). */
int ex_next(ex_ctx *x, lt_event *ev);

/* The report's collector over the context's reader and the tree it takes
 * function numbers from; NULL on out-of-memory. */
ex_html *ex_html_new(ex_ctx *x);
void ex_html_free(ex_html *h);
/* Takes every event of the pass (timeline, signposts, counts). */
int ex_html_event(ex_html *h, const lt_event *ev);
int ex_html_write(ex_ctx *x);

#endif /* CONVERT_EXPORT_H */
