/* check_serve.c -- tracy-serve as a real process over loopback sockets:
 * sessions against tracy-info, hostile paths and names, bad parameters,
 * the token, a growing trace, mutated traces, and many concurrent and slow
 * clients with the server's memory bounded. */
#include <arpa/inet.h>
#include <dirent.h>
#include <check.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json.h"
#include "scratch.h"

typedef struct srv {
    pid_t pid;
    int port;
} srv;

static const char *build_dir(void) {
    const char *b = getenv("LT_BUILD");
    ck_assert_msg(b != NULL, "LT_BUILD is not set (run through make check-c)");
    return b;
}

static void sh(const char *fmt, ...) {
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

static void gen(const char *out, const char *args) {
    sh("'%s/tools/tracegen' -f -o '%s' %s >/dev/null", build_dir(), out, args);
}

/* Starts tracy-serve -p 0 with `args` (PATHs and options), its limit of
 * open files set to `nofile` (soft and hard; 0: inherited); reads the URL
 * line for the port. Returns 0, or the exit status when it stopped. */
static int start_nofile(srv *s, const char *args, rlim_t nofile) {
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "exec '%s/bin/tracy-serve' -p 0 --cache '%s/cache' %s", build_dir(),
             scratch_dir, args);
    s->pid = fork();
    ck_assert_int_ge(s->pid, 0);
    if (s->pid == 0) {
        struct rlimit rl = {nofile, nofile};
        if (nofile && setrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(126);
        dup2(fds[1], 1);
        close(fds[0]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char line[512];
    size_t n = 0;
    while (n < sizeof line - 1) {
        ssize_t r = read(fds[0], line + n, 1);
        if (r <= 0 || line[n] == '\n') break;
        n++;
    }
    line[n] = 0;
    close(fds[0]);
    const char *p = strstr(line, "http://127.0.0.1:");
    if (!p) {
        int st;
        waitpid(s->pid, &st, 0);
        s->pid = 0;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    }
    s->port = atoi(p + 17);
    return 0;
}

static int start(srv *s, const char *args) { return start_nofile(s, args, 0); }

static void stop(srv *s) {
    int st;
    ck_assert_int_eq(waitpid(s->pid, &st, WNOHANG), 0); /* still alive */
    kill(s->pid, SIGTERM);
    ck_assert_int_eq(waitpid(s->pid, &st, 0), s->pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int dial(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static void send_all(int fd, const char *b, size_t n) {
    while (n) {
        ssize_t w = write(fd, b, n);
        ck_assert_int_gt(w, 0);
        b += w, n -= (size_t)w;
    }
}

/* The errno of read_all's last failed read (0: it ended at the peer's close). */
static int read_errno;

/* Reads until the peer closes; returns the bytes (NUL-terminated). */
static char *read_all(int fd, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    read_errno = 0;
    for (;;) {
        if (n + 1 == cap) b = realloc(b, cap *= 2);
        ssize_t r = read(fd, b + n, cap - n - 1);
        if (r < 0) read_errno = errno;
        if (r <= 0) break;
        n += (size_t)r;
    }
    b[n] = 0;
    if (len) *len = n;
    return b;
}

typedef struct resp {
    int status;
    char *raw, *body;
    size_t len;
} resp;

/* One raw request (its text as given), the connection closed after. */
static resp raw_req(int port, const char *text) {
    int fd = dial(port);
    send_all(fd, text, strlen(text));
    resp r = {0, NULL, NULL, 0};
    r.raw = read_all(fd, &r.len);
    close(fd);
    sscanf(r.raw, "HTTP/1.1 %d", &r.status);
    char *b = strstr(r.raw, "\r\n\r\n");
    r.body = b ? b + 4 : r.raw + r.len;
    return r;
}

static resp get(int port, const char *target) {
    char req[4096];
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", target, port);
    return raw_req(port, req);
}

static cJSON *get_json(int port, const char *target, int want_status) {
    resp r = get(port, target);
    ck_assert_msg(r.status == want_status, "%s: status %d, want %d: %s", target, r.status, want_status, r.body);
    cJSON *j = cJSON_Parse(r.body);
    ck_assert_msg(j != NULL, "%s: not JSON: %.200s", target, r.body);
    free(r.raw);
    return j;
}

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    ck_assert_msg(cJSON_IsNumber(v), "no number %s", k);
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    ck_assert_msg(cJSON_IsString(v), "no string %s", k);
    return v->valuestring;
}

static cJSON *info_json(const char *trace) {
    char out[300];
    snprintf(out, sizeof out, "%s/info.json", scratch_dir);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/bin/tracy-info' --json '%s' > '%s' 2>/dev/null", build_dir(), trace, out);
    int st = system(cmd);
    ck_assert(WIFEXITED(st));
    size_t n;
    uint8_t *b = slurp(out, &n);
    b[n] = 0;
    cJSON *j = cJSON_Parse((char *)b);
    ck_assert_msg(j != NULL, "tracy-info --json %s: %.200s", trace, (char *)b);
    free(b);
    return j;
}

/* GET /api/t/ID/meta, answered with want_status: its JSON. */
static cJSON *get_meta(int port, const char *id, int want_status) {
    char t[200];
    snprintf(t, sizeof t, "/api/t/%s/meta", id);
    return get_json(port, t, want_status);
}

/* The id of the session whose path is `rel`. */
static char *session_id(int port, const char *rel) {
    cJSON *j = get_json(port, "/api/sessions", 200);
    const cJSON *s;
    char *id = NULL;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "sessions"))
        if (!strcmp(str(s, "path"), rel)) id = strdup(str(s, "id"));
    cJSON_Delete(j);
    ck_assert_msg(id != NULL, "no session %s", rel);
    return id;
}

static void setup(void) { scratch_make("check_serve"); }

/* Every trace of the folder (subfolders too) with tracy-info's figures. */
START_TEST(sessions_match_tracy_info) {
    sh("mkdir -p '%s/runs/sub'", scratch_dir);
    gen(scratch_path("runs/a.tracy"), "-z 20000 -t 3 -d 5 --lost 4");
    gen(scratch_path("runs/sub/b.tracy"), "-z 7000 -t 2 -p 2 -d 4");
    gen(scratch_path("runs/sub/c.tracy"), "-z 5000 -t 2 -d 4 --no-trailer");
    gen(scratch_path("runs/d.tracy"), "-z 0 --no-trailer"); /* no event yet */
    sh("echo not a trace > '%s/runs/notes.txt'", scratch_dir);
    srv s;
    ck_assert_int_eq(start(&s, scratch_path("runs")), 0);
    cJSON *j = get_json(s.port, "/api/sessions", 200);
    const cJSON *arr = cJSON_GetObjectItem(j, "sessions"), *e;
    ck_assert_int_eq(cJSON_GetArraySize(arr), 4);
    cJSON_ArrayForEach(e, arr) {
        char path[300];
        snprintf(path, sizeof path, "%s/runs/%s", scratch_dir, str(e, "path"));
        cJSON *info = info_json(path);
        /* a start in wall time: of the first event, or (none yet) the
         * file's creation, never the time the clock's count began */
        if (num(info, "first_ts") == 0)
            ck_assert_double_eq(strtod(str(e, "wall_start_ns"), NULL), num(info, "created_wall_ns"));
        ck_assert_double_eq(num(e, "zones"), num(info, "zones"));
        ck_assert_double_eq(num(e, "lost"), num(info, "lost_events"));
        ck_assert_double_eq(num(e, "threads"), num(info, "threads"));
        ck_assert_double_eq(num(e, "processes"), cJSON_GetArraySize(cJSON_GetObjectItem(info, "processes")));
        ck_assert_double_eq(num(e, "duration_ns"), num(info, "duration_ns"));
        ck_assert_double_eq(num(e, "size"), num(info, "file_size"));
        const char *st = str(e, "state");
        if (cJSON_IsTrue(cJSON_GetObjectItem(info, "complete"))) ck_assert_str_eq(st, "complete");
        else ck_assert(!strcmp(st, "writing") || !strcmp(st, "truncated"));
        cJSON_Delete(info);
    }
    cJSON_Delete(j);
    /* a new file appears without a restart */
    gen(scratch_path("runs/sub/e.tracy"), "-z 100");
    j = get_json(s.port, "/api/sessions", 200);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "sessions")), 5);
    ck_assert_str_eq(str(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "sessions"), 0), "path"), "sub/e.tracy");
    cJSON_Delete(j);
    stop(&s);
}
END_TEST

