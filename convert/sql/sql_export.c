/* sql_export.c -- fills a SQLite database from a trace in two passes.
 *
 * The first pass goes through SQLite: one transaction and prepared
 * statements for everything but the zones (processes, functions, args,
 * counters, messages...), then the indexes, all on an empty slice_data.
 * The second pass reads the trace again and writes the zone rows and their
 * two indexes as b-tree pages straight into the closed file (sql_btree.c):
 * rows are put back in id (start) order through a window of recent ids,
 * index keys are sorted in bounded memory (sql_sort.c). The few zones still
 * open when the window moved past them are inserted by SQLite at the end. */
#include "convert/sql/sql_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/calltree.h"
#include "convert/convert.h"
#include "schema_sql.h"
#include "convert/sql/sql_btree.h"
#include "convert/sql/sql_sort.h"

enum {
    ST_SLICE, ST_FUNC, ST_ARGS, ST_COUNTER, ST_TRACK, ST_CTRACK, ST_SIGNPOST,
    ST_MESSAGE, ST_FRAME, ST_LOST, ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
    "INSERT INTO slice_data(id, ts, dur, track_id, depth, parent_id, arg_set_id,"
    " func_id, self_dur, flags) VALUES (?,?,?,?,?,?,?,?,?,?)",
    "INSERT INTO func(id, name, category, kind, src_file, src_line) VALUES (?,?,?,?,?,?)",
    "INSERT INTO args(arg_set_id, flat_key, key, string_value, value_type)"
    " VALUES (?1, ?2, ?2, ?3, 'string')",
    "INSERT INTO counter(ts, track_id, value) VALUES (?,?,?)",
    "INSERT INTO track(id, name, type) VALUES (?,?,?)",
    "INSERT INTO counter_track(id, name, upid) VALUES (?,?,?)",
    "INSERT INTO signpost(ts, utid, upid, header, body) VALUES (?,?,?,?,?)",
    "INSERT INTO message(ts, utid, upid, text) VALUES (?,?,?,?)",
    "INSERT INTO frame_mark(ts, utid, name) VALUES (?,?,?)",
    "INSERT INTO lost_event(ts, utid, count) VALUES (?,?,?)",
};

#define SLICE_COLS 10
#define WINDOW 65536          /* ids of the reorder window (a power of 2) */
#define SORT_RUN (256u << 10) /* index keys sorted in memory at a time */

typedef struct proc_map {
    uint32_t utid_base;
    uint32_t nthreads;
    int64_t *funcs;  /* loc id -> func id (0: not yet) */
    uint32_t nfuncs;
    int64_t *ctracks; /* plot id -> counter track id */
    uint32_t nctracks;
} proc_map;

typedef struct sqlx {
    lt_reader *r;
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    proc_map *procs;
    uint32_t nproc;
    cv_zones *zones;
    ct_active *active;  /* pass 1: which zones are outermost */
    cv_map *funcs;      /* "kind\0name\0file\0line" -> func id - 1 */
    int64_t next_track;
    int64_t next_arg_set;
    uint64_t lost, unclosed, aborted;
    uint64_t nslices, ncounters;
    /* Pass 1: per func id, calls, sums of dur and self, min and max dur. */
    int64_t (*ftot)[5];
    size_t nftot;
    int pass; /* 1: SQLite, 2: zone pages */
    const char *trace_path;
    /* Pass 2. Zone rows wait in `window` (slot id % WINDOW) until every
     * smaller id is written; `next` is the smallest id not yet written or
     * passed over. Rows whose id was passed over while their zone was open
     * go to `late`, for SQLite. */
    int64_t (*window)[SLICE_COLS];
    uint64_t next, max_id;
    int64_t (*late)[SLICE_COLS];
    size_t nlate, late_cap;
    sqb_file *file;
    sqb_tree *table;
    sqs_sorter *by_track, *by_func;
} sqlx;

/* ---- Small helpers ------------------------------------------------------ */

static int db_fail(sqlx *x, const char *what) {
    cv_err("database error (%s): %s", what, sqlite3_errmsg(x->db));
    return -1;
}

static int exec(sqlx *x, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(x->db, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
    cv_err("database error: %s", msg ? msg : sqlite3_errmsg(x->db));
    sqlite3_free(msg);
    return -1;
}

/* Steps an insert whose parameters are bound, then resets it. */
static int step(sqlx *x, int which) {
    sqlite3_stmt *s = x->st[which];
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_DONE ? 0 : db_fail(x, "insert");
}

static void bind_text(sqlite3_stmt *s, int i, const char *t, size_t n) {
    if (t) sqlite3_bind_text(s, i, t, (int)n, SQLITE_STATIC);
    else sqlite3_bind_null(s, i);
}

static void bind_cstr(sqlite3_stmt *s, int i, const char *t) {
    bind_text(s, i, t, t ? strlen(t) : 0);
}

static uint32_t utid_of(const sqlx *x, uint32_t p, uint32_t t) {
    if (p == 0 || p > x->nproc || t == 0 || t > x->procs[p].nthreads) return 0;
    return x->procs[p].utid_base + t;
}

/* ---- Metadata tables ---------------------------------------------------- */

static int meta_int(sqlx *x, const char *name, int64_t v) {
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO metadata(name, int_value) VALUES ('%s', %lld)",
             name, (long long)v);
    return exec(x, sql);
}

