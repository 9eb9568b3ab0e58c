/* trace_client.h -- libtrace client API: instrument C and C++ programs.
 *
 * A process connects once to the capture daemon (TRACY_ADDR / TRACY_PORT,
 * default 127.0.0.1:8086) on its first event or on lt_client_start(). Each
 * thread records into its own buffers; a background sender thread ships them.
 * Everything is flushed at exit. With no daemon listening, one warning line
 * goes to stderr and every call below becomes a cheap no-op.
 *
 * Environment: TRACY_ADDR, TRACY_PORT, TRACY_TOKEN (shared secret),
 * TRACY_DROP=1 (drop events instead of waiting when buffers are full; the
 * drops are counted and recorded), TRACY_WAIT=SECONDS (keep retrying to
 * connect that long before giving up), TRACY_BUFFER_MB (buffer memory per
 * process, default 64, plus one chunk per live thread), TRACY_WAIT_MAX=SECONDS
 * (longest wait for buffer memory before dropping, default 10),
 * TRACY_QUIET=1 (no warning).
 *
 * Every lt_* function may be called from any thread, but none from a signal
 * handler: they take locks (the first event of a thread makes its buffer, a
 * full buffer waits for memory), and a handler that interrupts the same
 * thread inside one waits for ever. Sample in a thread of your own instead
 * (a timer thread, or sigwait()).
 *
 *     #include <trace_client.h>
 *     void work(void) {
 *         LT_ZONE_SCOPED("work");        // ends when the scope ends
 *         lt_message_str("starting");
 *         lt_plot(LT_PLOT_ID("queue"), 3.0);
 *     }
 */
#ifndef LIBTRACE_TRACE_CLIENT_H
#define LIBTRACE_TRACE_CLIENT_H

#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Connects now instead of at the first event. Idempotent. Returns 0 when
 * connected, or LT_ECONNECT / LT_EPROTO (after printing one line to stderr,
 * unless TRACY_QUIET=1); the process then runs unprofiled. After a failed
 * attempt another call tries again (reading the environment again); after
 * lt_client_stop() it returns LT_ECONNECT. */
LT_API int lt_client_start(void);

/* Trace windows: the process writes a trace file of its own, with no
 * daemon for the user to start. lt_start_trace(path) starts the private
 * capture daemon python -m tracy uses (capture-release: $TRACY_CAPTURE, else
 * bin/ next to the lib/ holding libtrace, else PATH) writing `path`, and
 * connects to it; threads alive or started in the window are recorded
 * (ends of zones begun before it are not sent), and processes forked or
 * started in it inherit TRACY_ADDR and join the same trace.
 * lt_stop_trace() ships every thread's records and waits until the file is
 * complete (zones still open end with the window, cut); a process of the
 * window still connected 5 s later is recorded as stopped. Another window
 * may follow. lt_start_trace returns 0, LT_EINVAL (a window is open, or the
 * client is connected to a daemon: python -m tracy, TRACY_ADDR), LT_EEXIST
 * (path is a file that is not a trace: never overwritten), LT_EOPEN (no
 * capture-release) or LT_ECONNECT, after one line on stderr; lt_stop_trace
 * returns 0, LT_EINVAL (no window) or LT_EIO (the daemon failed; said).
 * TRACY_OUTPUT=path: a window from the first event to exit, for a program
 * that never calls them. */
LT_API int lt_start_trace(const char *path);
LT_API int lt_stop_trace(void);
/* 1 and the path of the open window in buf (at most n bytes), or 0. */
LT_API int lt_trace_path(char *buf, size_t n);