/* Nothing outside the served folder is reachable: traversal in any
 * spelling, absolute targets, and symbolic links out are refused. */
START_TEST(hostile_paths) {
    sh("mkdir -p '%s/served' '%s/outside'", scratch_dir, scratch_dir);
    gen(scratch_path("served/in.tracy"), "-z 100");
    gen(scratch_path("outside/secret.tracy"), "-z 100");
    sh("ln -s '%s/outside/secret.tracy' '%s/served/link.tracy'", scratch_dir, scratch_dir);
    sh("ln -s '%s/outside' '%s/served/dirlink'", scratch_dir, scratch_dir);
    srv s;
    ck_assert_int_eq(start(&s, scratch_path("served")), 0);
    cJSON *j = get_json(s.port, "/api/sessions", 200);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "sessions")), 1);
    cJSON_Delete(j);
    static const char *targets[] = {
        "/../outside/secret.tracy", "/%2e%2e/outside/secret.tracy", "/..%2foutside%2fsecret.tracy",
        "/api/t/../../etc/passwd", "/api/t/%2e%2e%2f%2e%2e/meta", "//etc/passwd", "/etc/passwd",
        "/api/t/0123456789abcdef/meta", "/api/t/0123456789ABCDEF/meta", "/api/t/in.tracy/meta",
        "/index.html/../../etc/passwd", "/.hidden", "/api/t//meta", "/api/sessions/../x"};
    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
        resp r = get(s.port, targets[i]);
        ck_assert_msg(r.status == 404 || r.status == 400, "%s: %d", targets[i], r.status);
        ck_assert_ptr_null(strstr(r.body, "root:"));
        ck_assert_ptr_null(strstr(r.body, "TRACY"));
        free(r.raw);
    }
    char req[256];
    snprintf(req, sizeof req, "GET http://127.0.0.1:%d/etc/passwd HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", s.port, s.port);
    resp r = raw_req(s.port, req);
    ck_assert_int_eq(r.status, 400);
    free(r.raw);
    stop(&s);
}
END_TEST

/* Every id below /meta's `records` is a zone's (/zone answers it) or
 * another record's (404); the zones are exactly `zones` of them. */
START_TEST(zone_ids_below_records) {
    gen(scratch_path("ids.tracy"), "-z 300 -t 2 -d 3 --messages 6 --plots 4 --frames 3");
    srv s;
    ck_assert_int_eq(start(&s, scratch_path("ids.tracy")), 0);
    char *id = session_id(s.port, "ids.tracy");
    char t[200];
    cJSON *m = get_meta(s.port, id, 200);
    double zones = num(m, "zones"), records = num(m, "records");
    cJSON_Delete(m);
    ck_assert_double_gt(records, zones); /* markers, samples, frame marks */
    int found = 0;
    for (int i = 0; i <= (int)records; i++) {
        snprintf(t, sizeof t, "/api/t/%s/zone?id=%d", id, i);
        resp r = get(s.port, t);
        ck_assert_msg(r.status == 200 || (r.status == 404 && strstr(r.body, "no zone")),
                      "%s: %d", t, r.status);
        ck_assert_msg(i < (int)records || r.status == 404, "id %d past records answered", i);
        found += r.status == 200;
        free(r.raw);
    }
    ck_assert_int_eq(found, (int)zones);
    free(id);
    stop(&s);
}
END_TEST

