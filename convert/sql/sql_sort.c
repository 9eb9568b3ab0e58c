/* sql_sort.c -- bounded-memory sorting of integer keys (see sql_sort.h). */
#define _GNU_SOURCE /* qsort_r */
#include "convert/sql/sql_sort.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convert/convert.h"

#define IO_BYTES 65536 /* bytes written or read at a time, per run */
#define KEY_BYTES_MAX (SQS_MAX_WIDTH * 10) /* a key's largest encoding */

/* A run on disk: its keys in order, each integer as the zigzag varint of
 * its difference from the same integer of the key before (runs of sorted
 * keys shrink to a few bytes per key). */
typedef struct run {
    uint64_t off, end;     /* next byte to read, end of the run in the file */
    uint64_t left;         /* keys not yet decoded */
    uint8_t *buf;          /* bytes read, buf[pos..len) not yet decoded */
    size_t pos, len;
    int64_t key[SQS_MAX_WIDTH]; /* the run's current key */
} run;

struct sqs_sorter {
    int64_t *keys, *tmp; /* `width` integers per key */
    size_t n, cap;
    unsigned width;
    size_t key_bytes;
    int fd;          /* the runs, -1 until the first is written */
    uint64_t file_bytes;
    uint8_t *io;     /* IO_BYTES: encoding buffer of spill() */
    run *runs;
    size_t nruns;
};

/* Compares two keys of `w` integers, integer by integer. */
static int key_cmp(const int64_t *x, const int64_t *y, unsigned w) {
    for (unsigned i = 0; i < w; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
}

static int key_qcmp(const void *x, const void *y, void *w) {
    return key_cmp(x, y, *(const unsigned *)w);
}

sqs_sorter *sqs_new(size_t run_keys, unsigned width) {
    if (width < SQS_MIN_WIDTH || width > SQS_MAX_WIDTH) return NULL;
    sqs_sorter *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->cap = run_keys ? run_keys : 1;
    s->width = width;
    s->key_bytes = width * sizeof(int64_t);
    s->fd = -1;
    return s;
}

void sqs_free(sqs_sorter *s) {
    if (!s) return;
    if (s->fd >= 0) close(s->fd);
    for (size_t i = 0; i < s->nruns; i++) free(s->runs[i].buf);
    free(s->runs);
    free(s->io);
    free(s->keys);
    free(s->tmp);
    free(s);
}

/* Sorts the keys in memory: a stable radix sort on the first integer keeps
 * the order of arrival within each of its values, which is already the
 * order of the rest in the usual case; anything else falls back to qsort. */
static void sort_keys(sqs_sorter *s) {
    int64_t *k = s->keys, *t = s->tmp;
    size_t n = s->n, w = s->width;
    uint64_t max = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t a = k[i * w];
        if (a < 0) {
            qsort_r(k, n, s->key_bytes, key_qcmp, &s->width);
            return;
        }
        if ((uint64_t)a > max) max = (uint64_t)a;
    }
    for (int shift = 0; shift < 64 && (max >> shift); shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++) count[((uint64_t)k[i * w] >> shift & 0xff) + 1]++;
        for (int d = 0; d < 256; d++) count[d + 1] += count[d];
        for (size_t i = 0; i < n; i++) {
            size_t to = count[(uint64_t)k[i * w] >> shift & 0xff]++;
            memcpy(&t[to * w], &k[i * w], s->key_bytes);
        }
        int64_t *sw = k;
        k = t;
        t = sw;
    }
    s->keys = k;
    s->tmp = t;
    for (size_t i = 1; i < n; i++)
        if (key_cmp(&k[(i - 1) * w], &k[i * w], s->width) > 0) {
            qsort_r(k, n, s->key_bytes, key_qcmp, &s->width);
            return;
        }
}

static int open_temp(sqs_sorter *s) {
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tracy-sort-XXXXXX", dir && *dir ? dir : "/tmp");
    s->fd = mkstemp(path);
    if (s->fd < 0) {
        cv_err("%s: cannot create a temporary file: %s", path, strerror(errno));
        return -1;
    }
    unlink(path);
    return 0;
}

/* Appends the encoding of key k (after `prev`) at p; returns the end. */
static uint8_t *encode_key(uint8_t *p, const int64_t *k, const int64_t *prev, unsigned w) {
    for (unsigned j = 0; j < w; j++) {
        uint64_t d = (uint64_t)k[j] - (uint64_t)prev[j];
        uint64_t z = (d << 1) ^ (uint64_t)((int64_t)d >> 63);
        while (z >= 0x80) {
            *p++ = (uint8_t)(z | 0x80);
            z >>= 7;
        }
        *p++ = (uint8_t)z;
    }
    return p;
}