/* On-demand capture: lt_listen_start("[ADDR:]PORT", token) starts a thread
 * that listens there for `capture-release --connect ADDR:PORT --duration
 * 2s -o run.tracy` (the protocol of schema/PROTOCOL.md, "On-demand
 * capture", as the Python package speaks it). Until a capture is asked for
 * the program records nothing and connects nowhere: call it before the
 * first zone (a zone then costs a load and a branch). A capture is a trace
 * window (lt_start_trace) into a private file in the user's run folder,
 * sent to the asker when it ends (its time, STOP, or the program's exit:
 * exit waits until it is sent); one at a time, another asker meanwhile is
 * refused ("ERR busy"). PORT+rank adds the MPI rank (OMPI_COMM_WORLD_RANK,
 * PMI_RANK, PMIX_RANK, SLURM_PROCID): one port per rank, for
 * `capture-release --connect :P --connect :P+1 ...` to capture the ranks
 * into one trace. ADDR defaults to 127.0.0.1; an address other than
 * the loopback needs a token (token, else TRACY_TOKEN; NULL: TRACY_TOKEN).
 * Returns the port (useful with PORT 0), or LT_EINVAL (malformed spec,
 * already listening, no token) or LT_ECONNECT (cannot listen: the port is
 * in use), after one line on stderr. TRACY_LISTEN=[ADDR:]PORT does the same
 * at the client's first start, for a program that never calls it (ignored
 * when TRACY_ADDR is set: the process is already part of a capture; taken
 * out of the environment, so that children do not listen on the port).
 * lt_listen_stop() closes the listener (a capture under way goes on to its
 * end); lt_listen_port() is the port listened on, or 0. */
LT_API int lt_listen_start(const char *spec, const char *token);
LT_API void lt_listen_stop(void);
LT_API int lt_listen_port(void);

/* Sets the program name and arguments reported to the daemon (default: from
 * /proc/self/cmdline). Takes effect when called before the connection is
 * made. Strings are copied. */
LT_API void lt_client_set_info(const char *program, int argc,
                               const char *const *argv);

/* Sends everything recorded so far (by every thread) and waits until it has
 * been written to the socket. Returns 0 or a negative code. */
LT_API int lt_client_flush(void);

/* Flushes every thread's buffers, says goodbye and disconnects. Called
 * automatically at exit. Later events are ignored. Safe to call twice. */
LT_API void lt_client_stop(void);

/* exec: call lt_client_exec_prepare() just before an exec* call, and
 * lt_client_exec_failed() when that call returns (it failed). prepare
 * ships everything recorded so far and tells the daemon (protocol 1.2) that
 * the process is about to be replaced; until exec_failed nothing more is
 * sent. When the exec succeeds the connection closes with it and the
 * daemon records the process as ended by exec (clean, reason "exec"); the
 * new program, if profiled, connects as a new process with the same pid.
 * When it fails, exec_failed tells the daemon and recording goes on on the
 * same connection. Without these calls an exec loses what was not yet sent
 * (at most the last 50 ms) and the process ends as lost. In flight mode
 * prepare dumps as the stop would. prepare returns 0 or a negative code;
 * both do nothing when the client is not recording. */
LT_API int lt_client_exec_prepare(void);
LT_API void lt_client_exec_failed(void);

/* SIGTERM, SIGINT and SIGHUP: when the client connects, each whose action
 * is still the default gets a handler that ships what was recorded (as
 * lt_client_stop does, waiting at most 5 s) and then ends the process by
 * the same signal, as it would have ended unprofiled; a second signal ends
 * it at once. A handler the program installs replaces this one.
 * lt_client_catch_signals(0) before the client starts (or TRACY_SIGNALS=0)
 * leaves the three signals alone: for a runtime that handles them. */
LT_API void lt_client_catch_signals(int on);

/* 1 when connected and recording. */
LT_API int lt_client_active(void);

/* Counts so far: events handed to the sender and events dropped. */
LT_API void lt_client_counts(uint64_t *sent, uint64_t *lost);

/* Flight recorder (TRACY_FLIGHT=64M or =30s in the environment when the
 * client starts): events are kept in memory, the last 64 MiB or 30 s of
 * them, instead of going to a daemon. Writes them as a complete trace
 * (TRACY_FLIGHT_OUT, default flight-PID.tracy; numbered .1, .2, ... after
 * the first dump, never over an existing file); zones open at the window's
 * start are marked as cut. Also done on SIGUSR1 (when the program has no
 * handler of its own) and when the client stops (at exit) unless
 * TRACY_FLIGHT_NO_EXIT_DUMP=1. Blocks until written. Returns 0, LT_EINVAL
 * when not in flight mode, or the writer's error. */
LT_API int lt_flight_dump(void);
/* Copies the path of the last dump into buf (NUL-terminated, at most n
 * bytes). Returns 1, or 0 when there was none. */
