/* sql.c -- tracy-sql: exports a trace to SQLite (-o FILE) and runs queries on
 * it, printing an aligned table on a terminal, CSV otherwise (or JSON). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convert/convert.h"
#include "convert/sql/sql_export.h"

enum out_fmt { FMT_AUTO, FMT_TABLE, FMT_CSV, FMT_JSON };

typedef struct sql_opts {
    const char *path, *output;
    char **queries;
    int nqueries;
    int fmt, cache, allow_truncated;
    uint32_t page_size;
} sql_opts;

static const char usage_text[] =
    "Usage: tracy-sql [OPTIONS] TRACE.tracy [QUERY...]\n"
    "Exports a .tracy file to SQLite (schema: Perfetto's trace processor tables\n"
    "plus func, signpost, message, function_stats ...; see tracy-sql(1)) and runs\n"
    "SQL queries on it.\n"
    "\n"
    "  -o, --output FILE      write the database to FILE (replaced atomically);\n"
    "                         QUERY arguments then run on FILE\n"
    "  QUERY                  without -o, queries run on a temporary database\n"
    "      --cache            keep the database next to the trace as\n"
    "                         TRACE.tracy.sqlite and reuse it while the trace's\n"
    "                         size and modification time are unchanged (about\n"
    "                         63 bytes per zone: far larger than the trace)\n"
    "      --csv              print results as CSV (the default unless a terminal)\n"
    "      --json             print results as a JSON array of objects\n"
    "      --table            print results as an aligned table (the default on a\n"
    "                         terminal)\n"
    "      --allow-truncated  exit 0 on a truncated trace (still warns)\n"
    "      --page-size BYTES  page size of a new database, a power of two from 512\n"
    "                         to 65536 (default 65536)\n"
    "  -h, --help             print this help and exit\n"
    "  -V, --version          print the version and exit\n"
    "\n"
    "Exit status: 0 ok, 1 usage or a failed query, 2 cannot read input or not a\n"
    "trace, 3 truncated input, 4 corrupt input, 5 cannot write output.\n";

/* ---- Files of the run's own, removed when it is cut short ---------------- */

/* The temporary database (TMP_DB) until the queries hold it open, and an
 * export not yet renamed into place (TMP_EXPORT): a SIGINT, SIGTERM, SIGHUP
 * or SIGPIPE (`tracy-sql ... | head`) removes them, then ends the process
 * by that signal as it would have. */
enum { TMP_DB, TMP_EXPORT, N_TMP };
static char *volatile tmp_files[N_TMP];

