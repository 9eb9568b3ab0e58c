/* ingest_load.c -- load generator for the capture daemon's ingest
 * benchmark: forks N client processes that connect through the client API
 * (TRACY_ADDR / TRACY_PORT), wait at a common start line, then record
 * EVENTS events each (zone begin/end pairs) as fast as they can, flush and
 * disconnect. Prints one JSON line: start time (CLOCK_MONOTONIC ns, so the
 * caller can time the daemon against it), events sent and lost, the
 * producers' mean cost per event and the CPU seconds all clients used.
 *
 *     ingest_load CLIENTS EVENTS_PER_CLIENT
 *
 * Exit codes: 0 ok, 1 a client failed (could not connect, died), 2 usage.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace_client.h"

typedef struct report {
    int ok;
    unsigned long long sent, lost;
    unsigned long long produce_ns; /* the recording loop, flush excluded */
} report;

static unsigned long long mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

static int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The body of one client process: never returns. */
static void client(int ready_fd, int go_fd, int out_fd, unsigned long long events) {
    report rep = {0};
    char c = 1;
    int ok = lt_client_start() == 0;
    uint32_t loc = ok ? lt_loc_register(LT_LOC_USER, "ingest", __FILE__, __LINE__) : 0;
    if (write_all(ready_fd, &c, 1) < 0 || read(go_fd, &c, 1) < 0)
        _exit(1);
    unsigned long long t0 = mono_ns();
    for (unsigned long long i = 0; ok && i < events / 2; i++) {
        lt_zone_begin(loc);
        lt_zone_end();
    }
    rep.produce_ns = mono_ns() - t0;
    lt_client_stop();
    uint64_t sent = 0, lost = 0;
    lt_client_counts(&sent, &lost);
    rep.ok = ok;
    rep.sent = sent;
    rep.lost = lost;
    _exit(write_all(out_fd, &rep, sizeof rep) == 0 && ok ? 0 : 1);
}

static int spawn(int n, unsigned long long events, int ready[2], int go[2], int out[2]) {
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0)
            return -1;
        if (pid == 0) {
            close(ready[0]);
            close(go[1]);
            close(out[0]);
            client(ready[1], go[0], out[1], events);
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    int n = argc == 3 ? atoi(argv[1]) : 0;
    unsigned long long events = argc == 3 ? strtoull(argv[2], NULL, 10) : 0;
    if (n <= 0 || n > 4096 || events == 0) {
        fprintf(stderr, "usage: ingest_load CLIENTS EVENTS_PER_CLIENT\n");
        return 2;
    }
    int ready[2], go[2], out[2];
    if (pipe(ready) < 0 || pipe(go) < 0 || pipe(out) < 0 || spawn(n, events, ready, go, out) < 0) {
        perror("ingest_load");
        return 1;
    }
    close(ready[1]);
    close(go[0]);
    close(out[1]);
    char c;
    for (int i = 0; i < n; i++)
        if (read(ready[0], &c, 1) != 1)
            break;
    unsigned long long start = mono_ns();
    close(go[1]); /* every client reads EOF: go */
    report sum = {.ok = 1}, rep;
    int got = 0;
    while (got < n && read(out[0], &rep, sizeof rep) == (ssize_t)sizeof rep) {
        sum.ok &= rep.ok;
        sum.sent += rep.sent;
        sum.lost += rep.lost;
        sum.produce_ns += rep.produce_ns;
        got++;
    }
    unsigned long long end = mono_ns();
    int failed = got != n;
    for (int status; wait(&status) > 0;)
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
    printf("{\"clients\": %d, \"start_ns\": %llu, \"end_ns\": %llu, \"sent\": %llu, "
           "\"lost\": %llu, \"ns_per_event\": %.3f, \"client_cpu_s\": %.3f, "
           "\"failed\": %d}\n",
           n, start, end, sum.sent, sum.lost,
           sum.sent ? (double)sum.produce_ns / (double)sum.sent : 0.0, cpu, failed);
    return failed ? 1 : 0;
}
