/* sessions.c -- the traces under the served paths.
 *
 * A scan walks every root (stat only, symbolic links not followed into
 * folders; a file reached through a link counts only when its resolved path
 * is inside a root), keeps the traces (*.tracy) and gives each an id: 16
 * hex digits of a hash of its resolved path. A session's index is opened on
 * first use and re-opened (rebuilt) when the trace changed. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "serve.h"

#define MAX_SESSIONS 100000u
#define MAX_WALK_DEPTH 32

int sv_sessions_init(sv_sessions *ss, char **paths, int n, const char *cache) {
    memset(ss, 0, sizeof *ss);
    ss->fd_room = UINT64_MAX;
    ss->cache = cache;
    ss->roots = calloc((size_t)n, sizeof *ss->roots);
    ss->root_is_dir = calloc((size_t)n, sizeof *ss->root_is_dir);
    if (!ss->roots || !ss->root_is_dir) return -1;
    for (int i = 0; i < n; i++) {
        char *r = realpath(paths[i], NULL);
        struct stat st;
        if (!r || stat(r, &st) < 0) {
            cv_err("%s: %s", paths[i], strerror(errno));
            free(r);
            return -1;
        }
        ss->roots[ss->nroots] = r;
        ss->root_is_dir[ss->nroots++] = S_ISDIR(st.st_mode);
    }
    sv_sessions_scan(ss);
    return 0;
}

static void summary_free(sv_summary *m) {
    for (uint32_t i = 0; i < m->nprograms; i++) free(m->programs[i]);
    free(m->programs);
    memset(m, 0, sizeof *m);
}

static struct sv_loan *loan_of(sv_sessions *ss, const vw_index *ix) {
    for (size_t i = 0; ix && i < ss->nloans; i++)
        if (ss->loans[i].ix == ix) return &ss->loans[i];
    return NULL;
}

int sv_session_lend(sv_sessions *ss, const sv_session *s) {
    struct sv_loan *l = loan_of(ss, s->ix);
    if (!l) {
        struct sv_loan *p = realloc(ss->loans, (ss->nloans + 1) * sizeof *p);
        if (!p) return -1;
        ss->loans = p;
        l = &p[ss->nloans++];
        memset(l, 0, sizeof *l);
        l->ix = s->ix;
        l->r = s->r;
    }
    l->users++;
    return 0;
}

void sv_session_return(sv_sessions *ss, const vw_index *ix) {
    struct sv_loan *l = loan_of(ss, ix);
    if (!l || --l->users > 0) return;
    if (l->retired) {
        vw_close(l->ix);
        if (l->r) ss->nfiles--;
        lt_reader_free(l->r);
    }
    *l = ss->loans[--ss->nloans];
}

static void session_close_in(sv_sessions *ss, sv_session *s) {
    struct sv_loan *l = ss ? loan_of(ss, s->ix) : NULL;
    if (l) {
        l->retired = 1; /* the last borrower closes them */
    } else {
        vw_close(s->ix);
        if (s->r && ss) ss->nfiles--;
        lt_reader_free(s->r);
    }
    s->ix = NULL;
    s->r = NULL;
}

void sv_sessions_free(sv_sessions *ss) {
    if (ss->busy || ss->nloans) return; /* a build or job still runs: left to the exit */
    sv_captures_free(ss);
    for (size_t i = 0; i < ss->n; i++) {
        session_close_in(ss, &ss->s[i]);
        summary_free(&ss->s[i].sum);
        free(ss->s[i].path);
        free(ss->s[i].rel);
    }
    free(ss->s);
    for (int i = 0; i < ss->nroots; i++) free(ss->roots[i]);
    free(ss->roots);
    free(ss->root_is_dir);
    free(ss->loans);
}

/* Whether resolved path p is root r or under it. */
static int under(const char *p, const char *r) {
    size_t n = strlen(r);
    return !strncmp(p, r, n) && (p[n] == 0 || p[n] == '/' || (n == 1 && r[0] == '/'));
}

