/* common.c -- shared by the converters: messages, opening a trace, zone
 * numbering, buffered output with CSV/JSON quoting, a string map. */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

const char *cv_prog = "tracy";

/* ---- Messages ----------------------------------------------------------- */

static void vmsg(const char *prefix, const char *fmt, va_list ap) {
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "%s: %s%s\n", cv_prog, prefix, line);
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

/* ---- Input -------------------------------------------------------------- */

int cv_exit_for(int lt_err) {
    switch (lt_err) {
    case LT_OK: return CV_EXIT_OK;
    case LT_ETRUNCATED: return CV_EXIT_TRUNCATED;
    case LT_ECORRUPT: return CV_EXIT_CORRUPT;
    case LT_ENOSPC: case LT_EFBIG: return CV_EXIT_OUTPUT;
    default: return CV_EXIT_INPUT;
    }
}

/* Opens without refusing a trailer that contradicts the file (tracy-info
 * reports it after its summary). */
static int cv_open_any(const char *path, lt_reader **out) {
    char detail[512] = "";
    int rc = lt_reader_open(out, path, detail, sizeof detail);
    if (rc == 0) return 0;
    *out = NULL;
    /* The detail is the better message; it may already name the file. */
    if (!detail[0])
        cv_err("%s: %s", path, lt_strerror(rc));
    else if (strncmp(detail, path, strlen(path)) == 0)
        cv_err("%s", detail);
    else
        cv_err("%s: %s", path, detail);
    return cv_exit_for(rc) == CV_EXIT_OK ? CV_EXIT_INPUT : cv_exit_for(rc);
}

int cv_open(const char *path, lt_reader **out) {
    int code = cv_open_any(path, out);
    if (code) return code;
    if (lt_reader_sound(*out) < 0) { /* tracy-info --verify's line and code */
        cv_err("%s: %s", path, lt_reader_error(*out));
        lt_reader_free(*out);
        *out = NULL;
        return CV_EXIT_CORRUPT;
    }
    return 0;
}

int cv_check_complete(const lt_reader *r, const char *path, int allow_truncated) {
    const lt_file_info *fi = lt_reader_info(r);
    if (fi->complete) return 0;
    cv_warn("%s: truncated: %llu bytes ignored after the last complete unit%s",
            path, (unsigned long long)fi->bytes_ignored,
            allow_truncated ? "" : " (--allow-truncated accepts this)");
    return allow_truncated ? 0 : CV_EXIT_TRUNCATED;
}

int cv_next(lt_reader *r, lt_event *ev, const char *path, int *err) {
    int rc = lt_reader_next(r, ev);
    if (rc >= 0) return rc;
    *err = rc;
    cv_err("%s: %s", path, lt_reader_error(r));
    return -1;
}

int cv_final_exit(int read_exit, int trunc_exit) {
    return read_exit ? read_exit : trunc_exit;
}

/* ---- The converters' skeleton ------------------------------------------- */

int cv_run_open(cv_run *c, const char *path, int truncated) {
    memset(c, 0, sizeof *c);
    c->path = path;
    int code = truncated == CV_TRUNC_SILENT ? cv_open_any(path, &c->r) : cv_open(path, &c->r);
    if (code) return code;
    if (truncated != CV_TRUNC_SILENT)
        c->trunc = cv_check_complete(c->r, path, truncated == CV_TRUNC_ALLOW);
    return 0;
}

int cv_run_exit(const cv_run *c, int output_failed) {
    return output_failed ? CV_EXIT_OUTPUT : cv_final_exit(c->read_exit, c->trunc);
}

void cv_run_close(cv_run *c) {
    lt_reader_free(c->r);
    c->r = NULL;
}

/* ---- Names -------------------------------------------------------------- */

const char *cv_kind_name(uint8_t kind) {
    switch (kind) {
    case LT_LOC_PYTHON: return "python";
    case LT_LOC_C: return "c";
    case LT_LOC_LINE: return "line";
    case LT_LOC_USER: return "user";
    case LT_LOC_INTERNAL: return "internal";
    default: return "unknown";
    }
}

const char *cv_status_name(int status) {
    switch (status) {
    case LT_PROC_RUNNING: return "running";
    case LT_PROC_CLEAN: return "clean";
    case LT_PROC_LOST: return "lost";
    case LT_PROC_REJECTED: return "rejected";
    case LT_PROC_STOPPED: return "stopped";
    case LT_PROC_CRASHED: return "crashed";
    default: return "unknown";
    }
}

void cv_zone_name(const lt_event *ev, const lt_loc *loc, const char **s,
                  size_t *len) {
    if (ev->name) {
        *s = ev->name;
        *len = ev->name_len;
    } else if (loc && loc->name) {
        *s = loc->name;
        *len = strlen(loc->name);
    } else {
        *s = "?";
        *len = 1;
    }
}

