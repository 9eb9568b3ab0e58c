/* client_internal.h -- private state of the client library, shared by
 * client.c (connection, API) and client_buf.c (buffers, sender, clock). */
#ifndef LIBTRACE_CLIENT_INTERNAL_H
#define LIBTRACE_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "client_fast.h"
#include "common/records.h"
#include "trace_client.h"
#include "common/wire.h"

/* Event bytes per chunk: an EVENTS message (type, thread varint, records)
 * stays below LT_WIRE_CLIENT_CHUNK; a chunk allocation stays below 64 KiB. */
#define LT__CHUNK_CAP (LT_WIRE_CLIENT_CHUNK - 16u)
#define LT__CHUNK_BYTES (64u << 10)
/* Longest string field of a record written outside the hot path. */
#define LT__MAX_TEXT (LT__CHUNK_CAP - LT__SLACK - 64u)
/* Longest name in a metadata record. */
#define LT__MAX_NAME 4096u

/* A thread's state where a chunk starts, written by the thread when it
 * installs the chunk (flight mode only; published with the chunk's first
 * record): the timestamp the first record's delta is from and the zones
 * open, outermost first. `ok` 0: not taken (streaming, or out of memory),
 * or some open zone carries a name or text, which the snapshot lacks. */
typedef struct lt__chunk_snap {
    uint64_t ts;
    uint32_t depth, ok;
    uint32_t *loc;           /* `depth` locations; malloc'd, kept with the
                                chunk for its next use */
    uint32_t cap;
} lt__chunk_snap;

/* Open zones a chunk's records can add: each begin takes 2 bytes or more.
 * The hot path writes a thread's zone stack (lt__stk, LT__STK_MAX
 * entries) without a check: it runs only while the stack has room for this
 * many more (client_buf.c, open_limit); nearer LT_MAX_DEPTH every begin
 * comes to the slow path, and no thread records more than LT_MAX_DEPTH
 * open zones (further begins are dropped and counted as lost). */
#define LT__STK_ROOM (LT__CHUNK_CAP / 2u + 1u)
#define LT__STK_MAX (LT_MAX_DEPTH + 1u)

struct lt__chunk {
    struct lt__chunk *next;  /* next chunk of the thread, or free list */
    uint64_t committed;      /* published word: events << 32 | bytes
                                (release store / acquire load) */
    uint32_t sent;           /* bytes already sent (sender only) */
    uint32_t sent_events;    /* events already sent (sender only) */
    uint32_t sealed;         /* no more writes (set under lt__g.mu) */
    lt__chunk_snap snap;     /* the thread's state where data[] starts */
    uint8_t data[LT__CHUNK_CAP];
};

/* One thread's buffer; `pub` first so that lt__tbuf * converts back. */
typedef struct lt__thr {
    lt__tbuf pub;
    uint8_t *real_limit;     /* chunk end minus LT__SLACK (pub.limit is NULL
                                while a dropped zone is open) */
    lt__chunk *cur;          /* the chunk being written */
    lt__chunk *head;         /* oldest chunk not yet released (mu) */
    lt__chunk *scratch;      /* after the client stopped: discarded writes */
    struct lt__thr *next;     /* in lt__g.threads (mu) */
    uint64_t tid;
    uint64_t lost_pending;   /* drops not yet recorded as LOST */
    uint32_t skip;           /* dropped zones still open (drop mode) */
    int finished;            /* the thread exited (mu) */
    int starved;             /* a wait for memory timed out: drop without
                                waiting until a chunk is free again */
    uint32_t session;        /* lt__g.session it records for (client_file.c:
                                a buffer of an earlier one is renewed) */
    int decorated;           /* a name or text was written since no zone
                                was open at a chunk start */
} lt__thr;
_Static_assert(sizeof(lt__thr) <= LT__STK_OFF, "the zone stack follows lt__thr");

enum lt__state {
    LT__UNINIT = 0,   /* not connected yet: connect on first use */
    LT__ACTIVE = 1,   /* connected and recording */
    LT__OFF = 2       /* not profiled (no daemon, refused, stopped) */
};

/* Growable byte buffer. */
typedef struct lt__bytes {
    uint8_t *p;
    size_t len, cap;
} lt__bytes;