/* Parameters out of range get a 4xx JSON error; the server goes on. */
START_TEST(bad_parameters) {
    gen(scratch_path("p.tracy"), "-z 3000 -t 2 -d 4");
    srv s;
    ck_assert_int_eq(start(&s, scratch_path("p.tracy")), 0);
    char *id = session_id(s.port, "p.tracy");
    static const struct { const char *q; int status; } cases[] = {
        {"view?t0=NaN&t1=5&px=10", 400}, {"view?t0=-1&t1=5&px=10", 400},
        {"view?t0=0&t1=1e300&px=10", 400}, {"view?t0=5&t1=5&px=10", 400},
        {"view?t0=9&t1=5&px=10", 400}, {"view?t0=0&t1=5&px=0", 400},
        {"view?t0=0&t1=5&px=100000", 400}, {"view?t0=0&t1=5", 400},
        {"view?t0=0&t1=5&px=10&tracks=99", 400}, {"view?t0=0&t1=5&px=10&tracks=a", 400},
        {"view?t0=%zz&t1=5&px=10", 400}, {"view?t0=inf&t1=5&px=10", 400},
        {"zone?id=99999999999", 404}, {"zone?id=-3", 400}, {"zone", 400},
        {"find?func=100000", 404}, {"find", 400}, {"find?func=1&q=x", 400},
        {"range?t0=1&t1=0", 400}, {"nothing", 404},
        {"view?t0=0&t1=100000000&px=2000", 200}, {"find?q=func", 200}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char t[300];
        snprintf(t, sizeof t, "/api/t/%s/%s", id, cases[i].q);
        cJSON *j = get_json(s.port, t, cases[i].status);
        if (cases[i].status != 200) ck_assert_uint_gt(strlen(str(j, "error")), 0);
        cJSON_Delete(j);
    }
    char req[512];
    snprintf(req, sizeof req, "POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", s.port);
    resp r = raw_req(s.port, req);
    ck_assert_int_eq(r.status, 405);
    free(r.raw);
    snprintf(req, sizeof req, "POST /api/capture HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", s.port);
    r = raw_req(s.port, req);
    ck_assert_int_eq(r.status, 415); /* not sent as JSON: a form of another site */
    free(r.raw);
    snprintf(req, sizeof req, "POST /api/capture HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}", s.port);
    r = raw_req(s.port, req);
    ck_assert_int_eq(r.status, 415);
    free(r.raw);
    snprintf(req, sizeof req, "POST /api/capture HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", s.port);
    r = raw_req(s.port, req);
    ck_assert_int_eq(r.status, 400); /* no address, no duration */
    free(r.raw);
    snprintf(req, sizeof req, "GET /api/sessions HTTP/1.1\r\nHost: attacker.example:%d\r\nConnection: close\r\n\r\n", s.port);
    r = raw_req(s.port, req);
    ck_assert_int_eq(r.status, 403);
    free(r.raw);
    r = raw_req(s.port, "GET /api/sessions HTTP/1.1\r\nConnection: close\r\n\r\n");
    ck_assert_int_eq(r.status, 403);
    free(r.raw);
    char *big = malloc(20000);
    memset(big, 'a', 19999);
    big[19999] = 0;
    memcpy(big, "GET /", 5);
    r = raw_req(s.port, big);
    ck_assert_int_eq(r.status, 413);
    free(r.raw);
    free(big);
    r = raw_req(s.port, "garbage\r\n\r\n");
    ck_assert_int_eq(r.status, 400);
    free(r.raw);
    free(id);
    stop(&s);
}
END_TEST

/* Names with markup, quotes and invalid UTF-8 come out as escaped text. */
START_TEST(hostile_names) {
    char args[256];
    snprintf(args, sizeof args, "-z 500 --rename 1:'</script><img src=x onerror=alert(1)>\"q&'");
    gen(scratch_path("h.tracy"), args);
    srv s;
    ck_assert_int_eq(start(&s, scratch_path("h.tracy")), 0);
    char *id = session_id(s.port, "h.tracy");
    char t[200];
    snprintf(t, sizeof t, "/api/t/%s/functions", id);
    resp r = get(s.port, t);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_null(strchr(r.body, '<'));
    ck_assert_ptr_null(strchr(r.body, '>'));
    for (const unsigned char *p = (const unsigned char *)r.body; *p; p++) ck_assert_uint_lt(*p, 0x80);
    cJSON *j = cJSON_Parse(r.body);
    ck_assert_ptr_nonnull(j);
    int found = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(j, "functions"))
        found |= !strcmp(str(f, "name"), "</script><img src=x onerror=alert(1)>\"q&");
    ck_assert_int_eq(found, 1);
    cJSON_Delete(j);
    free(r.raw);
    free(id);
    stop(&s);
}
END_TEST

/* The JSON writer: markup escaped, invalid UTF-8 replaced by U+FFFD,
 * valid sequences kept, control characters escaped. */
START_TEST(json_escapes) {
    jb j;
    jb_init(&j, 1 << 10);
    const char in[] = "a</script>\"\\\xff\xfe\xc3\xa9\xe2\x82\xac\xed\xa0\x80\x01\n&";
    jb_strn(&j, in, sizeof in - 1);
    ck_assert_str_eq(j.buf, "\"a\\u003c/script\\u003e\\\"\\\\\\ufffd\\ufffd\xc3\xa9\xe2\x82\xac"
                            "\\ufffd\\ufffd\\ufffd\\u0001\\n\\u0026\"");
    jb_free(&j);
    jb_init(&j, 16); /* past the limit: failed, nothing half written counts */
    jb_str(&j, "a string longer than sixteen bytes");
    ck_assert_int_eq(jb_failed(&j), 1);
    jb_free(&j);
}
END_TEST

/* With a token: refused without it, a cookie once it is given. A
 * non-loopback address without a token does not start. */
