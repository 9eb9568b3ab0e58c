/* out.c -- buffered output, numbers, terminal-safe text, CSV and JSON
 * quoting (out.h). */
#include "prog/out.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prog/input.h"
#include "prog/prog.h"

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
        int code = cv_check_output(path);
        if (code) return code;
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
