/* connect.c -- capture-release --connect HOST:PORT: asks a running program
 * that listens for captures (tracy.start_server, python -m tracy --listen)
 * to record itself for a while, and writes the trace it sends back. The
 * protocol is described in pyhook/tracy/_ondemand.py: one request line, OK,
 * an optional STOP (Ctrl-C here), then DONE <bytes> <events> <why> and the
 * file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "capture.h"
#include "format/splice.h"

#define ASK_LINE 600
#define ANSWER_MS 10000 /* for OK, and for DONE after the window */

#define MAX_PROGRAMS 64 /* --connect given more than once: merged */

typedef struct ask {
    const char *where[MAX_PROGRAMS], *out, *token_file;
    int n;
    double seconds;
    int force, quiet;
    char token[256];
} ask;

/* One program's capture: where, into `out`; what it said. */
typedef struct one {
    const ask *a;
    const char *where;
    char out[4200];
    int rc;
    unsigned long long events;
    char why[16];
} one;

static volatile sig_atomic_t interrupted;
static void on_int(int s) {
    (void)s;
    interrupted = 1;
}

static int fail(int code, const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "capture-release: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return code;
}

int cap_connect_wanted(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--connect") == 0 || strncmp(argv[i], "--connect=", 10) == 0)
            return 1;
    return 0;
}

/* 2s, 500ms, 1.5 (seconds), 1m. Returns 0 or -1. */
static int parse_duration(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v > 0)) return -1;
    if (strcmp(end, "ms") == 0) v /= 1000;
    else if (strcmp(end, "m") == 0) v *= 60;
    else if (*end && strcmp(end, "s") != 0) return -1;
    if (v < 0.001 || v > 86400) return -1;
    *out = v;
    return 0;
}

static int parse(ask *a, int argc, char **argv) {
    memset(a, 0, sizeof *a);
    a->seconds = -1;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = NULL;
        const char *eq = strncmp(o, "--", 2) == 0 ? strchr(o, '=') : NULL;
        char name[32];
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - o) : 31, o);
        int takes = strcmp(name, "--connect") == 0 || strcmp(name, "--duration") == 0 ||
                    strcmp(name, "-o") == 0 || strcmp(name, "--output") == 0 ||
                    strcmp(name, "--token-file") == 0;
        if (takes) {
            v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            if (!v) return fail(CAP_EXIT_USAGE, "%s needs a value%s", name, "");
        }
        if (strcmp(name, "--connect") == 0) {
            if (a->n == MAX_PROGRAMS)
                return fail(CAP_EXIT_USAGE, "at most %s programs with --connect%s", "64", "");
            a->where[a->n++] = v;
        }
        else if (strcmp(name, "--duration") == 0) {
            if (parse_duration(v, &a->seconds) < 0)
                return fail(CAP_EXIT_USAGE, "--duration takes 2s, 500ms or 1m, not '%s'%s",
                            v, "");
        } else if (strcmp(name, "-o") == 0 || strcmp(name, "--output") == 0) a->out = v;
        else if (strcmp(name, "--token-file") == 0) a->token_file = v;
        else if (strcmp(o, "-f") == 0) a->force = 1;
        else if (strcmp(o, "-q") == 0) a->quiet = 1;
        else
            return fail(CAP_EXIT_USAGE, "with --connect: unknown option %s (takes "
                        "--duration, -o, -f, -q, --token-file)%s", o, "");
    }
    if (!a->out) return fail(CAP_EXIT_USAGE, "--connect needs -o FILE.tracy%s%s", "", "");
    if (a->seconds < 0) a->seconds = 2;
    return 0;
}

/* HOST:PORT (or [V6]:PORT) -> a connected socket, or -1 after one line. */
static int dial(const char *where) {
    char host[256];
    const char *colon = strrchr(where, ':');
    if (!colon || !colon[1] || (size_t)(colon - where) >= sizeof host) {
        fail(CAP_EXIT_USAGE, "--connect takes HOST:PORT, not '%s'%s", where, "");
        return -2;
    }
    snprintf(host, sizeof host, "%.*s", (int)(colon - where), where);
    char *h = host;
    if (*h == '[' && h[strlen(h) - 1] == ']') {
        h[strlen(h) - 1] = 0;
        h++;
    }
    if (!*h) snprintf(host, sizeof host, "127.0.0.1"), h = host;
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(h, colon + 1, &hints, &res);
    if (rc != 0) {
        fail(CAP_EXIT_RUNTIME, "cannot resolve %s: %s", where, gai_strerror(rc));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            err = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        fail(CAP_EXIT_RUNTIME, "no program listening for captures at %s (%s)", where,
             strerror(err));
    return fd;
}

/* Reads one line (without '\n') within ms; an interrupt sends STOP once
 * (stop != NULL). Returns its length, or -1 (hung up, too long, timed out:
 * ms < 0 waits for ever). */
static int read_line(int fd, char *buf, size_t cap, int ms, int *stop) {
    size_t n = 0;
    for (;;) {
        if (stop && interrupted && !*stop) {
            *stop = 1;
            (void)send(fd, "STOP\n", 5, MSG_NOSIGNAL);
        }
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, ms < 0 ? 100 : ms);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0 && ms < 0) continue;
        if (r <= 0) return -1;
        ssize_t k = recv(fd, buf + n, 1, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        if (buf[n] == '\n') {
            buf[n] = 0;
            return (int)n;
        }
        if (++n >= cap) return -1;
    }
}

