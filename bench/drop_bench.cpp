/* drop_bench.cpp -- the cost of one zone through Tracy's macros (the drop-in
 * headers) against LT_ZONE_SCOPED, for section 11 of make bench, which runs
 * it under callgrind with two loop counts and divides the difference in
 * instructions by the difference in zones.
 *
 *     TRACY_PORT=<port> drop_bench MODE ZONES
 *
 * MODE: lt (LT_ZONE_SCOPED, C++), ZoneScoped, ZoneScopedN, ZoneNamedN (a
 * named zone with the active flag), lt_c (LT_ZONE_SCOPED in C), TracyCZoneN,
 * empty (the loop and call alone). Built with -DTRACY_ENABLE as drop_bench
 * and without as drop_bench_off (the macros then compile to nothing). */
#include <tracy/Tracy.hpp>
#include <libtrace/trace_client.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" void bench_lt_c(void);
extern "C" void bench_tracy_c(void);

static volatile int sink;

__attribute__((noinline)) static void bench_empty() { sink = 0; }

__attribute__((noinline)) static void bench_lt() {
    LT_ZONE_SCOPED("zone");
    sink = 0;
}

__attribute__((noinline)) static void bench_zone_scoped() {
    ZoneScoped;
    sink = 0;
}

__attribute__((noinline)) static void bench_zone_scoped_n() {
    ZoneScopedN("zone");
    sink = 0;
}

__attribute__((noinline)) static void bench_zone_named_n() {
    ZoneNamedN(z, "zone", true);
    sink = 0;
}

static const struct {
    const char *name;
    void (*fn)(void);
} modes[] = {
    {"empty", bench_empty},       {"lt", bench_lt},
    {"ZoneScoped", bench_zone_scoped}, {"ZoneScopedN", bench_zone_scoped_n},
    {"ZoneNamedN", bench_zone_named_n}, {"lt_c", bench_lt_c},
    {"TracyCZoneN", bench_tracy_c},
};

int main(int argc, char **argv) {
    long n = argc > 2 ? atol(argv[2]) : 0;
    for (const auto &m : modes) {
        if (argc > 2 && n > 0 && strcmp(argv[1], m.name) == 0) {
            m.fn(); /* registers the location, connects */
            for (long i = 0; i < n; i++) m.fn();
            return 0;
        }
    }
    fprintf(stderr, "usage: drop_bench lt|ZoneScoped|ZoneScopedN|ZoneNamedN|lt_c|"
                    "TracyCZoneN|empty ZONES\n");
    return 2;
}