static int meta_str(sqlx *x, const char *name, const char *v) {
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(x->db, "INSERT INTO metadata(name, str_value) VALUES (?,?)", -1,
                           &s, NULL) != SQLITE_OK)
        return db_fail(x, "metadata");
    bind_cstr(s, 1, name);
    bind_cstr(s, 2, v);
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : db_fail(x, "metadata");
}

static int write_metadata(sqlx *x, const sqlx_source *src) {
    const lt_file_info *fi = lt_reader_info(x->r);
    char ver[32];
    snprintf(ver, sizeof ver, "%u.%u", fi->major, fi->minor);
    if (meta_str(x, "trace_type", "tracy") || meta_str(x, "format_version", ver) ||
        meta_str(x, "creator", fi->creator) || meta_str(x, "converter", "tracy-sql " LT_VERSION_STRING) ||
        meta_str(x, "trace_path", src->path) || meta_int(x, "schema_version", SQLX_SCHEMA_VERSION) ||
        meta_int(x, "trace_size_bytes", (int64_t)fi->file_size) ||
        meta_int(x, "trace_time_wall_ns", (int64_t)fi->created_wall_ns) ||
        meta_int(x, "trace_complete", fi->complete) ||
        meta_int(x, "trace_bytes_ignored", (int64_t)fi->bytes_ignored) ||
        meta_int(x, "source_size", (int64_t)src->size) ||
        meta_int(x, "source_mtime_ns", src->mtime_ns))
        return -1;
    char sql[128];
    snprintf(sql, sizeof sql, "INSERT INTO trace_bounds VALUES (%lld, %lld)",
             (long long)fi->first_ts, (long long)fi->last_ts);
    return exec(x, sql);
}

static char *join_argv(const lt_process *p) {
    size_t n = 1;
    for (uint32_t i = 0; i < p->argc; i++) n += strlen(p->argv[i]) + 1;
    char *s = malloc(n), *w = s;
    if (!s) return NULL;
    for (uint32_t i = 0; i < p->argc; i++) {
        size_t k = strlen(p->argv[i]);
        if (i) *w++ = ' ';
        memcpy(w, p->argv[i], k);
        w += k;
    }
    *w = '\0';
    return s;
}

static int write_process(sqlx *x, sqlite3_stmt *s, uint32_t idx, const lt_process *p) {
    char *cmd = join_argv(p);
    if (!cmd) return -1;
    sqlite3_bind_int64(s, 1, idx);
    sqlite3_bind_int64(s, 2, (int64_t)p->pid);
    bind_cstr(s, 3, p->program);
    bind_cstr(s, 4, cmd);
    if (p->status != LT_PROC_RUNNING) sqlite3_bind_int64(s, 5, (int64_t)p->end_ts);
    if (p->rank >= 0) sqlite3_bind_int64(s, 6, p->rank);
    bind_cstr(s, 7, p->hostname);
    bind_cstr(s, 8, p->client);
    bind_cstr(s, 9, cv_status_name(p->status));
    if (p->status != LT_PROC_RUNNING) {
        bind_cstr(s, 10, p->end_reason);
        sqlite3_bind_int64(s, 11, (int64_t)p->events_received);
        sqlite3_bind_int64(s, 12, (int64_t)p->events_sent);
        sqlite3_bind_int64(s, 13, (int64_t)p->events_lost);
    }
    sqlite3_bind_int64(s, 14, (int64_t)p->anchor_mono_ns);
    sqlite3_bind_int64(s, 15, (int64_t)p->anchor_wall_ns);
    int rc = sqlite3_step(s);
    free(cmd);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_DONE ? 0 : db_fail(x, "process");
}