START_TEST(token) {
    gen(scratch_path("t.tracy"), "-z 100");
    sh("printf 'sekrit-42\\n' > '%s/tok' && chmod 600 '%s/tok'", scratch_dir, scratch_dir);
    srv s;
    char args[512];
    snprintf(args, sizeof args, "--token-file '%s/tok' '%s'", scratch_dir, scratch_path("t.tracy"));
    ck_assert_int_eq(start(&s, args), 0);
    resp r = get(s.port, "/api/sessions");
    ck_assert_int_eq(r.status, 403);
    free(r.raw);
    r = get(s.port, "/?token=wrong");
    ck_assert_int_eq(r.status, 403);
    free(r.raw);
    r = get(s.port, "/?token=sekrit-42");
    ck_assert_int_eq(r.status, 303);
    ck_assert_ptr_nonnull(strstr(r.raw, "Set-Cookie: tracy_token=sekrit-42; HttpOnly; SameSite=Strict"));
    free(r.raw);
    char req[512];
    snprintf(req, sizeof req, "GET /api/sessions HTTP/1.1\r\nHost: localhost:%d\r\nCookie: a=b; tracy_token=sekrit-42\r\nConnection: close\r\n\r\n", s.port);
    r = raw_req(s.port, req);
    ck_assert_int_eq(r.status, 200);
    free(r.raw);
    stop(&s);
    snprintf(args, sizeof args, "-a 0.0.0.0 '%s' 2>/dev/null", scratch_path("t.tracy"));
    ck_assert_int_eq(start(&s, args), 1);
}
END_TEST

/* The records file of the only index in the cache folder (view.h,
 * "Extension"): its inode and size. */
static void records_file(ino_t *ino, off_t *size) {
    char dir[256], path[512];
    snprintf(dir, sizeof dir, "%s/cache", scratch_dir);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".rec")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    ck_assert_int_eq(n, 1);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    *ino = st.st_ino;
    *size = st.st_size;
}

/* A trace being written: meta follows its growth at the next request, its
 * index extended (its records file appended to, not made anew). */
START_TEST(growing_trace) {
    gen(scratch_path("full.tracy"), "-z 30000 -t 2 -d 5 --no-trailer");
    size_t len;
    uint8_t *b = slurp(scratch_path("full.tracy"), &len);
    sh("mkdir '%s/live'", scratch_dir);
    spit(scratch_path("live/g.tracy"), b, len / 3);
    srv s;
    ck_assert_int_eq(start(&s, scratch_path("live")), 0);
    char *id = session_id(s.port, "g.tracy");
    cJSON *j = get_meta(s.port, id, 200);
    double z1 = num(j, "zones"), g1 = num(j, "generation");
    ck_assert_str_eq(str(j, "state"), "writing");
    cJSON_Delete(j);
    ino_t ino1, ino2;
    off_t size1, size2;
    records_file(&ino1, &size1);
    FILE *f = fopen(scratch_path("live/g.tracy"), "ab"); /* the rest, appended */
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b + len / 3, 1, len - len / 3, f), len - len / 3);
    ck_assert_int_eq(fclose(f), 0);
    /* the first request after the growth answers from the index in hand and
     * starts the new one: the page polls until the generation moves */
    j = get_meta(s.port, id, 200);
    for (int k = 0; k < 400 && num(j, "generation") == g1; k++) {
        cJSON_Delete(j);
        usleep(20000);
        j = get_meta(s.port, id, 200);
    }
    ck_assert_double_eq(num(j, "zones"), 30000);
    ck_assert_double_gt(30000, z1);
    ck_assert_double_gt(num(j, "generation"), g1);
    cJSON_Delete(j);
    records_file(&ino2, &size2);
    ck_assert_uint_eq(ino2, ino1);
    ck_assert_int_gt(size2, size1);
    free(b);
    free(id);
    stop(&s);
}
END_TEST

/* Every row of a tracy-csv --stats file has a function of the same name in
 * the range answer j with the same calls and total, and j no other. */
static void compare_stats(const char *csv_path, const cJSON *j) {
    size_t len;
    char *csv = (char *)slurp(csv_path, &len);
    csv[len] = 0;
    int rows = 0;
    for (char *line = strtok(strchr(csv, '\n') + 1, "\n"); line; line = strtok(NULL, "\n")) {
        char name[128];
        unsigned long long total, counts;
        ck_assert_int_eq(sscanf(line, "%127[^,],%*[^,],%*[^,],%llu,%*[^,],%llu", name, &total, &counts), 3);
        const cJSON *f;
        int found = 0;
        cJSON_ArrayForEach(f, cJSON_GetObjectItem(j, "functions")) {
            if (strcmp(str(f, "name"), name)) continue;
            found = 1;
            ck_assert_msg(num(f, "calls") == (double)counts && num(f, "total") == (double)total,
                          "%s: range %.0f calls %.0f ns, csv %llu calls %llu ns", name, num(f, "calls"),
                          num(f, "total"), counts, total);
        }
        ck_assert_msg(found, "%s not in the range table", name);
        rows++;
    }
    ck_assert_int_eq(rows, cJSON_GetArraySize(cJSON_GetObjectItem(j, "functions")));
    free(csv);
}

/* A range over the whole run gives tracy-csv --stats' table (the same
 * call tree model); a narrower one clips and counts fewer. */