/* ---- Zone numbering ----------------------------------------------------- */

typedef struct zstack {
    uint64_t *ids;
    uint32_t n, cap;
} zstack;

typedef struct zproc {
    zstack *threads;
    uint32_t n;
} zproc;

struct cv_zones {
    zproc *procs;
    uint32_t n;
    uint64_t next;
};

cv_zones *cv_zones_new(void) { return calloc(1, sizeof(cv_zones)); }

void cv_zones_free(cv_zones *z) {
    if (!z) return;
    for (uint32_t p = 0; p < z->n; p++) {
        for (uint32_t t = 0; t < z->procs[p].n; t++) free(z->procs[p].threads[t].ids);
        free(z->procs[p].threads);
    }
    free(z->procs);
    free(z);
}

static int grow(void **arr, uint32_t *n, uint32_t want, size_t elem) {
    uint32_t cap = *n ? *n : 4;
    while (cap < want) cap *= 2;
    void *p = realloc(*arr, cap * elem);
    if (!p) return -1;
    memset((char *)p + *n * elem, 0, (cap - *n) * elem);
    *arr = p;
    *n = cap;
    return 0;
}

static zstack *stack_of(cv_zones *z, uint32_t process, uint32_t thread) {
    if (process >= z->n && grow((void **)&z->procs, &z->n, process + 1, sizeof(zproc)))
        return NULL;
    zproc *p = &z->procs[process];
    if (thread >= p->n && grow((void **)&p->threads, &p->n, thread + 1, sizeof(zstack)))
        return NULL;
    return &p->threads[thread];
}

uint64_t cv_zones_begin(cv_zones *z, uint32_t process, uint32_t thread) {
    zstack *s = stack_of(z, process, thread);
    if (!s) return 0;
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 4; /* small: one per thread */
        uint64_t *ids = realloc(s->ids, cap * sizeof *ids);
        if (!ids) return 0;
        s->ids = ids;
        s->cap = cap;
    }
    s->ids[s->n++] = ++z->next;
    return z->next;
}

int cv_zones_end(cv_zones *z, uint32_t process, uint32_t thread, uint64_t *id,
                 uint64_t *parent) {
    if (process >= z->n || thread >= z->procs[process].n) return -1;
    zstack *s = &z->procs[process].threads[thread];
    if (s->n == 0) return -1;
    *id = s->ids[--s->n];
    *parent = s->n ? s->ids[s->n - 1] : 0;
    return 0;
}

uint64_t cv_zones_count(const cv_zones *z) { return z->next; }

/* ---- Buffered output ---------------------------------------------------- */

#define OUT_CAP (256u << 10)

/* Opens an output file for writing: a link is followed only when it is
 * this user's own (ln -s /dev/null out.csv); one that another user made,
 * in a folder others can write, is refused (EPERM) and never written
 * through. Returns the descriptor or -1 with errno. */
