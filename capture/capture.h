/* capture.h -- internals of capture-release shared by its modules.
 *
 * main.c     thin main: options, setup, run, exit code
 * options.c  command line and usage text
 * server.c   libuv event loop: clients, message framing, handshake
 * listen.c   the listeners (Unix socket, TCP) and who may connect
 * connect.c  --connect: asks a listening program for a capture
 * store.c    processes, streams, block buffers, metadata, statistics
 * worker.c   the writer thread that compresses and appends blocks
 * status.c   logging, live status line and final summary
 */
#ifndef CAPTURE_CAPTURE_H
#define CAPTURE_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>
#include "common/records.h"
#include "trace.h"

#define CAP_NAME "capture-release"

/* Exit codes (documented in man/capture-release.1 and --help). */
enum cap_exit {
    CAP_EXIT_OK = 0,
    CAP_EXIT_USAGE = 1,   /* bad options, refused configuration */
    CAP_EXIT_OUTPUT = 2,  /* output exists (no -f) or cannot be created */
    CAP_EXIT_BIND = 3,    /* cannot bind or listen */
    CAP_EXIT_WRITE = 4,   /* writing the output failed (disk full, too large) */
    CAP_EXIT_RUNTIME = 5  /* any other runtime error */
};

/* ---- options.c -------------------------------------------------------- */

typedef struct cap_opts {
    const char *output;
    const char *addr;       /* -a: TCP on this numeric IPv4/IPv6 address;
                               NULL: the Unix socket only */
    const char *socket;     /* --socket PATH; NULL: in the run folder */
    int port;               /* 0 = pick a free port and print it */
    int force;              /* -f */
    double seconds;         /* -s, 0 = no time limit */
    uint64_t mem_limit;     /* -m, bytes */
    uint32_t n_clients;     /* -n, 0 = not given */
    int verbosity;          /* -1 quiet, 0 normal, 1 verbose */
    char *token;            /* from --token-file, NULL when none */
    size_t token_len;
    int insecure;
    uint32_t max_clients;
    uint32_t max_message;
    int max_message_set;    /* given on the command line */
    uint32_t max_names;
    uint32_t handshake_ms;
    int level;              /* zstd level */
    uint64_t max_size;      /* --max-size, bytes; 0 = no limit */
    int rotate;             /* --rotate: numbered files instead of stopping */
} cap_opts;

/* Parses argv into *o. Returns 0 to run, 1 when --help or --version was
 * printed (exit 0), or -1 after printing one error line to stderr (exit 1).
 * Free the result with cap_opts_free(). */
int cap_opts_parse(cap_opts *o, int argc, char **argv);
/* connect.c: --connect HOST:PORT asks a program listening for captures
 * (tracy.start_server) for one and writes it; its own options and exit
 * codes (CAP_EXIT_*). */
int cap_connect_wanted(int argc, char **argv);
int cap_connect_main(int argc, char **argv);
void cap_opts_free(cap_opts *o);

/* ---- listen.c --------------------------------------------------------- */

typedef struct cap_listen {
    uv_tcp_t tcp;
    uv_pipe_t pipe;
    int have_tcp, have_pipe;
    int port;               /* the TCP port bound (-p 0: the one picked) */
    int number;             /* the N of daemon-N.sock (0: --socket) */
    char path[108];         /* the Unix socket ("" once removed) */
    uv_timer_t touch;       /* keeps its time recent (listen.c) */
    int have_touch;
    dev_t dev;              /* its inode: removed at the end only if still */
    ino_t ino;              /* the one bound here */
    int pids_written;       /* daemon-N.pids was written (removed at the end) */
    void *data;             /* given to both handles */
} cap_listen;

/* Opens the listeners of o: TCP on -a ADDR:PORT when -a is given, and the
 * Unix socket (--socket PATH, or daemon-<N>.sock in the run folder, N the
 * port, the TCP port picked, or with -p 0 and no TCP a free number picked
 * from 49152..65534). Returns 0 or an exit code after logging why. */
