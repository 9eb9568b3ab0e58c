/* fuzz_convert.c -- libFuzzer target: the converters on any input the reader
 * opens. Runs tracy-json's and tracy-csv's own code (their main(), renamed
 * at compile time) and tracy-sql's exporter into a database file, and
 * checks what they produce, not just that they survive:
 *  - JSON output parses (cJSON) as an array of trace events;
 *  - every CSV record has as many fields as the header (RFC 4180 quoting);
 *  - tracy-export's speedscope JSON parses, and its other formats (pstats,
 *    callgrind, folded, html) are written with a documented exit code;
 *  - the database (a file in /dev/shm, its zone pages written by tracy-sql
 *    itself) passes SQLite's integrity_check and has one slice per zone the
 *    reader delivers.
 * Inputs as for fuzz_reader (a file, or 0xB1 and a list of blocks). The
 * converters' warnings go to stderr: run with -close_fd_mask=2 (make fuzz
 * does) to keep them out of the fuzzer's log. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <sqlite3.h>
#include <stdint.h>
#include <string.h>
#include "fuzz_common.h"
#include "convert/sql/sql_export.h"

int json_main(int argc, char **argv);
int csv_main(int argc, char **argv);
int export_main(int argc, char **argv);

static int out_fd = -1;
static char out_path[64];

static size_t out_read(char **buf) {
    off_t n = lseek(out_fd, 0, SEEK_END);
    *buf = malloc((size_t)n + 1);
    if (n > 0 && pread(out_fd, *buf, (size_t)n, 0) != n) abort();
    (*buf)[n] = 0;
    return (size_t)n;
}

/* Exit codes the converters document: 0 ok, 2 input, 3 truncated, 4 corrupt. */
static void check_code(const char *what, int rc) {
    if (rc != 0 && rc != 2 && rc != 3 && rc != 4) {
        fprintf(stderr, "%s: undocumented exit code %d\n", what, rc);
        abort();
    }
}

static void run_json(const char *in) {
    char *argv[] = {"tracy-json", "--allow-truncated", "-o", out_path, (char *)in, NULL};
    optind = 0;
    if (ftruncate(out_fd, 0) != 0) abort();
    int rc = json_main(5, argv);
    check_code("tracy-json", rc);
    char *s;
    size_t n = out_read(&s);
    /* Refused at open (2, or 4 for a bad unit met by the descriptor scan):
     * nothing written. Otherwise the document is complete. */
    if ((rc == 2 || rc == 4) && n == 0) {
        free(s);
        return;
    }
    cJSON *j = cJSON_ParseWithLength(s, n);
    if (!j || !cJSON_IsArray(j)) {
        fprintf(stderr, "tracy-json (exit %d) wrote invalid JSON: %.300s\n", rc, s);
        abort();
    }
    cJSON_Delete(j);
    free(s);
}

/* Fields of each RFC 4180 record; aborts when one differs from the header. */
static void check_csv(const char *s, size_t n, int rc) {
    long fields = 1, header = -1, rec = 0;
    int quoted = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (quoted) {
            if (c == '"') {
                if (i + 1 < n && s[i + 1] == '"') i++;
                else quoted = 0;
            }
            continue;
        }
        if (c == '"') quoted = 1;
        else if (c == ',') fields++;
        else if (c == '\n') {
            if (header < 0) header = fields;
            else if (fields != header) {
                fprintf(stderr, "tracy-csv (exit %d): record %ld has %ld fields, header %ld\n",
                        rc, rec, fields, header);
                abort();
            }
            rec++;
            fields = 1;
        }
    }
    if (quoted || (n && s[n - 1] != '\n')) {
        fprintf(stderr, "tracy-csv (exit %d): unterminated output\n", rc);
        abort();
    }
}

