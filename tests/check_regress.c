/* check_regress.c -- replays the fuzzers' findings and seeds
 * (tests/regress/<target>/ and tests/fuzz/corpus/<target>/) under make check:
 * reader inputs through the reader (with the fuzz target's own checks) and
 * through every converter, record inputs through the decoders' contracts,
 * client message streams against the real capture-release over a socket. */
#define _GNU_SOURCE
#include <check.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "trace.h"
#include "trace_builder.h"

/* The fuzz targets' bodies, renamed: the same oracles run here. */
#define LLVMFuzzerTestOneInput fuzz_reader_one
#include "fuzz/fuzz_reader.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_records_one
#include "fuzz/fuzz_records.c"
#undef LLVMFuzzerTestOneInput

#define WAIT_MS 20000

static const char *build_dir(void) {
    const char *b = getenv("LT_BUILD");
    ck_assert_msg(b != NULL, "LT_BUILD is not set (run through make check-c)");
    return b;
}

/* Lists regular files of <src>/tests/{regress,fuzz/corpus}/<target>/ into
 * paths (NULL-terminated, caller frees). */
static char **inputs(const char *target) {
    size_t n = 0, cap = 16;
    char **v = calloc(cap, sizeof *v);
    const char *sub[] = {"tests/regress", "tests/fuzz/corpus"};
    for (int s = 0; s < 2; s++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/../%s/%s", build_dir(), sub[s], target);
        DIR *d = opendir(dir);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            if (n + 2 > cap) v = realloc(v, (cap *= 2) * sizeof *v);
            size_t l = strlen(dir) + strlen(e->d_name) + 2;
            v[n] = malloc(l);
            snprintf(v[n], l, "%s/%s", dir, e->d_name);
            n++;
        }
        closedir(d);
    }
    v[n] = NULL;
    ck_assert_msg(n > 0, "no inputs for %s", target);
    return v;
}

static void free_inputs(char **v) {
    for (char **p = v; *p; p++) free(*p);
    free(v);
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(len > 0 ? (size_t)len + 1 : 1);
    *n = fread(p, 1, (size_t)len, f);
    p[*n] = 0; /* usable as a string too */
    fclose(f);
    return p;
}

/* Runs argv with stdout and stderr to files; returns the exit code, or
 * 128 + signal. */