int cap_listen_open(cap_listen *l, uv_loop_t *loop, const cap_opts *o,
                    uv_connection_cb cb, void *data);
/* Prints the port picked (-p 0), alone on a line: the TCP port, or the N
 * of daemon-N.sock (clients then set TRACY_PORT=N). */
void cap_listen_print(const cap_listen *l);
/* Closes the listeners and removes the socket (if it is still ours) and
 * the pids file. */
void cap_listen_close(cap_listen *l);
/* daemon-N.pids beside daemon-N.sock in the run folder (not for --socket):
 * the pids of the processes still recording, one a line, replaced whole
 * (written to a temporary name, then renamed), so that the run waiting for
 * the capture can tell where they are (PROTOCOL.md, fork). */
void cap_listen_pids(cap_listen *l, const char *text, size_t len);
/* Whether the accepted connection s may go on: NULL, or the reason to
 * refuse it (static). Writes a name for the peer to `peer` (for Unix
 * sockets; a TCP peer's address is already there and gets its uid
 * appended when refused). */
const char *cap_listen_admit(uv_stream_t *s, const cap_opts *o, char *peer,
                             size_t peer_len, uint64_t *peer_pid);

/* ---- worker.c --------------------------------------------------------- */

/* A block being built or queued for writing: header and data in one
 * allocation. `data` holds the raw block (block header included). */
typedef struct cap_blk {
    struct cap_blk *next;
    lt_block_desc desc;
    size_t len, cap;        /* bytes used / allocated in data */
    uint64_t unit_bytes;    /* set by the worker: bytes appended to the file */
    int rc;                 /* set by the worker: lt_writer_block result */
    uint8_t data[];
} cap_blk;

typedef struct cap_worker cap_worker;
typedef void (*cap_done_fn)(void *arg, cap_blk *done);

/* Starts the writer thread for `w`. Written blocks come back, in order, to
 * `done` on the loop thread (through a uv_async handle). Returns 0 or a
 * negative code. */
int cap_worker_start(cap_worker **out, uv_loop_t *loop, lt_writer *w,
                     cap_done_fn done, void *arg);
/* Bytes of the output written so far (any thread; a block's bytes count as
 * soon as it is appended, before it comes back through `done`). */
uint64_t cap_worker_bytes(const cap_worker *wk);
/* Queues a block; the worker owns it until it comes back through `done`. */
void cap_worker_push(cap_worker *wk, cap_blk *b);
/* Closes the async handle (loop thread); later results wait for finish. */
void cap_worker_detach(cap_worker *wk);
/* Writes what is queued, stops and joins the thread, frees the worker and
 * returns the blocks not yet handed to `done`. Accepts NULL. */
cap_blk *cap_worker_finish(cap_worker *wk);

/* ---- store.c ---------------------------------------------------------- */

enum cap_stat {
    CAP_ST_CLIENTS_CONNECTED,
    CAP_ST_CLIENTS_REFUSED,
    CAP_ST_CLIENTS_REJECTED,
    CAP_ST_CLIENTS_LOST,
    CAP_ST_EVENTS_LOST_CLIENT,
    CAP_ST_EVENTS_REJECTED,
    CAP_ST_BYTES_REJECTED,
    CAP_ST_ZONES_ABORTED,
    CAP_ST_SIZE_LIMIT,
    CAP_ST_EVENTS_DROPPED_SIZE,
    CAP_ST_CLIENTS_DRAINED,
    CAP_ST_CLIENTS_OVER_BUDGET,
    CAP_ST_CLIENTS_TOO_SLOW,
    CAP_ST_CLIENTS_RESUMED,
    CAP_NSTATS
};

typedef struct cap_store cap_store;
typedef struct cap_proc cap_proc;

/* A one-line reason for a refused message; `text` is static or points into
 * `buf`. */
