/* common.h -- shared by the converters (tracy-csv, tracy-sql, tracy-json,
 * tracy-info): exit codes, messages, opening a trace, buffered output with
 * CSV and JSON quoting, and per-thread zone numbering. */
#ifndef CONVERT_COMMON_H
#define CONVERT_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace.h"

/* Exit codes shared by every converter (documented in their man pages). */
enum cv_exit {
    CV_EXIT_OK = 0,        /* success */
    CV_EXIT_USAGE = 1,     /* bad command line (or, tracy-sql, a bad query) */
    CV_EXIT_INPUT = 2,     /* cannot read input, not a trace, newer version */
    CV_EXIT_TRUNCATED = 3, /* input cut short: every complete unit converted */
    CV_EXIT_CORRUPT = 4,   /* input corrupt: converted up to the bad unit */
    CV_EXIT_OUTPUT = 5,    /* cannot write the output */
    CV_EXIT_LOST = 6       /* tracy-info: intact, but events were lost */
};

/* ---- Messages ----------------------------------------------------------- */

/* Name used as the prefix of every message ("tracy-csv"). */
extern const char *cv_prog;

/* Prints "PROG: message" on stderr. */
void cv_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "PROG: warning: message" on stderr. */
void cv_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "PROG: message" and a hint to use --help; returns CV_EXIT_USAGE. */
int cv_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "PROG VERSION (libtrace, format MAJOR.MINOR)"; returns CV_EXIT_OK. */
int cv_print_version(void);

/* The options every program handles alike, for the default branch of its
 * getopt_long switch (opterr = 0, an optstring that starts with ':'): -h
 * prints `usage` on stdout, -V the version (both return CV_EXIT_OK, and the
 * program then exits 0); a missing value (':') and anything else are usage
 * errors (one line, CV_EXIT_USAGE). */
int cv_std_option(int c, const char *usage, char *const *argv);

/* The long options cv_std_option() handles, for the end of a table
 * (<getopt.h> names no_argument). */
#define CV_STD_LONG_OPTIONS {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}

/* After the options, the one trace the program reads: returns 0 with *path
 * set, or CV_EXIT_USAGE after one line when there is none or more. */
int cv_one_trace(int argc, char *const *argv, const char **path);

/* Whether two of the n values are equal: 1, 0, or -1 when out of memory.
 * n log n (a sorted copy): for pids of processes and tids of threads, of
 * which a trace may hold a million. */
int cv_has_dup_u64(const uint64_t *v, size_t n);

/* Parses a whole decimal unsigned number; returns 0 or -1. */
int cv_parse_u64(const char *s, uint64_t *out);

/* Writes (pwrite) or reads (pread) all n bytes at `off` of fd, through
 * short transfers and EINTR. Return 0, or -1 with errno set (ENOSPC for a
 * write that stalls, EIO for a read past the end). */
int cv_pwrite_full(int fd, const void *buf, size_t n, uint64_t off);
int cv_pread_full(int fd, void *buf, size_t n, uint64_t off);

/* ---- Input -------------------------------------------------------------- */

/* Maps an LT_E* code to the converter exit code. */
int cv_exit_for(int lt_err);

/* Opens a trace; on failure prints one line ("PROG: PATH: not a .tracy file
 * (detail)") and returns the exit code, else returns 0 with *out set. A
 * trailer that contradicts the file (lt_reader_sound) is a failure too:
 * "PROG: PATH: trailer does not match the file: ...", CV_EXIT_CORRUPT, the
 * line tracy-info prints. */
int cv_open(const char *path, lt_reader **out);

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

/* ---- The converters' skeleton -------------------------------------------
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

/* ---- Buffered output -----------------------------------------------------
 * One buffer in front of write(2) (or gzwrite for gzip). Errors are sticky:
 * the first one is kept and reported by cv_out_close(). */

