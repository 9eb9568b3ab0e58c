/* check_convert.c -- the converters: quoting and numbering units of the
 * program layer (prog/) and convert/convert.c, and tracy-json / tracy-sql
 * outputs checked event by event against the trace that was written
 * (parsed with cJSON, read back with SQLite). */
#include <check.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The module under test is compiled into this suite. */
#include "../prog/prog.c"
#include "../prog/input.c"
#include "../prog/out.c"
#include "../prog/option.c"
#include "../convert/convert.c"
#include "../convert/strmap.c"
#include "trace_builder.h"

/* ---- Units -------------------------------------------------------------- */

static char *json_of(const char *s, size_t n) {
    char *j = cv_json_dup(s, n);
    ck_assert_ptr_nonnull(j);
    return j;
}

/* Escapes, parses back with cJSON and compares with `want`. */
static void check_json_round_trip(const char *in, size_t n, const char *want) {
    char *j = json_of(in, n);
    cJSON *v = cJSON_Parse(j);
    ck_assert_msg(v != NULL, "not JSON: %s", j);
    ck_assert(cJSON_IsString(v));
    ck_assert_str_eq(v->valuestring, want);
    cJSON_Delete(v);
    free(j);
}

START_TEST(json_escapes_quotes_backslashes_and_control_characters) {
    char *j = json_of("a\"b\\c\n\t\x01\x1f", 9);
    ck_assert_str_eq(j, "\"a\\\"b\\\\c\\n\\t\\u0001\\u001f\"");
    free(j);
    check_json_round_trip("line1\r\nline2\b\f", 14, "line1\r\nline2\b\f");
}
END_TEST

