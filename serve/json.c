/* json.c -- see json.h. */
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jb_init(jb *j, size_t limit) {
    memset(j, 0, sizeof *j);
    j->limit = limit;
}

void jb_free(jb *j) {
    free(j->buf);
    memset(j, 0, sizeof *j);
}

int jb_failed(const jb *j) { return j->failed; }

static int reserve(jb *j, size_t n) {
    if (j->failed) return -1;
    if (j->len + n + 1 <= j->cap) return 0;
    if (j->len + n + 1 > j->limit) {
        j->failed = 1;
        return -1;
    }
    size_t c = j->cap ? j->cap : 4096;
    while (c < j->len + n + 1) c *= 2;
    if (c > j->limit) c = j->limit;
    char *p = realloc(j->buf, c);
    if (!p) {
        j->failed = 1;
        return -1;
    }
    j->buf = p;
    j->cap = c;
    return 0;
}

void jb_raw(jb *j, const char *s, size_t n) {
    if (reserve(j, n) < 0) return;
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = 0;
}

static void sep(jb *j) {
    if (j->comma) jb_raw(j, ",", 1);
    j->comma = 1;
}

void jb_obj(jb *j) {
    sep(j);
    jb_raw(j, "{", 1);
    j->comma = 0;
}
void jb_end_obj(jb *j) {
    jb_raw(j, "}", 1);
    j->comma = 1;
}
void jb_arr(jb *j) {
    sep(j);
    jb_raw(j, "[", 1);
    j->comma = 0;
}
void jb_end_arr(jb *j) {
    jb_raw(j, "]", 1);
    j->comma = 1;
}

void jb_key(jb *j, const char *key) {
    jb_str(j, key);
    jb_raw(j, ":", 1);
    j->comma = 0;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef) len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, min = 0x10000;
    else return 0;
    if (n < len) return 0;
    unsigned cp = c & (0x3f >> (len - 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

void jb_strn(jb *j, const char *s, size_t n) {
    sep(j);
    if (reserve(j, n + 2) < 0) return;
    jb_raw(j, "\"", 1);
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n && !j->failed) {
        size_t start = i;
        while (i < n && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\' &&
               p[i] != '<' && p[i] != '>' && p[i] != '&')
            i++;
        if (i > start) jb_raw(j, s + start, i - start);
        if (i >= n) break;
        unsigned c = p[i];
        char esc[8];
        if (c == '"') jb_raw(j, "\\\"", 2), i++;
        else if (c == '\\') jb_raw(j, "\\\\", 2), i++;
        else if (c == '\n') jb_raw(j, "\\n", 2), i++;
        else if (c == '\t') jb_raw(j, "\\t", 2), i++;
        else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            jb_raw(j, esc, 6);
            i++;
        } else {
            size_t l = utf8_len(p + i, n - i);
            if (l) jb_raw(j, s + i, l), i += l;
            else jb_raw(j, "\\ufffd", 6), i++;
        }
    }
    jb_raw(j, "\"", 1);
}

void jb_str(jb *j, const char *s) {
    if (!s) jb_null(j);
    else jb_strn(j, s, strlen(s));
}

/* Writes v in decimal at the end of b (24 bytes); returns the start. */
static char *digits(char *end, uint64_t v) {
    char *p = end;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return p;
}

void jb_u64(jb *j, uint64_t v) {
    char b[24], *p = digits(b + sizeof b, v);
    if (reserve(j, 1 + (size_t)(b + sizeof b - p)) < 0) return;
    if (j->comma) j->buf[j->len++] = ',';
    j->comma = 1;
    memcpy(j->buf + j->len, p, (size_t)(b + sizeof b - p));
    j->len += (size_t)(b + sizeof b - p);
    j->buf[j->len] = 0;
}

void jb_i64(jb *j, int64_t v) {
    char b[24];
    int n = snprintf(b, sizeof b, "%lld", (long long)v);
    sep(j);
    jb_raw(j, b, (size_t)n);
}

void jb_dbl(jb *j, double v) {
    if (!isfinite(v)) {
        jb_null(j);
        return;
    }
    char b[32];
    int n = snprintf(b, sizeof b, "%.17g", v);
    sep(j);
    jb_raw(j, b, (size_t)n);
}

void jb_null(jb *j) {
    sep(j);
    jb_raw(j, "null", 4);
}

void jb_bool(jb *j, int v) {
    sep(j);
    jb_raw(j, v ? "true" : "false", v ? 4 : 5);
}

void jb_u64s(jb *j, uint64_t v) {
    char b[24];
    snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    jb_str(j, b);
}
