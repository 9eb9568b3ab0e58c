/* check_writer.c -- the file writer: creation rules, layout, error paths. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "records.h"
#include "trace_builder.h"
#include "scratch.h"

static void setup_dir(void) { scratch_make("check_writer"); }

START_TEST(errors_have_messages) {
    ck_assert_int_eq(LT_ENOMEM, -1);
    ck_assert_str_eq(lt_strerror(0), "success");
    ck_assert_str_eq(lt_strerror(LT_ENOMEM), "out of memory");
    ck_assert_str_eq(lt_strerror(LT_ECOMPRESS), "compression error");
    ck_assert_str_eq(lt_strerror(LT_ECOMPRESS - 1), "unknown error");
    ck_assert_str_eq(lt_strerror(5), "unknown error");
    ck_assert_int_eq(lt_from_errno(ENOSPC), LT_ENOSPC);
    ck_assert_int_eq(lt_from_errno(EFBIG), LT_EFBIG);
    ck_assert_int_eq(lt_from_errno(EEXIST), LT_EEXIST);
    ck_assert_int_eq(lt_from_errno(ENOENT), LT_EOPEN);
    ck_assert_int_eq(lt_from_errno(EIO), LT_EIO);
    ck_assert_uint_gt(lt_now_ns(), 0);
    ck_assert_uint_gt(lt_wall_ns(), 1500000000ull * 1000000000ull);
}
END_TEST

START_TEST(refuses_existing_file_unless_forced) {
    const char *p = scratch_path("a.tracy");
    lt_writer *w;
    ck_assert_int_eq(lt_writer_open(&w, p, 0, "t", 0), 0);
    ck_assert_int_eq(lt_writer_close(w, NULL, 0, NULL, 0), 0);
    w = (lt_writer *)1;
    ck_assert_int_eq(lt_writer_open(&w, p, 0, "t", 0), LT_EEXIST);
    ck_assert_ptr_null(w);
    lt_builder *b;
    ck_assert_int_eq(lt_builder_open(&b, p, 0, "t"), LT_EEXIST);
    ck_assert_int_eq(lt_writer_open(&w, p, LT_WRITE_FORCE, "t", 0), 0);
    ck_assert_int_eq(lt_writer_close(w, NULL, 0, NULL, 0), 0);
    ck_assert_int_eq(lt_writer_open(&w, scratch_path("no/such/dir.tracy"), 0, "t", 0), LT_EOPEN);
    struct stat st;
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_mode & 0111, 0);
    lt_writer_close(NULL, NULL, 0, NULL, 0); /* accepts NULL */
    lt_builder_close(NULL, 0);
}
END_TEST

/* -f does not replace a file another writer is still writing: the later
 * one's rename left the first writing into a file no name reached. */
START_TEST(force_refuses_a_file_being_written) {
    const char *p = scratch_path("busy.tracy");
    lt_writer *a, *b;
    ck_assert_int_eq(lt_writer_open(&a, p, LT_WRITE_FORCE, "t", 0), 0);
    errno = 0;
    ck_assert_int_eq(lt_writer_open(&b, p, LT_WRITE_FORCE, "t", 0), LT_EOPEN);
    ck_assert_int_eq(errno, EBUSY);
    ck_assert_ptr_null(b);
    ck_assert_int_eq(lt_writer_close(a, NULL, 0, NULL, 0), 0);
    ck_assert_int_eq(lt_writer_open(&b, p, LT_WRITE_FORCE, "t", 0), 0); /* closed: replaced */
    ck_assert_int_eq(lt_writer_close(b, NULL, 0, NULL, 0), 0);
    /* a link to a file being written is the link's name: replaced */
    const char *l = scratch_path("link.tracy");
    ck_assert_int_eq(lt_writer_open(&a, p, LT_WRITE_FORCE, "t", 0), 0);
    ck_assert_int_eq(symlink(p, l), 0);
    ck_assert_int_eq(lt_writer_open(&b, l, LT_WRITE_FORCE, "t", 0), 0);
    ck_assert_int_eq(lt_writer_close(b, NULL, 0, NULL, 0), 0);
    ck_assert_int_eq(lt_writer_close(a, NULL, 0, NULL, 0), 0);
}
END_TEST