START_TEST(json_keeps_valid_utf8_and_replaces_invalid_bytes) {
    check_json_round_trip("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14,
                          "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    /* lone continuation, overlong, surrogate, cut sequence, above U+10FFFF */
    check_json_round_trip("a\x80" "b", 3, "a\xef\xbf\xbd" "b");
    check_json_round_trip("\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd");
    check_json_round_trip("\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    check_json_round_trip("x\xe2\x82", 3, "x\xef\xbf\xbd\xef\xbf\xbd");
    check_json_round_trip("\xf4\x90\x80\x80", 4,
                          "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    check_json_round_trip("nul\0byte", 8, "nul");
}
END_TEST

static char *csv_of(const char *s, char sep) {
    cv_out o;
    memset(&o, 0, sizeof o);
    o.fd = -1;
    o.cap = 4 * strlen(s) + 8;
    o.buf = malloc(o.cap + 1);
    ck_assert_ptr_nonnull(o.buf);
    cv_out_csv(&o, s, strlen(s), sep);
    ck_assert_uint_eq(o.total, 0); /* never flushed */
    o.buf[o.len] = '\0';
    return o.buf;
}

START_TEST(csv_quotes_only_fields_that_need_it) {
    static const struct { const char *in, *out; char sep; } cases[] = {
        {"plain", "plain", ','},
        {"", "", ','},
        {"a,b", "\"a,b\"", ','},
        {"a,b", "a,b", ';'},
        {"a;b", "\"a;b\"", ';'},
        {"say \"hi\"", "\"say \"\"hi\"\"\"", ','},
        {"two\nlines", "\"two\nlines\"", ','},
        {"cr\r", "\"cr\r\"", ','},
        {" padded", "\" padded\"", ','},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = csv_of(cases[i].in, cases[i].sep);
        ck_assert_str_eq(got, cases[i].out);
        free(got);
    }
}
END_TEST

START_TEST(microseconds_keep_nanosecond_decimals) {
    static const struct { uint64_t ns; const char *s; } cases[] = {
        {0, "0.000"}, {7, "0.007"}, {12345, "12.345"}, {1000, "1.000"},
        {UINT64_MAX, "18446744073709551.615"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cv_out o;
        char buf[64];
        memset(&o, 0, sizeof o);
        o.fd = -1;
        o.buf = buf;
        o.cap = sizeof buf - 1;
        cv_out_us(&o, cases[i].ns);
        buf[o.len] = '\0';
        ck_assert_str_eq(buf, cases[i].s);
    }
}
END_TEST

START_TEST(zones_are_numbered_by_start_with_parents_per_thread) {
    cv_zones *z = cv_zones_new();
    uint64_t id, parent;
    ck_assert_uint_eq(cv_zones_begin(z, 1, 1), 1);
    ck_assert_uint_eq(cv_zones_begin(z, 2, 3), 2); /* another stream */
    ck_assert_uint_eq(cv_zones_begin(z, 1, 1), 3);
    ck_assert_int_eq(cv_zones_end(z, 1, 1, &id, &parent), 0);
    ck_assert_uint_eq(id, 3);
    ck_assert_uint_eq(parent, 1);
    ck_assert_int_eq(cv_zones_end(z, 2, 3, &id, &parent), 0);
    ck_assert_uint_eq(id, 2);
    ck_assert_uint_eq(parent, 0);
    ck_assert_int_eq(cv_zones_end(z, 2, 3, &id, &parent), -1); /* nothing open */
    ck_assert_int_eq(cv_zones_end(z, 9, 9, &id, &parent), -1);
    /* deep nesting grows the stack */
    for (int i = 0; i < 1000; i++) ck_assert_uint_ne(cv_zones_begin(z, 1, 1), 0);
    for (int i = 0; i < 1000; i++) ck_assert_int_eq(cv_zones_end(z, 1, 1, &id, &parent), 0);
    ck_assert_uint_eq(parent, 1);
    ck_assert_int_eq(cv_zones_end(z, 1, 1, &id, &parent), 0);
    ck_assert_uint_eq(id, 1);
    ck_assert_uint_eq(cv_zones_count(z), 1003);
    cv_zones_free(z);
}
END_TEST

START_TEST(map_finds_keys_with_embedded_nuls_across_growth) {
    cv_map *m = cv_map_new();
    int added;
    char key[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "f%d%cfile%d", i, 0, i % 7);
        ck_assert_int_eq(cv_map_get(m, key, (size_t)n, &added), i);
        ck_assert_int_eq(added, 1);
    }
    for (int i = 0; i < 5000; i += 97) {
        int n = snprintf(key, sizeof key, "f%d%cfile%d", i, 0, i % 7);
        ck_assert_int_eq(cv_map_get(m, key, (size_t)n, &added), i);
        ck_assert_int_eq(added, 0);
    }
    size_t len;
    ck_assert_str_eq(cv_map_key(m, 42, &len), "f42");
    ck_assert_uint_eq(cv_map_size(m), 5000);
    cv_map_free(m);
}
END_TEST

/* ---- Whole traces through the programs ---------------------------------- */

typedef struct zone_rec {
    uint32_t process, thread, loc, depth;
    uint64_t begin, end, child;
    char text[32];
    int seen;
} zone_rec;

enum { NZ_MAX = 4000, NPROC = 2, NTHR = 3, NLOC = 5 };

static const char *const loc_names[NLOC] = {"outer", "inner \"q\"", "tab\there", "\xc3\xa9t\xc3\xa9", "ctl\x01"};

typedef struct gen {
    char dir[64], trace[96];
    zone_rec zones[NZ_MAX];
    size_t nz;
    int messages, signposts, plots;
} gen;

static uint32_t rng(uint32_t *s) {
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

/* One thread: random nesting, every zone recorded with its child time. */
static void gen_thread(gen *g, lt_builder *b, uint32_t p, uint32_t t, uint32_t seed) {
    size_t stack[64];
    int depth = 0;
    uint64_t ts = 1000000 + p * 7 + t * 3;
    for (int step = 0; step < 600; step++) {
        uint32_t r = rng(&seed) % 10;
        ts += 1 + rng(&seed) % 50;
        if ((r < 5 && depth < 60 && g->nz < NZ_MAX) || depth == 0) {
            if (g->nz >= NZ_MAX) break;
            zone_rec *z = &g->zones[g->nz];
            memset(z, 0, sizeof *z);
            z->process = p;
            z->thread = t;
            z->loc = 1 + rng(&seed) % NLOC;
            z->depth = (uint32_t)depth;
            z->begin = ts;
            ck_assert_int_eq(lt_builder_zone_begin(b, p, t, ts, z->loc), 0);
            if (rng(&seed) % 4 == 0) {
                snprintf(z->text, sizeof z->text, "arg \"%zu\"\n\x02", g->nz);
                ck_assert_int_eq(lt_builder_zone_text(b, p, t, z->text), 0);
            }
            stack[depth++] = g->nz++;
        } else if (r < 9) {
            zone_rec *z = &g->zones[stack[--depth]];
            z->end = ts;
            ck_assert_int_eq(lt_builder_zone_end(b, p, t, ts), 0);
            if (depth) g->zones[stack[depth - 1]].child += z->end - z->begin;
        } else {
            switch (rng(&seed) % 3) {
            case 0:
                ck_assert_int_eq(lt_builder_message(b, p, t, ts, "msg \"x\""), 0);
                g->messages++;
                break;
            case 1:
                ck_assert_int_eq(lt_builder_signpost(b, p, t, ts, "phase", "body"), 0);
                g->signposts++;
                break;
            default:
                ck_assert_int_eq(lt_builder_plot_value(b, p, t, ts, 1, step * 0.5), 0);
                g->plots++;
            }
        }
    }
    while (depth > 0) {
        zone_rec *z = &g->zones[stack[--depth]];
        ts += 5;
        z->end = ts;
        ck_assert_int_eq(lt_builder_zone_end(b, p, t, ts), 0);
        if (depth) g->zones[stack[depth - 1]].child += z->end - z->begin;
    }
}

static gen *make_trace(void) {
    gen *g = calloc(1, sizeof *g);
    ck_assert_ptr_nonnull(g);
    strcpy(g->dir, "/tmp/check_convert.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g->dir));
    snprintf(g->trace, sizeof g->trace, "%s/t.tracy", g->dir);
    lt_builder *b;
    ck_assert_int_eq(lt_builder_open(&b, g->trace, 0, "check_convert"), 0);
    for (uint32_t p = 1; p <= NPROC; p++) {
        const char *argv1[] = {"prog"};
        ck_assert_int_eq(lt_builder_process(b, 500 + p, p - 1, "h", "prog", 1, argv1, 0, 0), (int)p);
        for (uint32_t t = 1; t <= NTHR; t++)
            ck_assert_int_eq(lt_builder_thread(b, p, 500 + p * 10 + t, "th"), (int)t);
        for (uint32_t l = 0; l < NLOC; l++)
            ck_assert_int_eq(lt_builder_loc(b, p, LT_LOC_PYTHON, loc_names[l], "f \"x\".py", l + 1),
                             (int)l + 1);
        ck_assert_int_eq(lt_builder_plot(b, p, "mem"), 1);
    }
    for (uint32_t p = 1; p <= NPROC; p++)
        for (uint32_t t = 1; t <= NTHR; t++) gen_thread(g, b, p, t, p * 100 + t);
    ck_assert_int_eq(lt_builder_close(b, 0), 0);
    return g;
}

static void free_trace(gen *g) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g->dir);
    ck_assert_int_eq(system(cmd), 0);
    free(g);
}

/* Runs build/bin/PROG with arguments; returns its exit code. */
static int run_tool(const char *prog, const char *args) {
    const char *build = getenv("LT_BUILD");
    ck_assert_msg(build != NULL, "LT_BUILD is not set (run through make check-c)");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/bin/%s' %s", build, prog, args);
    int st = system(cmd);
    ck_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

static uint64_t us_to_ns(const cJSON *v) {
    ck_assert(cJSON_IsNumber(v));
    return (uint64_t)llround(v->valuedouble * 1000.0);
}

/* Finds the unseen zone an X event stands for. */
static zone_rec *match_zone(gen *g, uint32_t p, uint64_t tid, uint64_t begin, uint64_t end,
                            const char *name) {
    for (size_t i = 0; i < g->nz; i++) {
        zone_rec *z = &g->zones[i];
        if (!z->seen && z->begin == begin && z->end == end && 500 + z->process == p &&
            500 + z->process * 10 + z->thread == tid && strcmp(loc_names[z->loc - 1], name) == 0)
            return z;
    }
    return NULL;
}

static void check_x_event(gen *g, const cJSON *e) {
    const cJSON *args = cJSON_GetObjectItem(e, "args");
    uint64_t ts = us_to_ns(cJSON_GetObjectItem(e, "ts"));
    uint64_t dur = us_to_ns(cJSON_GetObjectItem(e, "dur"));
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(e, "name"));
    ck_assert_ptr_nonnull(name);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(e, "cat")), "python");
    zone_rec *z = match_zone(g, (uint32_t)cJSON_GetObjectItem(e, "pid")->valuedouble,
                             (uint64_t)cJSON_GetObjectItem(e, "tid")->valuedouble, ts, ts + dur,
                             name);
    ck_assert_msg(z != NULL, "no zone %s at %llu+%llu", name, (unsigned long long)ts,
                  (unsigned long long)dur);
    z->seen = 1;
    ck_assert_ptr_nonnull(args);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(args, "url")), "f \"x\".py");
    ck_assert_int_eq((int)cJSON_GetObjectItem(args, "line")->valuedouble, (int)z->loc);
    const cJSON *text = cJSON_GetObjectItem(args, "text");
    if (z->text[0]) ck_assert_str_eq(cJSON_GetStringValue(text), z->text);
    else ck_assert_ptr_null(text);
}

