/* dropin.cpp -- a program instrumented with Tracy's C++ macros, built
 * against <tracy/Tracy.hpp> (tests/python/test_dropin.py checks its trace).
 *
 *     dropin WORKERS ITERATIONS
 *
 * Every worker thread runs ITERATIONS rounds of the calls below; the main
 * thread names itself, records app info, a memory pool sequence and one
 * default frame mark per round. Built with and without TRACY_ENABLE. */
#include <tracy/Tracy.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

void *other_alloc(size_t size); /* dropin_other.cpp: into pool "main pool" */
void other_free(void *p);       /* dropin_other.cpp: TracyFree, default pool */

static TracyLockable(std::mutex, mtx);
static TracyLockableN(std::mutex, named_mtx, "named mutex");
static TracySharedLockable(std::shared_mutex, smtx);
static long counter;

static void plain() { ZoneScoped; }

static void named(int i) {
    ZoneScopedN("named");
    ZoneText("t", 1);
    ZoneValue((uint64_t)i);
}

static void colored() {
    ZoneScopedC(tracy::Color::Red);
    ZoneColor(0x00ff00);
}

static void named_colored() {
    ZoneScopedNC("named colored", 0x123456);
    ZoneName("renamed", 7);
}

static void nested(int i) {
    ZoneNamed(outer, true);
    ZoneNamedN(inner, "inner", true);
    ZoneTextV(outer, "outer text", 10);
    ZoneNameV(inner, "inner renamed", 13);
    ZoneValueV(inner, (uint64_t)i);
    ZoneNamedC(c, 0xff, true);
    ZoneNamedNC(nc, "nc", 0xff, true);
    ZoneColorV(nc, 0);
    ZoneNamed(off, false);
    ZoneTextV(off, "never", 5);
    ZoneNamedN(off2, "inactive", i < 0);
}

static void with_depth() {
    ZoneScopedS(8);
    { ZoneScopedNS("ns", 8); }
    { ZoneScopedCS(0, 8); }
    { ZoneScopedNCS("ncs", 0, 8); }
    { ZoneNamedS(a, 8, true); }
    { ZoneNamedNS(b, "named s", 8, true); }
    { ZoneNamedCS(c, 0, 8, true); }
    { ZoneNamedNCS(d, "named cs", 0, 8, true); }
}

static void transient(int i) {
    std::string name = "transient " + std::to_string(i % 2);
    ZoneTransient(t, true);
    ZoneTransientN(t2, name.c_str(), true);
    { ZoneTransientS(t3, 4, true); }
    { ZoneTransientNS(t4, "transient s", 4, true); }
}

/* A zone built from a source location of the program's own, as some code does. */
static void by_srcloc() {
#ifdef TRACY_ENABLE /* as in Tracy, these types exist only then */
    static constexpr tracy::SourceLocationData loc{"by srcloc", __FUNCTION__, __FILE__, __LINE__, 0};
    tracy::ScopedZone z(&loc);
    tracy::ScopedZone off(&loc, false);
#endif
}

static void formatted(int i) {
    ZoneScopedN("fmt");
    ZoneTextF("i=%d", i);
    ZoneNameF("fmt %d", i % 2);
    ZoneNamedN(v, "fmt v", true);
    ZoneTextVF(v, "v=%d", i);
    ZoneNameVF(v, "fmt v %s", "renamed");
}

static void lock_with(LockableBase(std::mutex) &m) {
    std::lock_guard<LockableBase(std::mutex)> g(m);
    counter++;
}

static void locks() {
    lock_with(mtx);
    LockMark(mtx);
    { std::lock_guard<LockableBase(std::mutex)> g(named_mtx); }
    { std::shared_lock<SharedLockableBase(std::shared_mutex)> s(smtx); }
    { std::unique_lock<SharedLockableBase(std::shared_mutex)> u(smtx); }
    if (mtx.try_lock()) mtx.unlock();
}