static void add_trace(sv_sessions *ss, int root, const char *path) {
    char *real = realpath(path, NULL);
    struct stat st;
    if (!real || stat(real, &st) < 0 || !S_ISREG(st.st_mode)) {
        free(real);
        return;
    }
    int inside = 0;
    for (int i = 0; i < ss->nroots && !inside; i++)
        inside = ss->root_is_dir[i] ? under(real, ss->roots[i]) : !strcmp(real, ss->roots[i]);
    if (!inside) {
        free(real);
        return;
    }
    for (size_t i = 0; i < ss->n; i++)
        if (!strcmp(ss->s[i].path, real)) {
            ss->s[i].seen = 1;
            free(real);
            return;
        }
    if (ss->n >= MAX_SESSIONS) {
        free(real);
        return;
    }
    if (ss->n == ss->cap) {
        size_t c = ss->cap ? ss->cap * 2 : 16;
        sv_session *p = realloc(ss->s, c * sizeof *p);
        if (!p) {
            free(real);
            return;
        }
        ss->s = p;
        ss->cap = c;
    }
    sv_session *s = &ss->s[ss->n];
    memset(s, 0, sizeof *s);
    s->path = real;
    const char *r = ss->roots[root];
    const char *rel;
    if (ss->root_is_dir[root] && under(real, r)) rel = real + strlen(r) + (strcmp(r, "/") ? 1 : 0);
    else rel = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
    s->rel = strdup(rel);
    s->root = root;
    s->seen = 1;
    snprintf(s->id, sizeof s->id, "%016llx", (unsigned long long)vw_hash(real));
    if (!s->rel) {
        free(real);
        return;
    }
    ss->n++;
}

static int is_trace_name(const char *n) {
    size_t l = strlen(n);
    return l > 6 && !strcmp(n + l - 6, ".tracy");
}

/* Adds the traces under dir. Returns 0, or -1 when a folder could not be
 * read for want of descriptors or memory (the walk is partial). */
static int walk(sv_sessions *ss, int root, const char *dir, int depth) {
    if (depth > MAX_WALK_DEPTH) return 0;
    DIR *d = opendir(dir);
    if (!d) return errno == EMFILE || errno == ENFILE || errno == ENOMEM ? -1 : 0;
    int rc = 0;
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
        struct stat st;
        if (lstat(path, &st) < 0) continue;
        if (S_ISDIR(st.st_mode)) rc |= walk(ss, root, path, depth + 1);
        else if ((S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) && is_trace_name(e->d_name))
            add_trace(ss, root, path);
    }
    closedir(d);
    return rc;
}

void sv_sessions_scan(sv_sessions *ss) {
    for (size_t i = 0; i < ss->n; i++) ss->s[i].seen = 0;
    int partial = 0;
    for (int r = 0; r < ss->nroots; r++) {
        if (ss->root_is_dir[r]) partial |= walk(ss, r, ss->roots[r], 0);
        else add_trace(ss, r, ss->roots[r]);
    }
    if (partial) return; /* a folder unread is not its traces gone */
    size_t o = 0;
    for (size_t i = 0; i < ss->n; i++) {
        if (ss->s[i].seen) {
            ss->s[o++] = ss->s[i];
            continue;
        }
        session_close_in(ss, &ss->s[i]);
        summary_free(&ss->s[i].sum);
        free(ss->s[i].path);
        free(ss->s[i].rel);
    }
    ss->n = o;
}

sv_session *sv_session_find(sv_sessions *ss, const char *id) {
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < ss->n; i++)
            if (!strcmp(ss->s[i].id, id)) return &ss->s[i];
        if (!pass) sv_sessions_scan(ss);
    }
    return NULL;
}

static void start_build(sv_sessions *ss);

static uint64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

int sv_no_fds(const char *why) { return strstr(why, strerror(EMFILE)) || strstr(why, strerror(ENFILE)); }

void sv_unreadable(sv_answer *a, const char *name, const char *why) {
    if (sv_no_fds(why)) sv_error(a, 503, "no_descriptors", "%s: %s (try again)", name, why);
    else sv_error(a, 422, "unreadable", "%s: %s", name, why);
}

/* Marks s's build failed for its current identity (s->error says why). */
static void set_failed(sv_session *s, uint64_t size, uint64_t mtime) {
    s->failed = 1;
    s->fail_size = size;
    s->fail_mtime = mtime;
    s->fail_fds = sv_no_fds(s->error);
    s->fail_ms = now_ms();
}

/* Whether s's failed build stands: the same identity and, when descriptors
 * ran out, less than a second ago. */
static int failed_now(const sv_session *s) {
    if (!s->failed || s->fail_size != s->size || s->fail_mtime != s->mtime_ns) return 0;
    return !s->fail_fds || now_ms() - s->fail_ms < 1000;
}