LT_API int lt_flight_last_path(char *buf, size_t n);
/* After lt_client_stop(): 1 and *stored = the events the daemon confirmed
 * storing from this process, or 0 when it did not confirm (an older daemon,
 * or it closed the connection on a bad message: see its log). */
LT_API int lt_client_stored(uint64_t *stored);

/* Registers a source location; returns its id (>= 1), or 0 when out of
 * memory. Locations are kept whether or not the client is connected (ids in
 * static variables stay valid, also in a fork()ed child). Strings are copied
 * (names cut to 4096 bytes). Thread-safe. */
LT_API uint32_t lt_loc_register(uint8_t kind, const char *name,
                                const char *file, uint32_t line);

/* Zones on the calling thread. Ends without a matching begin are ignored. */
LT_API void lt_zone_begin(uint32_t loc);
LT_API void lt_zone_end(void);
LT_API void lt_zone_text(const char *text, size_t len);
LT_API void lt_zone_name(const char *name, size_t len);

LT_API void lt_message(const char *text, size_t len);
LT_API void lt_message_str(const char *text);
/* A signpost: a message with a header and an optional body (NULL or ""). */
LT_API void lt_signpost(const char *header, const char *body);

/* Plots: register a name once, then record values. */
LT_API uint32_t lt_plot_register(const char *name);
LT_API void lt_plot(uint32_t plot, double value);

/* A frame mark; name NULL for the default frame. */
LT_API void lt_frame_mark(const char *name);

/* Names the calling thread, or the thread with OS id `tid`. */
LT_API void lt_thread_name(const char *name);
LT_API void lt_thread_name_tid(uint64_t tid, const char *name);

/* ---- Scoped zones ------------------------------------------------------ */

#define LT__CAT2(a, b) a##b
#define LT__CAT(a, b) LT__CAT2(a, b)

static inline uint32_t lt__static_loc(uint32_t *slot, uint8_t kind,
                                      const char *name, const char *file,
                                      uint32_t line) {
    uint32_t id = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (id == 0) {
        id = lt_loc_register(kind, name, file, line);
        __atomic_store_n(slot, id, __ATOMIC_RELAXED);
    }
    return id;
}

/* A plot id for a literal name, registered on first use. */
#define LT_PLOT_ID(name)                                                    \
    ({ static uint32_t lt__plot_slot;                                       \
       uint32_t lt__p = __atomic_load_n(&lt__plot_slot, __ATOMIC_RELAXED);  \
       if (!lt__p) { lt__p = lt_plot_register(name);                        \
           __atomic_store_n(&lt__plot_slot, lt__p, __ATOMIC_RELAXED); }     \
       lt__p; })

#ifdef __cplusplus
} /* extern "C" */

namespace lt {
/* RAII zone: begins in the constructor, ends in the destructor. */
class Zone {
  public:
    explicit Zone(uint32_t loc) { lt_zone_begin(loc); }
    ~Zone() { lt_zone_end(); }
    void text(const char *t, size_t n) { lt_zone_text(t, n); }
    Zone(const Zone &) = delete;
    Zone &operator=(const Zone &) = delete;
};
} // namespace lt

#define LT_ZONE_SCOPED(name)                                                \
    static uint32_t LT__CAT(lt__loc_, __LINE__);                            \
    lt::Zone LT__CAT(lt__zone_, __LINE__)(lt__static_loc(                   \
        &LT__CAT(lt__loc_, __LINE__), LT_LOC_USER, (name), __FILE__, __LINE__))
#else
static inline void lt__zone_cleanup(int *unused) {
    (void)unused;
    lt_zone_end();
}
/* Opens a zone named `name` that ends when the enclosing scope ends. */
#define LT_ZONE_SCOPED(name)                                                \
    static uint32_t LT__CAT(lt__loc_, __LINE__);                            \
    int LT__CAT(lt__zone_, __LINE__) __attribute__((cleanup(lt__zone_cleanup))) = \
        (lt_zone_begin(lt__static_loc(&LT__CAT(lt__loc_, __LINE__),         \
                                      LT_LOC_USER, (name), __FILE__,        \
                                      __LINE__)), 0)
#endif

/* A scoped zone named after the enclosing function. */
#define LT_ZONE_SCOPED_FUNC() LT_ZONE_SCOPED(__func__)

#endif /* LIBTRACE_TRACE_CLIENT_H */
