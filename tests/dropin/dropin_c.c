/* dropin_c.c -- a program instrumented with Tracy's C macros, built against
 * <tracy/TracyC.h> (tests/python/test_dropin.py checks its trace).
 *
 *     dropin_c WORKERS ITERATIONS
 *
 * Every worker thread runs ITERATIONS rounds of the calls below; the main
 * thread names itself, records app info and one default frame mark per
 * round. Built with and without TRACY_ENABLE. */
#include <tracy/TracyC.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct job {
    int w, iters;
};

static void c_zones(int i) {
    TracyCZone(ctx, 1);
    TracyCZoneText(ctx, "c text", 6);
    TracyCZoneEnd(ctx);

    TracyCZoneN(n, "c named", 1);
    TracyCZoneValue(n, (uint64_t)i);
    TracyCZoneEnd(n);

    TracyCZoneC(c, 0xff0000, 1);
    TracyCZoneName(c, "c renamed", 9);
    TracyCZoneEnd(c);

    TracyCZoneNC(nc, "c nc", 0xff0000, 1);
    TracyCZoneColor(nc, 0);
    TracyCZoneTextF(nc, "i=%d", i);
    TracyCZoneNameF(nc, "c nc %d", i % 2);
    TracyCZoneEnd(nc);

    TracyCZoneN(off, "c inactive", i < 0);
    TracyCZoneText(off, "never", 5);
    TracyCZoneEnd(off);
}

static void c_depth(void) {
    TracyCZoneS(s, 8, 1);
    TracyCZoneNS(ns, "c ns", 8, 1);
    TracyCZoneCS(cs, 0, 8, 1);
    TracyCZoneNCS(ncs, "c ncs", 0, 8, 1);
    TracyCZoneEnd(ncs);
    TracyCZoneEnd(cs);
    TracyCZoneEnd(ns);
    TracyCZoneEnd(s);
}

static void c_rest(int w, int i) {
    char buf[64];
    int n = snprintf(buf, sizeof buf, "c msg %d %d", w, i);
    TracyCMessage(buf, (size_t)n);
    TracyCMessageL("c literal");
    TracyCMessageC("c colored", 9, 0xff);
    TracyCMessageLC("c literal colored", 0xff);
    TracyCMessageS("c msg s", 7, 4);
    TracyCMessageLS("c msg ls", 4);
    TracyCMessageCS("c msg cs", 8, 0xff, 4);
    TracyCMessageLCS("c msg lcs", 0xff, 4);
    (void)buf;
    (void)n;

    TracyCPlot("c plot", i * 0.5);
    TracyCPlotF("c float", (float)i);
    TracyCPlotI("c int", (int64_t)i);

    void *p = malloc(32), *q = malloc(16);
    TracyCAlloc(p, 32);
    TracyCAllocN(q, 16, "c pool");
    TracyCFreeN(q, "c pool");
    TracyCFree(p);
    TracyCAllocS(p, 4, 4);
    TracyCFreeS(p, 4);
    TracyCAllocNS(q, 2, 4, "c pool");
    TracyCFreeNS(q, 4, "c pool");
    TracyCSecureAlloc(p, 1);
    TracyCSecureFree(p);
    TracyCSecureAllocN(q, 1, "c pool");
    TracyCSecureFreeN(q, "c pool");
    free(p);
    free(q);

    TracyCFrameMarkNamed("c worker");
    TracyCFrameMarkStart("c discontinuous");
    TracyCFrameMarkEnd("c discontinuous");
}

/* Tracy's C functions, called directly as bindings and some C code do. */
static void c_functions(int i) {
#ifdef TRACY_ENABLE
    static const struct ___tracy_source_location_data loc = {"c srcloc", "c_functions",
                                                             __FILE__, __LINE__, 0};
    TracyCZoneCtx a = ___tracy_emit_zone_begin(&loc, 1);
    ___tracy_emit_zone_value(a, (uint64_t)i);
    ___tracy_emit_zone_end(a);
    char name[32];
    int n = snprintf(name, sizeof name, "c alloc %d", i % 2);
    uint64_t sl = ___tracy_alloc_srcloc_name(__LINE__, __FILE__, strlen(__FILE__), __func__,
                                             strlen(__func__), name, (size_t)n, 0);
    TracyCZoneCtx b = ___tracy_emit_zone_begin_alloc(sl, 1);
    ___tracy_emit_zone_text(b, "alloc", 5);
    ___tracy_emit_zone_end(b);
    ___tracy_emit_plot("c fn plot", (double)i);
    ___tracy_emit_messageL("c fn message", 0);
    ___tracy_emit_logString(TracyMessageSeverityWarning, 0, 0, 5, "c log");
    void *p = malloc(5);
    ___tracy_emit_memory_alloc_named(p, 5, "c pool");
    ___tracy_emit_memory_free_named(p, "c pool");
    free(p);
#else
    (void)i;
#endif
}

static void *c_worker(void *arg) {
    const struct job *j = arg;
    char name[32];
    snprintf(name, sizeof name, "c worker %d", j->w);
    TracyCSetThreadName(name);
    (void)name;
    for (int i = 0; i < j->iters; i++) {
        c_zones(i);
        c_depth();
        c_rest(j->w, i);
        c_functions(i);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int workers = argc > 1 ? atoi(argv[1]) : 3, iters = argc > 2 ? atoi(argv[2]) : 10;
    if (workers < 1 || workers > 64) return 2;
    pthread_t th[64];
    struct job jobs[64];
    TracyCSetThreadName("c main");
    TracyCAppInfo("c drop-in test", 14);
    TracyCPlotConfig("c plot", TracyPlotFormatNumber, 1, 1, 0);
    for (int w = 0; w < workers; w++) {
        jobs[w].w = w;
        jobs[w].iters = iters;
        if (pthread_create(&th[w], NULL, c_worker, &jobs[w]) != 0) return 1;
    }
    for (int i = 0; i < iters; i++) {
        TracyCFrameMark;
        TracyCFrameImage(NULL, 0, 0, 0, 0);
    }
    for (int w = 0; w < workers; w++) pthread_join(th[w], NULL);
    printf("connected %d\n", TracyCIsConnected);
    return 0;
}
