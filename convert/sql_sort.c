/* sql_sort.c -- bounded-memory sorting of integer keys (see sql_sort.h). */
#include "sql_sort.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

#define READ_KEYS 4096 /* keys read at a time from each run while merging */

typedef struct run {
    uint64_t off, left; /* next key's position in the file, keys remaining */
    sqs_key *buf;
    size_t pos, n;
} run;

struct sqs_sorter {
    sqs_key *keys, *tmp;
    size_t n, cap;
    int fd;          /* the runs, -1 until the first is written */
    uint64_t nkeys_on_disk;
    run *runs;
    size_t nruns;
};

static int key_cmp(const sqs_key *x, const sqs_key *y) {
    if (x->a != y->a) return x->a < y->a ? -1 : 1;
    if (x->b != y->b) return x->b < y->b ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int key_qcmp(const void *x, const void *y) { return key_cmp(x, y); }

sqs_sorter *sqs_new(size_t run_keys) {
    sqs_sorter *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->cap = run_keys ? run_keys : 1;
    s->fd = -1;
    return s;
}

void sqs_free(sqs_sorter *s) {
    if (!s) return;
    if (s->fd >= 0) close(s->fd);
    for (size_t i = 0; i < s->nruns; i++) free(s->runs[i].buf);
    free(s->runs);
    free(s->keys);
    free(s->tmp);
    free(s);
}

/* Sorts the keys in memory: a stable radix sort on `a` keeps the order of
 * arrival within each `a`, which is already (b, id) order in the usual
 * case; anything else falls back to qsort. */
static void sort_keys(sqs_sorter *s) {
    sqs_key *k = s->keys, *t = s->tmp;
    size_t n = s->n;
    uint64_t max = 0;
    for (size_t i = 0; i < n; i++) {
        if (k[i].a < 0) {
            qsort(k, n, sizeof *k, key_qcmp);
            return;
        }
        if ((uint64_t)k[i].a > max) max = (uint64_t)k[i].a;
    }
    for (int shift = 0; shift < 64 && (max >> shift); shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++) count[((uint64_t)k[i].a >> shift & 0xff) + 1]++;
        for (int d = 0; d < 256; d++) count[d + 1] += count[d];
        for (size_t i = 0; i < n; i++) t[count[(uint64_t)k[i].a >> shift & 0xff]++] = k[i];
        sqs_key *sw = k;
        k = t;
        t = sw;
    }
    s->keys = k;
    s->tmp = t;
    for (size_t i = 1; i < n; i++)
        if (key_cmp(&k[i - 1], &k[i]) > 0) {
            qsort(k, n, sizeof *k, key_qcmp);
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

/* Sorts the keys in memory and appends them to the file as one run. */
static int spill(sqs_sorter *s) {
    if (s->fd < 0 && open_temp(s)) return -1;
    run *r = realloc(s->runs, (s->nruns + 1) * sizeof *r);
    if (!r) {
        cv_err("out of memory");
        return -1;
    }
    s->runs = r;
    sort_keys(s);
    r = &s->runs[s->nruns++];
    memset(r, 0, sizeof *r);
    r->off = s->nkeys_on_disk * sizeof(sqs_key);
    r->left = s->n;
    const char *p = (const char *)s->keys;
    size_t bytes = s->n * sizeof(sqs_key);
    uint64_t off = r->off;
    while (bytes) {
        ssize_t w = pwrite(s->fd, p, bytes, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            cv_err("cannot write a temporary file: %s", strerror(w < 0 ? errno : ENOSPC));
            return -1;
        }
        p += w;
        bytes -= (size_t)w;
        off += (uint64_t)w;
    }
    s->nkeys_on_disk += s->n;
    s->n = 0;
    return 0;
}

int sqs_add(sqs_sorter *s, int64_t a, int64_t b, int64_t id) {
    if (!s->keys) {
        s->keys = malloc(s->cap * sizeof *s->keys);
        s->tmp = malloc(s->cap * sizeof *s->tmp);
        if (!s->keys || !s->tmp) {
            cv_err("out of memory");
            return -1;
        }
    }
    if (s->n == s->cap && spill(s)) return -1;
    s->keys[s->n++] = (sqs_key){a, b, id};
    return 0;
}

/* Refills a run's buffer; 0 with r->n == 0 at its end. */
static int refill(sqs_sorter *s, run *r) {
    size_t want = r->left < READ_KEYS ? (size_t)r->left : READ_KEYS;
    size_t bytes = want * sizeof(sqs_key), got = 0;
    while (got < bytes) {
        ssize_t n = pread(s->fd, (char *)r->buf + got, bytes - got, (off_t)(r->off + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            cv_err("cannot read a temporary file: %s", n < 0 ? strerror(errno) : "short read");
            return -1;
        }
        got += (size_t)n;
    }
    r->off += bytes;
    r->left -= want;
    r->pos = 0;
    r->n = want;
    return 0;
}

static const sqs_key *run_head(const run *r) { return &r->buf[r->pos]; }

/* Restores the heap of runs (ordered by their next key) below slot i. */
static void sift(run **h, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && key_cmp(run_head(h[l]), run_head(h[m])) < 0) m = l;
        if (l + 1 < n && key_cmp(run_head(h[l + 1]), run_head(h[m])) < 0) m = l + 1;
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
        if (!(r->buf = malloc(READ_KEYS * sizeof *r->buf))) {
            cv_err("out of memory");
            rc = -1;
        } else if (!(rc = refill(s, r)) && r->n) {
            heap[n++] = r;
        }
    }
    for (size_t i = n / 2; i-- > 0;) sift(heap, n, i);
    while (!rc && n) {
        run *r = heap[0];
        if ((rc = emit(ctx, run_head(r)))) break;
        if (++r->pos == r->n && (rc = refill(s, r))) break;
        if (r->n == 0 || r->pos == r->n) heap[0] = heap[--n];
        sift(heap, n, 0);
    }
    free(heap);
    return rc;
}

int sqs_finish(sqs_sorter *s, sqs_emit emit, void *ctx) {
    if (s->fd < 0) {
        /* Everything fits in memory. */
        sort_keys(s);
        for (size_t i = 0; i < s->n; i++) {
            int rc = emit(ctx, &s->keys[i]);
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