static void plots(int i) {
    static const char *const dyn[2] = {"dyn a", "dyn b"};
    TracyPlot("int plot", (int64_t)i);
    TracyPlot("float plot", (float)i);
    TracyPlot("double plot", i * 0.5);
    TracyPlot(dyn[i % 2], (int64_t)i);
}

static void messages(int w, int i) {
    char buf[64];
    int n = snprintf(buf, sizeof buf, "msg %d %d", w, i);
    TracyMessage(buf, (size_t)n);
    TracyMessageL("literal");
    TracyMessageC("colored", 7, 0xff0000);
    TracyMessageLC("literal colored", 0xff0000);
    TracyMessageS("msg s", 5, 4);
    TracyMessageLS("msg ls", 4);
    TracyMessageCS("msg cs", 6, 0xff, 4);
    TracyMessageLCS("msg lcs", 0xff, 4);
    (void)buf;
    (void)n;
}

static void memory(int i) {
    void *p = malloc(100 + (size_t)i), *q = malloc(64), *r = malloc(10), *s = malloc(20);
    TracyAlloc(p, 100 + (size_t)i);
    TracyAllocN(q, 64, "pool");
    TracyAllocS(r, 10, 4);
    TracySecureAlloc(s, 20);
    TracySecureFree(s);
    TracyFreeS(r, 4);
    TracyFreeN(q, "pool");
    TracyFree(p);
    TracyAllocNS(q, 8, 4, "pool");
    TracyFreeNS(q, 4, "pool");
    TracySecureAllocN(r, 16, "pool");
    TracySecureFreeN(r, "pool");
    TracySecureAllocS(s, 4, 4);
    TracySecureFreeS(s, 4);
    TracySecureAllocNS(p, 2, 4, "pool");
    TracySecureFreeNS(p, 4, "pool");
    free(p);
    free(q);
    free(r);
    free(s);
}

static void worker(int w, int iters) {
    std::string name = "worker " + std::to_string(w);
    tracy::SetThreadName(name.c_str());
    for (int i = 0; i < iters; i++) {
        plain();
        named(i);
        colored();
        named_colored();
        nested(i);
        with_depth();
        transient(i);
        formatted(i);
        by_srcloc();
        locks();
        plots(i);
        messages(w, i);
        memory(i);
        FrameMarkNamed("worker");
        FrameMarkStart("discontinuous");
        FrameMarkEnd("discontinuous");
    }
}

static void main_pool() {
    void *a = malloc(1000), *b = malloc(24), *c = other_alloc(8);
    TracyAllocN(a, 1000, "main pool");
    TracyAllocN(b, 24, "main pool");
    TracyFreeN(a, "main pool");
    TracyFreeN((void *)&counter, "main pool"); /* never allocated: ignored */
    TracyMemoryDiscard("main pool");
    TracySecureMemoryDiscard("empty pool");
    TracyFreeN(c, "main pool"); /* discarded already: ignored */
    other_free(c);              /* never in the default pool: ignored */
    free(a);
    free(b);
    free(c);
}

int main(int argc, char **argv) {
    int workers = argc > 1 ? atoi(argv[1]) : 3, iters = argc > 2 ? atoi(argv[2]) : 10;
    tracy::SetThreadName("main thread");
    TracyAppInfo("drop-in test", 12);
    TracyPlotConfig("int plot", tracy::PlotFormatType::Number, true, true, 0);
    TracyPlotConfig("float plot", tracy::PlotFormatType::Memory);
    LockableName(named_mtx, "custom", 6);
    main_pool();
    std::vector<std::thread> ts;
    for (int w = 0; w < workers; w++) ts.emplace_back(worker, w, iters);
    for (int i = 0; i < iters; i++) {
        FrameMark;
        FrameImage(nullptr, 0, 0, 0, false);
    }
    for (auto &t : ts) t.join();
    bool connected = TracyIsConnected;
    printf("counter %ld connected %d\n", counter, (int)connected);
    return counter == (long)workers * iters ? 0 : 1;
}