START_TEST(json_output_parses_and_holds_every_event) {
    gen *g = make_trace();
    char args[256], out[128];
    snprintf(out, sizeof out, "%s/t.json", g->dir);
    snprintf(args, sizeof args, "'%s' -o '%s'", g->trace, out);
    ck_assert_int_eq(run_tool("tracy-json", args), 0);
    char *text = slurp(out);
    cJSON *root = cJSON_Parse(text);
    ck_assert_msg(root != NULL, "tracy-json output is not JSON");
    const cJSON *events = root;
    ck_assert(cJSON_IsArray(events));
    int nx = 0, ni_msg = 0, ni_sign = 0, nc = 0, nmeta = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        const char *ph = cJSON_GetStringValue(cJSON_GetObjectItem(e, "ph"));
        ck_assert_ptr_nonnull(ph);
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(e, "pid")));
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(e, "tid")));
        if (strcmp(ph, "X") == 0) {
            check_x_event(g, e);
            nx++;
        } else if (strcmp(ph, "i") == 0) {
            const char *cat = cJSON_GetStringValue(cJSON_GetObjectItem(e, "cat"));
            ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(e, "ts")));
            if (strcmp(cat, "message") == 0) {
                ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(e, "name")), "msg \"x\"");
                ni_msg++;
            } else {
                ck_assert_str_eq(cat, "signpost");
                ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(e, "name")), "phase");
                ni_sign++;
            }
        } else if (strcmp(ph, "C") == 0) {
            ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(e, "name")), "mem");
            ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "value")));
            nc++;
        } else {
            ck_assert_str_eq(ph, "M");
            nmeta++;
        }
    }
    ck_assert_int_eq(nx, (int)g->nz);
    for (size_t i = 0; i < g->nz; i++) ck_assert(g->zones[i].seen);
    ck_assert_int_eq(ni_msg, g->messages);
    ck_assert_int_eq(ni_sign, g->signposts);
    ck_assert_int_eq(nc, g->plots);
    ck_assert_int_eq(nmeta, NPROC + NPROC * NTHR);
    cJSON_Delete(root);
    free(text);
    free_trace(g);
}
END_TEST

