/* procs.c -- the processes around a run, from /proc (see procs.h). */
#include "procs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- sets of pids ----------------------------------------------------------- */

void procs_set_free(procs_set *s) {
    free(s->pid);
    s->pid = NULL;
    s->n = s->cap = 0;
}

static int set_add(procs_set *s, pid_t pid) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        pid_t *p = realloc(s->pid, cap * sizeof *p);
        if (!p) return -1;
        s->pid = p;
        s->cap = cap;
    }
    s->pid[s->n++] = pid;
    return 0;
}

static int cmp_pid(const void *a, const void *b) {
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

static void set_sort(procs_set *s) {
    if (s->n > 1) qsort(s->pid, s->n, sizeof *s->pid, cmp_pid);
}

static int set_has(const procs_set *s, pid_t pid) {
    return s->n && bsearch(&pid, s->pid, s->n, sizeof pid, cmp_pid) != NULL;
}

/* ---- one process's files ------------------------------------------------------ */

/* The first `cap` bytes of /proc/PID/NAME into buf: their length, or -1
 * (no such process, not ours to read). */
static ssize_t read_proc(pid_t pid, const char *name, char *buf, size_t cap) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t n = 0;
    ssize_t k = 0;
    while (n < cap && ((k = read(fd, buf + n, cap - n)) > 0 || (k < 0 && errno == EINTR)))
        if (k > 0) n += (size_t)k;
    close(fd);
    return k < 0 ? -1 : (ssize_t)n;
}

/* Whether NUL-separated `data` (n bytes) holds an entry that starts with
 * `entry` (len bytes, ending in '=' for an environment variable's name,
 * or the whole entry with its NUL). */
static int has_entry(const char *data, size_t n, const char *entry, size_t len) {
    for (size_t at = 0; at < n;) {
        const char *z = memchr(data + at, 0, n - at);
        size_t end = z ? (size_t)(z - data) + 1 : n;
        if (end - at >= len && memcmp(data + at, entry, len) == 0) return 1;
        at = end;
    }
    return 0;
}

/* The environment of pid, read whole into *buf (malloc'd, the caller
 * frees): its length, 0 when it shows none (in exec, or ended), -1 when
 * out of memory. */
static ssize_t read_environ(pid_t pid, char **buf) {
    size_t cap = 16384;
    for (;;) {
        char *b = malloc(cap + 1);
        if (!b) return -1;
        ssize_t n = read_proc(pid, "environ", b, cap);
        if (n < 0) n = 0;
        if ((size_t)n < cap || cap >= (64u << 20)) {
            b[n] = 0; /* the last entry ends in NUL even when cut */
            *buf = b;
            return n;
        }
        free(b);
        cap *= 4;
    }
}

/* 1 when pid runs with TRACY_PY_OPTS in its environment, 0 when it does
 * not, -1 when that cannot be read now (an empty environment). */
static int profiled(pid_t pid) {
    char *env = NULL;
    ssize_t n = read_environ(pid, &env);
    int r = n > 0 ? has_entry(env, (size_t)n, "TRACY_PY_OPTS=", 14) : -1;
    free(env);
    return r;
}

static int is_python(pid_t pid, const char *me_exe) {
    char path[64], exe[4096];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    if (n < 0) return 0;
    exe[n] = 0;
    const char *base = strrchr(exe, '/');
    return strcmp(exe, me_exe) == 0 || strncmp(base ? base + 1 : exe, "python", 6) == 0;
}

/* multiprocessing's resource tracker or fork server, from its argv. */
static int mp_helper(pid_t pid) {
    static const char *const starts[] = {"from multiprocessing.resource_tracker import",
                                         "from multiprocessing.forkserver import"};
    char argv[8192];
    ssize_t n = read_proc(pid, "cmdline", argv, sizeof argv - 1);
    if (n <= 0) return 0;
    argv[n] = 0;
    for (ssize_t i = 0; i < n; i++) /* one string, argv's NULs as spaces */
        if (argv[i] == 0) argv[i] = ' ';
    for (size_t i = 0; i < sizeof starts / sizeof *starts; i++)
        if (strstr(argv, starts[i])) return 1;
    return 0;
}

/* ---- the process table ----------------------------------------------------------- */

typedef struct {
    pid_t pid, ppid, sid;
} proc_row;

typedef struct {
    proc_row *row;
    size_t n, cap;
} proc_table;

static int cmp_row(const void *a, const void *b) {
    return cmp_pid(&((const proc_row *)a)->pid, &((const proc_row *)b)->pid);
}

/* pid's parent and session from /proc/PID/stat; 0, or -1 (ended, or a
 * zombie: nothing to wait for). */