static void run_csv(const char *in, const char *mode) {
    char *argv[] = {"tracy-csv", "--allow-truncated", "-o", out_path, (char *)in,
                    (char *)mode, NULL};
    optind = 0;
    if (ftruncate(out_fd, 0) != 0) abort();
    int rc = csv_main(mode ? 6 : 5, argv);
    check_code("tracy-csv", rc);
    char *s;
    size_t n = out_read(&s);
    check_csv(s, n, rc);
    free(s);
}

static void run_export(const char *in, const char *fmt) {
    char *argv[] = {"tracy-export", "--allow-truncated", "-f", (char *)fmt, "-o", out_path,
                    (char *)in, NULL};
    optind = 0;
    if (ftruncate(out_fd, 0) != 0) abort();
    int rc = export_main(7, argv);
    check_code("tracy-export", rc);
    if (strcmp(fmt, "speedscope") != 0) return;
    char *s;
    size_t n = out_read(&s);
    cJSON *j = n ? cJSON_ParseWithLength(s, n) : NULL;
    if (n && (!j || !cJSON_IsArray(cJSON_GetObjectItem(j, "profiles")))) {
        fprintf(stderr, "tracy-export (exit %d) wrote invalid speedscope JSON: %.300s\n", rc, s);
        abort();
    }
    cJSON_Delete(j);
    free(s);
}

static uint64_t scalar(sqlite3 *db, const char *q) {
    sqlite3_stmt *st;
    uint64_t v = 0;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", q, sqlite3_errmsg(db));
        abort();
    }
    if (sqlite3_step(st) == SQLITE_ROW) v = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void run_sql(const char *in) {
    lt_reader *r = NULL;
    if (lt_reader_open(&r, in, NULL, 0) != 0) return;
    /* What the reader delivers, for comparison. */
    lt_event ev;
    uint64_t zones = 0, messages = 0;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0) {
        zones += ev.type == LT_EV_ZONE_END;
        messages += ev.type == LT_EV_MESSAGE;
    }
    int clean = rc == 0;
    lt_reader_rewind(r);
    char db_path[64];
    snprintf(db_path, sizeof db_path, "/dev/shm/fuzz-convert-%d.db", (int)getpid());
    unlink(db_path);
    sqlx_source src = {in, 0, 0, 512}; /* small pages: deep trees */
    int read_exit = 0;
    if (sqlx_export(r, db_path, &src, &read_exit) != 0) {
        fprintf(stderr, "sqlx_export failed on a readable trace\n");
        abort();
    }
    sqlite3 *db;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) abort();
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW || strcmp((const char *)sqlite3_column_text(st, 0), "ok")) {
        fprintf(stderr, "tracy-sql wrote a damaged database: %s\n",
                (const char *)sqlite3_column_text(st, 0));
        abort();
    }
    sqlite3_finalize(st);
    if (clean) {
        uint64_t s = scalar(db, "SELECT count(*) FROM slice");
        uint64_t m = scalar(db, "SELECT count(*) FROM message");
        if (read_exit != 0 || s != zones || m != messages) {
            fprintf(stderr, "tracy-sql: %llu slices, %llu messages; reader: %llu zones, "
                    "%llu messages (read_exit %d)\n", (unsigned long long)s,
                    (unsigned long long)m, (unsigned long long)zones,
                    (unsigned long long)messages, read_exit);
            abort();
        }
    }
    sqlite3_close(db);
    unlink(db_path);
    lt_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[64];
    int fd = fz_memfd(path, sizeof path);
    if (out_fd < 0) {
        out_fd = memfd_create("fuzz-out", 0);
        if (out_fd < 0) abort();
        snprintf(out_path, sizeof out_path, "/proc/self/fd/%d", out_fd);
    }
    fz_input(fd, path, data, size);
    run_json(path);
    run_csv(path, NULL);
    run_csv(path, "--stats");
    static const char *const formats[] = {"pstats", "callgrind", "folded", "speedscope", "html"};
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++) run_export(path, formats[i]);
    run_sql(path);
    return 0;
}
