/* client_bench.c -- cost of the libtrace client on the producing thread:
 * ns per event for lt_zone_begin/lt_zone_end pairs, first connected to the
 * capture daemon named by TRACY_ADDR/TRACY_PORT, then (in a child process)
 * with no daemon listening, when the client is a no-op.
 *
 *     capture-release -p 0 -o /tmp/b.tracy -n 1 &   # prints the port
 *     TRACY_PORT=<port> build/bench/client_bench [pairs]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <trace_client.h>
#include <client_fast.h>

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ns per event over `pairs` begin/end pairs, best of three runs: CPU time
 * of the producing thread (its cost) and wall time (which also counts the
 * time the thread was descheduled or waited for the daemon). */
static double zone_pairs(uint32_t loc, long pairs, double *wall) {
    double best = 1e9, best_wall = 1e9;
    for (int r = 0; r < 3; r++) {
        double t0 = now_s(), c0 = cpu_s();
        for (long i = 0; i < pairs; i++) {
            lt_zone_begin(loc);
            lt_zone_end();
        }
        double ns = (cpu_s() - c0) * 1e9 / (double)(2 * pairs);
        double w = (now_s() - t0) * 1e9 / (double)(2 * pairs);
        if (ns < best) best = ns;
        if (w < best_wall) best_wall = w;
    }
    if (wall) *wall = best_wall;
    return best;
}

static double clock_cost(long n) {
    uint64_t sink = 0;
    double t0 = cpu_s();
    for (long i = 0; i < n; i++) sink += lt__now();
    double ns = (cpu_s() - t0) * 1e9 / (double)n;
    return sink == 1 ? 0 : ns;
}

/* The no-daemon figure, measured in a child so that its client is fresh. */
static double unprofiled(long pairs) {
    int fd[2];
    if (pipe(fd) < 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        setenv("TRACY_ADDR", "127.0.0.1", 1);
        setenv("TRACY_PORT", "1", 1); /* nothing listens on port 1 */
        setenv("TRACY_QUIET", "1", 1);
        uint32_t loc = lt_loc_register(LT_LOC_USER, "bench", __FILE__, __LINE__);
        double ns = zone_pairs(loc, pairs, NULL);
        if (write(fd[1], &ns, sizeof ns) != sizeof ns) _exit(1);
        _exit(0);
    }
    close(fd[1]);
    double ns = -1;
    if (read(fd[0], &ns, sizeof ns) != sizeof ns) ns = -1;
    close(fd[0]);
    waitpid(pid, NULL, 0);
    return ns;
}

int main(int argc, char **argv) {
    long pairs = argc > 1 ? atol(argv[1]) : 5000000;
    if (pairs < 1) {
        fprintf(stderr, "usage: client_bench [pairs]\n");
        return 2;
    }
    double off = unprofiled(pairs);
    if (lt_client_start() < 0) {
        fprintf(stderr, "client_bench: needs a capture daemon (TRACY_PORT)\n");
        return 1;
    }
    uint32_t loc = lt_loc_register(LT_LOC_USER, "bench", __FILE__, __LINE__);
    zone_pairs(loc, 100000, NULL); /* warm up: chunks, clock calibration */
    usleep(300000);
    double wall;
    double on = zone_pairs(loc, pairs, &wall);
    double clk = clock_cost(pairs);
    uint64_t sent, lost;
    lt_client_flush();
    lt_client_counts(&sent, &lost);
    printf("with daemon: %.2f ns per event, CPU time of the producing thread "
           "(zone begin+end pair %.2f ns)\n", on, 2 * on);
    printf("with daemon, wall time: %.2f ns per event (includes descheduling "
           "and waits for the daemon)\n", wall);
    printf("no daemon: %.2f ns per event (client inactive)\n", off);
    printf("timestamp (lt__now): %.2f ns\n", clk);
    printf("events sent %llu, lost %llu\n", (unsigned long long)sent,
           (unsigned long long)lost);
    return 0;
}
