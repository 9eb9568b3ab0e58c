/* check_sqlbulk.c -- tracy-sql's bulk loading units: the bounded-memory key
 * sorter (convert/sql/sql_sort.c) against qsort, and the b-tree page
 * writer (convert/sql/sql_btree.c) checked by the real SQLite library:
 * trees of every height and integers of every size pass `PRAGMA
 * integrity_check` and answer queries through the table and both indexes.
 * (cv_err comes from prog/prog.c, compiled into check_convert.c.) */
#define _GNU_SOURCE /* qsort_r, as convert/sql/sql_sort.c */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The modules under test are compiled into this suite. */
#include "../convert/sql/sql_btree.c"
#include "../convert/sql/sql_sort.c"

/* ---- Sorter ----------------------------------------------------------- */

/* Keys of width W: (a, b, id) and two more values, compared after them. */
#define W 5

typedef struct key5 {
    int64_t a, b, id, c, d;
} key5;

typedef struct collected {
    key5 *k;
    size_t n;
    int stop_at; /* return 7 when this many keys were seen (0: never) */
    unsigned w;  /* integers per key (the first five are kept) */
} collected;

static int collect(void *ctx, const int64_t *k) {
    collected *c = ctx;
    memset(&c->k[c->n], 0, sizeof(key5));
    memcpy(&c->k[c->n++], k, (c->w < W ? c->w : W) * sizeof(int64_t));
    return c->stop_at && (int)c->n == c->stop_at ? 7 : 0;
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Keys of pattern p: 0 in the usual order (id rising, b rising within a),
 * 1 random, 2 negative and huge `a`, 3 `b` falling. The carried values
 * derive from the key and a random number. */
static void make_keys(key5 *k, size_t n, int p) {
    for (size_t i = 0; i < n; i++) {
        k[i].id = (int64_t)i + 1;
        k[i].a = (int64_t)(next_rand() % 37);
        k[i].b = (int64_t)i * 10;
        if (p == 1) k[i].b = (int64_t)(next_rand() % 1000), k[i].id = (int64_t)next_rand();
        if (p == 2) k[i].a = (int64_t)next_rand();
        if (p == 3) k[i].b = -(int64_t)i;
        k[i].c = (int64_t)next_rand();
        k[i].d = k[i].id ^ k[i].c;
    }
}

START_TEST(sorter_sorts_like_qsort_in_memory_and_with_runs_on_disk) {
    static const size_t sizes[] = {0, 1, 999, 1000, 1001, 25000};
    for (int p = 0; p < 4; p++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
            size_t n = sizes[si];
            key5 *in = malloc((n + 1) * sizeof *in), *want = malloc((n + 1) * sizeof *want);
            make_keys(in, n, p);
            memcpy(want, in, n * sizeof *in);
            qsort_r(want, n, sizeof *want, key_qcmp, &(unsigned){W});
            sqs_sorter *s = sqs_new(1000, W);
            ck_assert_ptr_nonnull(s);
            for (size_t i = 0; i < n; i++) ck_assert_int_eq(sqs_add(s, &in[i].a), 0);
            collected c = {malloc((n + 1) * sizeof *c.k), 0, 0, W};
            ck_assert_int_eq(sqs_finish(s, collect, &c), 0);
            ck_assert_uint_eq(c.n, n);
            ck_assert_msg(memcmp(c.k, want, n * sizeof *want) == 0, "pattern %d, %zu keys", p, n);
            sqs_free(s);
            free(c.k);
            free(in);
            free(want);
        }
}
END_TEST

START_TEST(sorter_takes_keys_of_three_to_eight_integers) {
    ck_assert_ptr_null(sqs_new(10, SQS_MIN_WIDTH - 1));
    ck_assert_ptr_null(sqs_new(10, SQS_MAX_WIDTH + 1));
    for (unsigned w = SQS_MIN_WIDTH; w <= SQS_MAX_WIDTH; w++) {
        sqs_sorter *s = sqs_new(7, w); /* several runs */
        ck_assert_ptr_nonnull(s);
        for (int64_t i = 0; i < 50; i++) {
            int64_t k[SQS_MAX_WIDTH];
            for (unsigned j = 0; j < w; j++) k[j] = (49 - i) * 100 + (int64_t)j;
            ck_assert_int_eq(sqs_add(s, k), 0);
        }
        key5 got[50];
        collected c = {got, 0, 0, w};
        ck_assert_int_eq(sqs_finish(s, collect, &c), 0);
        ck_assert_uint_eq(c.n, 50);
        for (int64_t i = 0; i < 50; i++) {
            ck_assert_int_eq(got[i].a, i * 100);
            ck_assert_int_eq(got[i].id, i * 100 + 2);
            if (w >= 5) ck_assert_int_eq(got[i].d, i * 100 + 4);
        }
        sqs_free(s);
    }
}
END_TEST

START_TEST(sorter_stops_when_the_receiver_fails) {
    for (size_t n = 500; n <= 5000; n += 4500) { /* one run, then several */
        sqs_sorter *s = sqs_new(1000, W);
        for (size_t i = 0; i < n; i++) {
            const key5 k = {1, 0, (int64_t)i, 0, 0};
            ck_assert_int_eq(sqs_add(s, &k.a), 0);
        }
        collected c = {malloc(n * sizeof *c.k), 0, 5, W};
        ck_assert_int_eq(sqs_finish(s, collect, &c), 7);
        ck_assert_uint_eq(c.n, 5);
        sqs_free(s);
        free(c.k);
    }
}
END_TEST

/* ---- B-trees ------------------------------------------------------------ */

static const int64_t values[] = {0, 1, -1, 127, 128, -129, 32767, 32768, 8388608, 2147483648LL,
                                 140737488355328LL, INT64_MIN, INT64_MAX, 2, -2147483649LL};
#define NVALUES (sizeof values / sizeof *values)

/* Row i (from 0): rowid 3i + 5; a = i % 7; b one of `values`; c NULL on
 * every fifth row. */
static void row_of(size_t i, int64_t v[4], uint32_t *nulls) {
    v[0] = 0;
    v[1] = (int64_t)(i % 7);
    v[2] = values[i % NVALUES];
    v[3] = (int64_t)(i * 1000003 % 977);
    *nulls = 1u | (i % 5 == 4 ? 1u << 3 : 0);
}

static int64_t rowid_of(size_t i) { return (int64_t)i * 3 + 5; }

static int64_t scalar(sqlite3 *db, const char *q) {
    sqlite3_stmt *st;
    ck_assert_msg(sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK, "%s: %s", q,
                  sqlite3_errmsg(db));
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static int cmp_abr(const void *x, const void *y) {
    const int64_t *p = x, *q = y;
    for (int i = 0; i < 3; i++)
        if (p[i] != q[i]) return p[i] < q[i] ? -1 : 1;
    return 0;
}

/* Puts the pages after the file's last one up to `last` on the freelist
 * (trunk pages only are written: the file stays sparse), so that the trees
 * loaded next start there. */
static void free_pages_up_to(sqb_file *f, uint32_t last) {
    uint32_t per = f->usable / 4 - 8, first = f->npages + 1;
    uint8_t *buf = calloc(1, f->page_size);
    for (uint32_t trunk = first; trunk <= last;) {
        uint32_t leaves = last - trunk < per ? last - trunk : per;
        uint32_t next = trunk + leaves + 1 <= last ? trunk + leaves + 1 : 0;
        memset(buf, 0, f->page_size);
        put32(buf, next);
        put32(buf + 4, leaves);
        for (uint32_t i = 0; i < leaves; i++) put32(buf + 8 + 4 * i, trunk + 1 + i);
        ck_assert_int_eq(write_page(f, trunk, buf), 0);
        trunk = next ? next : last + 1;
    }
    free(buf);
    put32(f->hdr + 32, first);
    put32(f->hdr + 36, last - first + 1);
    f->npages = last;
}

/* Bulk-loads n rows into a fresh database of the given page size and
 * checks it with SQLite; with `near_lock`, the trees start a few pages
 * before the page holding SQLite's lock bytes (1 GiB into the file). */
static void load_and_check_at(uint32_t page_size, size_t n, int near_lock) {
    char path[] = "/tmp/check_sqlbulk.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    unlink(path);
    sqlite3 *db;
    char sql[512];
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    snprintf(sql, sizeof sql,
             "PRAGMA page_size=%u; PRAGMA journal_mode=OFF;"
             " CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b INTEGER, c INTEGER);"
             " CREATE INDEX t_ab ON t(a, b); CREATE INDEX t_c ON t(c);"
             " CREATE TABLE other(x); INSERT INTO other VALUES ('kept');", page_size);
    ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    uint32_t root[3];
    root[0] = (uint32_t)scalar(db, "SELECT rootpage FROM sqlite_schema WHERE name = 't'");
    root[1] = (uint32_t)scalar(db, "SELECT rootpage FROM sqlite_schema WHERE name = 't_ab'");
    root[2] = (uint32_t)scalar(db, "SELECT rootpage FROM sqlite_schema WHERE name = 't_c'");
    ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);

    sqb_file *f = sqb_file_open(path);
    ck_assert_ptr_nonnull(f);
    if (near_lock) free_pages_up_to(f, 0x40000000u / page_size - 3);
    sqb_tree *t = sqb_tree_new(f, root[0], 0);
    int64_t (*ab)[3] = malloc((n + 1) * sizeof *ab), (*c)[3] = malloc((n + 1) * sizeof *c);
    size_t nc = 0;
    uint8_t rec[SQB_RECORD_MAX];
    for (size_t i = 0; i < n; i++) {
        int64_t v[4];
        uint32_t nulls;
        row_of(i, v, &nulls);
        ck_assert_int_eq(sqb_table_add(t, rowid_of(i), rec, sqb_record(f, rec, v, nulls, 4)), 0);
        ab[i][0] = v[1], ab[i][1] = v[2], ab[i][2] = rowid_of(i);
        if (!(nulls & 8)) c[nc][0] = v[3], c[nc][1] = rowid_of(i), c[nc][2] = 0, nc++;
    }
    ck_assert_int_eq(sqb_tree_finish(t), 0);
    /* NULL sorts first in an index: the rows without c lead t_c. */
    qsort(ab, n, sizeof *ab, cmp_abr);
    qsort(c, nc, sizeof *c, cmp_abr);
    sqb_tree *ia = sqb_tree_new(f, root[1], 1), *ic = sqb_tree_new(f, root[2], 1);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(sqb_index_add(ia, rec, sqb_record(f, rec, ab[i], 0, 3)), 0);
    for (size_t i = 0; i < n; i++)
        if (i % 5 == 4) {
            int64_t v[2] = {0, rowid_of(i)};
            ck_assert_int_eq(sqb_index_add(ic, rec, sqb_record(f, rec, v, 1, 2)), 0);
        }
    for (size_t i = 0; i < nc; i++)
        ck_assert_int_eq(sqb_index_add(ic, rec, sqb_record(f, rec, c[i], 0, 2)), 0);
    ck_assert_int_eq(sqb_tree_finish(ia), 0);
    ck_assert_int_eq(sqb_tree_finish(ic), 0);
    ck_assert_int_eq(sqb_file_close(f), 0);
    free(ab);
    free(c);

    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_msg(strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0,
                  "page size %u, %zu rows: %s", page_size, n, sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    ck_assert_int_eq(scalar(db, "SELECT count(*) FROM t"), (int64_t)n);
    ck_assert_int_eq(scalar(db, "SELECT count(*) FROM t WHERE c IS NULL"), (int64_t)(n / 5));
    if (n) {
        ck_assert_int_eq(scalar(db, "SELECT max(id) FROM t"), rowid_of(n - 1));
        snprintf(sql, sizeof sql, "SELECT b FROM t WHERE id = %lld", (long long)rowid_of(n - 1));
        ck_assert_int_eq(scalar(db, sql), values[(n - 1) % NVALUES]);
    }
    /* Seeks through every index agree with scans. */
    for (int a = 0; a < 7; a++) {
        char q1[256], q2[256];
        snprintf(q1, sizeof q1, "SELECT count(*) * 1000003 + total(id) FROM t INDEXED BY t_ab"
                 " WHERE a = %d AND b >= -1", a);
        snprintf(q2, sizeof q2, "SELECT count(*) * 1000003 + total(id) FROM t NOT INDEXED"
                 " WHERE a = %d AND b >= -1", a);
        ck_assert_int_eq(scalar(db, q1), scalar(db, q2));
        snprintf(q1, sizeof q1, "SELECT count(*) FROM t INDEXED BY t_c WHERE c = %d", a * 97);
        snprintf(q2, sizeof q2, "SELECT count(*) FROM t NOT INDEXED WHERE c = %d", a * 97);
        ck_assert_int_eq(scalar(db, q1), scalar(db, q2));
    }
    ck_assert_int_eq(scalar(db, "SELECT count(*) FROM other WHERE x = 'kept'"), 1);
    /* SQLite goes on writing the file as usual. */
    ck_assert_int_eq(sqlite3_exec(db, "INSERT INTO t(id, a, b, c) VALUES (4, 1, 2, 3);"
                                      " DELETE FROM t WHERE id % 2 = 0;", NULL, NULL, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    sqlite3_close(db);
    unlink(path);
}

static void load_and_check(uint32_t page_size, size_t n) { load_and_check_at(page_size, n, 0); }

START_TEST(btrees_of_every_height_pass_integrity_check) {
    static const size_t sizes[] = {0, 1, 2, 17, 300, 5000, 40000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) load_and_check(512, sizes[i]);
    load_and_check(4096, 40000);
    load_and_check(65536, 5000);
    load_and_check(65536, 150000);
}
END_TEST

/* A database past 1 GiB: SQLite never uses the page of its lock bytes, and
 * a tree that took it failed integrity_check ("2nd reference to page"). */
START_TEST(btrees_skip_the_lock_byte_page) {
    load_and_check_at(65536, 20000, 1);
    load_and_check_at(4096, 20000, 1);
}
END_TEST

Suite *sqlbulk_suite(void) {
    Suite *s = suite_create("sqlbulk");
    TCase *t = tcase_create("sqlbulk");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, sorter_sorts_like_qsort_in_memory_and_with_runs_on_disk);
    tcase_add_test(t, sorter_takes_keys_of_three_to_eight_integers);
    tcase_add_test(t, sorter_stops_when_the_receiver_fails);
    tcase_add_test(t, btrees_of_every_height_pass_integrity_check);
    tcase_add_test(t, btrees_skip_the_lock_byte_page);
    suite_add_tcase(s, t);
    return s;
}