START_TEST(range_matches_csv_stats) {
    gen(scratch_path("r.tracy"), "-z 20000 -t 3 -d 6");
    sh("'%s/bin/tracy-csv' --stats '%s' > '%s'", build_dir(), scratch_path("r.tracy"), scratch_path("stats.csv"));
    srv s;
    ck_assert_int_eq(start(&s, scratch_path("r.tracy")), 0);
    char *id = session_id(s.port, "r.tracy");
    char t[300];
    cJSON *m = get_meta(s.port, id, 200);
    double dur = num(m, "duration_ns");
    cJSON_Delete(m);
    snprintf(t, sizeof t, "/api/t/%s/range?t0=0&t1=%.0f", id, dur + 1);
    cJSON *j = get_json(s.port, t, 200);
    ck_assert_double_eq(num(j, "zones"), 20000);
    compare_stats(scratch_path("stats.csv"), j);
    /* the tree: the root's children sum to the zones at depth 0 */
    const cJSON *tree = cJSON_GetObjectItem(j, "tree"), *n;
    double top = 0;
    cJSON_ArrayForEach(n, tree)
        if (cJSON_GetArrayItem(n, 1)->valuedouble == 0) top += cJSON_GetArrayItem(n, 3)->valuedouble;
    ck_assert_double_gt(top, 0);
    /* find: its count equals the range's calls, and stepping with after=
     * visits the function's zones in start order, before= steps back */
    const cJSON *f0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "functions"), 3);
    int fid = (int)num(f0, "func");
    snprintf(t, sizeof t, "/api/t/%s/find?func=%d", id, fid);
    cJSON *fj = get_json(s.port, t, 200);
    ck_assert_double_eq(num(fj, "count"), num(f0, "calls"));
    double prev = -1, last = 0, index = 0;
    for (int k = 0; k < 8; k++) {
        const cJSON *z = cJSON_GetObjectItem(fj, "zone");
        ck_assert(cJSON_IsObject(z));
        ck_assert_double_eq(num(z, "func"), fid);
        ck_assert_double_gt(num(z, "start"), prev);
        /* index: 1 for the first, then growing by the zones passed */
        if (k == 0) ck_assert_double_eq(num(fj, "index"), 1);
        ck_assert_double_gt(num(fj, "index"), index);
        index = num(fj, "index");
        prev = num(z, "start");
        cJSON_Delete(fj);
        snprintf(t, sizeof t, "/api/t/%s/find?func=%d&after=%.0f", id, fid, prev);
        fj = get_json(s.port, t, 200);
    }
    last = num(cJSON_GetObjectItem(fj, "zone"), "start");
    cJSON_Delete(fj);
    snprintf(t, sizeof t, "/api/t/%s/find?func=%d&before=%.0f", id, fid, last);
    fj = get_json(s.port, t, 200);
    ck_assert_double_eq(num(cJSON_GetObjectItem(fj, "zone"), "start"), prev);
    ck_assert_double_eq(num(fj, "index"), index);
    cJSON_Delete(fj);
    /* the last occurrence is at the end of the count (ties: one per track) */
    snprintf(t, sizeof t, "/api/t/%s/find?func=%d&before=%.0f", id, fid, dur + 1);
    fj = get_json(s.port, t, 200);
    ck_assert_double_le(num(fj, "index"), num(fj, "count"));
    ck_assert_double_gt(num(fj, "index"), num(fj, "count") - 3);
    cJSON_Delete(fj);
    snprintf(t, sizeof t, "/api/t/%s/find?func=%d&after=%.0f", id, fid, dur + 1);
    fj = get_json(s.port, t, 200);
    ck_assert_double_eq(num(fj, "index"), 0);
    cJSON_Delete(fj);
    cJSON_Delete(j);
    /* a window: tracy-cut of it, then tracy-csv --stats, gives the same */
    uint64_t a0 = (uint64_t)(dur / 3), a1 = (uint64_t)(dur / 2);
    snprintf(t, sizeof t, "/api/t/%s/range?t0=%llu&t1=%llu", id, (unsigned long long)a0, (unsigned long long)a1);
    j = get_json(s.port, t, 200);
    ck_assert_double_lt(num(j, "zones"), 20000);
    ck_assert_double_gt(num(j, "zones"), 0);
    sh("'%s/bin/tracy-cut' -q --from %lluns --to %lluns -o '%s' '%s' && '%s/bin/tracy-csv' --stats '%s' > '%s'",
       build_dir(), (unsigned long long)a0, (unsigned long long)a1, scratch_path("cut.tracy"),
       scratch_path("r.tracy"), build_dir(), scratch_path("cut.tracy"), scratch_path("cut.csv"));
    compare_stats(scratch_path("cut.csv"), j);
    cJSON_Delete(j);
    free(id);
    stop(&s);
}
END_TEST

/* Two runs of a program: the diff finds the function made slower (as
 * tracy-diff does), the trend lists both runs. */
START_TEST(diff_and_trend) {
    sh("mkdir -p '%s/ci'", scratch_dir);
    gen(scratch_path("ci/base.tracy"), "-z 30000 -t 2 -d 5");
    gen(scratch_path("ci/new.tracy"), "-z 30000 -t 2 -d 5 --slow 3:60");
    sh("'%s/bin/tracy-diff' -f json '%s' '%s' > '%s'; test $? -le 1", build_dir(), scratch_path("ci/base.tracy"),
       scratch_path("ci/new.tracy"), scratch_path("diff.json"));
    srv s;
    ck_assert_int_eq(start(&s, scratch_path("ci")), 0);
    char *a = session_id(s.port, "base.tracy"), *b = session_id(s.port, "new.tracy");
    char t[200];
    snprintf(t, sizeof t, "/api/diff?a=%s&b=%s", a, b);
    cJSON *j = get_json(s.port, t, 200);
    size_t len;
    char *dj = (char *)slurp(scratch_path("diff.json"), &len);
    dj[len] = 0;
    cJSON *cli = cJSON_Parse(dj);
    ck_assert_ptr_nonnull(cli);
    /* every function row: the same status as tracy-diff's */
    const cJSON *f, *row;
    int n = 0, regressions = 0;
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(j, "functions")) {
        int found = 0;
        cJSON_ArrayForEach(row, cJSON_GetObjectItem(cli, "rows")) {
            if (strcmp(str(row, "kind"), "function") || strcmp(str(row, "name"), str(f, "name"))) continue;
            found = 1;
            ck_assert_str_eq(str(row, "status"), str(f, "status"));
        }
        ck_assert_msg(found, "%s not in tracy-diff's rows", str(f, "name"));
        regressions += !strcmp(str(f, "status"), "regression");
        n++;
    }
    int cli_rows = 0;
    cJSON_ArrayForEach(row, cJSON_GetObjectItem(cli, "rows")) cli_rows += !strcmp(str(row, "kind"), "function");
    ck_assert_int_eq(n, cli_rows);
    ck_assert_double_eq(regressions, num(cJSON_GetObjectItem(cli, "summary"), "regressions"));
    ck_assert_int_gt(regressions, 0);
    cJSON_Delete(cli);
    free(dj);
    cJSON_Delete(j);
    /* the error names the side that is missing */
    snprintf(t, sizeof t, "/api/diff?a=%s&b=0000000000000000", a);
    j = get_json(s.port, t, 404);
    ck_assert_str_eq(str(j, "error"), "no session 0000000000000000");
    cJSON_Delete(j);
    snprintf(t, sizeof t, "/api/diff?a=0000000000000000&b=%s", b);
    j = get_json(s.port, t, 404);
    ck_assert_str_eq(str(j, "error"), "no session 0000000000000000");
    cJSON_Delete(j);
    j = get_json(s.port, "/api/trend?program=app1", 200);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "sessions")), 2);
    ck_assert_int_gt(cJSON_GetArraySize(cJSON_GetObjectItem(j, "functions")), 0);
    cJSON_Delete(j);
    j = get_json(s.port, "/api/trend?program=nothing", 200);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "sessions")), 0);
    cJSON_Delete(j);
    free(a);
    free(b);
    stop(&s);
}
END_TEST

