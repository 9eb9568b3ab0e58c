/* example_c.c -- a small C program instrumented with the libtrace client:
 * scoped zones, messages, a signpost, plots, frame marks and named threads.
 *
 *     capture-release -o run.tracy &
 *     ./example_c [frames]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <trace_client.h>

static unsigned long collatz_steps(unsigned long n) {
    LT_ZONE_SCOPED_FUNC();
    unsigned long steps = 0;
    while (n != 1) {
        n = n % 2 ? 3 * n + 1 : n / 2;
        steps++;
    }
    return steps;
}

static unsigned long work_chunk(unsigned long from, unsigned long count) {
    LT_ZONE_SCOPED("work_chunk");
    unsigned long best = 0;
    for (unsigned long i = from; i < from + count; i++) {
        unsigned long s = collatz_steps(i);
        if (s > best) best = s;
    }
    return best;
}

typedef struct job {
    int id;
    int frames;
    unsigned long result;
} job;

static void *worker(void *arg) {
    job *j = arg;
    char name[32];
    snprintf(name, sizeof name, "worker %d", j->id);
    lt_thread_name(name);
    for (int f = 0; f < j->frames; f++) {
        LT_ZONE_SCOPED("worker frame");
        unsigned long r = work_chunk(1 + (unsigned long)(j->id * 1000 + f * 50), 50);
        if (r > j->result) j->result = r;
        lt_plot(LT_PLOT_ID("longest chain"), (double)j->result);
    }
    lt_message_str("worker done");
    return NULL;
}

int main(int argc, char **argv) {
    int frames = argc > 1 ? atoi(argv[1]) : 20;
    enum { N = 3 };
    pthread_t th[N];
    job jobs[N];
    LT_ZONE_SCOPED("main");
    lt_thread_name("main");
    lt_signpost("setup", "starting the workers");
    for (int i = 0; i < N; i++) {
        jobs[i] = (job){i, frames, 0};
        pthread_create(&th[i], NULL, worker, &jobs[i]);
    }
    for (int f = 0; f < frames; f++) {
        LT_ZONE_SCOPED("main frame");
        work_chunk(100000 + (unsigned long)f * 20, 20);
        lt_plot(LT_PLOT_ID("frame"), f);
        lt_frame_mark(NULL);
    }
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    unsigned long best = 0;
    for (int i = 0; i < N; i++)
        if (jobs[i].result > best) best = jobs[i].result;
    char msg[64];
    snprintf(msg, sizeof msg, "longest chain: %lu steps", best);
    lt_message_str(msg);
    lt_frame_mark("summary");
    printf("%s\n", msg);
    return 0;
}