int lt__bytes_reserve(lt__bytes *b, size_t extra);
void lt__bytes_free(lt__bytes *b);

typedef struct lt__client {
    pthread_mutex_t mu;       /* everything below but the atomics */
    pthread_cond_t send_cv;   /* wakes the sender */
    pthread_cond_t pool_cv;   /* a chunk was freed / state changed */
    pthread_cond_t done_cv;   /* a send round finished */
    int state;                /* enum lt__state, atomic */
    int stopping;             /* the sender does its last round */
    int broken;               /* the connection failed: discard data */
    int kick;                 /* work for the sender now */
    int fd;
    int sender_running;
    pthread_t sender;
    /* configuration */
    int drop, quiet;
    /* A process of a `python -m tracy` run (TRACY_PY_OPTS in its
     * environment, read at start: the run sets it for its children after
     * its own start): the run reports its capture, and the trace each
     * process's loss, so the end of the capture (no daemon any more, one
     * that is finishing, a connection it closed) is not said on the
     * program's stderr, where plain Python says nothing. */
    int of_run;
    int forked;               /* a child of fork() of a process that started
                                 (or of such a child) */
    int fork_of_active;       /* ... whose client recorded at the fork */
    /* fork (PROTOCOL.md, fork): the children forked since the last round,
     * announced to the daemon (FORK) before anything this process says
     * after them, BYE included (mu); the atfork handlers find them
     * (client.c), in C programs and in Python's os.fork alike. */
    uint64_t *forks;
    size_t n_forks, cap_forks;
    size_t max_chunks;        /* chunks beyond one per live thread */
    uint64_t wait_max_ms;     /* longest wait for a free chunk */
    char where[300];          /* "addr:port" for messages */
    /* chunk pool */
    lt__chunk *free_chunks;
    size_t n_chunks;          /* allocated, free or in use */
    size_t n_live;            /* threads with a buffer, not yet exited: each
                                 may hold one chunk beyond max_chunks */
    /* threads */
    lt__thr *threads;
    uint32_t n_threads;       /* thread indices handed out */
    /* metadata waiting to be sent */
    lt__bytes meta;
    /* send rounds, for lt_client_flush */
    uint64_t rounds_started, rounds_done;
    /* counts */
    uint64_t events_sent;     /* atomic */
    uint64_t events_lost;     /* atomic */
    uint64_t events_stored;   /* from the daemon's STORED (stored_known) */
    int stored_known;
    uint32_t wait_loc;        /* "tracy: waiting for capture" */
    uint32_t process_index;   /* from WELCOME */
    /* The guarded descriptor (PROTOCOL.md, Resuming; also checked when
     * fd_private, where it cannot fail): fd is ours while it
     * is the socket (sock_dev, sock_ino) we opened; the program may close
     * or replace it. Sender thread only, once started. */
    uint64_t sock_dev, sock_ino;
    uint64_t key;             /* session key from WELCOME 1.1; 0: none */
    uint64_t stream_off;      /* stream bytes sent after the handshake, over
                                 all connections (as the daemon counts) */
    uint64_t bytes_unreceived;/* bytes a resumed daemon said it never got */
    uint32_t resumes;         /* connections resumed */
    uint32_t session;         /* connections made in this process's life
                                 (atomic): a trace window is one (client_file.c) */
    /* The private descriptor table (PROTOCOL.md, The daemon's socket): the
     * sender moved the socket into a table of its own; the program's table
     * does not hold it, and fd is a number of the sender's table only. */
    int private_wanted;       /* TRACY_PRIVATE_FD is not 0 */
    int fd_private;           /* set by the sender before sender_ready */
    int sender_ready;         /* the sender has set fd_private (mu) */
    /* exec (PROTOCOL.md, exec): lt_client_exec_prepare asked for EXEC, the
     * sender sent it and holds every later send until the exec fails. */
    int exec_req;             /* EXEC wanted at the next round (mu) */
    int exec_held;            /* EXEC sent: no send until exec_cancel (mu) */
    int exec_cancel;          /* send EXEC_FAILED, then go on (mu) */
    unsigned daemon_minor;    /* the daemon's protocol minor (WELCOME) */
} lt__client;

extern lt__client lt__g;

/* ---- client.c: the guarded descriptor --------------------------------- */