/* Mutated traces: each gives a session (or an error for it), never a
 * crash. */
START_TEST(mutated_traces) {
    gen(scratch_path("m.tracy"), "-z 4000 -t 2 -d 4 --messages 10 --plots 10");
    size_t len;
    uint8_t *b = slurp(scratch_path("m.tracy"), &len);
    sh("mkdir '%s/mut'", scratch_dir);
    srand(11);
    for (int k = 0; k < 24; k++) {
        uint8_t *m = malloc(len);
        memcpy(m, b, len);
        for (int f = 0; f < 1 + k % 3; f++) m[(size_t)rand() % len] ^= (uint8_t)(1 + rand() % 255);
        char name[64];
        snprintf(name, sizeof name, "mut/m%02d.tracy", k);
        spit(scratch_path(name), m, k % 4 == 0 ? len / 2 : len);
        free(m);
    }
    srv s;
    ck_assert_int_eq(start(&s, scratch_path("mut")), 0);
    cJSON *j = get_json(s.port, "/api/sessions", 200);
    const cJSON *e;
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "sessions")), 24);
    /* the list reads headers and trailers only: damage inside a block shows
     * when the trace is indexed, and the list says so from then on */
    char failed[24][17];
    int nfailed = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "sessions")) {
        char t[200];
        snprintf(t, sizeof t, "/api/t/%s/view?t0=0&t1=100000000&px=500", str(e, "id"));
        resp r = get(s.port, t);
        int err = !strcmp(str(e, "state"), "error");
        ck_assert_msg(r.status == 422 || (r.status == 200 && !err), "%s: %d", str(e, "path"), r.status);
        if (r.status == 422) snprintf(failed[nfailed++], 17, "%s", str(e, "id"));
        free(r.raw);
    }
    cJSON_Delete(j);
    ck_assert_int_gt(nfailed, 0);
    j = get_json(s.port, "/api/sessions", 200);
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "sessions")) {
        int was = 0;
        for (int k = 0; k < nfailed; k++) was |= !strcmp(failed[k], str(e, "id"));
        ck_assert_int_eq(!strcmp(str(e, "state"), "error"), was);
    }
    cJSON_Delete(j);
    free(b);
    stop(&s);
}
END_TEST

/* POST /api/capture with `body`: the answer (status and JSON). */
static cJSON *post_capture(int port, const char *body, int want_status) {
    char req[1024];
    snprintf(req, sizeof req, "POST /api/capture HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s", port, strlen(body), body);
    resp r = raw_req(port, req);
    ck_assert_msg(r.status == want_status, "capture %s: status %d, want %d: %s", body, r.status,
                  want_status, r.body);
    cJSON *j = cJSON_Parse(r.body);
    ck_assert_msg(j != NULL, "not JSON: %.200s", r.body);
    free(r.raw);
    return j;
}

/* The entry of session `id` in /api/sessions (a copy), NULL when absent. */
static cJSON *session_entry(int port, const char *id) {
    cJSON *j = get_json(port, "/api/sessions", 200), *e, *found = NULL;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "sessions"))
        if (!strcmp(str(e, "id"), id)) found = cJSON_Duplicate(e, 1);
    cJSON_Delete(j);
    return found;
}

/* Waits (up to a minute) for session `id` to be listed complete; its entry. */
static cJSON *wait_complete(int port, const char *id) {
    for (int i = 0; i < 600; i++) {
        cJSON *e = session_entry(port, id);
        if (e && !strcmp(str(e, "state"), "complete")) return e;
        ck_assert_msg(!e || !strcmp(str(e, "state"), "writing"), "capture %s ended %s", id, str(e, "state"));
        cJSON_Delete(e);
        usleep(100000);
    }
    ck_abort_msg("capture %s did not complete", id);
    return NULL;
}

/* A Python program listening for captures (tracy.start_server, token
 * s3cret) that keeps calling tick(3): its pid, its port in *port. */