/* Every slice row equals a written zone, parents enclose their children,
 * and self time is duration less the children's. */
START_TEST(sql_export_has_every_zone_with_parents_and_self_time) {
    gen *g = make_trace();
    char args[256], db_path[128];
    snprintf(db_path, sizeof db_path, "%s/t.db", g->dir);
    snprintf(args, sizeof args, "'%s' -o '%s'", g->trace, db_path);
    ck_assert_int_eq(run_tool("tracy-sql", args), 0);
    sqlite3 *db;
    sqlite3_stmt *s;
    ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db,
        "SELECT s.ts, s.dur, s.name, s.depth, s.self_dur, t.tid, p.pid,"
        " (SELECT string_value FROM args a WHERE a.arg_set_id = s.arg_set_id),"
        " par.ts, par.dur, par.depth"
        " FROM slice s JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING(utid)"
        " JOIN process p USING(upid) LEFT JOIN slice par ON par.id = s.parent_id",
        -1, &s, NULL), SQLITE_OK);
    int rows = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        uint64_t ts = (uint64_t)sqlite3_column_int64(s, 0), dur = (uint64_t)sqlite3_column_int64(s, 1);
        zone_rec *z = match_zone(g, (uint32_t)sqlite3_column_int64(s, 6),
                                 (uint64_t)sqlite3_column_int64(s, 5), ts, ts + dur,
                                 (const char *)sqlite3_column_text(s, 2));
        ck_assert_msg(z != NULL, "slice at %llu is not a written zone", (unsigned long long)ts);
        z->seen = 1;
        ck_assert_int_eq(sqlite3_column_int(s, 3), (int)z->depth);
        ck_assert_int_eq(sqlite3_column_int64(s, 4), (int64_t)(dur - z->child));
        const char *text = (const char *)sqlite3_column_text(s, 7);
        if (z->text[0]) ck_assert_str_eq(text, z->text);
        else ck_assert_ptr_null(text);
        if (z->depth == 0) {
            ck_assert_int_eq(sqlite3_column_type(s, 8), SQLITE_NULL);
        } else {
            uint64_t pts = (uint64_t)sqlite3_column_int64(s, 8);
            ck_assert_uint_le(pts, ts);
            ck_assert_uint_ge(pts + (uint64_t)sqlite3_column_int64(s, 9), ts + dur);
            ck_assert_int_eq(sqlite3_column_int(s, 10), (int)z->depth - 1);
        }
        rows++;
    }
    sqlite3_finalize(s);
    ck_assert_int_eq(rows, (int)g->nz);
    ck_assert_int_eq(sqlite3_prepare_v2(db,
        "SELECT (SELECT sum(calls) FROM function_stats), (SELECT count(*) FROM message),"
        " (SELECT count(*) FROM signpost), (SELECT count(*) FROM counter)", -1, &s, NULL),
        SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(s, 0), (int)g->nz);
    ck_assert_int_eq(sqlite3_column_int(s, 1), g->messages);
    ck_assert_int_eq(sqlite3_column_int(s, 2), g->signposts);
    ck_assert_int_eq(sqlite3_column_int(s, 3), g->plots);
    sqlite3_finalize(s);
    ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
    free_trace(g);
}
END_TEST

