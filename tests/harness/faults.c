/* faults.c -- the C suites' harness; contracts in faults.h. */
#include "faults.h"

const char *ft_build(void) {
    const char *b = getenv("LT_BUILD");
    ck_assert_msg(b != NULL, "LT_BUILD is not set (run through make check-c)");
    return b;
}

const char *ft_bin(const char *name) {
    static char path[4][512];
    static int k;
    char *p = path[k++ & 3];
    snprintf(p, 512, "%s/bin/%s", ft_build(), name);
    ck_assert_msg(access(p, X_OK) == 0, "%s is missing", p);
    return p;
}

void ft_dir_init(ft_dir *d) {
    strcpy(d->dir, "/tmp/check_faults.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(d->dir));
    snprintf(d->out, sizeof d->out, "%s/run.tracy", d->dir);
    snprintf(d->err, sizeof d->err, "%s/stderr.txt", d->dir);
}

void ft_dir_clean(ft_dir *d) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", d->dir);
}

char *ft_slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    size_t k;
    while ((k = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (n + 1 == cap) s = realloc(s, cap *= 2);
    }
    s[n] = 0;
    fclose(f);
    return s;
}

int ft_count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

int ft_wait(pid_t pid, int ms) {
    int st;
    for (int i = 0; i < ms / 5; i++) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        usleep(5000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    ck_abort_msg("process %d did not exit", (int)pid);
    return -1;
}

void ft_spawn(ft_daemon *d, char *const argv[], const char *err_path,
              int want_port) {
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(pfd[1], 1);
        if (e >= 0) dup2(e, 2);
        close(pfd[0]);
        close(pfd[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    d->pid = pid;
    d->outfd = pfd[0];
    d->port = -1;
    if (!want_port) return;
    char line[64];
    size_t n = 0;
    while (n < sizeof line - 1) {
        struct pollfd p = {pfd[0], POLLIN, 0};
        if (poll(&p, 1, FT_WAIT_MS) <= 0 || read(pfd[0], line + n, 1) != 1) break;
        if (line[n] == '\n') break;
        n++;
    }
    line[n] = 0;
    d->port = atoi(line);
    ck_assert_msg(d->port > 0, "the daemon did not print its port");
}

void ft_daemon_start(ft_daemon *d, const ft_dir *dir, ...) {
    char *argv[40];
    int n = 0;
    argv[n++] = (char *)ft_bin("capture-release");
    argv[n++] = "-o";
    argv[n++] = (char *)dir->out;
    argv[n++] = "-a"; /* TCP, for raw connections; the client tests use Unix */
    argv[n++] = "127.0.0.1";
    argv[n++] = "-p";
    argv[n++] = "0";
    va_list ap;
    va_start(ap, dir);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 39) argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    ft_spawn(d, argv, dir->err, 1);
}

int ft_daemon_wait(ft_daemon *d) {
    int rc = ft_wait(d->pid, FT_WAIT_MS);
    d->pid = 0;
    close(d->outfd);
    return rc;
}

void ft_daemon_kill(ft_daemon *d) {
    if (d->pid > 0) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
        close(d->outfd);
        d->pid = 0;
    }
}

pid_t ft_client(int port, const char *const *env, const char *err_path,
                int (*fn)(void *), void *arg) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid) return pid;
    if (err_path) {
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (e >= 0) dup2(e, 2);
    }
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    setenv("TRACY_PORT", p, 1);
    setenv("TRACY_ADDR", "127.0.0.1", 1);
    unsetenv("TRACY_DROP");
    unsetenv("TRACY_WAIT");
    unsetenv("TRACY_QUIET");
    for (; env && *env; env++) putenv((char *)*env);
    int rc = fn(arg);
    lt_client_stop();
    _exit(rc);
}

lt_reader *ft_open(const char *path) {
    lt_reader *r = NULL;
    char detail[256] = "";
    int rc = lt_reader_open(&r, path, detail, sizeof detail);
    ck_assert_msg(rc == 0, "cannot read %s: %s %s", path, lt_strerror(rc), detail);
    return r;
}

uint64_t ft_total(lt_reader *r, const char *name) {
    uint64_t v = 0;
    ck_assert_msg(lt_reader_total(r, name, &v) == 1, "no total '%s'", name);
    return v;
}

int ft_tool(const char *out_path, const char *err_path, ...) {
    char *argv[16];
    int n = 0;
    va_list ap;
    va_start(ap, err_path);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 15) argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(e, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    return ft_wait(pid, FT_WAIT_MS);
}

uint64_t ft_wait_events(const char *path, uint64_t want) {
    uint64_t have = 0;
    for (int i = 0; i < FT_WAIT_MS / 50 && have < want; i++) {
        usleep(50000);
        lt_reader *r = NULL;
        if (lt_reader_open(&r, path, NULL, 0) == 0) {
            have = lt_reader_info(r)->n_events;
            lt_reader_free(r);
        }
    }
    return have;
}