static int create_output(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    struct stat st;
    if (fd >= 0 || errno != ELOOP) return fd;
    if (lstat(path, &st) != 0) return -1;
    if (!S_ISLNK(st.st_mode) || st.st_uid != geteuid()) {
        errno = EPERM;
        return -1;
    }
    return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

int cv_out_open(cv_out *o, const char *path) {
    memset(o, 0, sizeof *o);
    o->fd = 1;
    if (path && strcmp(path, "-") != 0) {
        o->fd = create_output(path);
        if (o->fd < 0) {
            cv_err("%s: cannot create: %s", path,
                   errno == EPERM ? "a link made by another user (not followed)"
                                  : strerror(errno));
            return CV_EXIT_OUTPUT;
        }
        o->close_fd = 1;
    }
    o->tty = isatty(o->fd);
    o->cap = OUT_CAP;
    o->buf = malloc(o->cap);
    if (!o->buf) {
        cv_err("out of memory");
        return CV_EXIT_OUTPUT;
    }
    return 0;
}

static void sink(cv_out *o, const char *p, size_t n) {
    if (o->err) return;
    o->total += n;
    if (o->sink) {
        while (n > 0) {
            unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
            int w = o->sink_write(o->sink, p, chunk);
            if (w <= 0) {
                o->err = errno ? errno : EIO;
                return;
            }
            p += w;
            n -= (size_t)w;
        }
        return;
    }
    while (n > 0) {
        ssize_t w = write(o->fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            o->err = errno;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

void cv_out_flush(cv_out *o) {
    sink(o, o->buf, o->len);
    o->len = 0;
}

void cv__out_direct(cv_out *o, const void *p, size_t n) { sink(o, p, n); }

int cv_out_close(cv_out *o, const char *what) {
    if (o->buf) cv_out_flush(o);
    if (o->sink) {
        if (o->sink_close(o->sink) != 0 && !o->err) o->err = errno ? errno : EIO;
        o->sink = NULL;
    }
    if (o->close_fd) {
        if (!o->err && fsync(o->fd) < 0 && errno != EINVAL && errno != EROFS)
            o->err = errno;
        if (close(o->fd) < 0 && !o->err) o->err = errno;
    }
    free(o->buf);
    o->buf = NULL;
    if (o->err) {
        cv_err("%s: write failed: %s", what ? what : "standard output",
               strerror(o->err));
        return -1;
    }
    return 0;
}

size_t cv_fmt_u64(char *buf, uint64_t v) {
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) buf[i] = tmp[n - 1 - i];
    return n;
}

void cv_out_u64(cv_out *o, uint64_t v) {
    char b[24];
    cv_out_write(o, b, cv_fmt_u64(b, v));
}

void cv_out_i64(cv_out *o, int64_t v) {
    if (v < 0) {
        cv_out_ch(o, '-');
        cv_out_u64(o, (uint64_t)0 - (uint64_t)v);
    } else {
        cv_out_u64(o, (uint64_t)v);
    }
}

void cv_out_us(cv_out *o, uint64_t ns) {
    char b[32];
    size_t n = cv_fmt_u64(b, ns / 1000);
    unsigned frac = (unsigned)(ns % 1000);
    b[n++] = '.';
    b[n++] = (char)('0' + frac / 100);
    b[n++] = (char)('0' + frac / 10 % 10);
    b[n++] = (char)('0' + frac % 10);
    cv_out_write(o, b, n);
}

void cv_out_double(cv_out *o, double v) {
    char b[40];
    if (!isfinite(v)) {
        cv_out_ch(o, '0');
        return;
    }
    /* Shortest of %.15g .. %.17g that reads back exactly. */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(b, sizeof b, "%.*g", prec, v);
        if (strtod(b, NULL) == v) break;
    }
    cv_out_str(o, b);
}

void cv_out_printf(cv_out *o, const char *fmt, ...) {
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof b) {
        cv_out_write(o, b, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        o->err = o->err ? o->err : ENOMEM;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    cv_out_write(o, big, (size_t)n);
    free(big);
}

size_t cv_printable(const char *s, size_t n, char *out) {
    const unsigned char *u = (const unsigned char *)s;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (u[i] < 0x20 || u[i] == 0x7f) {
            out[k++] = '?';
        } else if (u[i] == 0xC2 && i + 1 < n && u[i + 1] >= 0x80 && u[i + 1] <= 0x9F) {
            out[k++] = '?'; /* a C1 control, U+0080..U+009F */
            i++;
        } else {
            out[k++] = (char)u[i];
        }
    }
    return k;
}

const char *cv_shown(const char *s, char *buf, size_t n) {
    size_t len = s ? strlen(s) : 0;
    if (len > n - 1) len = n - 1;
    buf[cv_printable(s ? s : "", len, buf)] = '\0';
    return buf;
}

void cv_out_text(cv_out *o, const char *s, size_t n) {
    if (!o->tty) {
        cv_out_write(o, s, n);
        return;
    }
    char tmp[256];
    while (n > 0) { /* in pieces; a C1 pair is never split */
        size_t k = n > sizeof tmp ? sizeof tmp - 1 : n;
        if (k < n && (unsigned char)s[k - 1] == 0xC2) k--;
        cv_out_write(o, tmp, cv_printable(s, k, tmp));
        s += k;
        n -= k;
    }
}

/* Out of line, so that the common case keeps a lean prologue. */
static __attribute__((noinline, cold)) void out_csv_tty(cv_out *o, const char *s, size_t n,
                                                         char sep) {
    char small[256], *tmp = n <= sizeof small ? small : malloc(n);
    if (!tmp) {
        o->err = o->err ? o->err : ENOMEM;
        return;
    }
    o->tty = 0;
    cv_out_csv(o, tmp, cv_printable(s, n, tmp), sep);
    o->tty = 1;
    if (tmp != small) free(tmp);
}

void cv_out_csv(cv_out *o, const char *s, size_t n, char sep) {
    if (__builtin_expect(o->tty, 0)) {
        out_csv_tty(o, s, n, sep);
        return;
    }
    int quote = n > 0 && (s[0] == ' ' || s[n - 1] == ' ');
    for (size_t i = 0; i < n && !quote; i++) {
        char c = s[i];
        quote = c == sep || c == '"' || c == '\n' || c == '\r';
    }
    if (!quote) {
        cv_out_write(o, s, n);
        return;
    }
    cv_out_ch(o, '"');
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') {
            cv_out_write(o, s + start, i + 1 - start);
            cv_out_ch(o, '"');
            start = i + 1;
        }
    }
    cv_out_write(o, s + start, n - start);
    cv_out_ch(o, '"');
}

