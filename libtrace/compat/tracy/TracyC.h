/* TracyC.h -- Tracy's C instrumentation macros over the libtrace client.
 *
 * C code instrumented for Tracy compiles unchanged against this header and
 * records into .tracy files through capture-release. Build with
 * -DTRACY_ENABLE and `pkg-config --cflags --libs libtrace`; without
 * TRACY_ENABLE every macro compiles to nothing, as in Tracy. libtrace(3),
 * section TRACY COMPATIBILITY, says what is recorded and what is ignored.
 *
 *     #include <tracy/TracyC.h>
 *     void step(void) {
 *         TracyCZoneN(ctx, "step", 1);
 *         TracyCZoneValue(ctx, 42);
 *         TracyCZoneEnd(ctx);
 *     }
 *
 * As in Tracy, several macros end with their own semicolon. */
#ifndef LT_TRACYC_H
#define LT_TRACYC_H

#include <stddef.h>
#include <stdint.h>

enum TracyPlotFormatEnum {
    TracyPlotFormatNumber,
    TracyPlotFormatMemory,
    TracyPlotFormatPercentage,
    TracyPlotFormatWatt
};

/* Message severities of ___tracy_emit_logString; accepted and ignored. */
enum TracyMessageSeverity {
    TracyMessageSeverityTrace,
    TracyMessageSeverityDebug,
    TracyMessageSeverityInfo,
    TracyMessageSeverityWarning,
    TracyMessageSeverityError,
    TracyMessageSeverityFatal
};

#ifndef TRACY_ENABLE

typedef const void *TracyCZoneCtx;

static inline void ___tracy_set_thread_name(const char *name) { (void)name; }

#define TracyCSetThreadName(name)
#define TracyCZone(c, x)
#define TracyCZoneN(c, x, y)
#define TracyCZoneC(c, x, y)
#define TracyCZoneNC(c, x, y, z)
#define TracyCZoneEnd(c)
#define TracyCZoneText(c, x, y)
#define TracyCZoneTextF(c, x, ...)
#define TracyCZoneName(c, x, y)
#define TracyCZoneNameF(c, x, ...)
#define TracyCZoneColor(c, x)
#define TracyCZoneValue(c, x)

#define TracyCAlloc(x, y)
#define TracyCFree(x)
#define TracyCMemoryDiscard(x)
#define TracyCSecureAlloc(x, y)
#define TracyCSecureFree(x)
#define TracyCAllocN(x, y, z)
#define TracyCFreeN(x, y)
#define TracyCSecureAllocN(x, y, z)
#define TracyCSecureFreeN(x, y)

#define TracyCFrameMark
#define TracyCFrameMarkNamed(x)
#define TracyCFrameMarkStart(x)
#define TracyCFrameMarkEnd(x)
#define TracyCFrameImage(x, y, z, w, a)

#define TracyCPlot(x, y)
#define TracyCPlotF(x, y)
#define TracyCPlotI(x, y)
#define TracyCPlotConfig(x, y, z, w, a)

#define TracyCMessage(x, y)
#define TracyCMessageL(x)
#define TracyCMessageC(x, y, z)
#define TracyCMessageLC(x, y)
#define TracyCAppInfo(x, y)

#define TracyCZoneS(x, y, z)
#define TracyCZoneNS(x, y, z, w)
#define TracyCZoneCS(x, y, z, w)
#define TracyCZoneNCS(x, y, z, w, a)

#define TracyCAllocS(x, y, z)
#define TracyCFreeS(x, y)
#define TracyCMemoryDiscardS(x, y)
#define TracyCSecureAllocS(x, y, z)
#define TracyCSecureFreeS(x, y)
#define TracyCAllocNS(x, y, z, w)
#define TracyCFreeNS(x, y, z)
#define TracyCSecureAllocNS(x, y, z, w)
#define TracyCSecureFreeNS(x, y, z)

#define TracyCMessageS(x, y, z)
#define TracyCMessageLS(x, y)
#define TracyCMessageCS(x, y, z, w)
#define TracyCMessageLCS(x, y, z)

#define TracyCIsConnected 0
#define TracyCIsStarted 0

#else /* TRACY_ENABLE */

#include <stdarg.h>

#include "lt_tracy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A C zone: its location id and whether it was begun. */
struct ___tracy_c_zone_context {
    uint32_t id;
    int32_t active;
};
typedef struct ___tracy_c_zone_context TracyCZoneCtx;

static inline TracyCZoneCtx lt__tracy_czone_begin(uint32_t loc, int32_t active) {
    TracyCZoneCtx c;
    c.id = loc;
    c.active = active;
    if (active) lt_zone_begin(loc);
    return c;
}