static void on_build(uv_work_t *w) {
    sv_sessions *ss = w->data;
    ss->build_rc = vw_update(ss->build_trace, ss->build_out, NULL, ss->build_err, sizeof ss->build_err);
}

static void after_build(uv_work_t *w, int status) {
    sv_sessions *ss = w->data;
    ss->busy = 0;
    for (size_t i = 0; i < ss->n; i++) {
        sv_session *s = &ss->s[i];
        if (strcmp(s->id, ss->build_id)) continue;
        s->building = 0;
        if (status >= 0 && ss->build_rc >= 0) session_close_in(ss, s); /* the new index maps at next use */
        if (status < 0 || ss->build_rc < 0) {
            snprintf(s->error, sizeof s->error, "%s",
                     ss->build_err[0] ? ss->build_err : lt_strerror(ss->build_rc));
            set_failed(s, ss->build_size, ss->build_mtime);
        }
    }
    free(ss->build_trace);
    free(ss->build_out);
    ss->build_trace = ss->build_out = NULL;
    start_build(ss);
    if (ss->built) ss->built(ss->built_ctx);
}

/* Starts the next queued build when none runs. */
static void start_build(sv_sessions *ss) {
    if (ss->busy) return;
    for (size_t i = 0; i < ss->n; i++) {
        sv_session *s = &ss->s[i];
        if (!s->want_build) continue;
        s->want_build = 0;
        ss->build_trace = strdup(s->path);
        ss->build_out = vw_index_path(s->path, ss->cache);
        if (!ss->build_trace || !ss->build_out) {
            free(ss->build_trace), free(ss->build_out);
            ss->build_trace = ss->build_out = NULL;
            snprintf(s->error, sizeof s->error, "out of memory");
            continue;
        }
        memcpy(ss->build_id, s->id, sizeof s->id);
        ss->build_size = s->size;
        ss->build_mtime = s->mtime_ns;
        ss->build_err[0] = 0;
        ss->work.data = ss;
        s->building = 1;
        ss->busy = 1;
        if (uv_queue_work(ss->loop, &ss->work, on_build, after_build) < 0) {
            on_build(&ss->work); /* no thread pool: here and now */
            after_build(&ss->work, 0);
        }
        return;
    }
}

/* Whether one more reader held open leaves SV_FD_SPARE_FILES descriptors
 * free besides the connections and the other readers. */
static int fd_for_reader(const sv_sessions *ss) {
    return ss->fd_room == UINT64_MAX || ss->nfiles + ss->nconns + SV_FD_SPARE_FILES < ss->fd_room;
}

/* Maps a current index and opens the trace's metadata: 0, 1 when the index
 * must be built, -1 on failure (s->error). */
static int open_built(sv_sessions *ss, sv_session *s) {
    if (!fd_for_reader(ss)) { /* said as the open would, for sv_no_fds */
        snprintf(s->error, sizeof s->error, "%s (%zu traces open)", strerror(EMFILE), ss->nfiles);
        return -1;
    }
    int rc = vw_open_built(&s->ix, s->path, ss->cache);
    if (rc) {
        if (rc < 0) snprintf(s->error, sizeof s->error, "%s", lt_strerror(rc));
        return rc < 0 ? -1 : 1;
    }
    char detail[256] = "";
    rc = lt_reader_open(&s->r, s->path, detail, sizeof detail);
    if (rc < 0) {
        snprintf(s->error, sizeof s->error, "%s", detail[0] ? detail : lt_strerror(rc));
        session_close_in(ss, s);
        return -1;
    }
    ss->nfiles++;
    s->error[0] = 0;
    s->failed = 0;
    s->generation++;
    return 0;
}

/* Stats the trace into s->size and s->mtime_ns; 0 or -1 (s->error). */
static int identity(sv_session *s) {
    struct stat sb;
    if (stat(s->path, &sb) < 0) {
        snprintf(s->error, sizeof s->error, "%s", strerror(errno));
        return -1;
    }
    s->size = (uint64_t)sb.st_size;
    s->mtime_ns = (uint64_t)sb.st_mtim.tv_sec * 1000000000ull + (uint64_t)sb.st_mtim.tv_nsec;
    return 0;
}