/* The header and the first unit, byte by byte against FORMAT.md. */
START_TEST(layout_matches_the_format) {
    const char *p = scratch_path("l.tracy");
    lt_writer *w;
    ck_assert_int_eq(lt_writer_open(&w, p, 0, "me 1.0", 0), 0);
    uint64_t hdr = lt_writer_bytes(w);
    ck_assert_uint_eq(hdr, 8 + 32 + 1 + 6);
    uint8_t raw[64];
    size_t n = lt_block_header(raw, LT_BLOCK_EVENTS, 3, 300, 1000);
    ck_assert_uint_eq(n, 1 + 1 + 2 + 2);
    raw[n++] = 0x81;
    raw[n++] = 5;
    lt_block_desc d = {.kind = LT_BLOCK_EVENTS, .process = 3, .thread = 300,
                       .n_events = 1, .first_ts = 1005, .last_ts = 1005};
    ck_assert_int_eq(lt_writer_block(w, &d, raw, n), 0);
    lt_total tot = {"events", 1};
    uint64_t units = lt_writer_bytes(w);
    ck_assert_int_eq(lt_writer_close(w, NULL, 0, &tot, 1), 0);

    FILE *f = fopen(p, "rb");
    uint8_t b[512];
    size_t len = fread(b, 1, sizeof b, f);
    fclose(f);
    static const uint8_t head[] = {0x50, 0x2A, 0x4D, 0x18, 39, 0, 0, 0,
                                   'T', 'R', 'C', 'Y', 'F', 'I', 'L', 'E', 1, 0, 0, 0};
    ck_assert_int_eq(memcmp(b, head, sizeof head), 0);
    ck_assert_int_eq(memcmp(b + 40, "\x06me 1.0", 7), 0);
    const uint8_t *u = b + hdr;
    static const uint8_t desc[] = {0x51, 0x2A, 0x4D, 0x18, 40, 0, 0, 0,
                                   1, 0, 0, 0, 3, 0, 0, 0, 44, 1, 0, 0, 8, 0, 0, 0};
    ck_assert_int_eq(memcmp(u, desc, sizeof desc), 0);
    uint32_t comp = u[24] | u[25] << 8;
    ck_assert_uint_eq(units, hdr + 48 + comp);
    ck_assert_int_eq(u[28], 1);                     /* n_events */
    ck_assert_int_eq(u[32] | u[33] << 8, 1005);     /* first_ts */
    ck_assert_int_eq(u[40] | u[41] << 8, 1005);     /* last_ts */
    ck_assert_int_eq(memcmp(u + 48, "\x28\xB5\x2F\xFD", 4), 0); /* zstd frame */
    ck_assert_int_eq(u[52] & 0x04, 0x04);           /* content checksum */
    /* trailer: found from the end of the file */
    ck_assert_int_eq(memcmp(b + len - 8, "TRCYEND1", 8), 0);
    uint32_t tcs = b[len - 16] | b[len - 15] << 8;
    const uint8_t *t = b + len - 8 - tcs;
    ck_assert_uint_eq((size_t)(t - b), units);
    ck_assert_int_eq(memcmp(t, "\x5E\x2A\x4D\x18", 4), 0);
    ck_assert_int_eq(memcmp(t + 8, "TRCYTRLR\x00\x01\x06" "events\x01", 17), 0);
}
END_TEST

START_TEST(disk_full_is_reported) {
    lt_writer *w;
    ck_assert_int_eq(lt_writer_open(&w, "/dev/full", LT_WRITE_FORCE, "t", 0), LT_ENOSPC);
    lt_builder *b;
    ck_assert_int_eq(lt_builder_open(&b, "/dev/full", LT_WRITE_FORCE, "t"), LT_ENOSPC);
}
END_TEST

START_TEST(oversized_block_is_refused) {
    lt_writer *w;
    ck_assert_int_eq(lt_writer_open(&w, scratch_path("big.tracy"), 0, NULL, 0), 0);
    uint8_t *raw = calloc(1, LT_MAX_BLOCK_RAW + 1);
    lt_block_desc d = {.kind = LT_BLOCK_META, .process = 1};
    ck_assert_int_eq(lt_writer_block(w, &d, raw, LT_MAX_BLOCK_RAW + 1), LT_ELIMIT);
    free(raw);
    ck_assert_int_eq(lt_writer_close(w, NULL, 0, NULL, 0), 0);
}
END_TEST

/* A file size limit hits in the middle of a unit: the error is EFBIG, it
 * sticks, and the file keeps every complete unit and nothing else. */