static int stat_row(pid_t pid, proc_row *r) {
    char st[1024];
    ssize_t n = read_proc(pid, "stat", st, sizeof st - 1);
    if (n <= 0) return -1;
    st[n] = 0;
    char *close_paren = strrchr(st, ')'); /* the name may hold anything */
    char state;
    int ppid, pgrp, sid;
    if (!close_paren || sscanf(close_paren + 1, " %c %d %d %d", &state, &ppid, &pgrp, &sid) != 4 ||
        state == 'Z')
        return -1;
    r->pid = pid;
    r->ppid = (pid_t)ppid;
    r->sid = (pid_t)sid;
    return 0;
}

/* Every live process, sorted by pid. 0, or -1 (out of memory). */
static int table_read(proc_table *t) {
    t->row = NULL;
    t->n = t->cap = 0;
    DIR *d = opendir("/proc");
    if (!d) return 0;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        proc_row r;
        if (*end || pid <= 0 || stat_row((pid_t)pid, &r) < 0) continue;
        if (t->n == t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 256;
            proc_row *p = realloc(t->row, cap * sizeof *p);
            if (!p) {
                rc = -1;
                break;
            }
            t->row = p;
            t->cap = cap;
        }
        t->row[t->n++] = r;
    }
    closedir(d);
    if (t->n > 1) qsort(t->row, t->n, sizeof *t->row, cmp_row);
    return rc;
}

static const proc_row *table_find(const proc_table *t, pid_t pid) {
    proc_row key = {pid, 0, 0};
    return t->n ? bsearch(&key, t->row, t->n, sizeof key, cmp_row) : NULL;
}

/* Whether r descends from `me` (at most 64 generations up). */
static int descends(const proc_table *t, const proc_row *r, pid_t me) {
    pid_t p = r->ppid;
    for (int seen = 0; p > 0 && p != me && seen < 64; seen++) {
        const proc_row *up = table_find(t, p);
        p = up ? up->ppid : 0;
    }
    return p == me;
}

/* ---- what the waits ask --------------------------------------------------------- */

int procs_profiled_children(const char *me_exe, const procs_set *keep, procs_set *out) {
    out->n = 0;
    proc_table t;
    if (table_read(&t) < 0) return -1;
    pid_t me = getpid();
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < t.n; i++) {
        pid_t pid = t.row[i].pid;
        if ((keep && !set_has(keep, pid)) || !descends(&t, &t.row[i], me) ||
            !is_python(pid, me_exe) || profiled(pid) == 0 || mp_helper(pid))
            continue;
        rc = set_add(out, pid);
    }
    free(t.row);
    set_sort(out);
    return rc;
}

/* The pids the draining daemon lists (daemon-N.pids beside daemon-N.sock),
 * added to *s; none for an address that is not such a socket. */
static int daemon_pids(const char *addr, size_t len, procs_set *s) {
    if (len < 5 + 5 || memcmp(addr, "unix:", 5) != 0 || memcmp(addr + len - 5, ".sock", 5) != 0)
        return 0;
    char *path = malloc(len + 1);
    if (!path) return -1;
    memcpy(path, addr + 5, len - 10);
    memcpy(path + len - 10, ".pids", 6);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0) return 0;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return 0;
    }
    long pid;
    int rc = 0;
    while (rc == 0 && fscanf(f, "%ld", &pid) == 1)
        if (pid > 0) rc = set_add(s, (pid_t)pid);
    fclose(f);
    return rc;
}

/* Whether pid's environment holds TRACY_ADDR=addr. */
static int names_addr(pid_t pid, const char *addr, size_t len) {
    char *env = NULL, *want = malloc(len + 12);
    ssize_t n = want ? read_environ(pid, &env) : -1;
    int r = 0;
    if (n > 0) {
        memcpy(want, "TRACY_ADDR=", 11);
        memcpy(want + 11, addr, len);
        want[11 + len] = 0;
        r = has_entry(env, (size_t)n + 1, want, len + 12); /* (env ends in NUL) */
    }
    free(env);
    free(want);
    return r;
}

int procs_detached_only(pid_t daemon, const char *addr, size_t addr_len, pid_t sid) {
    procs_set rec = {0};
    proc_table t;
    if (daemon_pids(addr, addr_len, &rec) < 0 || table_read(&t) < 0) {
        procs_set_free(&rec);
        return -1;
    }
    set_sort(&rec);
    pid_t me = getpid();
    size_t clients = 0;
    int rc = 1;
    for (size_t i = 0; rc == 1 && i < t.n; i++) {
        const proc_row *r = &t.row[i];
        if (r->pid == me || r->pid == daemon) continue;
        if (r->sid == sid && descends(&t, r, me)) rc = 0; /* the program's, in its session */
        else if (set_has(&rec, r->pid) || names_addr(r->pid, addr, addr_len)) {
            if (r->sid == sid) rc = 0;
            clients++;
        }
    }
    /* a listed pid /proc does not show has ended: not counted */
    free(t.row);
    procs_set_free(&rec);
    return rc == 1 ? clients > 0 : rc;
}