int ft_connect(int port, int wait_ms) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {wait_ms / 1000, (wait_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

int ft_send_all(int fd, const void *p, size_t n) {
    const uint8_t *q = p;
    while (n) {
        ssize_t w = send(fd, q, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        q += w;
        n -= (size_t)w;
    }
    return 0;
}

uint64_t ft_status_kib(pid_t pid, const char *field) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    char *s = ft_slurp(path);
    char *p = strstr(s, field);
    uint64_t v = p ? strtoull(p + strlen(field), NULL, 10) : 0;
    free(s);
    return v;
}

uint64_t ft_rss_kib(pid_t pid) { return ft_status_kib(pid, "VmRSS:"); }

int ft_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);
    close(fd);
    return ntohs(a.sin_port);
}

void w_raw(wbuf *b, const void *d, size_t n) {
    ck_assert_uint_le(b->n + n, sizeof b->p);
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
void w_u8(wbuf *b, uint8_t v) { w_raw(b, &v, 1); }
void w_u16(wbuf *b, uint16_t v) {
    w_u8(b, (uint8_t)v);
    w_u8(b, (uint8_t)(v >> 8));
}
void w_u64(wbuf *b, uint64_t v) {
    for (int i = 0; i < 8; i++) w_u8(b, (uint8_t)(v >> (8 * i)));
}
void w_f64(wbuf *b, double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    w_u64(b, u);
}
void w_var(wbuf *b, uint64_t v) {
    for (; v >= 0x80; v >>= 7) w_u8(b, (uint8_t)(v | 0x80));
    w_u8(b, (uint8_t)v);
}
void w_strn(wbuf *b, const char *s, size_t n) {
    w_var(b, n);
    w_raw(b, s, n);
}
void w_str(wbuf *b, const char *s) { w_strn(b, s, strlen(s)); }

void raw_msg_len(int fd, uint32_t len, uint8_t type, const wbuf *body) {
    uint8_t h[5] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                    (uint8_t)(len >> 24), type};
    (void)ft_send_all(fd, h, 5);
    if (body) (void)ft_send_all(fd, body->p, body->n);
}
void raw_msg(int fd, uint8_t type, const wbuf *body) {
    raw_msg_len(fd, (uint32_t)body->n + 1, type, body);
}

void ft_hello_body(wbuf *b, const char *magic, uint16_t major, uint64_t pid) {
    w_raw(b, magic, 8);
    w_u8(b, (uint8_t)major), w_u8(b, (uint8_t)(major >> 8)), w_u8(b, 0), w_u8(b, 0);
    w_var(b, pid), w_var(b, 1), w_str(b, "host"), w_str(b, "rawclient");
    w_var(b, 1), w_str(b, "rawclient"), w_var(b, 1), w_var(b, 2);
    w_str(b, "check_faults"), w_str(b, "");
}

void raw_announce(int fd, uint64_t pid) {
    wbuf b = {.n = 0};
    w_u8(&b, LT_TAG_THREAD_INFO), w_var(&b, 1), w_var(&b, pid), w_str(&b, "main");
    w_u8(&b, LT_TAG_LOC_DEF), w_var(&b, 1), w_u8(&b, LT_LOC_USER), w_var(&b, 1);
    w_str(&b, "work"), w_str(&b, "raw.c");
    raw_msg(fd, 0x03, &b);
}

int raw_open(int port, uint64_t pid) {
    int fd = ft_connect(port, FT_WAIT_MS);
    wbuf b = {.n = 0};
    ft_hello_body(&b, "TRCYWIRE", 1, pid);
    raw_msg(fd, 0x01, &b);
    uint8_t h[5], body[64];
    ck_assert_int_eq(recv(fd, h, 5, MSG_WAITALL), 5);
    ck_assert_int_eq(h[4], 0x81);
    ck_assert_uint_le(h[0], sizeof body);
    ck_assert_int_eq(recv(fd, body, h[0] - 1u, MSG_WAITALL), h[0] - 1);
    raw_announce(fd, pid);
    return fd;
}

void raw_zones(int fd, int n) {
    wbuf b = {.n = 0};
    w_var(&b, 1);
    for (int i = 0; i < n; i++) w_u8(&b, 0x81), w_var(&b, 3), w_u8(&b, 0x02), w_var(&b, 2);
    raw_msg(fd, 0x02, &b);
}

void raw_wait_closed(int fd) {
    char tmp[512];
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        ck_assert_msg(poll(&p, 1, FT_WAIT_MS) > 0, "the daemon kept a bad connection open");
        ssize_t r = recv(fd, tmp, sizeof tmp, 0);
        if (r == 0 || (r < 0 && errno == ECONNRESET)) break;
        ck_assert_msg(r > 0, "recv: %s", strerror(errno));
    }
    close(fd);
}

long ft_peak_kib(char *const argv[], const char *out, const char *err,
                 int *rc) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(e, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    struct rusage ru;
    int st;
    for (int i = 0; i < FT_WAIT_MS / 5; i++) {
        if (wait4(pid, &st, WNOHANG, &ru) == pid) {
            *rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            return ru.ru_maxrss;
        }
        usleep(5000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    ck_abort_msg("%s did not exit", argv[0]);
    return 0;
}

long ft_peak_mib(char *const argv[], const char *out, const char *err,
                 int *rc) {
    int rc0;
    long base = ft_peak_kib((char *[]){"/bin/true", NULL}, out, err, &rc0);
    long peak = ft_peak_kib(argv, out, err, rc);
    return peak > base ? (peak - base) / 1024 : 0;
}