static int write_threads(sqlx *x, sqlite3_stmt *s, sqlite3_stmt *tt, uint32_t p,
                         const lt_process *pr) {
    proc_map *pm = &x->procs[p];
    for (uint32_t t = 1; t <= pm->nthreads; t++) {
        const lt_thread *th = lt_reader_thread(x->r, p, t);
        int64_t utid = pm->utid_base + t;
        const char *name = th && th->name && *th->name ? th->name : NULL;
        sqlite3_bind_int64(s, 1, utid);
        sqlite3_bind_int64(s, 2, th ? (int64_t)th->tid : 0);
        bind_cstr(s, 3, name);
        sqlite3_bind_int64(s, 4, p);
        sqlite3_bind_int(s, 5, th && pr && th->tid == pr->pid);
        sqlite3_bind_int64(s, 6, t);
        int rc = sqlite3_step(s);
        sqlite3_reset(s);
        if (rc != SQLITE_DONE) return db_fail(x, "thread");
        /* Thread tracks share the numbering of threads. */
        sqlite3_stmt *tr = x->st[ST_TRACK];
        sqlite3_bind_int64(tr, 1, utid);
        bind_cstr(tr, 2, name);
        bind_cstr(tr, 3, "thread_track");
        if (step(x, ST_TRACK)) return -1;
        sqlite3_bind_int64(tt, 1, utid);
        bind_cstr(tt, 2, name);
        sqlite3_bind_int64(tt, 3, utid);
        rc = sqlite3_step(tt);
        sqlite3_reset(tt);
        if (rc != SQLITE_DONE) return db_fail(x, "thread_track");
    }
    return 0;
}