/* Whether fd is still the daemon's socket this client opened (one fstat):
 * when not, the program closed or replaced it, and it must be neither
 * written, read nor closed. */
int lt__fd_ours(int fd);
/* Opens a new connection to the same daemon (same target, same checks),
 * sends RESUME and reads RESUMED: *offset is the stream offset the daemon
 * consumed. Sets lt__g.fd (the old one is left alone). Returns 0, or -1
 * with the reason in why. Bounded: about 1 s of connection attempts, then
 * the handshake timeout. */
int lt__resume(uint64_t *offset, char *why, size_t why_len);

/* ---- client.c: fork ---------------------------------------------------- */

/* Before a fork whose child goes on recording: a process that would record
 * but has not connected yet (the child of a recording process, or one
 * TRACY_OUTPUT asks to record) connects now, so that it can announce the
 * child and the child joins its capture. Returns 1 when the client records
 * (the fork can be announced), else 0. Not with lt__g.mu held. */
int lt__client_fork_prepare(void);
/* The process forked `pid` (a child that goes on running its program): the
 * next send round tells the daemon (FORK), which then keeps the capture
 * open for the child until it connects or ends. Not with lt__g.mu held. */
void lt__client_forked(uint64_t pid);

/* ---- client_send.c -------------------------------------------------- */

/* Starts a thread running fn(NULL) with every signal blocked (signals are
 * for the program's threads); `detached`: detached, with a 64 KiB stack.
 * Returns 0 or -1. */
int lt__thread_nosig(pthread_t *t, void *(*fn)(void *), int detached);
/* Starts the sender thread on the connected socket and waits until it has
 * taken the socket into its private descriptor table (lt__g.fd_private)
 * or found that it cannot. Returns 0 or LT_ENOMEM. */
int lt__sender_start(void);
/* client_fdtab.c: called by the sender thread as it starts, the socket fd
 * open in the process's table. Returns 1 when the thread's descriptor
 * table is now its own and holds only the socket (the starter then closes
 * fd in the program's table), 0 when it stays shared (guarded descriptor). */
int lt__fdtab_private(int fd);
/* One line on the program's stderr, printf-style, from any thread: the
 * sender's own descriptor table has no stderr, so there it borrows the
 * program's descriptor 2 for the write (pidfd_getfd). */
void lt__say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Final round, BYE, close; joins the sender. Called with mu not held. */
void lt__sender_stop(void);
/* TSC clock calibration (x86-64 with an invariant TSC); called by the
 * sender about every 50 ms. */
void lt__clock_tick(void);
/* The first map, published before the sender starts, so that events are
 * timed by the TSC from the first: lt__clock_start takes a (TSC, clock) pair
 * before connecting, lt__clock_first a second one once connected, at least
 * 0.5 ms later (it sleeps for what is missing), and publishes the map; the
 * sender refines it at its first round. Both do nothing where a map exists
 * (a forked child keeps its parent's) or the TSC is not used. */
void lt__clock_start(void);
void lt__clock_first(void);
/* client_host.c: reads TRACY_TEST_CLOCK_OFFSET_NS into lt__mono_bias (before
 * the first timestamp), and the host name HELLO reports (TRACY_HOST, else
 * gethostname), NUL-terminated in buf[n]. */
void lt__host_init(void);
void lt__host_name(char *buf, size_t n);

/* ---- client_signal.c ------------------------------------------------- */
/* Once connected: SIGTERM, SIGINT and SIGHUP whose action is the default
 * ship what was recorded before they end the process (unless TRACY_SIGNALS=0
 * or lt_client_catch_signals(0)). Called with init_mu held. */
void lt__signals_install(void);
/* A terminating signal (SIGTERM, SIGINT, SIGHUP) is ending the process once
 * the client has stopped: the goodbye names it (protocol 1.2), and the daemon
 * ends the process clean with the signal as its end reason. Async-signal-safe;
 * a crash (client_crash.c) takes precedence. */
void lt__end_signal(int sig);

/* ---- client_crash.c: fatal signals ------------------------------------- */
/* Fills buf[0..cap) with the runtime's account of the crash (the Python
 * stack) from a signal handler: async-signal-safe, no lock, no malloc.
 * Returns the bytes written. */