static pid_t start_listener(int *port) {
    static const char prog[] =
        "import time, tracy\n"
        "def tick(n):\n"
        "    return n if n < 1 else tick(n - 1)\n"
        "print(tracy.start_server(0, token='s3cret'), flush=True)\n"
        "while True:\n"
        "    tick(3)\n"
        "    time.sleep(0.001)\n";
    spit(scratch_path("listener.py"), (const uint8_t *)prog, sizeof prog - 1);
    const char *py = getenv("PYTHON");
    char pp[1024];
    snprintf(pp, sizeof pp, "%s/python", build_dir());
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        setenv("PYTHONPATH", pp, 1);
        unsetenv("TRACY_LISTEN");
        execlp(py && *py ? py : "/usr/bin/python3", "python3", scratch_path("listener.py"), (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char line[64];
    size_t n = 0;
    while (n < sizeof line - 1 && read(fds[0], line + n, 1) == 1 && line[n] != '\n') n++;
    line[n] = 0;
    close(fds[0]);
    *port = atoi(line);
    ck_assert_msg(*port > 0, "the listener printed no port: '%s'", line);
    return pid;
}

/* The page's Capture button: a running program records itself into the
 * served folder; the session is listed while it records, then complete,
 * with the program's zones; bad requests get a clear error. */
START_TEST(capture_from_server) {
    sh("mkdir -p '%s/served'", scratch_dir);
    int lport;
    pid_t lp = start_listener(&lport);
    srv s;
    ck_assert_int_eq(start(&s, scratch_path("served")), 0);
    char body[256];
    snprintf(body, sizeof body, "{\"address\": \"127.0.0.1:%d\", \"duration_ms\": 2000, \"token\": \"wrong\"}", lport);
    cJSON *j = post_capture(s.port, body, 502);
    ck_assert_str_eq(str(j, "code"), "refused");
    ck_assert_ptr_nonnull(strstr(str(j, "error"), "wrong token"));
    cJSON_Delete(j);
    snprintf(body, sizeof body, "{\"address\": \"127.0.0.1:%d\", \"duration_ms\": 2000, \"token\": \"s3cret\"}", lport);
    j = post_capture(s.port, body, 202);
    char *id = strdup(str(j, "id")), *path = strdup(str(j, "path"));
    ck_assert_str_eq(str(j, "state"), "recording");
    cJSON_Delete(j);
    ck_assert(!strncmp(path, "capture-127.0.0.1-", 18) && strstr(path, ".tracy"));
    /* listed while it records; a second capture of the same program waits */
    cJSON *e = session_entry(s.port, id);
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(str(e, "state"), "writing");
    ck_assert_str_eq(str(e, "capture"), "recording");
    cJSON_Delete(e);
    cJSON_Delete(post_capture(s.port, body, 409));
    char t[256];
    cJSON_Delete(get_meta(s.port, id, 409));
    /* then complete, with the program's zones */
    e = wait_complete(s.port, id);
    char file[600];
    snprintf(file, sizeof file, "%s/served/%s", scratch_dir, path);
    cJSON *info = info_json(file);
    ck_assert_double_eq(num(e, "zones"), num(info, "zones"));
    ck_assert_double_gt(num(e, "zones"), 0);
    ck_assert_ptr_null(cJSON_GetObjectItem(e, "capture"));
    cJSON_Delete(info);
    cJSON_Delete(e);
    snprintf(t, sizeof t, "/api/t/%s/functions", id);
    j = get_json(s.port, t, 200);
    double ticks = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "functions"))
        if (!strcmp(str(e, "name"), "tick")) ticks += num(e, "zones");
    ck_assert_double_gt(ticks, 0);
    cJSON_Delete(j);
    /* a second capture gets a new name: nothing is overwritten */
    snprintf(body, sizeof body, "{\"address\": \"127.0.0.1:%d\", \"duration_ms\": 50, \"token\": \"s3cret\"}", lport);
    j = post_capture(s.port, body, 202);
    ck_assert_str_ne(str(j, "path"), path);
    cJSON_Delete(wait_complete(s.port, str(j, "id")));
    cJSON_Delete(j);
    /* errors: nothing listening, bad durations and bodies */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    snprintf(body, sizeof body, "{\"address\": \"127.0.0.1:%d\", \"duration_ms\": 100}", ntohs(a.sin_port));
    close(fd); /* bound, never listened: refused */
    j = post_capture(s.port, body, 502);
    ck_assert_str_eq(str(j, "code"), "unreachable");
    cJSON_Delete(j);
    const char *bad[] = {"{\"address\": \"127.0.0.1:1\", \"duration_ms\": 0}",
                         "{\"address\": \"127.0.0.1:1\", \"duration_ms\": 86400001}",
                         "{\"address\": \"127.0.0.1:1\", \"duration_ms\": 1.5}",
                         "{\"address\": \"nowhere\", \"duration_ms\": 100}",
                         "{\"address\": \"127.0.0.1:1\", \"duration_ms\": 100, \"token\": \"a b\"}",
                         "{\"duration_ms\": 100}", "[1]", "not json", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        j = post_capture(s.port, bad[i], 400);
        ck_assert_str_eq(str(j, "code"), "bad_param");
        cJSON_Delete(j);
    }
    kill(lp, SIGKILL);
    int st;
    ck_assert_int_eq(waitpid(lp, &st, 0), lp);
    free(id);
    free(path);
    stop(&s);
}
END_TEST

static long rss_kib(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    long v = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) v = atol(line + 6);
    fclose(f);
    return v;
}

/* Lifts this process's soft limit on open files to `want` at least. */
static void own_nofile(rlim_t want) {
    struct rlimit rl;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < want && rl.rlim_max >= want) {
        rl.rlim_cur = want;
        ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    }
    ck_assert_uint_ge(rl.rlim_cur, want);
}

/* n clients connect, then each sends `req` and reads to the end: every one
 * gets a whole answer, none a reset. Returns how many were 503 (busy); the
 * others were 200. */