static int write_processes(sqlx *x) {
    sqlite3_stmt *ps = NULL, *ts = NULL, *tt = NULL;
    int rc = -1;
    x->nproc = lt_reader_nprocesses(x->r);
    x->procs = calloc(x->nproc + 1, sizeof *x->procs);
    if (!x->procs) return -1;
    if (sqlite3_prepare_v2(x->db,
            "INSERT INTO process(upid, pid, name, cmdline, end_ts, rank, hostname, client,"
            " status, end_reason, events_received, events_sent, events_lost,"
            " clock_anchor_mono_ns, clock_anchor_wall_ns)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &ps, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(x->db,
            "INSERT INTO thread(utid, tid, name, upid, is_main_thread, thread_index)"
            " VALUES (?,?,?,?,?,?)", -1, &ts, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(x->db, "INSERT INTO thread_track(id, name, utid) VALUES (?,?,?)",
                           -1, &tt, NULL) != SQLITE_OK) {
        db_fail(x, "prepare");
        goto out;
    }
    uint32_t base = 0;
    for (uint32_t p = 1; p <= x->nproc; p++) {
        const lt_process *pr = lt_reader_process(x->r, p);
        x->procs[p].utid_base = base;
        x->procs[p].nthreads = lt_reader_nthreads(x->r, p);
        base += x->procs[p].nthreads;
        if ((pr && write_process(x, ps, p, pr)) || write_threads(x, ts, tt, p, pr)) goto out;
    }
    x->next_track = (int64_t)base + 1;
    rc = 0;
out:
    sqlite3_finalize(ps);
    sqlite3_finalize(ts);
    sqlite3_finalize(tt);
    return rc;
}

/* ---- Lazily created rows ------------------------------------------------- */

/* Grows an int64 vector so that index `i` is valid. */
static int ensure(int64_t **v, uint32_t *n, uint32_t i) {
    if (i < *n) return 0;
    uint32_t m = *n ? *n : 64;
    while (m <= i) m *= 2;
    int64_t *w = realloc(*v, m * sizeof *w);
    if (!w) return -1;
    memset(w + *n, 0, (m - *n) * sizeof *w);
    *v = w;
    *n = m;
    return 0;
}

/* Func id of (loc's kind, name, file, line), inserting it when new. */
static int64_t func_row(sqlx *x, const lt_loc *loc, const char *name, size_t nlen) {
    const char *file = loc && loc->file ? loc->file : "";
    uint8_t kind = loc ? loc->kind : 0;
    uint32_t line = loc ? loc->line : 0;
    size_t flen = strlen(file);
    char *key = malloc(nlen + flen + 32);
    if (!key) return -1;
    int k = snprintf(key, 32, "%u", kind) + 1;
    memcpy(key + k, name, nlen);
    key[k + nlen] = '\0';
    memcpy(key + k + nlen + 1, file, flen);
    size_t klen = (size_t)k + nlen + 1 + flen;
    klen += (size_t)snprintf(key + klen, 16, "%c%u", 0, line);
    int added;
    long i = cv_map_get(x->funcs, key, klen, &added);
    free(key);
    if (i < 0) return -1;
    if (added && x->pass == 2) {
        cv_err("%s: the trace changed while it was read", x->trace_path);
        return -1;
    }
    if (added) {
        sqlite3_stmt *s = x->st[ST_FUNC];
        sqlite3_bind_int64(s, 1, i + 1);
        bind_text(s, 2, name, nlen);
        bind_cstr(s, 3, cv_kind_name(kind));
        sqlite3_bind_int(s, 4, kind);
        bind_cstr(s, 5, file);
        sqlite3_bind_int64(s, 6, line);
        if (step(x, ST_FUNC)) return -1;
    }
    return i + 1;
}

static int64_t func_of(sqlx *x, const lt_event *ev) {
    const lt_loc *loc = lt_reader_loc(x->r, ev->process, ev->loc);
    const char *name;
    size_t nlen;
    cv_zone_name(ev, loc, &name, &nlen);
    if (ev->name || ev->process == 0 || ev->process > x->nproc)
        return func_row(x, loc, name, nlen);
    proc_map *pm = &x->procs[ev->process];
    if (ensure(&pm->funcs, &pm->nfuncs, ev->loc)) return -1;
    if (!pm->funcs[ev->loc]) pm->funcs[ev->loc] = func_row(x, loc, name, nlen);
    return pm->funcs[ev->loc];
}

static int64_t counter_track_of(sqlx *x, const lt_event *ev) {
    if (ev->process == 0 || ev->process > x->nproc) return 0;
    proc_map *pm = &x->procs[ev->process];
    if (ensure(&pm->ctracks, &pm->nctracks, ev->id)) return -1;
    if (pm->ctracks[ev->id]) return pm->ctracks[ev->id];
    const char *name = lt_reader_plot_name(x->r, ev->process, ev->id);
    char fallback[32];
    if (!name) {
        snprintf(fallback, sizeof fallback, "plot %u", ev->id);
        name = fallback;
    }
    int64_t id = x->next_track++;
    sqlite3_stmt *tr = x->st[ST_TRACK];
    sqlite3_bind_int64(tr, 1, id);
    bind_cstr(tr, 2, name);
    bind_cstr(tr, 3, "counter_track");
    if (step(x, ST_TRACK)) return -1;
    sqlite3_stmt *ct = x->st[ST_CTRACK];
    sqlite3_bind_int64(ct, 1, id);
    bind_cstr(ct, 2, name);
    sqlite3_bind_int64(ct, 3, ev->process);
    if (step(x, ST_CTRACK)) return -1;
    pm->ctracks[ev->id] = id;
    return id;
}

/* ---- Events ------------------------------------------------------------- */

/* Inserts one zone row through SQLite; 0 in parent_id or arg_set_id stands
 * for NULL. */
static int insert_slice(sqlx *x, const int64_t *v) {
    sqlite3_stmt *s = x->st[ST_SLICE];
    for (int c = 0; c < SLICE_COLS; c++) {
        if ((c == 5 || c == 6) && v[c] == 0) sqlite3_bind_null(s, c + 1);
        else sqlite3_bind_int64(s, c + 1, v[c]);
    }
    return step(x, ST_SLICE);
}

/* Writes a row, in id order, into the slice_data pages and its keys into
 * the index sorters. */
static int write_row(sqlx *x, const int64_t *v) {
    uint8_t rec[SQB_RECORD_MAX];
    uint32_t nulls = 1u | (v[5] ? 0 : 1u << 5) | (v[6] ? 0 : 1u << 6);
    size_t n = sqb_record(x->file, rec, v, nulls, SLICE_COLS);
    /* The index records: (track_id, ts, dur, depth, func_id, id) and
     * (func_id, 0, id). Zones of a thread that start at the same
     * nanosecond sort by duration there, not by id. */
    const int64_t track_key[6] = {v[3], v[1], v[2], v[4], v[7], v[0]};
    const int64_t func_key[3] = {v[7], 0, v[0]};
    if (sqb_table_add(x->table, v[0], rec, n) || sqs_add(x->by_track, track_key) ||
        sqs_add(x->by_func, func_key))
        return -1;
    x->nslices++;
    return 0;
}

/* Moves the window one id on, writing that id's row if it is there. */
static int window_step(sqlx *x) {
    int64_t *slot = x->window[x->next & (WINDOW - 1)];
    int rc = (uint64_t)slot[0] == x->next ? write_row(x, slot) : 0;
    slot[0] = 0;
    x->next++;
    return rc;
}

/* Takes a finished row in pass 2. */
static int window_put(sqlx *x, const int64_t *v) {
    uint64_t id = (uint64_t)v[0];
    if (id < x->next) {
        if (x->nlate == x->late_cap) {
            size_t cap = x->late_cap ? x->late_cap * 2 : 256;
            void *l = realloc(x->late, cap * sizeof *x->late);
            if (!l) {
                cv_err("out of memory");
                return -1;
            }
            x->late = l;
            x->late_cap = cap;
        }
        memcpy(x->late[x->nlate++], v, sizeof *x->late);
        return 0;
    }
    while (id >= x->next + WINDOW)
        if (window_step(x)) return -1;
    memcpy(x->window[id & (WINDOW - 1)], v, sizeof *x->window);
    if (id > x->max_id) x->max_id = id;
    while ((uint64_t)x->window[x->next & (WINDOW - 1)][0] == x->next)
        if (window_step(x)) return -1;
    return 0;
}

/* Counts a zone of function `func` in its totals. total_dur takes its dur
 * only when `outer` (no enclosing zone of its thread has its location), as
 * cProfile's cumulative time: inner calls of a recursion are inside it. */
static int add_to_totals(sqlx *x, int64_t func, int64_t dur, int64_t self, int outer) {
    if ((size_t)func >= x->nftot) {
        size_t n = x->nftot ? x->nftot * 2 : 256;
        while (n <= (size_t)func) n *= 2;
        void *t = realloc(x->ftot, n * sizeof *x->ftot);
        if (!t) {
            cv_err("out of memory");
            return -1;
        }
        x->ftot = t;
        memset(x->ftot + x->nftot, 0, (n - x->nftot) * sizeof *x->ftot);
        x->nftot = n;
    }
    int64_t *t = x->ftot[func];
    if (t[0] == 0 || dur < t[3]) t[3] = dur;
    if (t[0] == 0 || dur > t[4]) t[4] = dur;
    t[0]++;
    t[1] += outer ? dur : 0;
    t[2] += self;
    return 0;
}

/* Stores the totals in the func rows. */
static int write_totals(sqlx *x) {
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(x->db, "UPDATE func SET calls = ?, total_dur = ?, self_dur = ?,"
                           " min_dur = ?, max_dur = ? WHERE id = ?", -1, &s, NULL) != SQLITE_OK)
        return db_fail(x, "prepare");
    int rc = 0;
    for (size_t f = 1; f < x->nftot && !rc; f++) {
        if (x->ftot[f][0] == 0) continue;
        for (int c = 0; c < 5; c++) sqlite3_bind_int64(s, c + 1, x->ftot[f][c]);
        sqlite3_bind_int64(s, 6, (int64_t)f);
        if (sqlite3_step(s) != SQLITE_DONE) rc = db_fail(x, "func");
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    return rc;
}

static int on_zone_end(sqlx *x, const lt_event *ev) {
    uint64_t id, parent;
    if (cv_zones_end(x->zones, ev->process, ev->thread, &id, &parent)) return 0;
    int64_t func = func_of(x, ev);
    if (func < 0) return -1;
    int64_t arg_set = 0;
    if (ev->text) {
        arg_set = ++x->next_arg_set;
        if (x->pass == 1) {
            sqlite3_stmt *a = x->st[ST_ARGS];
            sqlite3_bind_int64(a, 1, arg_set);
            bind_cstr(a, 2, "debug.text");
            bind_text(a, 3, ev->text, ev->text_len);
            if (step(x, ST_ARGS)) return -1;
        }
    }
    uint64_t dur = ev->ts - ev->begin_ts;
    uint64_t self = dur >= ev->child_ns ? dur - ev->child_ns : 0;
    if (x->pass == 1) {
        x->aborted += (ev->flags & LT_EVF_ABORTED) != 0;
        x->unclosed += (ev->flags & LT_EVF_UNCLOSED) != 0;
        int outer = ct_active_end(x->active, ev->process, ev->thread);
        if (outer < 0) return 0;
        return add_to_totals(x, func, (int64_t)dur, (int64_t)self, outer);
    }
    int64_t v[SLICE_COLS];
    v[0] = (int64_t)id;
    v[1] = (int64_t)ev->begin_ts;
    v[2] = (int64_t)dur;
    v[3] = utid_of(x, ev->process, ev->thread);
    v[4] = ev->depth;
    v[5] = (int64_t)parent;
    v[6] = arg_set;
    v[7] = func;
    v[8] = (int64_t)self;
    v[9] = (ev->flags & LT_EVF_ABORTED ? 1 : 0) | (ev->flags & LT_EVF_UNCLOSED ? 2 : 0) |
           (ev->flags & LT_EVF_CUT ? 4 : 0);
    return window_put(x, v);
}

static int on_event(sqlx *x, const lt_event *ev) {
    int64_t utid = utid_of(x, ev->process, ev->thread);
    sqlite3_stmt *s;
    if (x->pass == 2 && ev->type != LT_EV_ZONE_BEGIN && ev->type != LT_EV_ZONE_END) return 0;
    switch (ev->type) {
    case LT_EV_ZONE_BEGIN:
        if (x->pass == 1 && ct_active_begin(x->active, ev->process, ev->thread, ev->loc))
            return -1;
        return cv_zones_begin(x->zones, ev->process, ev->thread) ? 0 : -1;
    case LT_EV_ZONE_END: return on_zone_end(x, ev);
    case LT_EV_SIGNPOST:
        s = x->st[ST_SIGNPOST];
        sqlite3_bind_int64(s, 1, (int64_t)ev->ts);
        sqlite3_bind_int64(s, 2, utid);
        sqlite3_bind_int64(s, 3, ev->process);
        bind_text(s, 4, ev->text, ev->text_len);
        bind_text(s, 5, ev->text2_len ? ev->text2 : NULL, ev->text2_len);
        return step(x, ST_SIGNPOST);
    case LT_EV_MESSAGE:
        s = x->st[ST_MESSAGE];
        sqlite3_bind_int64(s, 1, (int64_t)ev->ts);
        sqlite3_bind_int64(s, 2, utid);
        sqlite3_bind_int64(s, 3, ev->process);
        bind_text(s, 4, ev->text, ev->text_len);
        return step(x, ST_MESSAGE);
    case LT_EV_PLOT: {
        int64_t track = counter_track_of(x, ev);
        if (track < 0) return -1;
        s = x->st[ST_COUNTER];
        sqlite3_bind_int64(s, 1, (int64_t)ev->ts);
        sqlite3_bind_int64(s, 2, track);
        sqlite3_bind_double(s, 3, ev->value); /* NaN is stored as NULL */
        x->ncounters++;
        return step(x, ST_COUNTER);
    }
    case LT_EV_FRAME:
        s = x->st[ST_FRAME];
        sqlite3_bind_int64(s, 1, (int64_t)ev->ts);
        sqlite3_bind_int64(s, 2, utid);
        bind_cstr(s, 3, ev->id ? lt_reader_frame_name(x->r, ev->process, ev->id) : NULL);
        return step(x, ST_FRAME);
    case LT_EV_LOST:
        x->lost += ev->count;
        s = x->st[ST_LOST];
        sqlite3_bind_int64(s, 1, (int64_t)ev->ts);
        sqlite3_bind_int64(s, 2, utid);
        sqlite3_bind_int64(s, 3, (int64_t)ev->count);
        return step(x, ST_LOST);
    default: return 0;
    }
}

/* ---- Statistics --------------------------------------------------------- */

static const char *severity_name(uint8_t s) {
    return s == LT_SEV_DATA_LOSS ? "data_loss" : s == LT_SEV_ERROR ? "error" : "info";
}

static int stat_row(sqlx *x, sqlite3_stmt *s, const char *name, const char *sev,
                    const char *source, uint64_t value, const char *desc) {
    bind_cstr(s, 1, name);
    bind_cstr(s, 2, sev);
    bind_cstr(s, 3, source);
    sqlite3_bind_int64(s, 4, (int64_t)value);
    bind_cstr(s, 5, desc);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : db_fail(x, "stats");
}

static int write_stats(sqlx *x) {
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(x->db, "INSERT INTO stats(name, severity, source, value,"
                           " description) VALUES (?,?,?,?,?)", -1, &s, NULL) != SQLITE_OK)
        return db_fail(x, "prepare");
    const lt_file_info *fi = lt_reader_info(x->r);
    uint64_t rejected = 0, lost_procs = 0;
    for (uint32_t p = 1; p <= x->nproc; p++) {
        const lt_process *pr = lt_reader_process(x->r, p);
        rejected += pr && pr->status == LT_PROC_REJECTED;
        lost_procs += pr && pr->status == LT_PROC_LOST;
    }
    int rc = 0;
    for (size_t i = 0; i < lt_reader_nstats(x->r) && !rc; i++) {
        const lt_stat *st = lt_reader_stat(x->r, i);
        rc = stat_row(x, s, st->name, severity_name(st->severity), "trace", st->value,
                      st->description);
    }
    if (!rc)
        rc = stat_row(x, s, "lost_events", "data_loss", "tracy-sql", x->lost,
                      "events the clients reported dropping (LOST records)");
    if (!rc)
        rc = stat_row(x, s, "processes_rejected", "data_loss", "tracy-sql", rejected,
                      "processes closed for breaking the protocol");
    if (!rc)
        rc = stat_row(x, s, "processes_lost", "data_loss", "tracy-sql", lost_procs,
                      "processes whose connection ended without a goodbye");
    if (!rc)
        rc = stat_row(x, s, "zones_unclosed", "data_loss", "tracy-sql", x->unclosed,
                      "zones still open at the end of their stream");
    if (!rc)
        rc = stat_row(x, s, "zones_aborted_seen", "data_loss", "tracy-sql", x->aborted,
                      "zones closed by the daemon when their process ended abnormally");
    if (!rc)
        rc = stat_row(x, s, "trace_bytes_ignored", "data_loss", "tracy-sql",
                      fi->bytes_ignored, "bytes after the last complete unit of a cut file");
    sqlite3_finalize(s);
    return rc;
}

