/* trace_builder.h -- libtrace's trace builder: writes a whole .tracy file
 * without a daemon, for tests, tools and benchmarks. Uses the types of
 * trace.h (flags LT_WRITE_*, location kinds, lt_proc_status). */
#ifndef LIBTRACE_TRACE_BUILDER_H
#define LIBTRACE_TRACE_BUILDER_H

#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The builder keeps one record buffer per stream and flushes blocks of
 * LT_BLOCK_TARGET bytes; at close the writer makes the trailer from their
 * descriptors. Not thread-safe. */

typedef struct lt_builder lt_builder;

LT_API int lt_builder_open(lt_builder **out, const char *path, int flags,
                           const char *creator);
/* Adds a process; returns its index (>= 1) or a negative code. */
LT_API int lt_builder_process(lt_builder *b, uint64_t pid, int64_t rank,
                              const char *hostname, const char *program,
                              uint32_t argc, const char *const *argv,
                              uint64_t anchor_mono_ns, uint64_t anchor_wall_ns);
/* Adds a thread to a process; returns its index (>= 1) or a negative code. */
LT_API int lt_builder_thread(lt_builder *b, uint32_t process, uint64_t tid,
                             const char *name);
/* Defines a location; returns its id (>= 1) or a negative code. */
LT_API int lt_builder_loc(lt_builder *b, uint32_t process, uint8_t kind,
                          const char *name, const char *file, uint32_t line);
LT_API int lt_builder_plot(lt_builder *b, uint32_t process, const char *name);
LT_API int lt_builder_frame_name(lt_builder *b, uint32_t process,
                                 const char *name);
/* Events. Timestamps of one thread must not decrease and stay at or below
 * LT_MAX_TS (else LT_EINVAL; anchors of lt_builder_process too). */
LT_API int lt_builder_zone_begin(lt_builder *b, uint32_t process,
                                 uint32_t thread, uint64_t ts, uint32_t loc);
LT_API int lt_builder_zone_end(lt_builder *b, uint32_t process, uint32_t thread,
                               uint64_t ts);
LT_API int lt_builder_zone_text(lt_builder *b, uint32_t process, uint32_t thread,
                                const char *text);
LT_API int lt_builder_zone_name(lt_builder *b, uint32_t process, uint32_t thread,
                                const char *name);
LT_API int lt_builder_message(lt_builder *b, uint32_t process, uint32_t thread,
                              uint64_t ts, const char *text);
LT_API int lt_builder_signpost(lt_builder *b, uint32_t process, uint32_t thread,
                               uint64_t ts, const char *header, const char *body);
LT_API int lt_builder_plot_value(lt_builder *b, uint32_t process, uint32_t thread,
                                 uint64_t ts, uint32_t plot, double value);
LT_API int lt_builder_frame(lt_builder *b, uint32_t process, uint32_t thread,
                            uint64_t ts, uint32_t frame);
LT_API int lt_builder_lost(lt_builder *b, uint32_t process, uint32_t thread,
                           uint64_t ts, uint64_t count);
/* Ends a process with a PROC_END record (status enum lt_proc_status). */
LT_API int lt_builder_process_end(lt_builder *b, uint32_t process, uint64_t ts,
                                  int status, const char *reason);
/* Flushes every stream, writes the trailer (unless `no_trailer`), closes and
 * frees. Accepts NULL. Returns 0 or the first error met. */
LT_API int lt_builder_close(lt_builder *b, int no_trailer);

#ifdef __cplusplus
}
#endif
#endif /* LIBTRACE_TRACE_BUILDER_H */