typedef struct cv_out {
    char *buf;
    size_t len, cap;
    int fd;
    /* Optional compressing sink (tracy-json's gzip): when set, bytes go to
     * sink_write(sink, ...) (returns bytes taken, <= 0 on error) instead of
     * fd, and sink_close(sink) (0 or -1) ends it, closing fd. */
    void *sink;
    int (*sink_write)(void *sink, const void *p, unsigned n);
    int (*sink_close)(void *sink);
    int err;           /* errno of the first failure, 0 when none */
    int close_fd;
    int tty;           /* fd is a terminal: trace text made printable */
    uint64_t total;    /* bytes handed to the sink */
} cv_out;

/* Opens `path` for writing (NULL or "-": stdout). Returns 0, or
 * CV_EXIT_OUTPUT after printing an error. */
int cv_out_open(cv_out *o, const char *path);
/* Flushes, closes and frees. Returns 0, or -1 after printing an error naming
 * `what` (the path, or "standard output"). */
int cv_out_close(cv_out *o, const char *what);
void cv_out_flush(cv_out *o);

static inline void cv_out_write(cv_out *o, const void *p, size_t n) {
    if (o->len + n > o->cap) {
        cv_out_flush(o);
        if (n > o->cap) {
            extern void cv__out_direct(cv_out *o, const void *p, size_t n);
            cv__out_direct(o, p, n);
            return;
        }
    }
    memcpy(o->buf + o->len, p, n);
    o->len += n;
}
static inline void cv_out_ch(cv_out *o, char c) {
    if (o->len == o->cap) cv_out_flush(o);
    o->buf[o->len++] = c;
}
static inline void cv_out_str(cv_out *o, const char *s) {
    cv_out_write(o, s, strlen(s));
}
/* Formats into buf (at least 21 bytes); returns the length. */
size_t cv_fmt_u64(char *buf, uint64_t v);
void cv_out_u64(cv_out *o, uint64_t v);
void cv_out_i64(cv_out *o, int64_t v);
/* Nanoseconds as microseconds with three decimals: 12345 -> "12.345". */
void cv_out_us(cv_out *o, uint64_t ns);
/* A double, shortest round-trip form ("%.17g" trimmed); never nan/inf. */
void cv_out_double(cv_out *o, double v);
void cv_out_printf(cv_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Text from a trace (written by the profiled programs) for a terminal:
 * copies s[0..n) into out (room for n bytes) with every control character
 * (C0, DEL, and C1 U+0080..U+009F) replaced by '?', so that a name cannot
 * carry terminal escapes or forge lines. Returns the length written. */
size_t cv_printable(const char *s, size_t n, char *out);
/* The same for a NUL-terminated string, cut to n - 1 bytes; returns buf. */
const char *cv_shown(const char *s, char *buf, size_t n);
/* Writes trace text: as it is, or through cv_printable() when the output
 * is a terminal (o->tty). */
void cv_out_text(cv_out *o, const char *s, size_t n);

/* RFC 4180 field: quoted (with doubled quotes) when it contains `sep`, a
 * quote, CR or LF, or begins or ends with a space. On a terminal (o->tty)
 * the text goes through cv_printable() first. */
void cv_out_csv(cv_out *o, const char *s, size_t n, char sep);
/* JSON string with its quotes: control characters escaped, invalid UTF-8
 * replaced with U+FFFD. */
void cv_out_json(cv_out *o, const char *s, size_t n);
/* The same into a malloc'd NUL-terminated string (NULL on out-of-memory). */
char *cv_json_dup(const char *s, size_t n);

/* ---- Small growable hash map: string key -> index -----------------------
 * Used for per-function aggregates; memory grows with distinct keys only. */

typedef struct cv_map cv_map;
cv_map *cv_map_new(void);
void cv_map_free(cv_map *m);
/* Returns the index (0-based, in insertion order) of key, inserting it when
 * new (*added = 1). -1 on out-of-memory. */
long cv_map_get(cv_map *m, const char *key, size_t len, int *added);
size_t cv_map_size(const cv_map *m);
const char *cv_map_key(const cv_map *m, size_t idx, size_t *len);

#endif /* CONVERT_COMMON_H */
