/* select.h -- the process and thread selection of tracy-cut and
 * tracy-export: "--process LIST" (process indices, comma-separated) and
 * "--thread LIST" (P:T, a process and thread index, or a thread name,
 * comma-separated). One parser, one meaning, for every tool. */
#ifndef PROG_SELECT_H
#define PROG_SELECT_H

#include <stdint.h>

#include "trace.h"

/* The lists as given (NULL: no restriction), over the reader they name
 * things of. */
typedef struct cv_sel {
    lt_reader *r;
    const char *procs, *threads;
} cv_sel;

/* Whether process p is in --process (1 when there is no such list). */
int cv_sel_keep_proc(const cv_sel *s, uint32_t p);
/* Whether thread (p, t) is in --thread (1 when there is no such list); the
 * process list is not consulted (tracy-cut's keep_thread callback). */
int cv_sel_keep_thread(const cv_sel *s, uint32_t p, uint32_t t);
/* Whether thread (p, t) is selected by both lists. */
int cv_sel_keeps(const cv_sel *s, uint32_t p, uint32_t t);

/* Checks that every item of both lists names a process or a thread of the
 * trace, and that the lists together select a thread. Returns 0, or
 * CV_EXIT_USAGE after one line ("--process: '9' is not a process of the
 * trace (1..4)", "--thread: no thread 'x' in the trace", "--process: an
 * empty list", "--process and --thread together select no thread of the
 * trace"). */
int cv_sel_check(const cv_sel *s);

/* The selection resolved once for a pass over the events: a flag per
 * thread of the trace. */
typedef struct cv_sel_table {
    uint32_t nprocs;
    uint32_t *first;   /* [p]: index of thread (p, 1) in keep */
    uint32_t *nthreads;
    uint8_t *keep;
    uint64_t kept;     /* threads kept */
} cv_sel_table;

/* Fills *t from s (a NULL s keeps everything). Returns 0, or -1 on
 * out-of-memory. */
int cv_sel_table_init(cv_sel_table *t, const cv_sel *s);
void cv_sel_table_free(cv_sel_table *t);
/* Whether events of (p, t) are kept: always when no list was given; else
 * only a thread of the metadata that both lists select. */
static inline int cv_sel_table_keeps(const cv_sel_table *t, uint32_t p, uint32_t th) {
    if (!t->keep) return 1;
    if (p == 0 || p > t->nprocs || th == 0 || th > t->nthreads[p]) return 0;
    return t->keep[t->first[p] + th - 1];
}

#endif /* PROG_SELECT_H */