typedef struct cap_why {
    const char *text;
    char buf[96];
    uint64_t events;        /* events in the refused message */
} cap_why;

cap_store *cap_store_new(cap_worker *wk, uint32_t max_names);
/* Records the size limit in the statistics (size_limit_bytes). Unless
 * `rotating` (the writer then starts new files itself), stops storing events
 * once `bytes` of the output have been written (0: no limit): the events
 * that arrive later are validated, counted (events_dropped_size_limit) and
 * dropped. */
void cap_store_set_max_size(cap_store *s, uint64_t bytes, int rotating);
/* With --rotate every file repeats the metadata of the processes still
 * connected: the metadata budget then counts those (see meta_fits()). */
void cap_store_set_rotating(cap_store *s, int rotating);
/* Frees the store (all processes must have ended). Accepts NULL. */
void cap_store_free(cap_store *s);

/* Bytes held in blocks being built or queued, plus the stream tables of
 * the processes still connected. */
uint64_t cap_store_mem(const cap_store *s);
/* A META message announcing threads that would take the stream tables past
 * `bytes` is refused (the client is rejected). Default: no limit. */
void cap_store_set_table_limit(cap_store *s, uint64_t bytes);
void cap_store_stat_add(cap_store *s, enum cap_stat st, uint64_t n);
uint64_t cap_store_stat(const cap_store *s, enum cap_stat st);

/* Whether a process whose PROC_INFO is `info` (tag included) fits the
 * metadata budget. Returns 0, or -1 with *why filled (counted in
 * clients_over_budget). */
int cap_store_admit(cap_store *s, const uint8_t *info, size_t info_len,
                    cap_why *why);
/* Starts process `index` from a PROC_INFO record (tag included). Returns
 * NULL when out of memory. */
cap_proc *cap_proc_new(cap_store *s, uint32_t index, const uint8_t *info,
                       size_t info_len, uint64_t anchor_mono_ns);
/* Validates a META body and appends its records to the process metadata.
 * Returns 0, or -1 with *why filled (nothing stored). */
int cap_proc_meta(cap_store *s, cap_proc *p, const uint8_t *body, size_t n,
                  cap_why *why);
/* Validates an EVENTS body (thread varint, records) and appends the records
 * to the thread's block. Returns 0, or -1 with *why filled. */
int cap_proc_events(cap_store *s, cap_proc *p, const uint8_t *body, size_t n,
                    cap_why *why);
/* Records the client's BYE counts. Returns 0, or -1 for a malformed body. */
int cap_proc_bye(cap_proc *p, const uint8_t *body, size_t n);
/* EXEC (PROTOCOL.md, exec): records its counts as BYE's, which a clean end
 * then reports; EXEC_FAILED forgets them. cap_proc_exec returns 0, or -1
 * for a malformed body. */
int cap_proc_exec(cap_proc *p, const uint8_t *body, size_t n);
void cap_proc_exec_failed(cap_proc *p);
/* Ends the process: aborts its open zones unless status is clean, flushes
 * its blocks, writes PROC_END and frees it. */
void cap_proc_end(cap_store *s, cap_proc *p, int status, const char *reason);
uint32_t cap_proc_index(const cap_proc *p);
uint64_t cap_proc_received(const cap_proc *p);
/* BYE counts; 0 when the client said none. */
int cap_proc_said_bye(const cap_proc *p, uint64_t *sent, uint64_t *lost);
/* The fatal signal its BYE named (1.2: the process crashed), or 0. */
unsigned cap_proc_crash_sig(const cap_proc *p);

/* Hands the process's non-empty blocks (metadata first) to the worker. */
void cap_store_flush_proc(cap_store *s, cap_proc *p);
/* Queues a statistics block when a value changed since the last one. */
void cap_store_stats_block(cap_store *s);
/* Takes back written blocks: counts them, frees them. Returns the first
 * write error met so far (0 when none). */