typedef size_t (*lt__crash_note_fn)(char *buf, size_t cap);
void lt__crash_set_note(lt__crash_note_fn fn);
/* Once connected (init_mu held): SIGSEGV, SIGBUS, SIGILL, SIGFPE and
 * SIGABRT ship what was recorded and the crash before they end the process
 * (client_crash.c explains how). */
void lt__crash_install(void);
/* In the process that installed them: on_crash again over whatever each of
 * the five signals has now (kept in its place), where another handler put
 * back the action it had replaced (faulthandler.disable()); a signal that
 * still has on_crash is left as it is. */
void lt__crash_retake(void);
/* For the sender: the signal of a crash being shipped, or 0; its note (the
 * crashing thread's index, 0 when it has no buffer, and the time since that
 * thread's last record); lt__crash_done() after BYE releases the handler. */
unsigned lt__crash_signal(void);
size_t lt__crash_note(uint32_t *thread, uint64_t *dt, const char **text);
void lt__crash_done(void);
/* The calling thread gets an alternate signal stack when it has none and
 * the crash handler is installed (a stack overflow's SIGSEGV then reaches
 * the handler); _done frees it at the thread's exit. */
void lt__altstack_init(void);
void lt__altstack_done(void);

/* ---- client_flight.c: the flight recorder (TRACY_FLIGHT) -------------- */
/* Reads TRACY_FLIGHT: 1 flight mode, 0 streaming, -1 invalid (warned). */
int lt__ring_config(void);
/* Starts recording into memory, the process described by its HELLO
 * message (header included). Returns 0 or an LT_E* code. */
int lt__ring_start(const uint8_t *hello, size_t n);
int lt__ring_on(void);
/* The sender's round (no lock held): metadata records and each thread's
 * new records go to the ring instead of the socket; then the round's end
 * trims it and dumps when asked or, `last`, at the client's stop. */
void lt__ring_meta(const uint8_t *p, size_t n);
/* `events`: the timed records among the `len` bytes; `snap`: the chunk's
 * snapshot when the slice starts a chunk, else NULL. */
int lt__ring_slice(uint32_t thread, const uint8_t *p, uint32_t len, uint32_t events,
                   const lt__chunk_snap *snap, uint64_t now);
void lt__ring_round(int last, uint64_t now, uint64_t round);
/* The client stops for a crash by `sig` (client_crash.c): the last round
 * dumps whatever TRACY_FLIGHT_NO_EXIT_DUMP says, the process ended
 * "crashed" with the signal, and frees nothing. */
void lt__ring_crashed(unsigned sig);
/* Whether the client's stop dumps (TRACY_FLIGHT_NO_EXIT_DUMP is not set);
 * an exec dumps then too. */
int lt__ring_exit_dump(void);

/* ---- client_buf.c --------------------------------------------------- */
/* After fork() in the child: forget the parent's threads and buffers. */
void lt__buf_atfork_child(void);
/* Frees the free chunk list (mu held). */
void lt__pool_trim(void);
/* Writes the calling thread's pending LOST record (before the client stops). */
void lt__buf_thread_done(void);
/* Releases the fully sent chunk c, the oldest of t (mu held). */
void lt__buf_release(lt__thr *t, lt__chunk *c);
/* Frees the buffers of exited threads whose data is all sent, or with
 * `all` every exited thread's and those dropped at fork (mu held). */
void lt__buf_reap(int all);

/* Makes room for a record of n bytes (n <= LT__MAX_TEXT + 64) outside the
 * hot path, at time ts. Returns the write position, or NULL when the record
 * is dropped (drop mode; counted). */
uint8_t *lt__reserve(lt__thr *t, size_t n, uint64_t ts);
/* Publishes a record written at the reserved position; `event` is 0 for
 * ZONE_TEXT / ZONE_NAME. */
void lt__commit(lt__thr *t, uint8_t *end, int event);

/* Number of event records in p[0..n) (whole records). */

/* ---- trace windows (client_file.c) ----------------------------------- */
/* A new session after lt_client_stop() (mu held): the buffers of threads
 * alive now leave the thread list and are forced onto the slow path; each
 * is renewed (a fresh chunk, a new thread index, no zone open) at its
 * thread's next write once the client records again, so that ends of zones
 * begun before are not sent. */
void lt__buf_new_session(void);
/* Whether t records for an earlier session (its thread has not written
 * since the new one began). */