/* Length of the valid UTF-8 sequence at s[0..n) starting with a byte >=
 * 0x80, or 0 when invalid (overlong, surrogate, above U+10FFFF, cut). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else
        return 0;
    if (n < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return len;
}

/* 1 for bytes that cannot be copied as they are. */
static const unsigned char json_special[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

void cv_out_json(cv_out *o, const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    size_t start = 0, i = 0;
    cv_out_ch(o, '"');
    while (i < n) {
        unsigned c = s[i];
        if (!json_special[c]) {
            i++;
            continue;
        }
        if (c >= 0x80) {
            size_t len = utf8_seq(s + i, n - i);
            if (len) {
                i += len;
                continue;
            }
        }
        cv_out_write(o, s + start, i - start);
        switch (c) {
        case '"': cv_out_write(o, "\\\"", 2); break;
        case '\\': cv_out_write(o, "\\\\", 2); break;
        case '\n': cv_out_write(o, "\\n", 2); break;
        case '\r': cv_out_write(o, "\\r", 2); break;
        case '\t': cv_out_write(o, "\\t", 2); break;
        case '\b': cv_out_write(o, "\\b", 2); break;
        case '\f': cv_out_write(o, "\\f", 2); break;
        default:
            if (c >= 0x80) {
                cv_out_write(o, "\\ufffd", 6);
            } else {
                static const char hex[] = "0123456789abcdef";
                char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                cv_out_write(o, e, 6);
            }
        }
        i++;
        start = i;
    }
    cv_out_write(o, s + start, n - start);
    cv_out_ch(o, '"');
}

char *cv_json_dup(const char *s, size_t n) {
    cv_out o;
    memset(&o, 0, sizeof o);
    o.fd = -1; /* never flushed: sized for the worst case */
    o.cap = n * 6 + 3; /* worst case: every byte escaped, plus quotes */
    o.buf = malloc(o.cap + 1);
    if (!o.buf) return NULL;
    cv_out_json(&o, s, n);
    o.buf[o.len] = '\0';
    return o.buf;
}

/* ---- String map --------------------------------------------------------- */

typedef struct map_ent {
    char *key;
    size_t len;
} map_ent;

struct cv_map {
    map_ent *ents; /* insertion order */
    size_t n, cap;
    long *slots;   /* index + 1, 0 when empty */
    size_t nslots;
};

static uint64_t hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

cv_map *cv_map_new(void) {
    cv_map *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->nslots = 64;
    m->slots = calloc(m->nslots, sizeof *m->slots);
    if (!m->slots) {
        free(m);
        return NULL;
    }
    return m;
}

void cv_map_free(cv_map *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) free(m->ents[i].key);
    free(m->ents);
    free(m->slots);
    free(m);
}

static int rehash(cv_map *m) {
    size_t ns = m->nslots * 2;
    long *slots = calloc(ns, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < m->n; i++) {
        size_t h = hash(m->ents[i].key, m->ents[i].len) & (ns - 1);
        while (slots[h]) h = (h + 1) & (ns - 1);
        slots[h] = (long)i + 1;
    }
    free(m->slots);
    m->slots = slots;
    m->nslots = ns;
    return 0;
}

long cv_map_get(cv_map *m, const char *key, size_t len, int *added) {
    size_t h = hash(key, len) & (m->nslots - 1);
    *added = 0;
    while (m->slots[h]) {
        map_ent *e = &m->ents[m->slots[h] - 1];
        if (e->len == len && memcmp(e->key, key, len) == 0) return m->slots[h] - 1;
        h = (h + 1) & (m->nslots - 1);
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 32;
        map_ent *e = realloc(m->ents, cap * sizeof *e);
        if (!e) return -1;
        m->ents = e;
        m->cap = cap;
    }
    char *k = malloc(len + 1);
    if (!k) return -1;
    memcpy(k, key, len);
    k[len] = '\0';
    m->ents[m->n].key = k;
    m->ents[m->n].len = len;
    m->slots[h] = (long)m->n + 1;
    m->n++;
    *added = 1;
    if (m->n * 2 > m->nslots && rehash(m)) return -1;
    return (long)m->n - 1;
}

size_t cv_map_size(const cv_map *m) { return m->n; }

const char *cv_map_key(const cv_map *m, size_t idx, size_t *len) {
    if (len) *len = m->ents[idx].len;
    return m->ents[idx].key;
}
