/* client_host.c -- what the client says about its host: its name
 * (TRACY_HOST overrides gethostname, for containers or nodes that share a
 * name) and a bias added to every timestamp of the process
 * (TRACY_TEST_CLOCK_OFFSET_NS, signed: tests simulating a host whose
 * monotonic clock started at another moment, for tracy-merge). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "client_internal.h"

LT_API int64_t lt__mono_bias;

void lt__host_init(void) {
    const char *v = getenv("TRACY_TEST_CLOCK_OFFSET_NS");
    lt__mono_bias = 0;
    if (!v || !*v) return;
    char *end;
    errno = 0;
    long long b = strtoll(v, &end, 10);
    if (errno || *end)
        fprintf(stderr, "tracy: ignoring invalid TRACY_TEST_CLOCK_OFFSET_NS '%s'\n", v);
    else
        lt__mono_bias = b;
}

void lt__host_name(char *buf, size_t n) {
    const char *h = getenv("TRACY_HOST");
    buf[0] = 0;
    if (h && *h) snprintf(buf, n, "%s", h);
    else if (gethostname(buf, n - 1) < 0) buf[0] = 0;
    buf[n - 1] = 0;
}
