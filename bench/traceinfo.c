/* traceinfo.c -- benchmark helper: a trace's size and event counts as one
 * JSON line, and with --decode a timed pass of lt_reader_next over every
 * event (all streams merged), for the reader's events/s figure: wall time
 * and the process's CPU time (which descheduling on a loaded machine does
 * not inflate).
 *
 *     traceinfo [--decode] FILE
 *
 * Exit codes: 0 ok, 1 the file cannot be read, 2 usage.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "trace.h"

static double clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu_s(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

typedef struct counts {
    unsigned long long events, zones, user_zones;
} counts;

/* Decodes every event; counts events, zones (by their ends) and the zones
 * of user locations (LT_LOC_USER, what the C client API records). */
static int decode_all(lt_reader *r, counts *c, double *seconds, double *cpu) {
    lt_event ev;
    int rc, user = 0;
    uint32_t last_proc = 0, last_loc = 0; /* one look-up per change of location */
    double t0 = now_s(), c0 = cpu_s();
    while ((rc = lt_reader_next(r, &ev)) == 1) {
        c->events++;
        if (ev.type != LT_EV_ZONE_END)
            continue;
        c->zones++;
        if (ev.loc != last_loc || ev.process != last_proc) {
            const lt_loc *loc = lt_reader_loc(r, ev.process, ev.loc);
            user = loc && loc->kind == LT_LOC_USER;
            last_proc = ev.process;
            last_loc = ev.loc;
        }
        c->user_zones += (unsigned long long)user;
    }
    *seconds = now_s() - t0;
    *cpu = cpu_s() - c0;
    if (rc < 0)
        fprintf(stderr, "traceinfo: %s\n", lt_reader_error(r));
    return rc;
}

int main(int argc, char **argv) {
    int decode = argc == 3 && strcmp(argv[1], "--decode") == 0;
    if (argc != 2 + decode) {
        fprintf(stderr, "usage: traceinfo [--decode] FILE\n");
        return 2;
    }
    const char *path = argv[argc - 1];
    char detail[256] = "";
    lt_reader *r = NULL;
    int rc = lt_reader_open(&r, path, detail, sizeof detail);
    if (rc < 0) {
        fprintf(stderr, "traceinfo: %s: %s\n", path, detail[0] ? detail : lt_strerror(rc));
        return 1;
    }
    const lt_file_info *fi = lt_reader_info(r);
    printf("{\"file_size\": %llu, \"n_events\": %llu, \"raw_bytes\": %llu, "
           "\"complete\": %d, \"processes\": %u",
           (unsigned long long)fi->file_size, (unsigned long long)fi->n_events,
           (unsigned long long)fi->raw_bytes, fi->complete, lt_reader_nprocesses(r));
    if (decode) {
        counts c = {0};
        double secs, cpu;
        rc = decode_all(r, &c, &secs, &cpu);
        printf(", \"decoded_events\": %llu, \"zones\": %llu, \"user_zones\": %llu, "
               "\"decode_seconds\": %.6f, \"decode_cpu_seconds\": %.6f", c.events,
               c.zones, c.user_zones, secs, cpu);
    }
    printf("}\n");
    lt_reader_free(r);
    return rc < 0 ? 1 : 0;
}