static void on_cut(int sig) {
    for (int i = 0; i < N_TMP; i++)
        if (tmp_files[i]) unlink(tmp_files[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Installs on_cut where the signal's action is the default one (a signal
 * the caller ignores, as nohup does, stays ignored). */
static void remove_on_cut(void) {
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    struct sigaction sa = {.sa_handler = on_cut}, old;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
            sigaction(sigs[i], &sa, NULL);
}

static void hold_tmp(int slot, char *path) {
    __atomic_store_n(&tmp_files[slot], path, __ATOMIC_SEQ_CST);
}

/* ---- Building the database ---------------------------------------------- */

/* Exports into `dest` through a temporary file renamed over it on success.
 * Returns 0 (with *read_exit) or an exit code. */
static int export_to(lt_reader *r, const sqlx_source *src, const char *dest,
                     int *read_exit) {
    size_t n = strlen(dest) + 32;
    char *tmp = malloc(n);
    if (!tmp) {
        cv_err("out of memory");
        return CV_EXIT_OUTPUT;
    }
    snprintf(tmp, n, "%s.tmp-%ld", dest, (long)getpid());
    int code = CV_EXIT_OUTPUT;
    unlink(tmp);
    hold_tmp(TMP_EXPORT, tmp);
    if (sqlx_export(r, tmp, src, read_exit) != 0) goto out;
    if (rename(tmp, dest) != 0) {
        cv_err("%s: cannot write: %s", dest, strerror(errno));
        goto out;
    }
    code = 0;
out:
    hold_tmp(TMP_EXPORT, NULL);
    if (code) unlink(tmp);
    free(tmp);
    return code;
}

/* 1 when `db` is a cache made from a file of the source's size and mtime. */
static int cache_valid(const char *db_path, const sqlx_source *src) {
    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    int ok = 0;
    if (access(db_path, R_OK) != 0) return 0;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db,
            "SELECT (SELECT int_value FROM metadata WHERE name = 'source_size'),"
            " (SELECT int_value FROM metadata WHERE name = 'source_mtime_ns'),"
            " (SELECT int_value FROM metadata WHERE name = 'schema_version')",
            -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        ok = sqlite3_column_int64(s, 0) == (int64_t)src->size &&
             sqlite3_column_int64(s, 1) == src->mtime_ns && sqlite3_column_int64(s, 2) == SQLX_SCHEMA_VERSION;
    sqlite3_finalize(s);
    sqlite3_close(db);
    return ok;
}

/* ---- Printing results --------------------------------------------------- */

typedef struct table {
    char **cells;   /* row-major, ncols per row, header first */
    unsigned char *right; /* per cell: right-align (numbers) */
    size_t n, cap;
    int ncols;
} table;

static int table_add(table *t, const char *s, size_t len, int right) {
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        char **c = realloc(t->cells, cap * sizeof *c);
        if (!c) return -1;
        t->cells = c;
        unsigned char *r = realloc(t->right, cap);
        if (!r) return -1;
        t->right = r;
        t->cap = cap;
    }
    char *d = malloc(len + 1);
    if (!d) return -1;
    memcpy(d, s, len);
    d[len] = '\0';
    t->cells[t->n] = d;
    t->right[t->n++] = (unsigned char)right;
    return 0;
}

static size_t width(const char *s) {
    size_t w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static void table_print(table *t, cv_out *o) {
    size_t *w = calloc((size_t)t->ncols, sizeof *w);
    if (!w) return;
    for (size_t i = 0; i < t->n; i++) {
        size_t k = width(t->cells[i]);
        if (k > w[i % (size_t)t->ncols]) w[i % (size_t)t->ncols] = k;
    }
    for (size_t i = 0; i < t->n; i++) {
        size_t c = i % (size_t)t->ncols, pad = w[c] - width(t->cells[i]);
        int last = c + 1 == (size_t)t->ncols;
        if (t->right[i])
            for (size_t k = 0; k < pad; k++) cv_out_ch(o, ' ');
        cv_out_text(o, t->cells[i], strlen(t->cells[i]));
        if (!t->right[i] && !last)
            for (size_t k = 0; k < pad; k++) cv_out_ch(o, ' ');
        cv_out_str(o, last ? "\n" : "  ");
        if (last && i + 1 == (size_t)t->ncols) { /* rule under the header */
            for (size_t k = 0; k < (size_t)t->ncols; k++) {
                for (size_t j = 0; j < w[k]; j++) cv_out_ch(o, '-');
                cv_out_str(o, k + 1 == (size_t)t->ncols ? "\n" : "  ");
            }
        }
    }
    free(w);
}

static void table_free(table *t) {
    for (size_t i = 0; i < t->n; i++) free(t->cells[i]);
    free(t->cells);
    free(t->right);
}

/* Text of a column value (NULL -> ""); reals in shortest round-trip form. */
static const char *cell_text(sqlite3_stmt *s, int c, char *buf, size_t cap, size_t *len) {
    switch (sqlite3_column_type(s, c)) {
    case SQLITE_NULL: *len = 0; return "";
    case SQLITE_FLOAT: {
        double v = sqlite3_column_double(s, c);
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(buf, cap, "%.*g", prec, v);
            if (strtod(buf, NULL) == v) break;
        }
        *len = strlen(buf);
        return buf;
    }
    default: {
        const char *t = (const char *)sqlite3_column_text(s, c);
        *len = (size_t)sqlite3_column_bytes(s, c);
        return t ? t : "";
    }
    }
}

static void json_value(sqlite3_stmt *s, int c, cv_out *o) {
    char buf[64];
    size_t len;
    int type = sqlite3_column_type(s, c);
    if (type == SQLITE_NULL || (type == SQLITE_FLOAT && !isfinite(sqlite3_column_double(s, c)))) {
        cv_out_str(o, "null");
        return;
    }
    const char *t = cell_text(s, c, buf, sizeof buf, &len);
    if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) cv_out_write(o, t, len);
    else cv_out_json(o, t, len);
}