int cap_store_done(cap_store *s, cap_blk *done);
/* First write error seen (0 when none). */
int cap_store_error(const cap_store *s);

/* For the status line and the final summary (the trailer's figures are
 * the writer's). */
typedef struct cap_totals {
    uint64_t processes, threads, events, raw_bytes, body_bytes, blocks;
} cap_totals;
void cap_store_totals(const cap_store *s, cap_totals *t);
/* Events received so far (live count for the status line). */
uint64_t cap_store_events(const cap_store *s);
/* Writes the trailer (the writer's sums, the processes and threads, the
 * statistics) and closes `w`; no trailer after a write error. */
int cap_store_close_writer(cap_store *s, lt_writer *w);

/* ---- server.c --------------------------------------------------------- */

typedef struct cap_server cap_server;

/* Binds and listens (the loop is not run). Returns 0, or CAP_EXIT_USAGE /
 * CAP_EXIT_BIND after printing one line. */
int cap_server_bind(cap_server **out, uv_loop_t *loop, const cap_opts *o);
/* With -p 0, prints the port picked on stdout, once (cap_listen_print();
 * cap_server_run() does it when it was not done before). */
void cap_server_print_port(cap_server *srv);
/* Starts accepting and serving into `store` (with -p 0, first prints the
 * port on stdout); runs the loop until the capture ends. Returns the exit code the capture ended with (CAP_EXIT_OK,
 * CAP_EXIT_WRITE or CAP_EXIT_RUNTIME). */
int cap_server_run(cap_server *srv, cap_store *store, cap_worker *wk);
/* The worker's done callback (arg: the server): takes written blocks back,
 * stops the capture on a write error and resumes reading below the limit. */
void cap_server_done(void *arg, cap_blk *done);
/* Frees the server after the loop has ended. */
void cap_server_free(cap_server *srv);
/* Counters for the status line and summary. */
void cap_server_counts(const cap_server *srv, uint32_t *active,
                       uint64_t *total);

/* ---- status.c --------------------------------------------------------- */

/* Logging: one line on stderr prefixed with the program name; clears the
 * live status line first. cap_log_init() decides whether it is shown. */
/* procexit.c: how a local client's process ended. cap_pidfd_open: a pidfd
 * for pid (close-on-exec), or -1 (no such process, or a kernel without
 * pidfds). cap_process_gone: whether pid (as this host's /proc sees it) has
 * ended, gone or a zombie; 0 when /proc cannot tell.
 * cap_process_end_signal: the signal that ended the process (pidfd from
 * cap_pidfd_open while it ran, or -1), 0 when it has not ended, ended by
 * exit, or the kernel cannot tell any more (reaped, and no pidfd exit
 * information: Linux before 6.15). cap_process_parent: the parent of pid,
 * 0 when unknown. */
int cap_pidfd_open(uint64_t pid);
/* The program pid runs (/proc/PID/exe) into buf[0..n), NUL-terminated;
 * 0, or -1 when it cannot be read (gone, or not this user's). */
int cap_process_exe(uint64_t pid, char *buf, size_t n);
uint64_t cap_process_parent(uint64_t pid);
int cap_process_gone(uint64_t pid);
unsigned cap_process_end_signal(uint64_t pid, int pidfd);

void cap_log_init(int verbosity);
void cap_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Verbose-only (-v) and normal-only (not -q) variants. */
void cap_logv(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cap_logn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Redraws the live status line (a no-op unless stderr is a terminal and
 * not quiet). */
void cap_status_update(uint32_t clients, uint64_t events, uint64_t written);
void cap_status_clear(void);
/* The end-of-capture summary (unless quiet). */
void cap_summary(const char *path, const cap_totals *t, const cap_store *s,
                 uint64_t clients, uint64_t file_bytes, int exit_code);

#endif /* CAPTURE_CAPTURE_H */
