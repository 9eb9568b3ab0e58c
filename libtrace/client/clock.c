/* clock.c -- the two clocks of the format: monotonic timeline, wall anchor. */
#include <time.h>
#include "trace.h"

static uint64_t lt__clock_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t lt_now_ns(void) { return lt__clock_ns(CLOCK_MONOTONIC); }

uint64_t lt_wall_ns(void) { return lt__clock_ns(CLOCK_REALTIME); }
