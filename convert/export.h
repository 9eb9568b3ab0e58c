/* export.h -- tracy-export's formats: each writer takes the aggregated call
 * tree (or, speedscope, the reader itself) and writes one file. */
#ifndef CONVERT_EXPORT_H
#define CONVERT_EXPORT_H

#include "calltree.h"
#include "common.h"

typedef struct ex_opts {
    const char *path, *output, *format;
    int per_thread, allow_truncated;
    uint64_t period;   /* folded: weights in samples of this many ns (0: ns) */
} ex_opts;

/* What the HTML report keeps besides the tree (export_html.c). */
typedef struct ex_html ex_html;

typedef struct ex_ctx {
    const ex_opts *o;
    lt_reader *r;
    ct_tree *tree;
    cv_out out;
    ex_html *html;
    int read_exit;   /* exit code of a read error, 0 when none */
} ex_ctx;

/* Each returns 0, or -1 after printing an error (out of memory). */
int ex_pstats(ex_ctx *x);
int ex_callgrind(ex_ctx *x);
int ex_folded(ex_ctx *x);
/* Reads the trace itself, one thread at a time. */
int ex_speedscope(ex_ctx *x);

/* The report's collector over the reader and the tree it takes function
 * numbers from; NULL on out-of-memory. */
ex_html *ex_html_new(lt_reader *r, ct_tree *tree);
void ex_html_free(ex_html *h);
/* Takes every event of the pass (timeline, signposts, counts). */
int ex_html_event(ex_html *h, const lt_event *ev);
int ex_html_write(ex_ctx *x);

/* A frame's label: "name (file:line)", or the name alone without a file. */
void ex_label(cv_out *o, const ct_func *f);

#endif /* CONVERT_EXPORT_H */