/* Sorts the keys in memory and appends them to the file as one run. */
static int spill(sqs_sorter *s) {
    if (s->fd < 0 && open_temp(s)) return -1;
    if (!s->io && !(s->io = malloc(IO_BYTES))) {
        cv_err("out of memory");
        return -1;
    }
    run *r = realloc(s->runs, (s->nruns + 1) * sizeof *r);
    if (!r) {
        cv_err("out of memory");
        return -1;
    }
    s->runs = r;
    sort_keys(s);
    r = &s->runs[s->nruns++];
    memset(r, 0, sizeof *r);
    r->off = s->file_bytes;
    r->left = s->n;
    static const int64_t zero[SQS_MAX_WIDTH];
    const int64_t *prev = zero;
    uint8_t *p = s->io;
    for (size_t i = 0; i < s->n; i++) {
        const int64_t *k = &s->keys[i * s->width];
        p = encode_key(p, k, prev, s->width);
        prev = k;
        if ((size_t)(p - s->io) > IO_BYTES - KEY_BYTES_MAX || i + 1 == s->n) {
            if (cv_pwrite_full(s->fd, s->io, (size_t)(p - s->io), s->file_bytes)) {
                cv_err("cannot write a temporary file: %s", strerror(errno));
                return -1;
            }
            s->file_bytes += (uint64_t)(p - s->io);
            p = s->io;
        }
    }
    r->end = s->file_bytes;
    s->n = 0;
    return 0;
}

int sqs_add(sqs_sorter *s, const int64_t *k) {
    if (!s->keys) {
        s->keys = malloc(s->cap * s->key_bytes);
        s->tmp = malloc(s->cap * s->key_bytes);
        if (!s->keys || !s->tmp) {
            cv_err("out of memory");
            return -1;
        }
    }
    if (s->n == s->cap && spill(s)) return -1;
    memcpy(&s->keys[s->n++ * s->width], k, s->key_bytes);
    return 0;
}

/* Decodes the run's next key into r->key, reading more of the file when
 * fewer bytes than the largest key are left. 1 with a key, 0 at the run's
 * end, -1 after printing an error. */
static int run_next(sqs_sorter *s, run *r) {
    if (r->left == 0) return 0;
    if (r->len - r->pos < KEY_BYTES_MAX && r->off < r->end) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
        size_t want = IO_BYTES - r->len;
        if (want > r->end - r->off) want = (size_t)(r->end - r->off);
        if (cv_pread_full(s->fd, r->buf + r->len, want, r->off)) {
            cv_err("cannot read a temporary file: %s", strerror(errno));
            return -1;
        }
        r->off += want;
        r->len += want;
    }
    const uint8_t *p = r->buf + r->pos, *end = r->buf + r->len;
    for (unsigned j = 0; j < s->width; j++) {
        uint64_t z = 0;
        for (int shift = 0;; shift += 7) {
            if (p == end || shift > 63) {
                cv_err("a temporary file is corrupt");
                return -1;
            }
            uint8_t c = *p++;
            z |= (uint64_t)(c & 0x7f) << shift;
            if (!(c & 0x80)) break;
        }
        uint64_t d = (z >> 1) ^ (0 - (z & 1));
        r->key[j] = (int64_t)((uint64_t)r->key[j] + d);
    }
    r->pos = (size_t)(p - r->buf);
    r->left--;
    return 1;
}

/* Restores the heap of runs (ordered by their current key) below slot i. */
static void sift(run **h, size_t n, size_t i, unsigned w) {
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && key_cmp(h[l]->key, h[m]->key, w) < 0) m = l;
        if (l + 1 < n && key_cmp(h[l + 1]->key, h[m]->key, w) < 0) m = l + 1;
        if (m == i) return;
        run *t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static int merge(sqs_sorter *s, sqs_emit emit, void *ctx) {
    run **heap = calloc(s->nruns, sizeof *heap);
    size_t n = 0;
    int rc = 0;
    if (!heap) {
        cv_err("out of memory");
        return -1;
    }
    for (size_t i = 0; i < s->nruns && !rc; i++) {
        run *r = &s->runs[i];
        if (!(r->buf = malloc(IO_BYTES))) {
            cv_err("out of memory");
            rc = -1;
        } else if ((rc = run_next(s, r)) == 1) {
            heap[n++] = r;
            rc = 0;
        }
    }
    for (size_t i = n / 2; i-- > 0;) sift(heap, n, i, s->width);
    while (!rc && n) {
        run *r = heap[0];
        if ((rc = emit(ctx, r->key))) break;
        int more = run_next(s, r);
        if (more < 0) {
            rc = -1;
            break;
        }
        if (!more) heap[0] = heap[--n];
        sift(heap, n, 0, s->width);
    }
    free(heap);
    return rc;
}

int sqs_finish(sqs_sorter *s, sqs_emit emit, void *ctx) {
    if (s->fd < 0) {
        /* Everything fits in memory. */
        sort_keys(s);
        for (size_t i = 0; i < s->n; i++) {
            int rc = emit(ctx, &s->keys[i * s->width]);
            if (rc) return rc;
        }
        return 0;
    }
    if (s->n && spill(s)) return -1;
    free(s->keys);
    free(s->tmp);
    s->keys = s->tmp = NULL;
    return merge(s, emit, ctx);
}