static inline void lt__tracy_czone_end(TracyCZoneCtx c) {
    if (c.active) lt_zone_end();
}

/* In C the text goes to the thread's innermost open zone at once, and a
 * later text or value of the same zone replaces the earlier one. */
static inline void lt__tracy_czone_text(TracyCZoneCtx c, const char *t, size_t n) {
    if (c.active) lt_zone_text(t, n);
}

static inline void lt__tracy_czone_name(TracyCZoneCtx c, const char *t, size_t n) {
    if (c.active) lt_zone_name(t, n);
}

static inline void lt__tracy_czone_value(TracyCZoneCtx c, uint64_t v) {
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    lt__tracy_czone_text(c, buf, (size_t)n);
}

static inline void lt__tracy_czone_fmt(TracyCZoneCtx c, int name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void lt__tracy_czone_fmt(TracyCZoneCtx c, int name, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof buf) n = (int)sizeof buf - 1;
    if (name) lt__tracy_czone_name(c, buf, (size_t)n);
    else lt__tracy_czone_text(c, buf, (size_t)n);
}


/* ---- Tracy's C functions, for code that calls them directly ---------------- */

static inline void ___tracy_set_thread_name(const char *name) { lt_thread_name(name); }

static inline TracyCZoneCtx ___tracy_emit_zone_begin(
    const struct ___tracy_source_location_data *srcloc, int32_t active) {
    return lt__tracy_czone_begin(active ? lt__tracy_srcloc_id(srcloc) : 0, active);
}

static inline TracyCZoneCtx ___tracy_emit_zone_begin_callstack(
    const struct ___tracy_source_location_data *srcloc, int32_t depth, int32_t active) {
    (void)depth;
    return ___tracy_emit_zone_begin(srcloc, active);
}

/* A transient location: the id of its name (or function), file and line. */
static inline uint64_t ___tracy_alloc_srcloc_name(uint32_t line, const char *source,
                                                  size_t sourceSz, const char *function,
                                                  size_t functionSz, const char *name,
                                                  size_t nameSz, uint32_t color) {
    (void)color;
    return lt__tracy_transient_id(line, source, sourceSz, function, functionSz, name, nameSz);
}

static inline uint64_t ___tracy_alloc_srcloc(uint32_t line, const char *source, size_t sourceSz,
                                             const char *function, size_t functionSz,
                                             uint32_t color) {
    return ___tracy_alloc_srcloc_name(line, source, sourceSz, function, functionSz, NULL, 0,
                                      color);
}

static inline TracyCZoneCtx ___tracy_emit_zone_begin_alloc(uint64_t srcloc, int32_t active) {
    return lt__tracy_czone_begin((uint32_t)srcloc, active);
}

static inline TracyCZoneCtx ___tracy_emit_zone_begin_alloc_callstack(uint64_t srcloc,
                                                                     int32_t depth,
                                                                     int32_t active) {
    (void)depth;
    return lt__tracy_czone_begin((uint32_t)srcloc, active);
}

static inline void ___tracy_emit_zone_end(TracyCZoneCtx ctx) { lt__tracy_czone_end(ctx); }
static inline void ___tracy_emit_zone_text(TracyCZoneCtx ctx, const char *txt, size_t size) {
    lt__tracy_czone_text(ctx, txt, size);
}
static inline void ___tracy_emit_zone_name(TracyCZoneCtx ctx, const char *txt, size_t size) {
    lt__tracy_czone_name(ctx, txt, size);
}
static inline void ___tracy_emit_zone_color(TracyCZoneCtx ctx, uint32_t color) {
    (void)ctx;
    (void)color;
}
static inline void ___tracy_emit_zone_value(TracyCZoneCtx ctx, uint64_t value) {
    lt__tracy_czone_value(ctx, value);
}