/* ---- Export ------------------------------------------------------------- */

static int run_schema(sqlx *x, int indexes) {
    const char *mark = strstr(schema_sql, "-- @indexes");
    if (indexes) return exec(x, mark);
    size_t n = (size_t)(mark - schema_sql);
    char *part = malloc(n + 1);
    if (!part) return -1;
    memcpy(part, schema_sql, n);
    part[n] = '\0';
    int rc = exec(x, part);
    free(part);
    return rc;
}

/* Planner statistics. ANALYZE would read every index of the big tables;
 * their shape is known here, so sqlite_stat1 gets it directly ("rows, rows
 * per value of the first column, ..."), and only the small tables are
 * analysed. */
static int write_planner_stats(sqlx *x) {
    uint64_t tracks = x->next_track > 1 ? (uint64_t)x->next_track - 1 : 1;
    uint64_t funcs = cv_map_size(x->funcs) ? cv_map_size(x->funcs) : 1;
    uint64_t n = x->nslices ? x->nslices : 1, c = x->ncounters ? x->ncounters : 1;
    uint64_t a = x->next_arg_set ? (uint64_t)x->next_arg_set : 1;
    char sql[1024];
    snprintf(sql, sizeof sql,
             "ANALYZE process; ANALYZE thread; ANALYZE track; ANALYZE thread_track;"
             " ANALYZE counter_track; ANALYZE func;"
             " INSERT INTO sqlite_stat1 VALUES"
             " ('slice_data', 'slice_data_track_ts', '%llu %llu 1 1 1 1'),"
             " ('slice_data', 'slice_data_func', '%llu %llu'),"
             " ('slice_data', NULL, '%llu'),"
             " ('counter', 'counter_track_ts', '%llu %llu 1'),"
             " ('args', 'args_set', '%llu 1');"
             " ANALYZE sqlite_schema;",
             (unsigned long long)n, (unsigned long long)(n / tracks ? n / tracks : 1),
             (unsigned long long)n, (unsigned long long)(n / funcs ? n / funcs : 1),
             (unsigned long long)n, (unsigned long long)c,
             (unsigned long long)(c / tracks ? c / tracks : 1), (unsigned long long)a);
    return exec(x, sql);
}

