/* prog.c -- messages, the options every program handles alike, checks of
 * the arguments, whole reads and writes (prog.h). */
#include "prog/prog.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"

const char *cv_prog = "tracy";

/* ---- Messages ----------------------------------------------------------- */

/* One write per message, however long (a path may be): a message longer
 * than the stack buffer is formatted again into the heap. */
static void vmsg(const char *prefix, const char *fmt, va_list ap) {
    char line[1024], *text = line;
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    if (n >= (int)sizeof line && (text = malloc((size_t)n + 1)) != NULL)
        vsnprintf(text, (size_t)n + 1, fmt, again);
    va_end(again);
    fprintf(stderr, "%s: %s%s\n", cv_prog, prefix, text ? text : line);
    if (text != line) free(text);
}

void cv_err(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmsg("", fmt, ap);
    va_end(ap);
}

void cv_warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmsg("warning: ", fmt, ap);
    va_end(ap);
}

int cv_usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmsg("", fmt, ap);
    va_end(ap);
    fprintf(stderr, "Try '%s --help' for more information.\n", cv_prog);
    return CV_EXIT_USAGE;
}

int cv_print_version(void) {
    printf("%s %s (libtrace, format %d.%d)\n", cv_prog, LT_VERSION_STRING,
           LT_FORMAT_MAJOR, LT_FORMAT_MINOR);
    return CV_EXIT_OK;
}

int cv_std_option(int c, const char *usage, char *const *argv) {
    switch (c) {
    case 'h': fputs(usage, stdout); return CV_EXIT_OK;
    case 'V': return cv_print_version();
    case ':': return cv_usage_error("option '%s' needs an argument", argv[optind - 1]);
    default: return cv_usage_error("unknown option '%s'", argv[optind - 1]);
    }
}

int cv_one_trace(int argc, char *const *argv, const char **path) {
    if (optind != argc - 1)
        return cv_usage_error(optind >= argc ? "no trace file given" : "too many arguments");
    *path = argv[optind];
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int cv_has_dup_u64(const uint64_t *v, size_t n) {
    if (n < 2) return 0;
    uint64_t *c = malloc(n * sizeof *c);
    if (!c) return -1;
    memcpy(c, v, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_u64);
    int dup = 0;
    for (size_t i = 1; i < n && !dup; i++) dup = c[i] == c[i - 1];
    free(c);
    return dup;
}

int cv_parse_u64(const char *s, uint64_t *out) {
    uint64_t v = 0;
    if (!s || !*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        if (v > (UINT64_MAX - 9) / 10) return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 0;
}

int cv_pwrite_full(int fd, const void *buf, size_t n, uint64_t off) {
    const char *p = buf;
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = ENOSPC;
            return -1;
        }
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

int cv_pread_full(int fd, void *buf, size_t n, uint64_t off) {
    char *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0) errno = EIO;
            return -1;
        }
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}