static inline void ___tracy_emit_memory_alloc(const void *ptr, size_t size) {
    lt__tracy_mem(0, LT__TRACY_PTR(ptr), size, NULL);
}
static inline void ___tracy_emit_memory_free(const void *ptr) {
    lt__tracy_mem(1, LT__TRACY_PTR(ptr), 0, NULL);
}
static inline void ___tracy_emit_memory_alloc_named(const void *ptr, size_t size,
                                                    const char *name) {
    lt__tracy_mem(0, LT__TRACY_PTR(ptr), size, name);
}
static inline void ___tracy_emit_memory_free_named(const void *ptr, const char *name) {
    lt__tracy_mem(1, LT__TRACY_PTR(ptr), 0, name);
}
static inline void ___tracy_emit_memory_alloc_callstack(const void *ptr, size_t size,
                                                        int32_t depth) {
    (void)depth;
    ___tracy_emit_memory_alloc(ptr, size);
}
static inline void ___tracy_emit_memory_free_callstack(const void *ptr, int32_t depth) {
    (void)depth;
    ___tracy_emit_memory_free(ptr);
}
static inline void ___tracy_emit_memory_alloc_callstack_named(const void *ptr, size_t size,
                                                              int32_t depth, const char *name) {
    (void)depth;
    ___tracy_emit_memory_alloc_named(ptr, size, name);
}
static inline void ___tracy_emit_memory_free_callstack_named(const void *ptr, int32_t depth,
                                                             const char *name) {
    (void)depth;
    ___tracy_emit_memory_free_named(ptr, name);
}
static inline void ___tracy_emit_memory_discard(const char *name) {
    lt__tracy_mem(2, 0, 0, name);
}

static inline void ___tracy_emit_frame_mark(const char *name) { lt_frame_mark(name); }
static inline void ___tracy_emit_frame_mark_start(const char *name) { lt_frame_mark(name); }
static inline void ___tracy_emit_frame_mark_end(const char *name) { (void)name; }
static inline void ___tracy_emit_frame_image(const void *image, uint16_t w, uint16_t h,
                                             uint8_t offset, int32_t flip) {
    (void)image, (void)w, (void)h, (void)offset, (void)flip;
}

static inline void ___tracy_emit_plot(const char *name, double val) {
    lt_plot(lt_plot_register(name), val);
}
static inline void ___tracy_emit_plot_float(const char *name, float val) {
    ___tracy_emit_plot(name, (double)val);
}
static inline void ___tracy_emit_plot_int(const char *name, int64_t val) {
    ___tracy_emit_plot(name, (double)val);
}
static inline void ___tracy_emit_plot_config(const char *name, int32_t type, int32_t step,
                                             int32_t fill, uint32_t color) {
    (void)name, (void)type, (void)step, (void)fill, (void)color;
}

static inline void ___tracy_emit_message(const char *txt, size_t size, int32_t callstack) {
    (void)callstack;
    lt_message(txt, size);
}
static inline void ___tracy_emit_messageL(const char *txt, int32_t callstack) {
    (void)callstack;
    lt_message_str(txt);
}
static inline void ___tracy_emit_messageC(const char *txt, size_t size, uint32_t color,
                                          int32_t callstack) {
    (void)color;
    ___tracy_emit_message(txt, size, callstack);
}
static inline void ___tracy_emit_messageLC(const char *txt, uint32_t color, int32_t callstack) {
    (void)color;
    ___tracy_emit_messageL(txt, callstack);
}
static inline void ___tracy_emit_logString(int8_t severity, int32_t color, int32_t callstack,
                                           size_t size, const char *txt) {
    (void)severity, (void)color, (void)callstack;
    lt_message(txt, size);
}
static inline void ___tracy_emit_logStringL(int8_t severity, int32_t color, int32_t callstack,
                                            const char *txt) {
    (void)severity, (void)color, (void)callstack;
    lt_message_str(txt);
}
static inline void ___tracy_emit_message_appinfo(const char *txt, size_t size) {
    lt__tracy_app_info(txt, size);
}
static inline int32_t ___tracy_connected(void) { return lt_client_active() != 0; }

#ifdef __cplusplus
} /* extern "C" */
#endif

#define TracyCSetThreadName(name) lt_thread_name(name);

#define LT__TRACY_CZONE(ctx, name, active)                                         \
    static uint32_t LT__CAT(lt__tracy_cloc_, __LINE__);                            \
    TracyCZoneCtx ctx = lt__tracy_czone_begin(                                     \
        lt__tracy_loc(&LT__CAT(lt__tracy_cloc_, __LINE__), (name), __func__,       \
                      __FILE__, (uint32_t)__LINE__),                               \
        (active));

#define TracyCZone(ctx, active) LT__TRACY_CZONE(ctx, NULL, active)
#define TracyCZoneN(ctx, name, active) LT__TRACY_CZONE(ctx, name, active)
#define TracyCZoneC(ctx, color, active) LT__TRACY_CZONE(ctx, NULL, active)
#define TracyCZoneNC(ctx, name, color, active) LT__TRACY_CZONE(ctx, name, active)
#define TracyCZoneS(ctx, depth, active) TracyCZone(ctx, active)
#define TracyCZoneNS(ctx, name, depth, active) TracyCZoneN(ctx, name, active)
#define TracyCZoneCS(ctx, color, depth, active) TracyCZoneC(ctx, color, active)
#define TracyCZoneNCS(ctx, name, color, depth, active) TracyCZoneNC(ctx, name, color, active)