int sv_session_open(sv_sessions *ss, sv_session *s) {
    if (s->ix && ss->loop) {
        /* changed (a trace being written): rebuilt in the background while
         * the index in hand answers; after_build lets it go */
        if (!vw_stale(s->ix) || s->building || s->want_build || identity(s) < 0) return 0;
        if (!failed_now(s)) {
            s->want_build = 1;
            start_build(ss);
        }
        return 0;
    }
    if (s->ix) {
        if (!vw_stale(s->ix)) return 0;
        session_close_in(ss, s);
    }
    if (s->building || s->want_build) return 1;
    if (identity(s) < 0) return -1;
    if (failed_now(s)) return -1;
    int rc = open_built(ss, s);
    if (rc <= 0) return rc;
    if (!ss->loop) { /* no loop: build here */
        char err[256] = "";
        char *out = vw_index_path(s->path, ss->cache);
        int b = out ? vw_update(s->path, out, NULL, err, sizeof err) : LT_ENOMEM;
        free(out);
        if (b < 0) {
            snprintf(s->error, sizeof s->error, "%s", err[0] ? err : lt_strerror(b));
            set_failed(s, s->size, s->mtime_ns);
            return -1;
        }
        return open_built(ss, s) == 0 ? 0 : -1;
    }
    s->want_build = 1;
    start_build(ss);
    return 1;
}

/* The summary's figures from an open reader (its trailer for complete
 * files). */
static int summarize(sv_summary *m, lt_reader *r) {
    const lt_file_info *fi = lt_reader_info(r);
    uint32_t np = lt_reader_nprocesses(r);
    m->complete = fi->complete;
    m->duration = fi->last_ts > fi->first_ts ? fi->last_ts - fi->first_ts : 0;
    m->processes = np;
    m->wall_start = fi->created_wall_ns;
    int anchored = 0;
    m->programs = calloc((size_t)np + 1, sizeof *m->programs);
    if (!m->programs) return -1;
    for (uint32_t p = 1; p <= np; p++) {
        m->threads += lt_reader_nthreads(r, p);
        const lt_process *pr = lt_reader_process(r, p);
        if (!pr) continue;
        /* (no event read yet, first_ts 0: the file's creation time stays) */
        if (!anchored && pr->has_info && pr->anchor_wall_ns && fi->first_ts) {
            m->wall_start = pr->anchor_wall_ns + fi->first_ts - pr->anchor_mono_ns;
            anchored = 1;
        }
        int dup = !pr->program;
        for (uint32_t k = 0; k < m->nprograms && !dup; k++) dup = !strcmp(m->programs[k], pr->program);
        if (!dup && !(m->programs[m->nprograms++] = strdup(pr->program))) return -1;
    }
    uint64_t z, l;
    if (fi->complete && lt_reader_total(r, "zones", &z) && lt_reader_total(r, "lost_events", &l)) {
        m->zones = z;
        m->lost = l;
    } else {
        m->complete = 0;
    }
    return 0;
}

int sv_session_summary(sv_sessions *ss, sv_session *s) {
    if (identity(s) < 0) return -1;
    sv_summary *m = &s->sum;
    if (failed_now(s)) return -1;
    if (m->valid && m->size == s->size && m->mtime == s->mtime_ns) return 0;
    summary_free(m);
    lt_reader *r = NULL;
    char detail[256] = "";
    int rc = lt_reader_open(&r, s->path, detail, sizeof detail);
    if (rc < 0 || (rc = lt_reader_sound(r)) < 0) {
        snprintf(s->error, sizeof s->error, "%s",
                 r ? lt_reader_error(r) : detail[0] ? detail : lt_strerror(rc));
        lt_reader_free(r);
        summary_free(m);
        return -1;
    }
    rc = summarize(m, r);
    lt_reader_free(r);
    if (rc < 0) {
        snprintf(s->error, sizeof s->error, "out of memory");
        summary_free(m);
        return -1;
    }
    if (!m->complete) { /* counted by a scan: the index's */
        rc = sv_session_open(ss, s);
        if (rc) {
            summary_free(m);
            return rc;
        }
        m->zones = vw_totals_of(s->ix)->zones;
        m->lost = vw_totals_of(s->ix)->lost_events;
    }
    m->size = s->size;
    m->mtime = s->mtime_ns;
    m->valid = 1;
    return 0;
}

const char *sv_session_state(const sv_session *s) {
    if (!s->sum.valid && !s->ix) return "error";
    if (s->sum.valid ? s->sum.complete != 0 : vw_totals_of(s->ix)->complete != 0) return "complete";
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t t = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    return t < s->mtime_ns + 10000000000ull ? "writing" : "truncated";
}
