/* input.h -- reading a trace from a program: opening it with one line on
 * failure, checking that it is complete, taking its events, and the exit
 * code each outcome maps to (prog.h). */
#ifndef PROG_INPUT_H
#define PROG_INPUT_H

#include "trace.h"
#include "prog/prog.h"

/* Maps an LT_E* code to the program exit code. */
int cv_exit_for(int lt_err);

/* Opens a trace; on failure prints one line ("PROG: PATH: not a .tracy file
 * (detail)") and returns the exit code, else returns 0 with *out set. A
 * trailer that contradicts the file (lt_reader_sound) is a failure too:
 * "PROG: PATH: trailer does not match the file: ...", CV_EXIT_CORRUPT, the
 * line tracy-info prints. */
int cv_open(const char *path, lt_reader **out);

/* Refuses an output path that names a trace this program opened (cv_open,
 * cv_run_open), through any name or link: writing it would destroy the
 * input. Returns 0, or CV_EXIT_USAGE after one line ("PROG: OUT: the output
 * would overwrite the input IN"). cv_out_open checks it too. */
int cv_check_output(const char *out);

/* When the file has no trailer, warns on stderr with the number of bytes
 * ignored. Returns CV_EXIT_TRUNCATED for an incomplete file unless
 * allow_truncated, else 0. */
int cv_check_complete(const lt_reader *r, const char *path, int allow_truncated);

/* lt_reader_next() that reports a read error: returns 1 (event), 0 (end) or
 * -1 after printing "PROG: PATH: <error>" (the exit code is then
 * CV_EXIT_CORRUPT, or cv_exit_for() of *err). */
int cv_next(lt_reader *r, lt_event *ev, const char *path, int *err);

/* Final exit code from the read status (0 or an exit code from cv_next's
 * failure) and the truncation status. Corruption outranks truncation. */
int cv_final_exit(int read_exit, int trunc_exit);

/* ---- The event loop -----------------------------------------------------
 * Every converter opens the trace, checks that it is complete, takes every
 * event in turn and ends with an exit code from the same table: one driver
 * for tracy-csv, tracy-json, tracy-sql and tracy-info. */

typedef struct cv_run {
    const char *path;
    lt_reader *r;
    int trunc;       /* CV_EXIT_TRUNCATED: cut and not allowed; else 0 */
    int read_exit;   /* 0, or the exit code of a failed read */
} cv_run;

/* What cv_run_open does with a truncated file: a warning and exit code 3
 * at the end (REFUSE), a warning only (ALLOW), or nothing, the caller
 * reporting it (SILENT: tracy-info). */
enum { CV_TRUNC_REFUSE = 0, CV_TRUNC_ALLOW = 1, CV_TRUNC_SILENT = 2 };

/* Opens `path` (one line on stderr on failure) and checks that the file is
 * complete (see cv_check_complete and the CV_TRUNC_* modes). Returns 0 with
 * c->r set, or the exit code. CV_TRUNC_SILENT (tracy-info) also opens a
 * file whose trailer contradicts it: tracy-info says so itself. */
int cv_run_open(cv_run *c, const char *path, int truncated);

/* Hands every event of r to fn(ctx, ev), until the end, a read error (its
 * line printed, *read_exit set to its exit code), or *stop non-zero (an
 * output error: NULL when there is none). Returns 0, or -1 as soon as fn
 * returns a negative value (the caller says why). Inline, so that each
 * converter's loop calls its handler directly. */
static inline int cv_each_event(lt_reader *r, const char *path, int *read_exit,
                                int (*fn)(void *ctx, const lt_event *ev), void *ctx,
                                const int *stop) {
    lt_event ev;
    int rc, err = 0;
    while ((rc = cv_next(r, &ev, path, &err)) > 0 && !(stop && *stop))
        if (fn(ctx, &ev) < 0) return -1;
    if (rc < 0) *read_exit = cv_exit_for(err) ? cv_exit_for(err) : CV_EXIT_CORRUPT;
    return 0;
}

/* The exit code: an output failure first, then a read failure, then
 * truncation. */
int cv_run_exit(const cv_run *c, int output_failed);

/* Frees the reader. */
void cv_run_close(cv_run *c);

#endif /* PROG_INPUT_H */