static int prepare_all(sqlx *x) {
    for (int i = 0; i < ST_COUNT; i++)
        if (sqlite3_prepare_v3(x->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &x->st[i],
                               NULL) != SQLITE_OK)
            return db_fail(x, "prepare");
    return 0;
}

static int open_db(sqlx *x, const char *path, uint32_t page_size) {
    if (sqlite3_open_v2(path, &x->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                        SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        cv_err("%s: cannot open database: %s", path,
               x->db ? sqlite3_errmsg(x->db) : "out of memory");
        return -1;
    }
    /* Journal off and no syncs: a failed export is deleted, not recovered.
     * The page size only applies to the new file. */
    char sql[256];
    snprintf(sql, sizeof sql,
             "PRAGMA page_size=%u; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
             " PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-32768;"
             " PRAGMA mmap_size=0; PRAGMA threads=0;", page_size ? page_size : 65536);
    return exec(x, sql);
}

static int close_db(sqlx *x, const char *path) {
    for (int i = 0; i < ST_COUNT; i++) {
        sqlite3_finalize(x->st[i]);
        x->st[i] = NULL;
    }
    int rc = sqlite3_close(x->db) == SQLITE_OK ? 0 : -1;
    if (rc) cv_err("%s: cannot close database: %s", path, sqlite3_errmsg(x->db));
    else x->db = NULL;
    return rc;
}

/* Root pages of slice_data and its two indexes, in that order. */
static int root_pages(sqlx *x, uint32_t roots[3]) {
    static const char *const names[3] = {"slice_data", "slice_data_track_ts", "slice_data_func"};
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(x->db, "SELECT rootpage FROM sqlite_schema WHERE name = ?", -1, &s,
                           NULL) != SQLITE_OK)
        return db_fail(x, "schema");
    int rc = 0;
    for (int i = 0; i < 3 && !rc; i++) {
        bind_cstr(s, 1, names[i]);
        if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int64(s, 0) > 1)
            roots[i] = (uint32_t)sqlite3_column_int64(s, 0);
        else
            rc = db_fail(x, "schema");
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    return rc;
}