/* Zones of a thread that start at the same nanosecond (a coarse clock, or
 * calls nested faster than it ticks): the per-thread index orders them by
 * duration, and SQLite's integrity_check compares it with the table. */
START_TEST(sql_index_orders_zones_starting_together_by_duration) {
    char dir[] = "/tmp/check_convert.XXXXXX", trace[64], db_path[64], args[160];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(trace, sizeof trace, "%s/t.tracy", dir);
    snprintf(db_path, sizeof db_path, "%s/t.db", dir);
    lt_builder *b;
    ck_assert_int_eq(lt_builder_open(&b, trace, 0, "check_convert"), 0);
    const char *argv1[] = {"prog"};
    ck_assert_int_eq(lt_builder_process(b, 42, -1, "h", "prog", 1, argv1, 0, 0), 1);
    ck_assert_int_eq(lt_builder_thread(b, 1, 43, "main"), 1);
    ck_assert_int_eq(lt_builder_loc(b, 1, LT_LOC_PYTHON, "f", "f.py", 1), 1);
    for (uint64_t ts = 1000, i = 0; i < 50; i++, ts += 100) {
        for (int d = 0; d < 4; d++) ck_assert_int_eq(lt_builder_zone_begin(b, 1, 1, ts, 1), 0);
        for (int d = 0; d < 4; d++) ck_assert_int_eq(lt_builder_zone_end(b, 1, 1, ts + 10 + d), 0);
    }
    ck_assert_int_eq(lt_builder_close(b, 0), 0);
    snprintf(args, sizeof args, "'%s' -o '%s'", trace, db_path);
    ck_assert_int_eq(run_tool("tracy-sql", args), 0);
    sqlite3 *db;
    sqlite3_stmt *s;
    ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(s, 0), "ok");
    sqlite3_finalize(s);
    /* A seek on (track_id, ts, dur) finds each zone. */
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM slice_data"
        " INDEXED BY slice_data_track_ts WHERE track_id = (SELECT min(track_id) FROM"
        " slice_data) AND ts = 1100 AND dur = ?", -1, &s, NULL), SQLITE_OK);
    for (int d = 0; d < 4; d++) {
        sqlite3_bind_int(s, 1, 10 + d);
        ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
        ck_assert_int_eq(sqlite3_column_int(s, 0), 1);
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
    snprintf(args, sizeof args, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(args), 0);
}
END_TEST