static int read_token(const char *path, char *tok, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(tok, 1, cap - 1, f);
    fclose(f);
    tok[n] = 0;
    tok[strcspn(tok, "\r\n")] = 0;
    return tok[0] && !strchr(tok, ' ') ? 0 : -1;
}

/* Copies `size` bytes of the trace from fd into a new file next to out,
 * then renames it over out. Returns 0 or an exit code (said). */
static int receive(int fd, const char *out, unsigned long long size) {
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.%ld.part", out, (long)getpid());
    int o = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (o < 0) return fail(CAP_EXIT_OUTPUT, "cannot create %s: %s", tmp, strerror(errno));
    char *buf = malloc(1 << 16);
    if (!buf) {
        close(o);
        unlink(tmp);
        return fail(CAP_EXIT_RUNTIME, "out of memory%s%s", "", "");
    }
    unsigned long long got = 0;
    while (got < size) {
        size_t want = size - got < (1u << 16) ? (size_t)(size - got) : (1u << 16);
        ssize_t k = recv(fd, buf, want, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0 || write(o, buf, (size_t)k) != k) break;
        got += (unsigned long long)k;
    }
    free(buf);
    if (close(o) != 0 || got < size) {
        unlink(tmp);
        return fail(CAP_EXIT_RUNTIME, "the trace was cut off in transfer (%s)%s",
                    got < size ? "the program hung up" : "cannot write", "");
    }
    if (rename(tmp, out) != 0) {
        unlink(tmp);
        return fail(CAP_EXIT_OUTPUT, "cannot write %s: %s", out, strerror(errno));
    }
    return 0;
}

/* Asks one program (o->where) for its capture and writes it to o->out;
 * o->rc is 0 or an exit code (said). */
static void *ask_one(void *arg) {
    one *o = arg;
    const ask *a = o->a;
    o->rc = CAP_EXIT_RUNTIME;
    int fd = dial(o->where);
    if (fd < 0) {
        o->rc = fd == -2 ? CAP_EXIT_USAGE : CAP_EXIT_RUNTIME;
        return NULL;
    }
    char line[ASK_LINE];
    snprintf(line, sizeof line, "TRACY-CAPTURE 1 %llu %s\n",
             (unsigned long long)(a->seconds * 1000 + 0.5), a->token);
    if (send(fd, line, strlen(line), MSG_NOSIGNAL) < 0 ||
        read_line(fd, line, sizeof line, ANSWER_MS, NULL) < 0) {
        close(fd);
        fail(0, "the program at %s did not answer%s", o->where, "");
        return NULL;
    }
    if (strcmp(line, "OK") != 0) {
        close(fd);
        fail(0, a->n > 1 ? "the program at %s refused the capture: %s"
                         : "the program refused the capture: %.0s%s",
             o->where, strncmp(line, "ERR ", 4) == 0 ? line + 4 : line);
        return NULL;
    }
    if (!a->quiet) fprintf(stderr, "capture-release: recording %s for %gs\n", o->where, a->seconds);
    int stopped = 0;
    if (read_line(fd, line, sizeof line, -1, &stopped) < 0) {
        close(fd);
        fail(0, "the program at %s ended during the capture without sending the trace%s",
             o->where, "");
        return NULL;
    }
    unsigned long long size = 0;
    if (sscanf(line, "DONE %llu %llu %15s", &size, &o->events, o->why) != 3) {
        close(fd);
        fail(0, a->n > 1 ? "the program at %s sent no trace: %s"
                         : "the program sent no trace: %.0s%s",
             o->where, strncmp(line, "ERR ", 4) == 0 ? line + 4 : line);
        return NULL;
    }
    o->rc = receive(fd, o->out, size);
    close(fd);
    return NULL;
}

static const char *why_text(const char *why) {
    return strcmp(why, "exit") == 0   ? "; the program exited during the capture"
           : strcmp(why, "stop") == 0 ? "; stopped early"
                                      : "";
}

