/* out.h -- a program's output: one buffer in front of write(2), numbers,
 * text from a trace made safe for a terminal, CSV and JSON quoting. */
#ifndef PROG_OUT_H
#define PROG_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* One buffer in front of write(2) (or gzwrite for gzip). Errors are sticky:
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

/* Opens `path` for writing (NULL or "-": stdout). Returns 0, CV_EXIT_USAGE
 * when path is a trace the program opened (cv_check_output: nothing is
 * written), or CV_EXIT_OUTPUT after printing an error. */
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

#endif /* PROG_OUT_H */
