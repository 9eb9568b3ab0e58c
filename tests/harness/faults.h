/* faults.h -- the C suites' harness (tests/harness/faults.c): the real
 * capture-release started on an ephemeral port, child processes that use
 * the real client library, running the converters, reading results back,
 * and the tests' one wire encoder for hand-made protocol messages. Used by
 * the daemon, fault, hostile-input and server suites. Every wait is
 * bounded; no assertion depends on timing. */
#ifndef TESTS_HARNESS_FAULTS_H
#define TESTS_HARNESS_FAULTS_H

/* What every suite using the harness needs, included once here. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "trace.h"
#include "trace_client.h"

#define FT_WAIT_MS 60000 /* bound of every wait; never a timing assertion */
/* The pids raw clients announce in their HELLO: above any pid_max (at most
 * 2^22), so never the pid of a real client beside them (pid_max is 32768 on
 * many machines: a real one was once 7003, the pid of a raw one). */
#define FT_FAKE_PID 4200000u

const char *ft_build(void);
const char *ft_bin(const char *name);

/* A scratch directory with run.tracy and stderr paths. */
typedef struct ft_dir {
    char dir[64], out[128], err[128];
} ft_dir;
void ft_dir_init(ft_dir *d);
void ft_dir_clean(ft_dir *d);

/* Reads a whole file into a NUL-terminated string (caller frees). */
char *ft_slurp(const char *path);
int ft_count_lines(const char *s);

/* Waits (bounded) for pid; returns its exit code or 128 + signal. Kills it
 * and fails the test when it does not end. */
int ft_wait(pid_t pid, int ms);

/* ---- The daemon ----------------------------------------------------------- */

typedef struct ft_daemon {
    pid_t pid;
    int port;
    int outfd;
} ft_daemon;

/* Starts argv (NULL-terminated; argv[0] a path) with stdout on a pipe and
 * stderr to err_path. With want_port, reads the port from the first line
 * (-p 0) and fails when there is none. */
void ft_spawn(ft_daemon *d, char *const argv[], const char *err_path,
              int want_port);

/* capture-release -o OUT -a 127.0.0.1 -p 0 -q EXTRA... (NULL-terminated). */
void ft_daemon_start(ft_daemon *d, const ft_dir *dir, ...);
int ft_daemon_wait(ft_daemon *d);
void ft_daemon_kill(ft_daemon *d);

/* ---- Client processes (the real client library) ------------------------- */

/* Forks a child that points the client library at `port` (with the extra
 * environment "NAME=VALUE" strings), runs fn(arg) and exits with its
 * return value after lt_client_stop(). Its stderr goes to err_path (NULL:
 * inherited). */
pid_t ft_client(int port, const char *const *env, const char *err_path,
                int (*fn)(void *), void *arg);

/* ---- Results -------------------------------------------------------------- */

lt_reader *ft_open(const char *path);
uint64_t ft_total(lt_reader *r, const char *name);

/* Runs a converter: stdout to out_path, stderr to err_path; returns its
 * exit code. */
int ft_tool(const char *out_path, const char *err_path, ...);

/* Polls the file (bounded) until its complete units hold at least `want`
 * events; returns the last count seen. */
uint64_t ft_wait_events(const char *path, uint64_t want);

/* A blocking loopback connection to `port` whose reads and writes give up
 * after `wait_ms`. */
int ft_connect(int port, int wait_ms);

/* Sends all of p[0..n); returns 0, or -1 when the peer closed the
 * connection (or a send timed out). */
int ft_send_all(int fd, const void *p, size_t n);

/* A "Vm...:" field of a process's status in KiB (0 when unknown). */
uint64_t ft_status_kib(pid_t pid, const char *field);

/* VmRSS of a process in KiB (0 when unknown). */
uint64_t ft_rss_kib(pid_t pid);

/* A TCP port that was free a moment ago. */
int ft_free_port(void);

/* ---- Raw protocol clients (hand-made messages) --------------------------
 * The tests' one wire encoder: little-endian integers, LEB128 varints and
 * length-prefixed strings into a buffer on the caller's stack (the largest
 * message a suite builds is about 8 KiB). */

typedef struct wbuf {
    uint8_t p[65536];
    size_t n;
} wbuf;
void w_raw(wbuf *b, const void *d, size_t n);
void w_u8(wbuf *b, uint8_t v);
void w_u16(wbuf *b, uint16_t v);
void w_u64(wbuf *b, uint64_t v);
void w_f64(wbuf *b, double d);
void w_var(wbuf *b, uint64_t v);
void w_strn(wbuf *b, const char *s, size_t n);
void w_str(wbuf *b, const char *s);

/* A message with a length prefix of `len` (normally body->n + 1). */
void raw_msg_len(int fd, uint32_t len, uint8_t type, const wbuf *body);
void raw_msg(int fd, uint8_t type, const wbuf *body);
void ft_hello_body(wbuf *b, const char *magic, uint16_t major, uint64_t pid);

/* After WELCOME: announces thread 1 ("main") and location 1 ("work"). */
void raw_announce(int fd, uint64_t pid);

/* Connects, says HELLO, reads WELCOME; announces thread 1 and location 1. */
int raw_open(int port, uint64_t pid);

/* n complete zones on thread 1 (2n events). */
void raw_zones(int fd, int n);

/* Waits (bounded) until the daemon closes the connection. */
void raw_wait_closed(int fd);

/* Runs argv (stdout to out, stderr to err) and returns its peak RSS in KiB;
 * *rc is its exit code (128 + signal). Fails the test when it does not exit
 * within FT_WAIT_MS. */
long ft_peak_kib(char *const argv[], const char *out, const char *err,
                 int *rc);

/* The peak RSS in MiB that argv adds over a child that does nothing: a
 * forked child starts with its parent's resident pages (large under ASan),
 * and its peak counts them. */
long ft_peak_mib(char *const argv[], const char *out, const char *err,
                 int *rc);

#endif
