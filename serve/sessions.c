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

static uint64_t fnv(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

int sv_sessions_init(sv_sessions *ss, char **paths, int n, const char *cache) {
    memset(ss, 0, sizeof *ss);
    ss->cache = cache;
    ss->roots = calloc((size_t)n, sizeof *ss->roots);
    ss->root_is_dir = calloc((size_t)n, sizeof *ss->root_is_dir);
    if (!ss->roots || !ss->root_is_dir) return -1;
    for (int i = 0; i < n; i++) {
        char *r = realpath(paths[i], NULL);
        struct stat st;
        if (!r || stat(r, &st) < 0) {
            fprintf(stderr, SV_NAME ": %s: %s\n", paths[i], strerror(errno));
            free(r);
            return -1;
        }
        ss->roots[ss->nroots] = r;
        ss->root_is_dir[ss->nroots++] = S_ISDIR(st.st_mode);
    }
    sv_sessions_scan(ss);
    return 0;
}

static void session_close(sv_session *s) {
    vw_close(s->ix);
    lt_reader_free(s->r);
    s->ix = NULL;
    s->r = NULL;
}

void sv_sessions_free(sv_sessions *ss) {
    for (size_t i = 0; i < ss->n; i++) {
        session_close(&ss->s[i]);
        free(ss->s[i].path);
        free(ss->s[i].rel);
    }
    free(ss->s);
    for (int i = 0; i < ss->nroots; i++) free(ss->roots[i]);
    free(ss->roots);
    free(ss->root_is_dir);
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
    snprintf(s->id, sizeof s->id, "%016llx", (unsigned long long)fnv(real));
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

static void walk(sv_sessions *ss, int root, const char *dir, int depth) {
    if (depth > MAX_WALK_DEPTH) return;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
        struct stat st;
        if (lstat(path, &st) < 0) continue;
        if (S_ISDIR(st.st_mode)) walk(ss, root, path, depth + 1);
        else if ((S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) && is_trace_name(e->d_name))
            add_trace(ss, root, path);
    }
    closedir(d);
}

void sv_sessions_scan(sv_sessions *ss) {
    for (size_t i = 0; i < ss->n; i++) ss->s[i].seen = 0;
    for (int r = 0; r < ss->nroots; r++) {
        if (ss->root_is_dir[r]) walk(ss, r, ss->roots[r], 0);
        else add_trace(ss, r, ss->roots[r]);
    }
    size_t o = 0;
    for (size_t i = 0; i < ss->n; i++) {
        if (ss->s[i].seen) {
            ss->s[o++] = ss->s[i];
            continue;
        }
        session_close(&ss->s[i]);
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

int sv_session_open(sv_sessions *ss, sv_session *s) {
    if (s->ix) {
        int st = vw_stale(s->ix);
        if (!st) return 0;
        session_close(s);
    }
    struct stat sb;
    if (stat(s->path, &sb) < 0) {
        snprintf(s->error, sizeof s->error, "%s", strerror(errno));
        return -1;
    }
    s->size = (uint64_t)sb.st_size;
    s->mtime_ns = (uint64_t)sb.st_mtim.tv_sec * 1000000000ull + (uint64_t)sb.st_mtim.tv_nsec;
    char err[256] = "";
    int rc = vw_open(&s->ix, s->path, ss->cache, NULL, err, sizeof err);
    if (rc < 0) {
        snprintf(s->error, sizeof s->error, "%s", err[0] ? err : lt_strerror(rc));
        return -1;
    }
    char detail[256] = "";
    rc = lt_reader_open(&s->r, s->path, detail, sizeof detail);
    if (rc < 0) {
        snprintf(s->error, sizeof s->error, "%s", detail[0] ? detail : lt_strerror(rc));
        session_close(s);
        return -1;
    }
    s->error[0] = 0;
    s->generation++;
    return 0;
}

const char *sv_session_state(const sv_session *s) {
    if (!s->ix) return "error";
    if (vw_totals_of(s->ix)->complete) return "complete";
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t t = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    return t < s->mtime_ns + 10000000000ull ? "writing" : "truncated";
}