static int run(char *const argv[], const char *err_path) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int o = open("/dev/null", O_WRONLY);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(e, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    for (int i = 0; i < WAIT_MS / 5; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        usleep(5000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    ck_abort_msg("%s did not finish", argv[0]);
    return -1;
}

/* Lines in a file. */
static int count_lines(const char *path) {
    size_t n;
    uint8_t *p = slurp(path, &n);
    int lines = 0;
    for (size_t i = 0; i < n; i++) lines += p[i] == '\n';
    free(p);
    return lines;
}

START_TEST(reader_inputs_replay) {
    char **v = inputs("reader");
    for (char **f = v; *f; f++) {
        size_t n;
        uint8_t *p = slurp(*f, &n);
        fuzz_reader_one(p, n);
        free(p);
    }
    free_inputs(v);
}
END_TEST

START_TEST(record_inputs_replay) {
    char **v = inputs("records");
    for (char **f = v; *f; f++) {
        size_t n;
        uint8_t *p = slurp(*f, &n);
        fuzz_records_one(p, n);
        free(p);
    }
    free_inputs(v);
}
END_TEST

/* Every converter on every reader and converter input (block-mode inputs
 * made into files first): an exit code from its documented table (0..4),
 * never a signal; a message on stderr when it fails; JSON that parses; a
 * database that passes SQLite's integrity_check. */
static void converters_on(const char *target) {
    char **v = inputs(target);
    char dir[] = "/tmp/check_regress.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char err[128], db[128], json[128], in[128], bin[4][512];
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(db, sizeof db, "%s/out.db", dir);
    snprintf(json, sizeof json, "%s/out.json", dir);
    snprintf(in, sizeof in, "%s/in.tracy", dir);
    const char *tools[4] = {"tracy-info", "tracy-csv", "tracy-json", "tracy-sql"};
    for (int t = 0; t < 4; t++)
        snprintf(bin[t], sizeof bin[t], "%s/bin/%s", build_dir(), tools[t]);
    for (char **f = v; *f; f++) {
        size_t n;
        uint8_t *p = slurp(*f, &n);
        if (n > 0 && p[0] == FZ_BLOCK_MODE) {
            fz_write_blocks(in, p + 1, p + n);
        } else {
            FILE *o = fopen(in, "wb");
            ck_assert_ptr_nonnull(o);
            ck_assert_uint_eq(fwrite(p, 1, n, o), n);
            fclose(o);
        }
        free(p);
        for (int t = 0; t < 4; t++) {
            char *argv[8] = {bin[t], in, NULL};
            if (t == 2) unlink(json), argv[2] = "-o", argv[3] = json, argv[4] = NULL;
            if (t == 3) unlink(db), argv[2] = "-o", argv[3] = db, argv[4] = NULL;
            if (t == 0) argv[1] = "--verify", argv[2] = in, argv[3] = NULL;
            int rc = run(argv, err);
            /* tracy-info also exits 6 for an intact file that records losses. */
            ck_assert_msg(rc >= 0 && (rc <= 4 || (t == 0 && rc == 6)), "%s %s: exit %d",
                          tools[t], *f, rc);
            if (rc != 0 && rc != 3)
                ck_assert_msg(count_lines(err) >= 1, "%s %s: exit %d, no message",
                              tools[t], *f, rc);
            if (t == 3 && access(db, F_OK) == 0) {
                /* Its zone pages are written by tracy-sql itself. */
                sqlite3 *h;
                sqlite3_stmt *st;
                ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
                ck_assert_int_eq(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL),
                                 SQLITE_OK);
                ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
                ck_assert_msg(strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0,
                              "tracy-sql %s: %s", *f, sqlite3_column_text(st, 0));
                sqlite3_finalize(st);
                sqlite3_close(h);
            }
            if (t == 2 && access(json, F_OK) == 0) {
                size_t jn;
                char *js = (char *)slurp(json, &jn);
                cJSON *j = cJSON_ParseWithLength(js, jn);
                ck_assert_msg(j && cJSON_IsArray(j),
                              "tracy-json %s (exit %d): invalid JSON", *f, rc);
                cJSON_Delete(j);
                free(js);
            }
        }
    }
    unlink(in);
    unlink(err);
    unlink(db);
    unlink(json);
    rmdir(dir);
    free_inputs(v);
}

START_TEST(converters_on_reader_inputs) {
    converters_on("reader");
    converters_on("convert");
}
END_TEST

/* Files that would make the reader hold far more memory than their size
 * (streams whose blocks exceed the budget together are read in turn: see
 * check_hostile.c):
 *  - 2 streams of 2100 nested open zones, each with a 64 KiB text;
 *  - 4500 locations with 64 KiB names (metadata, kept while open).
 * The reader refuses them as corrupt instead of allocating (its bound: 64
 * times the file size, at least 256 MiB), and tracy-info says so with exit
 * code 4. */
static void refused_not_allocated(const char *name, const char *why) {
    char path[1024];
    snprintf(path, sizeof path, "%s/../tests/regress/reader/%s", build_dir(), name);
    lt_reader *r = NULL;
    ck_assert_int_eq(lt_reader_open(&r, path, NULL, 0), 0);
    lt_event ev;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0) {}
    ck_assert_int_eq(rc, LT_ECORRUPT);
    ck_assert_msg(strstr(lt_reader_error(r), why), "%s", lt_reader_error(r));
    lt_reader_free(r);
    char dir[] = "/tmp/check_regress.XXXXXX", err[128], bin[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(bin, sizeof bin, "%s/bin/tracy-info", build_dir());
    ck_assert_int_eq(run((char *[]){bin, "--verify", path, NULL}, err), 4);
    size_t n;
    char *e = (char *)slurp(err, &n);
    ck_assert_msg(strstr(e, why), "%s", e);
    free(e);
    unlink(err);
    rmdir(dir);
}

START_TEST(huge_declared_blocks_refused_not_allocated) {
    refused_not_allocated("deep-zones-long-texts.tracy", "open zones hold more text");
}
END_TEST

START_TEST(huge_metadata_refused_not_allocated) {
    char path[1024];
    snprintf(path, sizeof path, "%s/../tests/regress/reader/many-long-location-names.tracy",
             build_dir());
    lt_reader *r = NULL;
    char detail[256] = "";
    ck_assert_int_eq(lt_reader_open(&r, path, detail, sizeof detail), LT_ECORRUPT);
    ck_assert_msg(strstr(detail, "metadata larger than"), "%s", detail);
    ck_assert_ptr_null(r);
}
END_TEST

/* Names come from the profiled processes: tracy-info shows each on its
 * own line, with no control characters (no forged lines, no escapes). */
START_TEST(info_shows_hostile_names_on_one_line) {
    char dir[] = "/tmp/check_regress.XXXXXX", path[128], out[128], err[128], bin[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/names.tracy", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    lt_builder *b;
    const char *argv[] = {"x\ny"};
    ck_assert_int_eq(lt_builder_open(&b, path, 0, "maker\x1b[31m"), 0);
    int p = lt_builder_process(b, 1, -1, "host\n", "prog\x1b[2J\nfile: forged", 1, argv, 1, 2);
    ck_assert_int_gt(p, 0);
    ck_assert_int_gt(lt_builder_thread(b, (uint32_t)p, 1, "th\r\nthreads: 99"), 0);
    ck_assert_int_eq(lt_builder_process_end(b, (uint32_t)p, 5, LT_PROC_LOST, "bye\nstate: fine"), 0);
    ck_assert_int_eq(lt_builder_close(b, 0), 0);
    snprintf(bin, sizeof bin, "%s/bin/tracy-info", build_dir());
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        execl(bin, bin, path, (char *)NULL);
        _exit(127);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    size_t n;
    char *s = (char *)slurp(out, &n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(s[i] == '\n' || ((unsigned char)s[i] >= 0x20 && s[i] != 0x7f),
                      "control character 0x%02x at %zu", (unsigned char)s[i], i);
    ck_assert_ptr_null(strstr(s, "\nfile: forged"));
    ck_assert_ptr_null(strstr(s, "\nthreads: 99"));
    ck_assert_ptr_null(strstr(s, "\nstate: fine"));
    ck_assert_ptr_nonnull(strstr(s, "prog?[2J?file: forged on host?, lost: bye?state: fine"));
    free(s);
    unlink(path);
    unlink(out);
    unlink(err);
    rmdir(dir);
}
END_TEST

/* ---- Client message streams against the daemon -------------------------- */

static int read_port(int fd) {
    char line[64];
    size_t n = 0;
    while (n < sizeof line - 1) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, WAIT_MS) <= 0) return -1;
        if (read(fd, line + n, 1) != 1) return -1;
        if (line[n] == '\n') break;
        n++;
    }
    line[n] = 0;
    return atoi(line);
}

