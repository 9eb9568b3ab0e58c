/* select.c -- tracy-cut's and tracy-export's --process / --thread lists
 * (see select.h). */
#include "prog/select.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog/prog.h"

/* 1 when an item of the comma-separated list equals [s, s+n). */
static int in_list(const char *list, const char *s, size_t n) {
    while (*list) {
        const char *e = strchr(list, ',');
        size_t len = e ? (size_t)(e - list) : strlen(list);
        if (len == n && memcmp(list, s, n) == 0) return 1;
        if (!e) break;
        list = e + 1;
    }
    return 0;
}

int cv_sel_keep_proc(const cv_sel *s, uint32_t p) {
    char b[16];
    if (!s->procs) return 1;
    int n = snprintf(b, sizeof b, "%" PRIu32, p);
    return in_list(s->procs, b, (size_t)n);
}

/* Whether thread (p, t) is named by [item, item+len): "P:T" or its name. */
static int names_thread(const cv_sel *s, uint32_t p, uint32_t t, const char *item, size_t len) {
    char b[32];
    int n = snprintf(b, sizeof b, "%" PRIu32 ":%" PRIu32, p, t);
    if ((size_t)n == len && memcmp(b, item, len) == 0) return 1;
    const lt_thread *th = lt_reader_thread(s->r, p, t);
    return th && th->name && strlen(th->name) == len && memcmp(th->name, item, len) == 0;
}

int cv_sel_keep_thread(const cv_sel *s, uint32_t p, uint32_t t) {
    if (!s->threads) return 1;
    for (const char *l = s->threads; *l;) {
        const char *e = strchr(l, ',');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        if (names_thread(s, p, t, l, len)) return 1;
        l = e ? e + 1 : l + len;
    }
    return 0;
}

int cv_sel_keeps(const cv_sel *s, uint32_t p, uint32_t t) {
    return cv_sel_keep_proc(s, p) && cv_sel_keep_thread(s, p, t);
}

int cv_sel_check(const cv_sel *s) {
    uint32_t np = lt_reader_nprocesses(s->r);
    if (s->procs && !*s->procs) return cv_usage_error("--process: an empty list");
    if (s->threads && !*s->threads) return cv_usage_error("--thread: an empty list");
    for (const char *l = s->procs; l && *l;) {
        const char *e = strchr(l, ',');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        char b[24] = "";
        uint64_t v;
        memcpy(b, l, len < sizeof b - 1 ? len : sizeof b - 1);
        if (cv_parse_u64(b, &v) < 0 || v == 0 || v > np)
            return cv_usage_error("--process: '%.*s' is not a process of the trace (1..%" PRIu32
                                  ")", (int)len, l, np);
        l = e ? e + 1 : l + len;
    }
    for (const char *l = s->threads; l && *l;) {
        const char *e = strchr(l, ',');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        int found = 0;
        for (uint32_t p = 1; p <= np && !found; p++)
            for (uint32_t t = 1; t <= lt_reader_nthreads(s->r, p) && !found; t++)
                found = names_thread(s, p, t, l, len);
        if (!found) return cv_usage_error("--thread: no thread '%.*s' in the trace", (int)len, l);
        l = e ? e + 1 : l + len;
    }
    if (!s->procs || !s->threads) return 0; /* each item names something */
    for (uint32_t p = 1; p <= np; p++)
        for (uint32_t t = 1; t <= lt_reader_nthreads(s->r, p); t++)
            if (cv_sel_keeps(s, p, t)) return 0;
    return cv_usage_error("--process and --thread together select no thread of the trace");
}

int cv_sel_table_init(cv_sel_table *t, const cv_sel *s) {
    memset(t, 0, sizeof *t);
    if (!s || (!s->procs && !s->threads)) return 0;
    uint32_t np = lt_reader_nprocesses(s->r);
    t->nprocs = np;
    t->first = calloc((size_t)np + 1, sizeof *t->first);
    t->nthreads = calloc((size_t)np + 1, sizeof *t->nthreads);
    size_t total = 0;
    for (uint32_t p = 1; p <= np; p++) total += lt_reader_nthreads(s->r, p);
    t->keep = calloc(total + 1, 1);
    if (!t->first || !t->nthreads || !t->keep) {
        cv_sel_table_free(t);
        return -1;
    }
    size_t at = 0;
    for (uint32_t p = 1; p <= np; p++) {
        t->first[p] = (uint32_t)at;
        t->nthreads[p] = lt_reader_nthreads(s->r, p);
        for (uint32_t th = 1; th <= t->nthreads[p]; th++, at++) {
            t->keep[at] = (uint8_t)cv_sel_keeps(s, p, th);
            t->kept += t->keep[at];
        }
    }
    return 0;
}

void cv_sel_table_free(cv_sel_table *t) {
    free(t->first);
    free(t->nthreads);
    free(t->keep);
    memset(t, 0, sizeof *t);
}