/* The programs' traces (parts) into one file, processes numbered in the
 * order of --connect. Returns 0 or an exit code (said). */
static int merge_parts(const ask *a, one *o) {
    lt_reader *r[MAX_PROGRAMS] = {0};
    lt_splice *s = NULL;
    uint32_t next = 0;
    int rc = 0;
    for (int i = 0; i < a->n && rc == 0; i++) {
        char detail[200] = "";
        rc = lt_reader_open(&r[i], o[i].out, detail, sizeof detail);
        if (rc < 0) fail(0, "the trace of %s cannot be read: %s", o[i].where, detail);
    }
    if (rc == 0) rc = lt_splice_open(&s, a->out, LT_WRITE_FORCE, "capture-release --connect", 3);
    for (int i = 0; i < a->n && rc == 0; i++) {
        uint32_t n = lt_reader_nprocesses(r[i]);
        uint32_t *out = calloc((size_t)n + 1, sizeof *out);
        int64_t *shift = calloc((size_t)n + 1, sizeof *shift);
        rc = out && shift ? 0 : LT_ENOMEM;
        for (uint32_t p = 1; p <= n; p++) out[p] = ++next;
        lt_splice_input in = {.r = r[i], .name = o[i].where, .proc_out = out,
                              .proc_shift = shift, .from = 0, .to = UINT64_MAX};
        if (rc == 0) rc = lt_splice_add(s, &in);
        free(out);
        free(shift);
    }
    if (rc == 0 && s) rc = lt_splice_run(s);
    if (rc == 0 && s) rc = lt_splice_close(s, 0);
    if (rc < 0 && s) fail(0, "cannot merge the traces into %s: %s", a->out, lt_splice_error(s));
    lt_splice_free(s);
    for (int i = 0; i < a->n; i++) lt_reader_free(r[i]);
    if (rc < 0) unlink(a->out);
    return rc < 0 ? CAP_EXIT_WRITE : 0;
}

/* Several programs at once (their captures overlap as far as the requests
 * go out together); their traces merged into a->out. */
static int ask_all(const ask *a) {
    one *o = calloc((size_t)a->n, sizeof *o);
    pthread_t th[MAX_PROGRAMS];
    int started[MAX_PROGRAMS] = {0}, rc = 0;
    if (!o) return fail(CAP_EXIT_RUNTIME, "out of memory%s%s", "", "");
    for (int i = 0; i < a->n; i++) {
        o[i] = (one){.a = a, .where = a->where[i]};
        snprintf(o[i].out, sizeof o[i].out, "%s.%d.%ld.tracy", a->out, i, (long)getpid());
        started[i] = pthread_create(&th[i], NULL, ask_one, &o[i]) == 0;
        if (!started[i]) ask_one(&o[i]);
    }
    unsigned long long events = 0;
    int exited = 0;
    for (int i = 0; i < a->n; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        if (o[i].rc != 0 && rc == 0) rc = o[i].rc;
        events += o[i].events;
        exited += o[i].rc == 0 && strcmp(o[i].why, "exit") == 0;
    }
    if (rc == 0) rc = merge_parts(a, o);
    for (int i = 0; i < a->n; i++) unlink(o[i].out);
    free(o);
    if (rc == 0 && !a->quiet)
        fprintf(stderr, "capture-release: trace written to %s (%llu events from %d programs%s)\n",
                a->out, events, a->n, exited ? "; a program exited during the capture" : "");
    return rc;
}

int cap_connect_main(int argc, char **argv) {
    ask a;
    int rc = parse(&a, argc, argv);
    if (rc != 0) return rc;
    struct stat st;
    if (!a.force && stat(a.out, &st) == 0)
        return fail(CAP_EXIT_OUTPUT, "%s exists (give -f to replace it)%s", a.out, "");
    snprintf(a.token, sizeof a.token, "-");
    const char *env_tok = getenv("TRACY_TOKEN");
    if (a.token_file && read_token(a.token_file, a.token, sizeof a.token) < 0)
        return fail(CAP_EXIT_USAGE, "cannot read a token from %s%s", a.token_file, "");
    if (!a.token_file && env_tok && *env_tok && !strchr(env_tok, ' ') &&
        strlen(env_tok) < sizeof a.token)
        snprintf(a.token, sizeof a.token, "%s", env_tok);
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {0};
    sa.sa_handler = on_int;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (a.n > 1) return ask_all(&a);
    one o = {.a = &a, .where = a.where[0]};
    snprintf(o.out, sizeof o.out, "%s", a.out);
    ask_one(&o);
    if (o.rc == 0 && !a.quiet)
        fprintf(stderr, "capture-release: trace written to %s (%llu events%s)\n", a.out,
                o.events, why_text(o.why));
    return o.rc;
}