static int each_event(void *x, const lt_event *ev) { return on_event(x, ev) ? -1 : 0; }

/* Pass 1: everything but the zone rows, through SQLite. */
static int pass_sqlite(sqlx *x, const char *path, const sqlx_source *src, int *read_exit,
                       uint32_t roots[3]) {
    if (open_db(x, path, src->page_size) || exec(x, "BEGIN") || run_schema(x, 0) || prepare_all(x) ||
        write_metadata(x, src) || write_processes(x))
        return -1;
    if (cv_each_event(x->r, src->path, read_exit, each_event, x, NULL) < 0) return -1;
    if (write_stats(x) || write_totals(x) || exec(x, "COMMIT") || run_schema(x, 1) ||
        root_pages(x, roots))
        return -1;
    return close_db(x, path);
}

typedef struct index_out {
    sqb_file *file;
    sqb_tree *tree;
} index_out;

/* Index records: (track_id, ts, dur, depth, func_id, id), the sort key
 * itself, and (func_id, id). */
static int emit_track_key(void *ctx, const int64_t *k) {
    index_out *o = ctx;
    uint8_t rec[SQB_RECORD_MAX];
    return sqb_index_add(o->tree, rec, sqb_record(o->file, rec, k, 0, 6));
}

static int emit_func_key(void *ctx, const int64_t *k) {
    index_out *o = ctx;
    uint8_t rec[SQB_RECORD_MAX];
    int64_t v[2] = {k[0], k[2]};
    return sqb_index_add(o->tree, rec, sqb_record(o->file, rec, v, 0, 2));
}