#define TracyCZoneEnd(ctx) lt__tracy_czone_end(ctx);
#define TracyCZoneText(ctx, txt, size) lt__tracy_czone_text(ctx, txt, size);
#define TracyCZoneTextF(ctx, fmt, ...) lt__tracy_czone_fmt(ctx, 0, fmt, ##__VA_ARGS__);
#define TracyCZoneName(ctx, txt, size) lt__tracy_czone_name(ctx, txt, size);
#define TracyCZoneNameF(ctx, fmt, ...) lt__tracy_czone_fmt(ctx, 1, fmt, ##__VA_ARGS__);
#define TracyCZoneColor(ctx, color) ;
#define TracyCZoneValue(ctx, value) lt__tracy_czone_value(ctx, value);

#define TracyCAlloc(ptr, size) lt__tracy_mem(0, LT__TRACY_PTR(ptr), (size), NULL)
#define TracyCFree(ptr) lt__tracy_mem(1, LT__TRACY_PTR(ptr), 0, NULL)
#define TracyCMemoryDiscard(name) lt__tracy_mem(2, 0, 0, (name));
#define TracyCSecureAlloc(ptr, size) TracyCAlloc(ptr, size)
#define TracyCSecureFree(ptr) TracyCFree(ptr)
#define TracyCAllocN(ptr, size, name) lt__tracy_mem(0, LT__TRACY_PTR(ptr), (size), (name))
#define TracyCFreeN(ptr, name) lt__tracy_mem(1, LT__TRACY_PTR(ptr), 0, (name))
#define TracyCSecureAllocN(ptr, size, name) TracyCAllocN(ptr, size, name)
#define TracyCSecureFreeN(ptr, name) TracyCFreeN(ptr, name)
#define TracyCAllocS(ptr, size, depth) TracyCAlloc(ptr, size)
#define TracyCFreeS(ptr, depth) TracyCFree(ptr)
#define TracyCMemoryDiscardS(name, depth) TracyCMemoryDiscard(name)
#define TracyCSecureAllocS(ptr, size, depth) TracyCAlloc(ptr, size)
#define TracyCSecureFreeS(ptr, depth) TracyCFree(ptr)
#define TracyCAllocNS(ptr, size, depth, name) TracyCAllocN(ptr, size, name)
#define TracyCFreeNS(ptr, depth, name) TracyCFreeN(ptr, name)
#define TracyCSecureAllocNS(ptr, size, depth, name) TracyCAllocN(ptr, size, name)
#define TracyCSecureFreeNS(ptr, depth, name) TracyCFreeN(ptr, name)

#define TracyCFrameMark lt_frame_mark(NULL);
#define TracyCFrameMarkNamed(name) lt_frame_mark(name);
/* A discontinuous frame is recorded as a frame mark of NAME at its start. */
#define TracyCFrameMarkStart(name) lt_frame_mark(name);
#define TracyCFrameMarkEnd(name) ;
#define TracyCFrameImage(image, width, height, offset, flip) ;

#define TracyCPlot(name, val)                                                      \
    do {                                                                           \
        static const char *LT__CAT(lt__tracy_pn_, __LINE__);                       \
        static uint32_t LT__CAT(lt__tracy_pi_, __LINE__);                          \
        lt_plot(lt__tracy_plot_id(&LT__CAT(lt__tracy_pn_, __LINE__),               \
                                  &LT__CAT(lt__tracy_pi_, __LINE__), (name)),      \
                (double)(val));                                                    \
    } while (0);
#define TracyCPlotF(name, val) TracyCPlot(name, val)
#define TracyCPlotI(name, val) TracyCPlot(name, val)
#define TracyCPlotConfig(name, type, step, fill, color) ;

#define TracyCMessage(txt, size) lt_message(txt, size)
#define TracyCMessageL(txt) lt_message_str(txt)
#define TracyCMessageC(txt, size, color) lt_message(txt, size)
#define TracyCMessageLC(txt, color) lt_message_str(txt)
#define TracyCMessageS(txt, size, depth) TracyCMessage(txt, size)
#define TracyCMessageLS(txt, depth) TracyCMessageL(txt)
#define TracyCMessageCS(txt, size, color, depth) TracyCMessageC(txt, size, color)
#define TracyCMessageLCS(txt, color, depth) TracyCMessageLC(txt, color)
#define TracyCAppInfo(txt, size) lt__tracy_app_info(txt, size);

#define TracyCIsConnected (lt_client_active() != 0)
#define TracyCIsStarted 1

#endif /* TRACY_ENABLE */

#endif /* LT_TRACYC_H */
