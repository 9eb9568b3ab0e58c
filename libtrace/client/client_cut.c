/* client_cut.c -- a trace window's zones that were open when it opened.
 *
 * A window (client_file.c) opens while the program is inside calls: a
 * thread in a server's loop, in a long main(). The recorder of such a
 * process (the Python hook) writes those calls, at each thread's first
 * event in the window, as zone begins just before the window's start, and
 * calls lt__trace_cut_at(start). When the daemon has finished the file,
 * lt__trace_cut_file splices it from `start` (libtrace/format/splice.c):
 * those zones become cut zones (FORMAT.md, block kind 17) that begin where
 * the window begins, and everything else is copied as it is (unchanged
 * blocks are copied compressed). A file that cannot be spliced stays as
 * the daemon wrote it (said in one line): the zones then begin 1 ns
 * before the window, not marked as cut.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "client_internal.h"
#include "splice.h"

static uint64_t cut_at; /* 0: nothing to cut */

void lt__trace_cut_at(uint64_t start) {
    uint64_t none = 0;
    (void)__atomic_compare_exchange_n(&cut_at, &none, start, 0, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED);
}

void lt__trace_cut_reset(void) { __atomic_store_n(&cut_at, 0, __ATOMIC_RELAXED); }

/* Splices `path` from `from` into `tmp`. 0 or an LT_E* code, *why said. */
static int cut_into(const char *path, const char *tmp, uint64_t from, char *why, size_t n) {
    lt_reader *r = NULL;
    lt_splice *s = NULL;
    int rc = lt_reader_open(&r, path, why, n);
    if (rc < 0) return rc;
    uint32_t np = lt_reader_nprocesses(r);
    uint32_t *out = calloc((size_t)np + 1, sizeof *out);
    int64_t *shift = calloc((size_t)np + 1, sizeof *shift);
    for (uint32_t p = 1; out && p <= np; p++) out[p] = p;
    rc = !out || !shift ? LT_ENOMEM
                        : lt_splice_open(&s, tmp, LT_WRITE_FORCE, lt_reader_info(r)->creator, 3);
    lt_splice_input in = {.r = r, .name = path, .proc_out = out, .proc_shift = shift,
                          .from = from, .to = UINT64_MAX, .keep_idle = 1};
    if (rc == 0) rc = lt_splice_add(s, &in);
    if (rc == 0) rc = lt_splice_run(s);
    if (rc == 0) rc = lt_splice_close(s, 0);
    if (rc < 0) snprintf(why, n, "%s", s ? lt_splice_error(s) : lt_strerror(rc));
    lt_splice_free(s);
    free(out);
    free(shift);
    lt_reader_free(r);
    return rc;
}

int lt__trace_cut_file(const char *path) {
    uint64_t from = __atomic_exchange_n(&cut_at, 0, __ATOMIC_RELAXED);
    if (from == 0) return 0;
    char tmp[PATH_MAX + 8], why[256] = "";
    if (snprintf(tmp, sizeof tmp, "%s.cut~", path) >= (int)sizeof tmp) return LT_EINVAL;
    int rc = cut_into(path, tmp, from, why, sizeof why);
    if (rc == 0 && rename(tmp, path) < 0) {
        snprintf(why, sizeof why, "rename: %s", strerror(errno));
        rc = LT_EIO;
    }
    if (rc < 0) {
        (void)unlink(tmp);
        fprintf(stderr, "tracy: %s: calls open at the window's start are not marked as cut: %s\n",
                path, why);
    }
    return rc;
}