/* Sorts one index's keys into its b-tree. */
static int write_index(sqlx *x, sqs_sorter *s, uint32_t root, sqs_emit emit) {
    index_out o = {x->file, sqb_tree_new(x->file, root, 1)};
    if (!o.tree) return -1;
    if (sqs_finish(s, emit, &o)) {
        sqb_tree_free(o.tree);
        return -1;
    }
    return sqb_tree_finish(o.tree);
}

/* Pass 2: the zone rows and their indexes, as pages of the closed file. */
static int pass_pages(sqlx *x, const char *path, const uint32_t roots[3], int read_exit) {
    lt_event ev;
    int rc;
    cv_zones_free(x->zones);
    x->zones = cv_zones_new();
    x->next_arg_set = 0;
    x->next = 1;
    x->pass = 2;
    x->window = calloc(WINDOW, sizeof *x->window);
    x->by_track = sqs_new(SORT_RUN, 6);
    x->by_func = sqs_new(SORT_RUN, 3);
    if (!x->zones || !x->window || !x->by_track || !x->by_func) {
        cv_err("out of memory");
        return -1;
    }
    if (lt_reader_rewind(x->r) || !(x->file = sqb_file_open(path)) ||
        !(x->table = sqb_tree_new(x->file, roots[0], 0)))
        return -1;
    /* The first pass reported any read error; this one stops at it too. */
    while ((rc = lt_reader_next(x->r, &ev)) > 0)
        if (on_event(x, &ev)) return -1;
    if (rc < 0 && !read_exit) {
        cv_err("%s: the trace changed while it was read", x->trace_path);
        return -1;
    }
    while (x->next <= x->max_id)
        if (window_step(x)) return -1;
    rc = sqb_tree_finish(x->table);
    x->table = NULL;
    if (rc || write_index(x, x->by_track, roots[1], emit_track_key) ||
        write_index(x, x->by_func, roots[2], emit_func_key))
        return -1;
    rc = sqb_file_close(x->file);
    x->file = NULL;
    return rc;
}

/* Last, through SQLite again: the late rows and the planner statistics. */
static int pass_finish(sqlx *x, const char *path) {
    if (open_db(x, path, 0) || exec(x, "BEGIN") || prepare_all(x)) return -1;
    for (size_t i = 0; i < x->nlate; i++) {
        if (insert_slice(x, x->late[i])) return -1;
        x->nslices++;
    }
    if (exec(x, "COMMIT") || write_planner_stats(x)) return -1;
    return close_db(x, path);
}

int sqlx_export(lt_reader *r, const char *path, const sqlx_source *src, int *read_exit) {
    sqlx x;
    uint32_t roots[3];
    memset(&x, 0, sizeof x);
    x.r = r;
    x.pass = 1;
    x.trace_path = src->path;
    *read_exit = 0;
    x.zones = cv_zones_new();
    x.funcs = cv_map_new();
    x.active = ct_active_new();
    int rc = -1;
    if (!x.zones || !x.funcs || !x.active) cv_err("out of memory");
    else if (pass_sqlite(&x, path, src, read_exit, roots) == 0 &&
             pass_pages(&x, path, roots, *read_exit) == 0)
        rc = pass_finish(&x, path);
    for (int i = 0; i < ST_COUNT; i++) sqlite3_finalize(x.st[i]);
    if (x.db) sqlite3_close(x.db);
    sqb_tree_free(x.table);
    if (x.file) sqb_file_close(x.file);
    if (x.procs)
        for (uint32_t p = 0; p <= x.nproc; p++) {
            free(x.procs[p].funcs);
            free(x.procs[p].ctracks);
        }
    free(x.procs);
    free(x.window);
    free(x.ftot);
    free(x.late);
    sqs_free(x.by_track);
    sqs_free(x.by_func);
    cv_zones_free(x.zones);
    ct_active_free(x.active);
    cv_map_free(x.funcs);
    return rc;
}