static int clients_at_once(int port, int n, const char *req) {
    int *fds = malloc((size_t)n * sizeof *fds), busy = 0;
    for (int i = 0; i < n; i++) fds[i] = dial(port);
    for (int i = 0; i < n; i++) send_all(fds[i], req, strlen(req));
    for (int i = 0; i < n; i++) {
        size_t len;
        char *all = read_all(fds[i], &len);
        ck_assert_msg(read_errno == 0, "client %d: %s after %zu bytes", i, strerror(read_errno), len);
        int st = 0;
        sscanf(all, "HTTP/1.1 %d", &st);
        char *body = strstr(all, "\r\n\r\n");
        ck_assert_msg(st == 200 || (st == 503 && body && strstr(body, "\"busy\"")), "client %d: status %d", i,
                      st);
        const char *cl = strstr(all, "Content-Length: ");
        ck_assert_msg(cl && body && strtoul(cl + 16, NULL, 10) == len - (size_t)(body + 4 - all),
                      "client %d: a partial answer", i);
        busy += st == 503;
        free(all);
        close(fds[i]);
    }
    free(fds);
    return busy;
}

/* 200 clients at once all get their answer, from a server allowed 128 open
 * files: past what they leave it waits to accept (none is reset); 100 that
 * send requests and read nothing leave the server's memory bounded and
 * others served. */
START_TEST(many_and_slow_clients) {
    gen(scratch_path("c.tracy"), "-z 200000 -t 4 -d 8");
    srv s;
    ck_assert_int_eq(start_nofile(&s, scratch_path("c.tracy"), 128), 0);
    char *id = session_id(s.port, "c.tracy");
    enum { N = 200, SLOW = 100 };
    char req[512];
    snprintf(req, sizeof req, "GET /api/t/%s/view?t0=0&t1=5000000&px=2000 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", id, s.port);
    ck_assert_int_eq(clients_at_once(s.port, N, req), 0);
    /* slow readers: pipelined requests, nothing read */
    snprintf(req, sizeof req, "GET /api/t/%s/view?t0=0&t1=5000000&px=8000 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", id, s.port);
    int slow[SLOW];
    for (int i = 0; i < SLOW; i++) {
        slow[i] = dial(s.port);
        int small = 4096;
        setsockopt(slow[i], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        for (int k = 0; k < 40; k++) {
            struct pollfd p = {slow[i], POLLOUT, 0};
            if (poll(&p, 1, 0) <= 0) break; /* its send buffer is full */
            ssize_t w = send(slow[i], req, strlen(req), MSG_DONTWAIT);
            if (w <= 0) break;
        }
    }
    cJSON *j = get_json(s.port, "/api/sessions", 200); /* served meanwhile */
    cJSON_Delete(j);
    long rss = rss_kib(s.pid);
    ck_assert_msg(rss > 0 && rss < 256 * 1024, "server RSS %ld KiB", rss);
    for (int i = 0; i < SLOW; i++) close(slow[i]);
    j = get_json(s.port, "/api/sessions", 200);
    cJSON_Delete(j);
    /* Writing to a client that reset its connection raises SIGPIPE (when
     * it happens depends on timing): the server must live through it. */
    ck_assert_int_eq(kill(s.pid, SIGPIPE), 0);
    j = get_json(s.port, "/api/sessions", 200);
    cJSON_Delete(j);
    free(id);
    stop(&s);
}
END_TEST

/* Past SV_MAX_CONNS (512) connections, the others are answered 503 once
 * their request is read: whole answers, nothing reset. */
START_TEST(busy_answers_503) {
    enum { N = 600 };
    own_nofile(N + 64);
    gen(scratch_path("b.tracy"), "-z 1000 -t 1 -d 4");
    srv s;
    ck_assert_int_eq(start(&s, scratch_path("b.tracy")), 0);
    char req[256];
    snprintf(req, sizeof req, "GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
             s.port);
    ck_assert_int_eq(clients_at_once(s.port, N, req), N - 512);
    cJSON_Delete(get_json(s.port, "/api/sessions", 200)); /* all closed: served again */
    stop(&s);
}
END_TEST

/* A folder of more traces than the server has descriptors for (128 open
 * files): a trend over them all is a clear 503 (no session left out
 * silently), nothing crashes, and the server still answers. */
START_TEST(descriptors_run_out) {
    enum { N = 120 };
    sh("mkdir -p '%s/many' && for i in $(seq 1 %d); do '%s/tools/tracegen' -f -o '%s/many/t'$i'.tracy' "
       "-z 200 -t 1 -d 3 >/dev/null || exit 1; done", scratch_dir, N, build_dir(), scratch_dir);
    srv s;
    ck_assert_int_eq(start_nofile(&s, scratch_path("many"), 128), 0);
    cJSON *j = get_json(s.port, "/api/sessions", 200); /* the trend reads their programs */
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "sessions")), N);
    cJSON_Delete(j);
    j = get_json(s.port, "/api/trend?program=app1", 503);
    ck_assert_str_eq(str(j, "code"), "no_descriptors");
    ck_assert_ptr_nonnull(strstr(str(j, "error"), strerror(EMFILE)));
    cJSON_Delete(j);
    j = get_json(s.port, "/api/sessions", 200);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "sessions")), N);
    cJSON_Delete(j);
    stop(&s);
}
END_TEST

Suite *serve_suite(void) {
    Suite *s = suite_create("serve");
    TCase *tc = tcase_create("server");
    tcase_add_checked_fixture(tc, setup, scratch_remove);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, sessions_match_tracy_info);
    tcase_add_test(tc, hostile_paths);
    tcase_add_test(tc, bad_parameters);
    tcase_add_test(tc, zone_ids_below_records);
    tcase_add_test(tc, hostile_names);
    tcase_add_test(tc, token);
    tcase_add_test(tc, json_escapes);
    tcase_add_test(tc, range_matches_csv_stats);
    tcase_add_test(tc, diff_and_trend);
    tcase_add_test(tc, growing_trace);
    tcase_add_test(tc, mutated_traces);
    tcase_add_test(tc, many_and_slow_clients);
    tcase_add_test(tc, busy_answers_503);
    tcase_add_test(tc, descriptors_run_out);
    suite_add_tcase(s, tc);
    tc = tcase_create("capture");
    tcase_add_checked_fixture(tc, setup, scratch_remove);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, capture_from_server);
    suite_add_tcase(s, tc);
    return s;
}