/* Sends `p` on a new connection, half-closes, and waits (bounded) for the
 * daemon to close its side. */
static void play(int port, const uint8_t *p, size_t n) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    size_t off = 0;
    while (off < n) {
        ssize_t w = send(fd, p + off, n - off, MSG_NOSIGNAL);
        if (w <= 0) break; /* the daemon closed it: fine */
        off += (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    char tmp[4096];
    for (;;) {
        struct pollfd q = {fd, POLLIN, 0};
        ck_assert_msg(poll(&q, 1, WAIT_MS) > 0, "daemon did not close the connection");
        ssize_t r = recv(fd, tmp, sizeof tmp, 0);
        if (r <= 0) break;
    }
    close(fd);
}

START_TEST(client_streams_replay_against_daemon) {
    char **v = inputs("capture");
    char dir[] = "/tmp/check_regress.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char out[128], err[128], bin[512];
    snprintf(out, sizeof out, "%s/run.tracy", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(bin, sizeof bin, "%s/bin/capture-release", build_dir());
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(pfd[1], 1);
        dup2(e, 2);
        close(pfd[0]);
        execl(bin, bin, "-o", out, "-a", "127.0.0.1", "-p", "0", "-q", "-s", "600",
              "--handshake-timeout", "2000",
              (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    int port = read_port(pfd[0]);
    ck_assert_int_gt(port, 0);
    size_t count = 0;
    for (char **f = v; *f; f++, count++) {
        size_t n;
        uint8_t *p = slurp(*f, &n);
        play(port, p, n);
        free(p);
        ck_assert_msg(kill(pid, 0) == 0, "daemon died on %s", *f);
    }
    kill(pid, SIGINT);
    int st = 0;
    for (int i = 0; i < WAIT_MS / 10 && waitpid(pid, &st, WNOHANG) != pid; i++)
        usleep(10000);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon status %d", st);
    close(pfd[0]);
    lt_reader *r = NULL;
    char detail[256] = "";
    ck_assert_msg(lt_reader_open(&r, out, detail, sizeof detail) == 0, "%s", detail);
    ck_assert_int_eq(lt_reader_info(r)->complete, 1);
    lt_event ev;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0) {}
    ck_assert_msg(rc == 0, "%s", lt_reader_error(r));
    /* Every connection is accounted for: welcomed or refused. */
    uint64_t conn = 0, refused = 0;
    lt_reader_total(r, "clients_connected", &conn);
    lt_reader_total(r, "clients_refused", &refused);
    ck_assert_uint_eq(conn + refused, count);
    ck_assert_uint_eq(lt_reader_nprocesses(r), conn);
    for (uint32_t i = 1; i <= conn; i++)
        ck_assert_int_ne(lt_reader_process(r, i)->status, LT_PROC_RUNNING);
    lt_reader_free(r);
    unlink(out);
    unlink(err);
    rmdir(dir);
    free_inputs(v);
}
END_TEST

Suite *regress_suite(void) {
    Suite *s = suite_create("regress");
    TCase *tc = tcase_create("replay");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, reader_inputs_replay);
    tcase_add_test(tc, record_inputs_replay);
    tcase_add_test(tc, converters_on_reader_inputs);
    tcase_add_test(tc, huge_declared_blocks_refused_not_allocated);
    tcase_add_test(tc, huge_metadata_refused_not_allocated);
    tcase_add_test(tc, info_shows_hostile_names_on_one_line);
    tcase_add_test(tc, client_streams_replay_against_daemon);
    suite_add_tcase(s, tc);
    return s;
}