/* ---- Options that exclude each other (prog/option.c) -------------------- */

/* Parses `args` (space-separated) as a program with an output kind (-a,
 * -b, --bee), a value (-o, --out) and a flag for the kind -b (-x) would:
 * returns the first usage exit code (0 when every option passes) with its
 * message, the first line written on stderr, in msg. */
static int parse_options(const char *args, char *msg, size_t n) {
    static const struct option longs[] = {
        {"bee", no_argument, 0, 'b'}, {"out", required_argument, 0, 'o'}, {0, 0, 0, 0}};
    char buf[256], *argv[16] = {"prog"};
    int argc = 1, c, rc = 0;
    snprintf(buf, sizeof buf, "%s", args);
    for (char *t = strtok(buf, " "); t && argc < 15; t = strtok(NULL, " ")) argv[argc++] = t;
    argv[argc] = NULL;
    cv_opt kind = {0}, out = {0}, x = {0};
    FILE *err = tmpfile();
    ck_assert_ptr_nonnull(err);
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(err), 2);
    optind = 0;
    opterr = 0;
    while (!rc && (c = cv_getopt(argc, argv, ":abo:x", longs)) != -1) {
        if (c == 'a' || c == 'b') rc = cv_opt_set(&kind, NULL);
        if (c == 'o') rc = cv_opt_set(&out, optarg);
        if (c == 'x') rc = cv_opt_set(&x, NULL);
    }
    if (!rc && kind.code != 'b') rc = cv_opt_unused(&x, &kind, "-b");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(err);
    if (!fgets(msg, (int)n, err)) msg[0] = '\0';
    msg[strcspn(msg, "\n")] = '\0';
    fclose(err);
    return rc;
}

START_TEST(options_that_contradict_each_other_are_refused) {
    static const struct { const char *args, *msg; } cases[] = {
        {"-b -b --bee -o f --out f -x -x", NULL},
        {"-a -a -of", NULL},
        {"-ab", "prog: -a and -b cannot be used together"},
        {"--bee -a", "prog: --bee and -a cannot be used together"},
        {"--be -a", "prog: --bee and -a cannot be used together"},
        {"-o f -o g", "prog: -o f and -o g cannot be used together"},
        {"-of --out=g", "prog: -o f and --out g cannot be used together"},
        {"-o a -o b", "prog: -o a and -o b cannot be used together"},
        {"-x", "prog: -x needs -b"},
        {"-x -a", "prog: -x and -a cannot be used together (-x needs -b)"},
    };
    const char *saved = cv_prog;
    cv_prog = "prog";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char msg[256];
        int rc = parse_options(cases[i].args, msg, sizeof msg);
        ck_assert_msg(rc == (cases[i].msg ? CV_EXIT_USAGE : 0), "%s: exit %d", cases[i].args, rc);
        ck_assert_str_eq(msg, cases[i].msg ? cases[i].msg : "");
    }
    cv_opt a = {0}, b = {0};
    ck_assert_int_eq(cv_opt_excl(&a, &b), 0);
    cv_prog = saved;
}
END_TEST

Suite *convert_suite(void) {
    Suite *s = suite_create("convert");
    TCase *units = tcase_create("units");
    tcase_add_test(units, json_escapes_quotes_backslashes_and_control_characters);
    tcase_add_test(units, json_keeps_valid_utf8_and_replaces_invalid_bytes);
    tcase_add_test(units, csv_quotes_only_fields_that_need_it);
    tcase_add_test(units, microseconds_keep_nanosecond_decimals);
    tcase_add_test(units, zones_are_numbered_by_start_with_parents_per_thread);
    tcase_add_test(units, map_finds_keys_with_embedded_nuls_across_growth);
    tcase_add_test(units, options_that_contradict_each_other_are_refused);
    suite_add_tcase(s, units);
    TCase *programs = tcase_create("programs");
    tcase_set_timeout(programs, 120);
    tcase_add_test(programs, json_output_parses_and_holds_every_event);
    tcase_add_test(programs, sql_export_has_every_zone_with_parents_and_self_time);
    tcase_add_test(programs, sql_index_orders_zones_starting_together_by_duration);
    suite_add_tcase(s, programs);
    return s;
}