int lt__buf_stale(const lt__thr *t);
/* client.c: back to LT__UNINIT after lt_client_stop(), for a new
 * connection. Returns 0, or LT_EINVAL while connected. */
int lt__client_rearm(void);
/* client_file.c: lt_start_trace with capture-release at `exe` (NULL: found
 * as lt_start_trace finds it), and lt_stop_trace giving the events the
 * daemon confirmed storing (0 when it did not say). */
int lt__trace_start(const char *path, const char *exe);
int lt__trace_stop(uint64_t *stored);
/* client_cut.c: lt__trace_cut_at(start): zones open at the window's start
 * `start` (ns) were written as begins before it (the first call wins until
 * reset); lt__trace_cut_reset forgets it (a new window); lt__trace_cut_file
 * turns them into cut zones in the finished file `path` (spliced in
 * place). 0, or an LT_E* code when the file stays as it was (said). */
void lt__trace_cut_at(uint64_t start);
void lt__trace_cut_reset(void);
int lt__trace_cut_file(const char *path);
/* client_file.c: sets up the windows' fork handler (once; from the
 * client's own set-up, never during a fork). */
void lt__trace_init(void);
/* client_file.c: TRACY_OUTPUT asks for a trace window from the first
 * event: starts the daemon that writes it (before the connection is made,
 * init_mu held). 0 when not asked or started, else an LT_E* code. */
int lt__output_start(void);
/* client_file.c: at exit, ends the window TRACY_OUTPUT or lt_start_trace
 * opened (waits for the file). */
void lt__trace_at_exit(void);
/* client_listen.c: TRACY_LISTEN=[ADDR:]PORT (read once, at the client's
 * first start; ignored when TRACY_ADDR is set): starts the listener and
 * takes the variable out of the environment. 1 when it was set (the
 * client then stays off until a capture), else 0. */
int lt__listen_from_env(void);
/* client_listen.c: at exit, a capture under way ends ("exit") and is sent
 * before this returns (at most 60 s). */
void lt__listen_at_exit(void);
/* [ADDR:]PORT or [ADDR:]PORT+rank (PORT plus the MPI rank: one port per
 * rank) into addr and *port (ADDR may be [V6]; none: 127.0.0.1). 0, or
 * LT_EINVAL (malformed, over 65535, +rank without an MPI rank). */
int lt__listen_parse(const char *spec, char *addr, size_t n, int *port);
/* client.c: the MPI rank (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK,
 * SLURM_PROCID), or -1. */
int64_t lt__mpi_rank(void);

/* ---- client.c ------------------------------------------------------- */

/* Appends a THREAD_INFO record to the pending metadata (mu held). */
void lt__meta_thread(uint32_t thread, uint64_t tid, const char *name);
/* Name set with lt_thread_name_tid for a thread not yet seen, or NULL
 * (mu held). The result stays valid until mu is released. */
const char *lt__pending_name(uint64_t tid);

/* ---- encoding ------------------------------------------------------- */

static inline uint8_t *lt__put_u16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}

static inline uint8_t *lt__put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
    return p + 4;
}

/* Length of the longest prefix of s[0..len) that is at most max bytes and
 * does not cut a UTF-8 sequence. */
static inline size_t lt__clip(const char *s, size_t len, size_t max) {
    if (len <= max) return len;
    len = max;
    while (len > 0 && ((uint8_t)s[len] & 0xC0) == 0x80) len--;
    return len;
}

/* Writes `str` with s[0..len) clipped to max bytes; invalid UTF-8 bytes
 * become '?'. The caller makes room for 10 + max bytes. */
uint8_t *lt__put_text(uint8_t *p, const char *s, size_t len, size_t max);

/* lt__rundir() (local.h), saying once per process, on stderr, which
 * candidate was passed over and why (it may have been planted). */
#define LT__RUNDIR_MAX 84
int lt__rundir_said(char *out, size_t out_len);
/* Removes from the run folder the private capture files (capture-PID-N.tracy)
 * of programs that ended during an on-demand capture: those of a process no
 * longer alive, of this user, a minute old or more. Called when a listener
 * starts (client_listen.c; the Python package's through _tracy). */
void lt__sweep_captures(void);

#endif /* LIBTRACE_CLIENT_INTERNAL_H */
