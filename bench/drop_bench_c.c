/* drop_bench_c.c -- the C side of drop_bench.cpp: a zone through
 * LT_ZONE_SCOPED and through TracyCZoneN/TracyCZoneEnd. */
#include <tracy/TracyC.h>
#include <libtrace/trace_client.h>

void bench_lt_c(void);
void bench_tracy_c(void);

static volatile int sink;

__attribute__((noinline)) void bench_lt_c(void) {
    LT_ZONE_SCOPED("zone");
    sink = 0;
}

__attribute__((noinline)) void bench_tracy_c(void) {
    TracyCZoneN(ctx, "zone", 1);
    sink = 0;
    TracyCZoneEnd(ctx);
}