/* Steps `s` to the end printing its rows; returns 0 or -1 (query error). */
static int print_rows(sqlite3_stmt *s, int fmt, cv_out *o, sqlite3 *db) {
    int ncols = sqlite3_column_count(s), rc, nrows = 0;
    char buf[64];
    size_t len;
    table t = {.ncols = ncols};
    if (fmt == FMT_CSV)
        for (int c = 0; c < ncols; c++) {
            const char *name = sqlite3_column_name(s, c);
            cv_out_csv(o, name, strlen(name), ',');
            cv_out_ch(o, c + 1 < ncols ? ',' : '\n');
        }
    if (fmt == FMT_TABLE)
        for (int c = 0; c < ncols; c++)
            if (table_add(&t, sqlite3_column_name(s, c), strlen(sqlite3_column_name(s, c)), 0))
                goto oom;
    if (fmt == FMT_JSON) cv_out_ch(o, '[');
    while ((rc = sqlite3_step(s)) == SQLITE_ROW && !o->err) {
        if (fmt == FMT_JSON) cv_out_str(o, nrows ? ",\n{" : "\n{");
        for (int c = 0; c < ncols; c++) {
            int type = sqlite3_column_type(s, c);
            if (fmt == FMT_JSON) {
                const char *name = sqlite3_column_name(s, c);
                if (c) cv_out_ch(o, ',');
                cv_out_json(o, name, strlen(name));
                cv_out_ch(o, ':');
                json_value(s, c, o);
                continue;
            }
            const char *txt = cell_text(s, c, buf, sizeof buf, &len);
            if (fmt == FMT_CSV) {
                cv_out_csv(o, txt, len, ',');
                cv_out_ch(o, c + 1 < ncols ? ',' : '\n');
            } else if (table_add(&t, txt, len, type == SQLITE_INTEGER || type == SQLITE_FLOAT)) {
                goto oom;
            }
        }
        if (fmt == FMT_JSON) cv_out_ch(o, '}');
        nrows++;
    }
    if (fmt == FMT_JSON) cv_out_str(o, nrows ? "\n]\n" : "]\n");
    if (fmt == FMT_TABLE && ncols) table_print(&t, o);
    table_free(&t);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        cv_err("query failed: %s", sqlite3_errmsg(db));
        return -1;
    }
    return 0;
oom:
    table_free(&t);
    cv_err("out of memory");
    return -1;
}

/* Runs every statement of `sql`; returns 0 or CV_EXIT_USAGE. */
static int run_query(sqlite3 *db, const char *sql, int fmt, cv_out *o, int *printed) {
    const char *tail = sql;
    while (tail && *tail) {
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(db, tail, -1, &s, &tail) != SQLITE_OK) {
            cv_err("query failed: %s", sqlite3_errmsg(db));
            return CV_EXIT_USAGE;
        }
        if (!s) continue; /* whitespace or a comment */
        if (sqlite3_column_count(s) && (*printed)++ && fmt != FMT_JSON) cv_out_ch(o, '\n');
        int rc = print_rows(s, fmt, o, db);
        sqlite3_finalize(s);
        if (rc) return CV_EXIT_USAGE;
    }
    return 0;
}

/* Runs the queries on db_path; a temporary database is removed once open,
 * so that nothing is left of it however the process ends. */
static int run_queries(const sql_opts *o, const char *db_path, int is_temp) {
    sqlite3 *db = NULL;
    cv_out out;
    int code = 0, printed = 0;
    /* (a temporary one is read once before its name goes: SQLite has it
       open then) */
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        (is_temp &&
         sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) != SQLITE_OK)) {
        cv_err("%s: cannot open database: %s", db_path, db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return CV_EXIT_INPUT;
    }
    if (is_temp) {
        unlink(db_path);
        hold_tmp(TMP_DB, NULL);
    }
    if (cv_out_open(&out, NULL)) {
        sqlite3_close(db);
        return CV_EXIT_OUTPUT;
    }
    int fmt = o->fmt != FMT_AUTO ? o->fmt : isatty(1) ? FMT_TABLE : FMT_CSV;
    for (int i = 0; i < o->nqueries && !code; i++)
        code = run_query(db, o->queries[i], fmt, &out, &printed);
    if (cv_out_close(&out, NULL)) code = CV_EXIT_OUTPUT;
    sqlite3_close(db);
    return code;
}

/* ---- Main flow ---------------------------------------------------------- */

/* Picks the database the queries run on, exporting it when needed. On
 * success *db_path is malloc'd and *is_temp says whether to delete it. */
