/* scratch.h -- a fresh scratch directory per test and paths inside it,
 * and whole-file reads and writes, shared by the file suites (check_reader.c,
 * check_writer.c, check_splice.c, check_sound.c). The suites link into one runner, so each including file
 * gets its own copy of the directory name. */
#ifndef TESTS_SCRATCH_H
#define TESTS_SCRATCH_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The directory made by scratch_make(); empty before. */
static char scratch_dir[64];

/* Makes /tmp/<suite>.XXXXXX; call from a checked fixture's setup. */
static inline void scratch_make(const char *suite) {
    snprintf(scratch_dir, sizeof scratch_dir, "/tmp/%s.XXXXXX", suite);
    ck_assert_ptr_nonnull(mkdtemp(scratch_dir));
}

/* Removes the directory and all it holds; a checked fixture's teardown. */
static inline void scratch_remove(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch_dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Returns scratch_dir/name in one of four rotating static buffers, so up to
 * four results may be used together (e.g. in one call's arguments). */
static inline const char *scratch_path(const char *name) {
    static char buf[4][160];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", scratch_dir, name);
    return buf[k];
}

/* The whole file at path (malloc'd, one spare byte); its size in *len. */
static inline uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Writes len bytes to path, replacing it. */
static inline void spit(const char *path, const uint8_t *b, size_t len) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

#endif