START_TEST(file_too_large_keeps_complete_units) {
    const char *p = scratch_path("fbig.tracy");
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 20000;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    lt_writer *w;
    ck_assert_int_eq(lt_writer_open(&w, p, 0, NULL, 1), 0);
    uint8_t raw[4096];
    uint32_t seed = 1;
    int ok = 0, rc = 0;
    for (int k = 0; k < 100 && rc == 0; k++) {
        size_t n = lt_block_header(raw, LT_BLOCK_META, 1, 0, 0);
        while (n < sizeof raw - 20) { /* incompressible PLOT_DEF names */
            raw[n++] = LT_TAG_PLOT_DEF;
            raw[n++] = (uint8_t)(1 + k);
            raw[n++] = 16;
            for (int i = 0; i < 16; i++) {
                seed = seed * 1103515245u + 12345u;
                raw[n++] = 'a' + (seed >> 16) % 26;
            }
        }
        lt_block_desc d = {.kind = LT_BLOCK_META, .process = 1};
        rc = lt_writer_block(w, &d, raw, n);
        if (rc == 0) ok++;
    }
    ck_assert_int_eq(rc, LT_EFBIG);
    ck_assert_int_gt(ok, 0);
    lt_block_desc d = {.kind = LT_BLOCK_META, .process = 1};
    ck_assert_int_eq(lt_writer_block(w, &d, raw, 8), LT_EFBIG); /* sticky */
    uint64_t kept = lt_writer_bytes(w);
    ck_assert_int_eq(lt_writer_close(w, NULL, 0, NULL, 0), LT_EFBIG);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    struct stat st;
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_uint_eq((uint64_t)st.st_size, kept);
    lt_reader *r;
    char detail[256];
    ck_assert_int_eq(lt_reader_open(&r, p, detail, sizeof detail), 0);
    ck_assert_uint_eq(lt_reader_info(r)->n_blocks, (uint64_t)ok);
    ck_assert_uint_eq(lt_reader_info(r)->bytes_ignored, 0);
    ck_assert_int_eq(lt_reader_info(r)->complete, 0);
    lt_reader_free(r);
}
END_TEST

START_TEST(builder_totals_reach_the_trailer) {
    const char *p = scratch_path("tot.tracy");
    lt_builder *b;
    ck_assert_int_eq(lt_builder_open(&b, p, 0, NULL), 0);
    ck_assert_int_eq(lt_builder_process(b, 1, 0, "h", "p", 0, NULL, 0, 0), 1);
    ck_assert_int_eq(lt_builder_process(b, 2, 1, "h", "p", 0, NULL, 0, 0), 2);
    ck_assert_int_eq(lt_builder_thread(b, 1, 1, "a"), 1);
    ck_assert_int_eq(lt_builder_thread(b, 2, 1, "b"), 1);
    ck_assert_int_eq(lt_builder_loc(b, 1, LT_LOC_USER, "z", "z.c", 1), 1);
    ck_assert_int_eq(lt_builder_plot(b, 2, "p"), 1);
    ck_assert_int_eq(lt_builder_zone_begin(b, 1, 1, 10, 1), 0);
    ck_assert_int_eq(lt_builder_zone_end(b, 1, 1, 20), 0);
    ck_assert_int_eq(lt_builder_message(b, 2, 1, 5, "m"), 0);
    ck_assert_int_eq(lt_builder_plot_value(b, 2, 1, 6, 1, 2.0), 0);
    ck_assert_int_eq(lt_builder_lost(b, 2, 1, 30, 4), 0);
    ck_assert_int_eq(lt_builder_process_end(b, 1, 40, LT_PROC_CLEAN, ""), 0);
    ck_assert_int_eq(lt_builder_process_end(b, 1, 40, LT_PROC_CLEAN, ""), LT_EINVAL);
    ck_assert_int_eq(lt_builder_close(b, 0), 0);
    lt_reader *r;
    ck_assert_int_eq(lt_reader_open(&r, p, NULL, 0), 0);
    static const struct { const char *name; uint64_t v; } want[] = {
        {"processes", 2}, {"threads", 2}, {"events", 5}, {"zones", 1},
        {"messages", 1}, {"plots", 1}, {"frames", 0}, {"lost_events", 4},
        {"first_ts", 5}, {"last_ts", 30}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint64_t v = 99;
        ck_assert_msg(lt_reader_total(r, want[i].name, &v) == 1, "%s", want[i].name);
        ck_assert_msg(v == want[i].v, "%s = %llu", want[i].name, (unsigned long long)v);
    }
    uint64_t body = 0;
    ck_assert_int_eq(lt_reader_total(r, "body_bytes", &body), 1);
    ck_assert_uint_eq(body, lt_reader_info(r)->body_bytes);
    const lt_process *pr = lt_reader_process(r, 1);
    ck_assert_int_eq(pr->status, LT_PROC_CLEAN);
    ck_assert_uint_eq(pr->end_ts, 40);
    ck_assert_uint_eq(pr->events_received, 2);
    ck_assert_int_eq(lt_reader_process(r, 2)->rank, 1);
    lt_reader_free(r);
}
END_TEST

Suite *writer_suite(void) {
    Suite *s = suite_create("writer");
    TCase *t = tcase_create("writer");
    tcase_add_checked_fixture(t, setup_dir, scratch_remove);
    tcase_add_test(t, errors_have_messages);
    tcase_add_test(t, refuses_existing_file_unless_forced);
    tcase_add_test(t, force_refuses_a_file_being_written);
    tcase_add_test(t, layout_matches_the_format);
    tcase_add_test(t, disk_full_is_reported);
    tcase_add_test(t, oversized_block_is_refused);
    tcase_add_test(t, file_too_large_keeps_complete_units);
    tcase_add_test(t, builder_totals_reach_the_trailer);
    suite_add_tcase(s, t);
    return s;
}