static int prepare_db(const sql_opts *o, lt_reader *r, const sqlx_source *src,
                      char **db_path, int *is_temp, int *read_exit) {
    if (o->output) {
        *db_path = strdup(o->output);
        return *db_path ? export_to(r, src, o->output, read_exit) : CV_EXIT_OUTPUT;
    }
    if (o->cache && lt_reader_info(r)->complete) {
        size_t n = strlen(o->path) + 8;
        *db_path = malloc(n);
        if (!*db_path) return CV_EXIT_OUTPUT;
        snprintf(*db_path, n, "%s.sqlite", o->path);
        if (cache_valid(*db_path, src)) return 0;
        if (export_to(r, src, *db_path, read_exit) == 0) return 0;
        cv_warn("cannot write the cache %s; using a temporary database", *db_path);
        free(*db_path);
        *db_path = NULL;
        lt_reader_rewind(r);
    }
    const char *dir = getenv("TMPDIR");
    size_t n = strlen(dir && *dir ? dir : "/tmp") + 32;
    *db_path = malloc(n);
    if (!*db_path) return CV_EXIT_OUTPUT;
    snprintf(*db_path, n, "%s/tracy-sql-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(*db_path);
    if (fd < 0) {
        cv_err("%s: cannot create a temporary database: %s", *db_path, strerror(errno));
        return CV_EXIT_OUTPUT;
    }
    close(fd);
    *is_temp = 1;
    hold_tmp(TMP_DB, *db_path);
    return export_to(r, src, *db_path, read_exit);
}

static int run(const sql_opts *o) {
    struct stat st;
    sqlx_source src = {.path = o->path, .page_size = o->page_size};
    if (stat(o->path, &st) == 0) {
        src.size = (uint64_t)st.st_size;
        src.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    }
    cv_run run;
    int code = cv_run_open(&run, o->path, o->allow_truncated ? CV_TRUNC_ALLOW : CV_TRUNC_REFUSE);
    if (!code && (code = cv_check_output(o->output))) cv_run_close(&run);
    if (code) return code;
    int is_temp = 0;
    char *db_path = NULL;
    remove_on_cut();
    code = prepare_db(o, run.r, &src, &db_path, &is_temp, &run.read_exit);
    cv_run_close(&run);
    if (!code && o->nqueries) code = run_queries(o, db_path, is_temp);
    if (is_temp && db_path) unlink(db_path);
    hold_tmp(TMP_DB, NULL);
    free(db_path);
    return code ? code : cv_run_exit(&run, 0);
}

enum { OPT_CSV = 256, OPT_JSON, OPT_TABLE, OPT_CACHE, OPT_ALLOW, OPT_PAGE };

int main(int argc, char **argv) {
    static const struct option longs[] = {
        {"output", required_argument, 0, 'o'},
        {"csv", no_argument, 0, OPT_CSV},
        {"json", no_argument, 0, OPT_JSON},
        {"table", no_argument, 0, OPT_TABLE},
        {"cache", no_argument, 0, OPT_CACHE},
        {"allow-truncated", no_argument, 0, OPT_ALLOW},
        {"page-size", required_argument, 0, OPT_PAGE},
        CV_STD_LONG_OPTIONS,
        {0, 0, 0, 0}};
    sql_opts o = {.page_size = 65536};
    cv_opt out = {0}, fmt = {0}, cache = {0}, page = {0};
    uint64_t v;
    int c, rc = 0;
    cv_prog = "tracy-sql";
    opterr = 0;
    while (!rc && (c = cv_getopt(argc, argv, ":o:hV", longs)) != -1) {
        switch (c) {
        case 'o': rc = cv_opt_set(&out, optarg); o.output = optarg; break;
        case OPT_CSV: rc = cv_opt_set(&fmt, NULL); o.fmt = FMT_CSV; break;
        case OPT_JSON: rc = cv_opt_set(&fmt, NULL); o.fmt = FMT_JSON; break;
        case OPT_TABLE: rc = cv_opt_set(&fmt, NULL); o.fmt = FMT_TABLE; break;
        case OPT_CACHE: rc = cv_opt_set(&cache, NULL); o.cache = 1; break;
        case OPT_ALLOW: o.allow_truncated = 1; break;
        case OPT_PAGE:
            if (cv_parse_u64(optarg, &v) || v < 512 || v > 65536 || (v & (v - 1)))
                return cv_usage_error("--page-size wants a power of two from 512 to 65536, not '%s'",
                                      optarg);
            rc = cv_opt_set(&page, optarg);
            o.page_size = (uint32_t)v;
            break;
        default: return cv_std_option(c, usage_text, argv);
        }
    }
    if (rc) return rc;
    if (optind >= argc) return cv_usage_error("no trace file given");
    o.path = argv[optind++];
    o.queries = argv + optind;
    o.nqueries = argc - optind;
    if (!o.output && !o.nqueries)
        return cv_usage_error("nothing to do: give -o FILE and/or a query");
    /* -o writes the database the queries run on; --cache keeps its own. The
     * result formats print the results of the queries. */
    if ((rc = cv_opt_excl(&out, &cache)) ||
        (!o.nqueries && (rc = cv_opt_unused(&fmt, NULL, "a QUERY"))))
        return rc;
    return run(&o);
}
