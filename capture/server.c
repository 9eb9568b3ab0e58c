/* server.c -- capture-release's event loop: the listener, one connection per
 * profiled process, message framing, the handshake and the stop logic.
 *
 * Each client has one read buffer; complete messages are handled in place
 * (validated and copied into stream blocks by store.c) and only a trailing
 * partial message is moved to the front. Nothing is allocated per event.
 * Read buffers count against -m with the store's blocks and tables: a
 * client whose buffer does not fit waits, not reading, until memory frees.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include "capture.h"
#include "common/local.h"
#include "common/wire.h"

#define RBUF_DEFAULT (64u << 10)
#define FLUSH_MS 1000
#define STATUS_MS 500
#define FD_SPARE 8          /* descriptors kept free so a refusal can accept */
#define LIMIT_LOG_MS 1000   /* at most one limit refusal logged per second */
#define HS_BUF 4096u        /* first read buffer of a connection in the handshake */
/* Under memory pressure a partial message must arrive at this rate, after a
 * grace period, or its client is closed (DAEMON.md, "Memory"). */
#define MIN_RATE (1u << 20) /* bytes per second */
#define RATE_GRACE_MS 1000
#define GRACE_MS 5000       /* a detached process waits this long for RESUME */
#define GRACE_CHECK_MS 100  /* how often detached processes are checked */

enum { CL_HANDSHAKE, CL_ACTIVE, CL_CLOSING };

typedef struct cap_client {
    union {                     /* the connection: uv_stream_t fields first */
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } conn;
    uv_timer_t timer;           /* handshake timeout */
    struct cap_client *prev, *next;
    cap_server *srv;
    uint8_t *rbuf;
    size_t rlen, rcap;
    cap_proc *proc;             /* after WELCOME */
    int state;
    int reading;
    int want_mem;               /* on_alloc found no room under -m */
    int waiting;                /* not reading until memory frees */
    uint64_t progress_ms;       /* when it last sent bytes */
    uint64_t partial_ms;        /* when its partial message started (or it
                                   was last given memory for it) */
    size_t hs_mem;              /* of rcap, in the handshake reserve */
    int handles;                /* handles not yet closed */
    uint64_t pid;
    uint64_t key;               /* session key (WELCOME 1.1), never 0 */
    uint64_t offset;            /* stream bytes of the process consumed:
                                   complete messages after the handshake,
                                   over all its connections */
    uint64_t peer_pid;          /* SO_PEERCRED pid (Unix sockets), or 0 */
    int pidfd;                  /* of peer_pid (cap_pidfd_open), or -1 */
    int exec_pending;           /* said EXEC (1.2), not EXEC_FAILED since */
    char exe[256];              /* the program it ran when it said EXEC */
    char peer[64];
    char program[48];
} cap_client;

/* A process whose connection ended without BYE, waiting (GRACE_MS) for a
 * RESUME from a new connection; or a hold (proc NULL), waiting GRACE_MS for
 * the HELLO of a pid: `exec`, a process whose connection ended after EXEC
 * (its new image's), `fork`, a child a connected process said it forked
 * (FORK, 1.3). It still counts in n_active. */
typedef struct cap_detached {
    struct cap_detached *next;
    cap_proc *proc;             /* NULL for a hold */
    int exec;                   /* a hold after EXEC (else after FORK) */
    uint64_t key, offset, pid, peer_pid;
    int pidfd;                  /* the process's (cap_pidfd_open), or -1 */
    uint64_t deadline_ms;
    char reason[160];           /* why its connection ended (lost_reason) */
    char exe[256];              /* a hold's: the program its process ran */
    int other_exe;              /* checks that found it running another */
    char peer[64];
    char program[48];
} cap_detached;

struct cap_server {
    uv_loop_t *loop;
    const cap_opts *o;
    cap_listen listen;
    uv_timer_t tick, status, stop, deadline;
    uv_signal_t sigint, sigterm, sighup, sigusr1;
    int have_sighup;          /* SIGHUP was not ignored (nohup) at start */
    int have_status, have_deadline;
    cap_store *store;
    cap_worker *wk;
    cap_client *clients;
    cap_detached *detached;
    uv_timer_t grace;           /* checks detached processes */
    int grace_on;
    uint32_t n_conns, n_active;
    uint64_t rmem;              /* bytes of all read buffers */
    uint64_t hmem;              /* of those, of connections in the handshake:
                                   outside -m, within hs_reserve */
    uint64_t hs_reserve;        /* a quarter of -m, at least 1 MiB */
    uint32_t n_waiting;         /* clients waiting for memory */
    uint32_t fd_cap;            /* connections the open-file limit allows */
    uint64_t limit_log_ms;      /* when a limit refusal was last logged */
    uint64_t limit_quiet;       /* limit refusals since then, not logged */
    const char *limit_why;      /* reason of the last of those */
    uint64_t n_welcomed;
    uint32_t stop_after;        /* clients to wait for; 0: time or signal */
    int port_printed;
    int accept_pending;         /* a connection came before cap_server_run:
                                   bit 1 on TCP, bit 2 on the Unix socket */
    int paused, stop_requested, stopping;
    int forcing;                /* reading a replaced connection to its end,
                                   whatever -m says (take_over) */
    int draining;               /* SIGUSR1: no new process, end with the last */
    int exit_code;
};

static void request_stop(cap_server *srv, int code);

/* ---- Small helpers ----------------------------------------------------- */

/* Compares the client's token with the secret in time independent of where
 * they differ. */
static int token_equal(const char *secret, size_t slen, const char *got,
                       size_t glen) {
    volatile unsigned char diff = slen != glen;
    for (size_t i = 0; i < slen; i++)
        diff |= (unsigned char)(secret[i] ^ (i < glen ? got[i] : 0));
    return diff == 0;
}

/* Compares two session keys in time independent of where they differ. */
static int key_equal(uint64_t a, uint64_t b) {
    volatile uint64_t diff = a ^ b;
    return diff == 0;
}

/* "client 3 (pid 1234, prog)" for log lines. */
static const char *who(const cap_client *c, char *buf, size_t n) {
    if (c->proc)
        snprintf(buf, n, "client %u (pid %llu, %s)", cap_proc_index(c->proc),
                 (unsigned long long)c->pid, c->program);
    else
        snprintf(buf, n, "connection from %s", c->peer);
    return buf;
}

/* ---- Sending ----------------------------------------------------------- */

typedef struct send_req {
    uv_write_t req;
    uint8_t data[];
} send_req;

static void on_sent(uv_write_t *req, int status) {
    (void)status;
    free(req);
}

/* Sends one encoded message; small handshake replies normally go out at
 * once. */
static void send_msg(cap_client *c, const uint8_t *msg, size_t len) {
    uv_buf_t b = uv_buf_init((char *)msg, (unsigned)len);
    int w = uv_try_write(&c->conn.stream, &b, 1);
    size_t done = w > 0 ? (size_t)w : 0;
    if (done == len) return;
    send_req *r = malloc(sizeof *r + len - done);
    if (!r) return;
    memcpy(r->data, msg + done, len - done);
    b = uv_buf_init((char *)r->data, (unsigned)(len - done));
    if (uv_write(&r->req, &c->conn.stream, &b, 1, on_sent) < 0) free(r);
}

static void send_refuse(cap_client *c, const char *reason) {
    uint8_t msg[LT_WIRE_REFUSE_MAX];
    send_msg(c, msg, lt__wire_refuse(msg, reason, strlen(reason)));
}

static void send_welcome(cap_client *c, uint32_t index, uint64_t key) {
    uint8_t msg[LT_WIRE_WELCOME_MAX];
    send_msg(c, msg, lt__wire_welcome(msg, index, key));
}

/* ---- Client life cycle ------------------------------------------------- */

static void on_client_closed(uv_handle_t *h) {
    cap_client *c = h->data;
    if (--c->handles > 0) return;
    if (c->pidfd >= 0) close(c->pidfd);
    free(c);
}

static int rbuf_resize(cap_client *c, size_t cap);

static void client_close(cap_client *c) {
    cap_server *srv = c->srv;
    if (c->state == CL_CLOSING) return;
    c->state = CL_CLOSING;
    c->rlen = 0;
    rbuf_resize(c, 0);
    if (c->waiting) srv->n_waiting--;
    c->waiting = 0;
    if (c->prev) c->prev->next = c->next;
    else srv->clients = c->next;
    if (c->next) c->next->prev = c->prev;
    srv->n_conns--;
    uv_close((uv_handle_t *)&c->conn.stream, on_client_closed);
    uv_close((uv_handle_t *)&c->timer, on_client_closed);
}

/* While the capture drains, daemon-N.pids lists the local processes still
 * recording: connected, detached, held (cap_listen_pids). A run's process
 * that waits for the capture reads it to find them, also those its
 * environment cannot show (a forked child's /proc environment is its
 * parent's first one). */
static void write_pids(cap_server *srv) {
    size_t n = 1, len = 0;
    for (const cap_client *c = srv->clients; c; c = c->next) n += c->proc && c->peer_pid;
    for (const cap_detached *d = srv->detached; d; d = d->next) n++;
    size_t cap = n * 21;
    char *text = malloc(cap);
    if (!text) return;
    for (const cap_client *c = srv->clients; c; c = c->next)
        if (c->proc && c->peer_pid)
            len += (size_t)snprintf(text + len, cap - len, "%llu\n",
                                    (unsigned long long)c->peer_pid);
    for (const cap_detached *d = srv->detached; d; d = d->next)
        len += (size_t)snprintf(text + len, cap - len, "%llu\n",
                                (unsigned long long)(d->peer_pid ? d->peer_pid : d->pid));
    cap_listen_pids(&srv->listen, text, len);
    free(text);
}

/* The processes recording changed (a connection, an end, a hold). */
static void recorders_changed(cap_server *srv) {
    if (srv->draining && !srv->stop_requested) write_pids(srv);
}

static void check_stop(cap_server *srv) {
    recorders_changed(srv);
    if (srv->draining && srv->n_active == 0) request_stop(srv, CAP_EXIT_OK);
    if (srv->stop_after && srv->n_welcomed >= srv->stop_after &&
        srv->n_active == 0)
        request_stop(srv, CAP_EXIT_OK);
}

/* Ends a client that completed the handshake, with a PROC_END status. */
static void end_client(cap_client *c, int status, const char *reason) {
    cap_server *srv = c->srv;
    if (c->proc) {
        cap_proc_end(srv->store, c->proc, status, reason);
        c->proc = NULL;
        srv->n_active--;
    }
    client_close(c);
    check_stop(srv);
}

/* Reads and drops what the peer already sent (its HELLO), so that closing
 * sends a FIN after the REFUSE rather than a reset that could discard it. */
static void discard_input(cap_client *c) {
    uv_os_fd_t fd;
    char scratch[4096];
    if (uv_fileno((uv_handle_t *)&c->conn.stream, &fd) != 0) return;
    for (int i = 0; i < 16; i++)
        if (recv(fd, scratch, sizeof scratch, MSG_DONTWAIT) <= 0) return;
}

/* Tells a connection that has not completed the handshake why, and closes
 * it; counted in clients_refused. */
static void refuse_quiet(cap_client *c, const char *reason) {
    cap_store_stat_add(c->srv->store, CAP_ST_CLIENTS_REFUSED, 1);
    send_refuse(c, reason);
    discard_input(c);
    client_close(c);
}

static void refuse(cap_client *c, const char *reason) {
    cap_logn("refused connection from %s: %s", c->peer, reason);
    refuse_quiet(c, reason);
}

/* Logs the limit refusals not logged yet, in one line. */
static void log_limit_quiet(cap_server *srv) {
    if (srv->limit_quiet == 0) return;
    cap_logn("refused %llu more connection%s: %s",
             (unsigned long long)srv->limit_quiet, srv->limit_quiet == 1 ? "" : "s",
             srv->limit_why);
    srv->limit_quiet = 0;
}

/* A refusal because a limit is reached: a flood of them logs one line a
 * second, with their number. `reason` must be static. */
static void refuse_limit(cap_client *c, const char *reason) {
    cap_server *srv = c->srv;
    uint64_t now = uv_now(srv->loop);
    if (srv->limit_log_ms && now - srv->limit_log_ms < LIMIT_LOG_MS) {
        if (srv->limit_quiet && srv->limit_why != reason) log_limit_quiet(srv);
        srv->limit_quiet++;
        srv->limit_why = reason;
        refuse_quiet(c, reason);
        return;
    }
    log_limit_quiet(srv);
    srv->limit_log_ms = now;
    refuse(c, reason);
}

/* Closes a client that broke the protocol; `bytes` were refused. */
static void reject(cap_client *c, const cap_why *why, uint64_t bytes) {
    cap_server *srv = c->srv;
    char w[128];
    if (c->state == CL_HANDSHAKE) {
        refuse(c, why->text);
        return;
    }
    cap_store_stat_add(srv->store, CAP_ST_CLIENTS_REJECTED, 1);
    cap_store_stat_add(srv->store, CAP_ST_EVENTS_REJECTED, why->events);
    cap_store_stat_add(srv->store, CAP_ST_BYTES_REJECTED, bytes);
    cap_logn("%s rejected: %s", who(c, w, sizeof w), why->text);
    end_client(c, LT_PROC_REJECTED, why->text);
}

static void reject_text(cap_client *c, const char *text, uint64_t bytes) {
    cap_why why = {.text = text};
    reject(c, &why, bytes);
}

static void set_reading(cap_client *c, int on);

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);

/* ---- Read buffers and the memory limit ---------------------------------- */

/* Everything held for clients: the store's blocks and tables, and the read
 * buffers. -m bounds it. */
static uint64_t mem_used(const cap_server *srv) {
    return cap_store_mem(srv->store) + srv->rmem - srv->hmem;
}

/* A connection's read buffer counts in the handshake reserve while it has
 * not said HELLO, and under -m from then on. */
static void hs_account(cap_client *c) {
    cap_server *srv = c->srv;
    size_t want = c->state == CL_HANDSHAKE ? c->rcap : 0;
    srv->hmem = srv->hmem - c->hs_mem + want;
    c->hs_mem = want;
}

/* Bytes of the message at the front of the read buffer (0: header not
 * complete yet). */
static size_t msg_size(const cap_client *c) {
    return c->rlen >= LT_WIRE_HEADER ? 4 + (size_t)lt__wire_length(c->rbuf) : 0;
}

/* The read buffer a client needs: the default, or a longer message whole. */
static size_t rbuf_want(const cap_client *c) {
    size_t m = msg_size(c), base = c->state == CL_HANDSHAKE ? HS_BUF : RBUF_DEFAULT;
    return m > base ? m : base;
}

/* Resizes the client's read buffer to `cap` bytes (0 frees it), holding
 * what it buffered. Growing is refused (-1, nothing changed) when it would
 * take the daemon past -m, except while the capture stops (what the kernel
 * holds is read then). Returns 0, -1, or -2 when out of memory. */
static int rbuf_resize(cap_client *c, size_t cap) {
    cap_server *srv = c->srv;
    if (cap == c->rcap) return 0;
    /* A HELLO is always read: connections in the handshake take their
     * buffer (at most a HELLO, LT_WIRE_MAX_HELLO) from a reserve of their
     * own, so that clients holding -m never lock new ones out. */
    if (cap > c->rcap && !srv->stop_requested && !srv->forcing &&
        (c->state == CL_HANDSHAKE
             ? srv->hmem + (cap - c->rcap) > srv->hs_reserve
             : mem_used(srv) + (cap - c->rcap) > srv->o->mem_limit))
        return -1;
    if (cap == 0) {
        free(c->rbuf);
        c->rbuf = NULL;
    } else {
        uint8_t *nb = realloc(c->rbuf, cap);
        if (!nb) return -2;
        c->rbuf = nb;
    }
    srv->rmem = srv->rmem + cap - c->rcap;
    c->rcap = cap;
    hs_account(c);
    return 0;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
    cap_client *c = h->data;
    cap_server *srv = c->srv;
    (void)hint;
    buf->base = NULL;
    buf->len = 0;
    size_t want = rbuf_want(c);
    if (c->rcap < want) {
        int rc = rbuf_resize(c, want);
        if (rc < 0) {
            c->want_mem = rc == -1; /* -2: ENOBUFS means out of memory */
            return;
        }
    }
    buf->base = (char *)c->rbuf + c->rlen;
    buf->len = c->rcap - c->rlen;
    /* Paused: finish the message under way, then stop at its end. */
    if (srv->paused && !srv->forcing && c->rlen > 0) {
        size_t m = msg_size(c), end = m ? m : LT_WIRE_HEADER;
        if (end - c->rlen < buf->len) buf->len = end - c->rlen;
    }
}

static void set_reading(cap_client *c, int on) {
    if (c->state == CL_CLOSING || c->reading == on) return;
    if (on) uv_read_start(&c->conn.stream, on_alloc, on_read);
    else uv_read_stop(&c->conn.stream);
    c->reading = on;
}

/* The client's buffer does not fit under -m: it stops reading (its data
 * waits in the kernel and in the client) until wake_waiting(). */
static void wait_for_memory(cap_client *c) {
    set_reading(c, 0);
    if (!c->waiting) c->srv->n_waiting++;
    c->waiting = 1;
}

/* Gives waiting clients their buffer while it fits, then lets them read. */
static void wake_waiting(cap_server *srv) {
    int full = srv->paused; /* -m is: only the handshake reserve may have room */
    for (cap_client *c = srv->clients; c && srv->n_waiting; c = c->next) {
        if (!c->waiting || (full && c->state != CL_HANDSHAKE)) continue;
        if (rbuf_resize(c, rbuf_want(c)) != 0) {
            if (c->state == CL_HANDSHAKE) continue; /* its own reserve */
            full = 1;
            continue;
        }
        c->waiting = 0;
        srv->n_waiting--;
        c->partial_ms = uv_now(srv->loop); /* its wait was not its fault */
        set_reading(c, 1);
    }
}

static void check_mem(cap_server *srv) {
    uint64_t mem = mem_used(srv), lim = srv->o->mem_limit;
    if (srv->stopping) return;
    if (!srv->paused && mem > lim) {
        srv->paused = 1;
        cap_logv("memory limit reached (%llu MiB buffered): pausing reads",
                 (unsigned long long)(mem >> 20));
        /* Clients in the middle of a message finish it (on_alloc reads no
         * further): their buffer then goes back. */
        for (cap_client *c = srv->clients; c; c = c->next)
            if (c->state == CL_ACTIVE && c->rlen == 0) set_reading(c, 0);
    } else if (srv->paused && mem <= lim - lim / 4) {
        srv->paused = 0;
        cap_logv("buffered data below the limit: resuming reads");
        for (cap_client *c = srv->clients; c; c = c->next)
            if (c->state == CL_ACTIVE && !c->waiting) set_reading(c, 1);
    }
    if (srv->n_waiting) wake_waiting(srv);
}

/* Stops the capture on a write or memory error of the store. */
static int check_store(cap_server *srv) {
    int err = cap_store_error(srv->store);
    if (!err) return 0;
    if (!srv->stop_requested)
        cap_log("%s: %s", err == LT_ENOMEM ? "cannot continue" : "writing the output failed",
                lt_strerror(err));
    request_stop(srv, err == LT_EIO || err == LT_ENOSPC || err == LT_EFBIG
                          ? CAP_EXIT_WRITE
                          : CAP_EXIT_RUNTIME);
    return -1;
}

void cap_server_done(void *arg, cap_blk *done) {
    cap_server *srv = arg;
    cap_store_done(srv->store, done);
    check_store(srv);
    check_mem(srv);
}

/* ---- Messages ---------------------------------------------------------- */


/* While draining, a process is still welcome when one of its ancestors is a
 * connected client (a child a running process starts now): only those whose
 * ancestors have all left are turned away. */
static int ancestor_connected(const cap_server *srv, uint64_t pid) {
    for (int depth = 0; depth < 64 && pid > 1; depth++) {
        pid = cap_process_parent(pid);
        for (const cap_client *c = srv->clients; c; c = c->next)
            if (c->proc && c->pid == pid) return 1;
        for (const cap_detached *d = srv->detached; d; d = d->next)
            if (d->pid == pid) return 1;
    }
    return 0;
}

/* A process that arrives while the capture drains: told why, counted in
 * clients_after_end (not a loss: it started after the traced program). */
static void turn_away(cap_client *c) {
    cap_store_stat_add(c->srv->store, CAP_ST_CLIENTS_DRAINED, 1);
    cap_logv("turned away connection from %s (pid %llu): the capture is draining",
             c->peer, (unsigned long long)c->pid);
    send_refuse(c, LT_WIRE_REFUSE_FINISHING);
    discard_input(c);
    client_close(c);
}

/* ---- Detached processes and RESUME (PROTOCOL.md, Resuming) ------------ */

static void on_grace(uv_timer_t *t);
static int held_successor(cap_server *srv, const cap_client *c);

/* The connection of c ended without BYE: its process waits for a RESUME
 * (still counted in n_active, so the capture does not end meanwhile). Its
 * partial message, if any, is dropped: the client sends it again. */
static void grace_timer_on(cap_server *srv) {
    if (!srv->grace_on) {
        uv_timer_start(&srv->grace, on_grace, GRACE_CHECK_MS, GRACE_CHECK_MS);
        srv->grace_on = 1;
    }
}

/* The end reason of a process lost without goodbye: `base` (how its
 * connection ended), the signal that ended the process when the kernel can
 * tell (cap_process_end_signal), and what the client recorded and had not
 * sent, which is not known here: said, not guessed. */
static void lost_reason(const char *base, uint64_t peer_pid, int pidfd, char *out,
                        size_t n) {
    char sig[48] = "";
    unsigned s = cap_process_end_signal(peer_pid, pidfd);
    if (s) {
        memcpy(sig, "; ended by ", 12);
        lt__wire_signal_text(s, sig + 11, sizeof sig - 11);
    }
    snprintf(out, n, "%s%s; events recorded but not sent: unknown", base, sig);
}

static void detach(cap_client *c, const char *reason) {
    cap_server *srv = c->srv;
    char w[128];
    cap_detached *d = calloc(1, sizeof *d);
    if (!d) {
        char full[224];
        lost_reason(reason, c->peer_pid, c->pidfd, full, sizeof full);
        cap_store_stat_add(srv->store, CAP_ST_CLIENTS_LOST, 1);
        cap_logn("%s: %s", who(c, w, sizeof w), full);
        end_client(c, LT_PROC_LOST, full);
        return;
    }
    cap_logv("%s: %s; waiting %d s for it to resume", who(c, w, sizeof w), reason,
             GRACE_MS / 1000);
    d->proc = c->proc;
    d->key = c->key;
    d->offset = c->offset;
    d->pid = c->pid;
    d->peer_pid = c->peer_pid;
    d->pidfd = c->pidfd;
    c->pidfd = -1;
    d->deadline_ms = uv_now(srv->loop) + GRACE_MS;
    snprintf(d->reason, sizeof d->reason, "%s", reason);
    memcpy(d->peer, c->peer, sizeof d->peer);
    memcpy(d->program, c->program, sizeof d->program);
    d->next = srv->detached;
    srv->detached = d;
    c->proc = NULL;
    client_close(c);
    grace_timer_on(srv);
}

/* The connection of a process that said EXEC ended (PROTOCOL.md, exec): it
 * was replaced by a new program. Its process ends clean, with the counts of
 * EXEC and the reason "exec"; its pid is held as connected for GRACE_MS (or
 * until it ends, or the capture stops), so that the capture does not end
 * before the new program, if profiled, says HELLO. */
static void exec_done(cap_client *c) {
    cap_server *srv = c->srv;
    char w[128];
    cap_detached *d = srv->stop_requested ? NULL : calloc(1, sizeof *d);
    cap_logv("%s: replaced by exec", who(c, w, sizeof w));
    if (d) {
        d->exec = 1;
        d->pidfd = -1;
        d->pid = c->pid;
        d->peer_pid = c->peer_pid;
        d->deadline_ms = uv_now(srv->loop) + GRACE_MS;
        memcpy(d->exe, c->exe, sizeof d->exe);
        memcpy(d->peer, c->peer, sizeof d->peer);
        memcpy(d->program, c->program, sizeof d->program);
        d->next = srv->detached;
        srv->detached = d;
        srv->n_active++; /* the hold; end_client counts the process out */
        grace_timer_on(srv);
    }
    end_client(c, LT_PROC_CLEAN, "exec");
}

/* A detached process that was not resumed ends as lost, as it would have
 * when its connection ended; a hold just ends. */
static void end_detached(cap_server *srv, cap_detached *d) {
    if (!d->proc) {
        if (d->exec)
            cap_logv("pid %llu (%s): no profiled program after exec",
                     (unsigned long long)d->pid, d->program);
        else
            cap_logv("pid %llu, forked by %s: %s before it connected (it recorded "
                     "nothing)", (unsigned long long)d->pid, d->program,
                     cap_process_gone(d->pid) ? "ended"
                     : d->other_exe ? "ran another program" : "not seen in 5 s");
        srv->n_active--;
        if (d->pidfd >= 0) close(d->pidfd);
        free(d);
        return;
    }
    char reason[224];
    lost_reason(d->reason, d->peer_pid, d->pidfd, reason, sizeof reason);
    cap_store_stat_add(srv->store, CAP_ST_CLIENTS_LOST, 1);
    cap_logn("client %u (pid %llu, %s): %s", cap_proc_index(d->proc),
             (unsigned long long)d->pid, d->program, reason);
    cap_proc_end(srv->store, d->proc, LT_PROC_LOST, reason);
    srv->n_active--;
    if (d->pidfd >= 0) close(d->pidfd);
    free(d);
}

/* Whether a hold's process runs, on two checks in a row, a program that
 * is neither the one it ran when the hold was made nor a Python
 * interpreter: it exec'd one that will not say HELLO (a child's `sleep`,
 * a service's binary), and the capture need not wait for it. Two checks:
 * a launcher such as env(1) runs for a moment before the interpreter. */
static int runs_other(cap_detached *d) {
    char exe[sizeof d->exe];
    if (d->proc || !d->exe[0] || cap_process_exe(d->pid, exe, sizeof exe) < 0) return 0;
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    int other = strcmp(exe, d->exe) != 0 && strncmp(base, "python", 6) != 0;
    d->other_exe = other ? d->other_exe + 1 : 0;
    return d->other_exe >= 2;
}

/* Ends the detached processes whose grace period is over, whose process
 * has ended (it cannot resume), or all of them when the capture stops; and
 * the holds of processes that exec'd another program (runs_other). */
static void end_expired(cap_server *srv, int all) {
    uint64_t now = uv_now(srv->loop);
    int ended = 0;
    for (cap_detached **pp = &srv->detached, *d; (d = *pp);) {
        if (!all && now < d->deadline_ms && !(d->peer_pid && cap_process_gone(d->peer_pid)) &&
            !runs_other(d)) {
            pp = &d->next;
            continue;
        }
        *pp = d->next;
        end_detached(srv, d);
        ended = 1;
    }
    if (!srv->detached && srv->grace_on) {
        uv_timer_stop(&srv->grace);
        srv->grace_on = 0;
    }
    if (ended) check_stop(srv);
}

static void on_grace(uv_timer_t *t) {
    cap_server *srv = t->data;
    end_expired(srv, srv->stop_requested);
}

/* A HELLO that released a hold (held_successor) was refused: the
 * hold no longer counts as connected. */
static void drop_hold(cap_server *srv, int successor) {
    if (!successor) return;
    srv->n_active--;
    check_stop(srv);
}

static int hello(cap_client *c, const uint8_t *body, size_t n) {
    cap_server *srv = c->srv;
    int successor = 0;
    char reason[160];
    const char *why;
    lt__wire_hello h;
    /* PROC_INFO is stored as received, with its tag. */
    uint8_t *info = malloc(n + 1);
    if (!info) {
        refuse(c, "daemon out of memory");
        return -1;
    }
    if (lt__wire_hello_decode(body, n, info, &h, &why) < 0) {
        if (strcmp(why, "bad magic") == 0)
            snprintf(reason, sizeof reason, "not a libtrace client (bad magic)");
        else
            snprintf(reason, sizeof reason, "malformed HELLO: %s", why);
        goto refused;
    }
    if (h.major != LT_WIRE_MAJOR) {
        snprintf(reason, sizeof reason,
                 "protocol version %u.%u is not supported (this daemon speaks %d.%d)",
                 h.major, h.minor, LT_WIRE_MAJOR, LT_WIRE_MINOR);
        goto refused;
    }
    if (srv->o->token &&
        !token_equal(srv->o->token, srv->o->token_len, h.token, h.token_len)) {
        snprintf(reason, sizeof reason, h.token_len ? "wrong token"
                 : "this daemon requires a token (set TRACY_TOKEN)");
        goto refused;
    }
    const lt__meta_rec m = h.info;
    c->pid = m.pid;
    if (!c->peer_pid && c->conn.stream.type == UV_TCP) {
        /* On loopback the process's own pid tells whether it still runs
         * (a detached process that ended cannot resume). */
        struct sockaddr_storage ss;
        int sl = sizeof ss;
        if (uv_tcp_getpeername(&c->conn.tcp, (struct sockaddr *)&ss, &sl) == 0 &&
            lt__is_loopback(&ss))
            c->peer_pid = m.pid;
    }
    size_t pl = m.program.len < sizeof c->program - 1 ? m.program.len
                                                      : sizeof c->program - 1;
    for (size_t i = 0; i < pl; i++) {
        char ch = m.program.s[i];
        c->program[i] = ch >= 0x20 && ch < 0x7f ? ch : '?';
    }
    c->program[pl] = 0;
    /* the pid's hold, released: counted out once this HELLO is
     * counted in, or refused (drop_hold) */
    successor = held_successor(srv, c);
    if (srv->draining && !successor && !ancestor_connected(srv, c->pid)) {
        free(info);
        turn_away(c);
        return -1;
    }
    cap_why over;
    if (cap_store_admit(srv->store, info, h.info_len, &over) < 0) {
        snprintf(reason, sizeof reason, "%s", over.text);
        goto refused;
    }
    uint32_t index = (uint32_t)(srv->n_welcomed + 1);
    c->proc = cap_proc_new(srv->store, index, info, h.info_len, m.anchor_mono_ns);
    free(info);
    if (!c->proc) {
        refuse(c, "daemon out of memory");
        drop_hold(srv, successor);
        check_store(srv);
        return -1;
    }
    /* The session key a later RESUME must show (never 0: 0 means none),
     * for clients that can resume (1.1 on); a 1.0 client gets a 1.0 WELCOME
     * and is never detached. */
    while (h.minor >= 1 && c->key == 0)
        if (getrandom(&c->key, sizeof c->key, 0) != (ssize_t)sizeof c->key) {
            uint64_t t = uv_hrtime() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)c;
            c->key = t * 0x9e3779b97f4a7c15ull; /* no getrandom: not a secret */
        }
    send_welcome(c, index, c->key);
    if (c->peer_pid && c->pidfd < 0) c->pidfd = cap_pidfd_open(c->peer_pid); /* TCP */
    c->state = CL_ACTIVE;
    uv_timer_stop(&c->timer);
    srv->n_active++;
    if (successor) srv->n_active--; /* the hold */
    srv->n_welcomed++;
    cap_store_stat_add(srv->store, CAP_ST_CLIENTS_CONNECTED, 1);
    recorders_changed(srv);
    char w[128];
    cap_logv("%s connected from %s", who(c, w, sizeof w), c->peer);
    return 0;
refused:
    free(info);
    refuse(c, reason);
    drop_hold(srv, successor);
    return -1;
}

/* Whether a signal named in BYE is a crash (a fault, abort) rather than a
 * request to terminate (SIGTERM, SIGINT, SIGHUP...). */
static int is_crash(unsigned sig) {
    static const int crash[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof crash / sizeof *crash; i++)
        if ((unsigned)crash[i] == sig) return 1;
    return 0;
}

static void goodbye(cap_client *c) {
    uint64_t sent, lost, got = cap_proc_received(c->proc);
    char w[128];
    uint8_t msg[LT_WIRE_STORED_MAX];
    /* The client's summary says what was stored, not what it sent. */
    send_msg(c, msg, lt__wire_stored(msg, got));
    cap_proc_said_bye(c->proc, &sent, &lost);
    if (sent != got)
        cap_logn("%s said it sent %llu events; %llu arrived", who(c, w, sizeof w),
                 (unsigned long long)sent, (unsigned long long)got);
    unsigned sig = cap_proc_crash_sig(c->proc);
    if (sig) { /* a crash, or SIGTERM & co.: it shipped, then ended by it */
        char why[64];
        int crash = is_crash(sig);
        lt__wire_signal_text(sig, why, sizeof why);
        if (crash)
            cap_logn("%s crashed (%s): %llu events", who(c, w, sizeof w), why,
                     (unsigned long long)got);
        else
            cap_logv("%s ended by %s: %llu events", who(c, w, sizeof w), why,
                     (unsigned long long)got);
        end_client(c, crash ? LT_PROC_CRASHED : LT_PROC_CLEAN, why);
        return;
    }
    cap_logv("%s disconnected: %llu events", who(c, w, sizeof w),
             (unsigned long long)got);
    end_client(c, LT_PROC_CLEAN, "");
}

static void lost(cap_client *c, ssize_t err);

/* The process of `o` is being resumed by another connection while `o` is
 * still open: the client found its descriptor closed or replaced before
 * this loop saw the end of `o`. What the kernel holds of `o` is read first
 * (its complete messages count, whatever -m says: bounded by the socket
 * buffers), then the process is detached from it. */
static void read_rest(cap_client *o) {
    cap_server *srv = o->srv;
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)&o->conn.stream, &fd) == 0) {
        srv->forcing = 1;
        while (o->state == CL_ACTIVE) {
            uv_buf_t b;
            on_alloc((uv_handle_t *)&o->conn.stream, 0, &b);
            if (b.base == NULL || b.len == 0) break;
            ssize_t k = recv(fd, b.base, b.len, MSG_DONTWAIT);
            if (k > 0) {
                on_read(&o->conn.stream, k, &b);
                continue;
            }
            if (k < 0 && errno == EINTR) continue;
            if (k == 0) lost(o, UV_EOF);
            else if (errno != EAGAIN && errno != EWOULDBLOCK)
                lost(o, uv_translate_sys_error(errno));
            break;
        }
        srv->forcing = 0;
    }
}

static void take_over(cap_client *o) {
    read_rest(o);
    if (o->state == CL_ACTIVE && o->proc) detach(o, "connection replaced without goodbye");
}

static int same_pid(uint64_t pid, uint64_t peer, uint64_t pid2, uint64_t peer2) {
    return pid == pid2 && (!peer || !peer2 || peer == peer2);
}

/* A HELLO from a held pid: the new program of a process that said EXEC
 * (its old connection, when this loop has not yet seen it end, is read to
 * its end first: the exec closed it), or a child a process said it forked.
 * Returns 1 and releases the pid's hold (the caller counts the new process
 * in and the hold out) when there was one. */
static int held_successor(cap_server *srv, const cap_client *c) {
    for (cap_client *o = srv->clients; o; o = o->next)
        if (o != c && o->state == CL_ACTIVE && o->proc && o->exec_pending &&
            same_pid(o->pid, o->peer_pid, c->pid, c->peer_pid)) {
            read_rest(o);
            break;
        }
    for (cap_detached **pp = &srv->detached, *d; (d = *pp); pp = &d->next)
        if (!d->proc && same_pid(d->pid, d->peer_pid, c->pid, c->peer_pid)) {
            *pp = d->next;
            if (d->pidfd >= 0) close(d->pidfd);
            free(d);
            return 1;
        }
    return 0;
}

/* Whether a connected process or a hold already stands for pid: a child
 * that said HELLO before its parent's FORK arrived needs no hold. */
static int pid_known(const cap_server *srv, uint64_t pid) {
    for (const cap_client *o = srv->clients; o; o = o->next)
        if (o->proc && o->pid == pid) return 1;
    for (const cap_detached *d = srv->detached; d; d = d->next)
        if (d->pid == pid) return 1;
    return 0;
}

/* FORK (1.3): c forked `pid`, which goes on running its program and
 * connects when it records (PROTOCOL.md, fork). The pid is held as
 * connected, as after an exec, until it says HELLO (welcome also while the
 * capture drains), ends, GRACE_MS pass, or the capture stops: a parent that
 * exits at once (a daemon's double fork) cannot let the capture end before
 * its child joins. Only for a local process in this daemon's pid namespace
 * (its pid is the kernel's peer pid): another host's pid means nothing
 * here. */
static int fork_hold(cap_client *c, const uint8_t *body, size_t n) {
    cap_server *srv = c->srv;
    uint64_t pid;
    const char *why;
    if (lt__wire_fork_decode(body, n, &pid, &why) < 0) {
        reject_text(c, why, n + LT_WIRE_HEADER);
        return -1;
    }
    if (!c->peer_pid || c->peer_pid != c->pid || srv->stop_requested ||
        pid_known(srv, pid) || cap_process_gone(pid))
        return 0;
    cap_detached *d = calloc(1, sizeof *d);
    if (!d) return 0; /* the child may be turned away if the capture drains */
    d->pid = d->peer_pid = pid;
    d->pidfd = cap_pidfd_open(pid);
    d->deadline_ms = uv_now(srv->loop) + GRACE_MS;
    if (cap_process_exe(c->peer_pid, d->exe, sizeof d->exe) < 0) d->exe[0] = 0;
    memcpy(d->peer, c->peer, sizeof d->peer);
    snprintf(d->program, sizeof d->program, "pid %llu", (unsigned long long)c->pid);
    d->next = srv->detached;
    srv->detached = d;
    srv->n_active++;
    grace_timer_on(srv);
    recorders_changed(srv);
    return 0;
}

/* RESUME: a new connection of a process that lost its own (PROTOCOL.md,
 * Resuming). Answered with RESUMED and the stream offset consumed. */
static int resume(cap_client *c, const uint8_t *body, size_t n) {
    cap_server *srv = c->srv;
    char reason[160], w[128];
    const char *why;
    lt__wire_resume_msg r;
    if (lt__wire_resume_decode(body, n, &r, &why) < 0) {
        if (strcmp(why, "bad magic") == 0)
            snprintf(reason, sizeof reason, "not a libtrace client (bad magic)");
        else
            snprintf(reason, sizeof reason, "malformed RESUME: %s", why);
        refuse(c, reason);
        return -1;
    }
    if (r.major != LT_WIRE_MAJOR) {
        snprintf(reason, sizeof reason,
                 "protocol version %u.%u is not supported (this daemon speaks %d.%d)",
                 r.major, r.minor, LT_WIRE_MAJOR, LT_WIRE_MINOR);
        refuse(c, reason);
        return -1;
    }
    if (srv->o->token &&
        !token_equal(srv->o->token, srv->o->token_len, r.token, r.token_len)) {
        refuse(c, r.token_len ? "wrong token"
                              : "this daemon requires a token (set TRACY_TOKEN)");
        return -1;
    }
    for (cap_client *o = srv->clients; o; o = o->next) {
        if (o == c || o->state != CL_ACTIVE || !o->proc ||
            cap_proc_index(o->proc) != r.index)
            continue;
        if (!key_equal(o->key, r.key)) break; /* refused below */
        take_over(o);
        break;
    }
    cap_detached **pp = &srv->detached, *d;
    while ((d = *pp) && (!d->proc || cap_proc_index(d->proc) != r.index)) pp = &d->next;
    if (!d || !key_equal(d->key, r.key)) {
        snprintf(reason, sizeof reason, "cannot resume process %u: %s", r.index,
                 d ? "wrong session key" : "no such process waiting");
        refuse(c, reason);
        return -1;
    }
    *pp = d->next;
    c->proc = d->proc;
    c->key = d->key;
    c->offset = d->offset;
    c->pid = d->pid;
    if (!c->peer_pid) c->peer_pid = d->peer_pid;
    if (c->pidfd < 0) c->pidfd = d->pidfd;
    else if (d->pidfd >= 0) close(d->pidfd);
    memcpy(c->program, d->program, sizeof c->program);
    free(d);
    if (!srv->detached && srv->grace_on) {
        uv_timer_stop(&srv->grace);
        srv->grace_on = 0;
    }
    uint8_t msg[LT_WIRE_RESUMED_MAX];
    send_msg(c, msg, lt__wire_resumed(msg, c->offset));
    c->state = CL_ACTIVE;
    uv_timer_stop(&c->timer);
    cap_store_stat_add(srv->store, CAP_ST_CLIENTS_RESUMED, 1);
    cap_logv("%s resumed from %s at stream byte %llu", who(c, w, sizeof w), c->peer,
             (unsigned long long)c->offset);
    if (srv->paused && c->rlen == 0) set_reading(c, 0);
    return 0;
}

/* Handles one complete message. Returns 0 to go on with the next one, or -1
 * when the client was closed (or the capture is stopping). */
static int handle(cap_client *c, uint8_t type, const uint8_t *body, size_t n) {
    cap_server *srv = c->srv;
    cap_why why = {0};
    char text[64];
    int rc;
    if (c->state == CL_HANDSHAKE) {
        if (type == LT_MSG_HELLO) return hello(c, body, n);
        if (type == LT_MSG_RESUME) return resume(c, body, n);
        snprintf(text, sizeof text, "expected HELLO, got message type 0x%02x", type);
        refuse(c, text);
        return -1;
    }
    switch (type) {
    case LT_MSG_EVENTS: rc = cap_proc_events(srv->store, c->proc, body, n, &why); break;
    case LT_MSG_META: rc = cap_proc_meta(srv->store, c->proc, body, n, &why); break;
    case LT_MSG_BYE:
        if (cap_proc_bye(c->proc, body, n) < 0) {
            reject_text(c, "malformed BYE", n + LT_WIRE_HEADER);
            return -1;
        }
        goodbye(c);
        return -1;
    case LT_MSG_EXEC:
        if (cap_proc_exec(c->proc, body, n) < 0) {
            reject_text(c, "malformed EXEC", n + LT_WIRE_HEADER);
            return -1;
        }
        c->exec_pending = 1;
        if (!c->peer_pid || cap_process_exe(c->peer_pid, c->exe, sizeof c->exe) < 0)
            c->exe[0] = 0;
        return 0;
    case LT_MSG_FORK:
        return fork_hold(c, body, n);
    case LT_MSG_EXEC_FAILED:
        if (n != 0) {
            reject_text(c, "malformed EXEC_FAILED", n + LT_WIRE_HEADER);
            return -1;
        }
        cap_proc_exec_failed(c->proc);
        c->exec_pending = 0;
        return 0;
    case LT_MSG_HELLO:
        reject_text(c, "second HELLO", n + LT_WIRE_HEADER);
        return -1;
    case LT_MSG_RESUME:
        reject_text(c, "RESUME after the handshake", n + LT_WIRE_HEADER);
        return -1;
    default:
        snprintf(text, sizeof text, "unknown message type 0x%02x", type);
        reject_text(c, text, n + LT_WIRE_HEADER);
        return -1;
    }
    if (rc == -1) {
        reject(c, &why, n + LT_WIRE_HEADER);
        return -1;
    }
    if (rc < 0) { /* out of memory: the capture cannot go on */
        check_store(srv);
        set_reading(c, 0);
        return -1;
    }
    return 0;
}

/* The connection ended (EOF or error) without BYE. */
static void lost(cap_client *c, ssize_t err) {
    cap_server *srv = c->srv;
    char w[128], reason[160];
    if (c->state == CL_HANDSHAKE) {
        cap_store_stat_add(srv->store, CAP_ST_CLIENTS_REFUSED, 1);
        if (c->rlen > 0)
            cap_logn("refused connection from %s: closed in the middle of a "
                     "message (%zu bytes) before the handshake completed",
                     c->peer, c->rlen);
        else
            cap_logn("refused connection from %s: closed before saying HELLO",
                     c->peer);
        client_close(c);
        return;
    }
    if (c->exec_pending && err == UV_EOF && c->rlen == 0) {
        exec_done(c);
        return;
    }
    snprintf(reason, sizeof reason, "connection %s without goodbye%s%s",
             err == UV_EOF ? "closed" : "lost", err == UV_EOF ? "" : ": ",
             err == UV_EOF ? "" : uv_strerror((int)err));
    if (c->rlen > 0)
        snprintf(reason + strlen(reason), sizeof reason - strlen(reason),
                 " (%zu bytes of a partial message)", c->rlen);
    /* A client that can resume (it has a session key) and may still be
     * running is given GRACE_MS to: its program may have closed or
     * replaced the descriptor (PROTOCOL.md, Resuming). */
    if (c->key && !srv->stop_requested && !(c->peer_pid && cap_process_gone(c->peer_pid))) {
        detach(c, reason);
        return;
    }
    char full[224];
    lost_reason(reason, c->peer_pid, c->pidfd, full, sizeof full);
    cap_store_stat_add(srv->store, CAP_ST_CLIENTS_LOST, 1);
    cap_logn("%s: %s", who(c, w, sizeof w), full);
    end_client(c, LT_PROC_LOST, full);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
    cap_client *c = st->data;
    cap_server *srv = c->srv;
    (void)buf;
    if (nread == 0) return;
    if (nread == UV_ENOBUFS && c->want_mem) {
        c->want_mem = 0;
        wait_for_memory(c);
        return;
    }
    if (nread < 0) {
        lost(c, nread == UV_ENOBUFS ? UV_ENOMEM : nread);
        return;
    }
    c->progress_ms = uv_now(srv->loop);
    if (c->rlen == 0) c->partial_ms = c->progress_ms;
    c->rlen += (size_t)nread;
    size_t off = 0;
    while (c->rlen - off >= LT_WIRE_HEADER) {
        const uint8_t *m = c->rbuf + off;
        uint32_t len = lt__wire_length(m);
        /* Until HELLO is accepted a connection may not make the daemon
         * buffer more than a HELLO needs. */
        uint32_t limit = srv->o->max_message;
        if (c->state == CL_HANDSHAKE && limit > LT_WIRE_MAX_HELLO)
            limit = LT_WIRE_MAX_HELLO;
        if (len == 0 || len > limit) {
            char text[96];
            snprintf(text, sizeof text, "message length %u %s", len,
                     len == 0 ? "is invalid"
                     : limit < srv->o->max_message ? "exceeds the limit before the handshake"
                                                   : "exceeds the limit (--max-message)");
            if (c->state == CL_HANDSHAKE) refuse(c, text);
            else reject_text(c, text, c->rlen - off);
            return;
        }
        /* `length` counts the type byte and the body */
        if (c->rlen - off - 4 < len) break;
        int counted = c->state == CL_ACTIVE; /* not HELLO or RESUME */
        if (handle(c, m[4], m + LT_WIRE_HEADER, len - 1) < 0) return;
        if (counted) c->offset += 4 + (uint64_t)len;
        off += 4 + (size_t)len;
    }
    c->rlen -= off;
    if (off && c->rlen) {
        memmove(c->rbuf, c->rbuf + off, c->rlen);
        c->partial_ms = c->progress_ms; /* a new message started */
    }
    if (c->hs_mem && c->state != CL_HANDSHAKE) hs_account(c);
    /* Idle clients hold no read buffer; one that read a long message gets
     * back to the default; one starting a long message needs it whole. */
    int rc = rbuf_resize(c, c->rlen ? rbuf_want(c) : 0);
    if (rc == -2) {
        lost(c, UV_ENOMEM);
        return;
    }
    if (rc == -1) wait_for_memory(c);
    else if (srv->paused && c->rlen == 0 && c->state == CL_ACTIVE) set_reading(c, 0);
    if (check_store(srv) == 0) check_mem(srv);
}

static void on_handshake_timeout(uv_timer_t *t) {
    cap_client *c = t->data;
    char text[160];
    if (c->waiting)
        snprintf(text, sizeof text, "HELLO not read within %u ms: the memory for "
                 "connections in the handshake (a quarter of -m) was in use",
                 c->srv->o->handshake_ms);
    else if (c->rlen)
        snprintf(text, sizeof text, "HELLO incomplete after %u ms (%zu bytes received)",
                 c->srv->o->handshake_ms, c->rlen);
    else
        snprintf(text, sizeof text, "no HELLO within %u ms", c->srv->o->handshake_ms);
    refuse(c, text);
}

static void peer_name(cap_client *c) {
    struct sockaddr_storage ss;
    int len = sizeof ss;
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (uv_tcp_getpeername(&c->conn.tcp, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            uv_ip6_name(a, host, sizeof host);
            port = ntohs(a->sin6_port);
        } else {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            uv_ip4_name(a, host, sizeof host);
            port = ntohs(a->sin_port);
        }
    }
    snprintf(c->peer, sizeof c->peer, "%s:%d", host, port);
}

static void on_connection(uv_stream_t *l, int status) {
    cap_server *srv = l->data;
    if (srv->stopping) return;
    if (!srv->store) { /* not serving yet: see accept_later() */
        srv->accept_pending |= l->type == UV_NAMED_PIPE ? 2 : 1;
        return;
    }
    if (status < 0) {
        /* libuv closed what it could not accept; at least say so. */
        uint64_t now = uv_now(srv->loop);
        if (!srv->limit_log_ms || now - srv->limit_log_ms >= LIMIT_LOG_MS) {
            srv->limit_log_ms = now;
            cap_logn("cannot accept connections: %s", uv_strerror(status));
        }
        return;
    }
    cap_client *c = calloc(1, sizeof *c);
    if (!c) return;
    c->srv = srv;
    c->pidfd = -1;
    if (l->type == UV_NAMED_PIPE) uv_pipe_init(srv->loop, &c->conn.pipe, 0);
    else uv_tcp_init(srv->loop, &c->conn.tcp);
    uv_timer_init(srv->loop, &c->timer);
    c->conn.stream.data = c->timer.data = c;
    c->handles = 2;
    c->state = CL_HANDSHAKE;
    c->next = srv->clients;
    if (srv->clients) srv->clients->prev = c;
    srv->clients = c;
    srv->n_conns++;
    if (uv_accept(l, &c->conn.stream) < 0) {
        client_close(c);
        return;
    }
    if (l->type == UV_TCP) peer_name(c);
    const char *denied = cap_listen_admit(&c->conn.stream, srv->o, c->peer, sizeof c->peer,
                                          &c->peer_pid);
    if (denied) {
        refuse_limit(c, denied);
        return;
    }
    /* as early as can be: a process killed at once may be reaped soon */
    if (c->peer_pid) c->pidfd = cap_pidfd_open(c->peer_pid);
    if (srv->n_conns > srv->o->max_clients) {
        refuse_limit(c, "too many clients (--max-clients)");
        return;
    }
    if (srv->n_conns > srv->fd_cap) {
        refuse_limit(c, "too many clients for the open-file limit (ulimit -n)");
        return;
    }
    uv_timer_start(&c->timer, on_handshake_timeout, srv->o->handshake_ms, 0);
    set_reading(c, 1);
}

/* ---- Timers, signals, stopping ------------------------------------------ */

/* How long a partial message may take under memory pressure: the grace
 * period plus its size at MIN_RATE (a header not yet complete: the grace
 * period). */
static uint64_t partial_allowed_ms(const cap_client *c) {
    return RATE_GRACE_MS + (uint64_t)msg_size(c) * 1000 / MIN_RATE;
}

static int by_partial_age(const void *a, const void *b) {
    const cap_client *x = *(cap_client *const *)a, *y = *(cap_client *const *)b;
    return x->partial_ms < y->partial_ms ? -1 : x->partial_ms > y->partial_ms;
}

/* While memory is short (reads paused, or clients waiting for a buffer),
 * clients that hold a partial message arriving slower than MIN_RATE are
 * closed, those holding theirs longest first, until memory is no longer
 * short: clients that send the start of a long message and then trickle
 * its end cannot hold -m and lock everyone else out. Connections in the
 * handshake (their buffer is in a reserve of its own) and clients waiting
 * for memory (their clock restarts when they get it) are never closed
 * here; a client sending at loopback speed never comes near the rate. */
static void close_stalled(cap_server *srv) {
    uint64_t now = uv_now(srv->loop);
    char text[200], w[128];
    if (!srv->n_waiting && !srv->paused) return;
    size_t n = 0, cap = 0;
    cap_client **slow = NULL;
    for (cap_client *c = srv->clients; c; c = c->next) {
        if (c->state != CL_ACTIVE || c->waiting || c->rlen == 0 ||
            now - c->partial_ms <= partial_allowed_ms(c))
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            cap_client **ns = realloc(slow, nc * sizeof *ns);
            if (!ns) break;
            slow = ns;
            cap = nc;
        }
        slow[n++] = c;
    }
    if (n) qsort(slow, n, sizeof *slow, by_partial_age);
    for (size_t i = 0; i < n && (srv->n_waiting || srv->paused) && !srv->stopping; i++) {
        cap_client *c = slow[i];
        if (c->state != CL_ACTIVE || c->waiting) continue;
        size_t want = msg_size(c);
        snprintf(text, sizeof text,
                 "stalled in the middle of a message (%zu bytes) while other clients "
                 "waited for memory (-m): %zu of its %zu bytes in %llu ms, slower than "
                 "the minimum rate of %u MiB/s",
                 c->rlen, c->rlen, want, (unsigned long long)(now - c->partial_ms),
                 MIN_RATE >> 20);
        cap_store_stat_add(srv->store, CAP_ST_CLIENTS_LOST, 1);
        cap_store_stat_add(srv->store, CAP_ST_CLIENTS_TOO_SLOW, 1);
        cap_logn("%s: %s", who(c, w, sizeof w), text);
        end_client(c, LT_PROC_LOST, text);
        check_mem(srv);
    }
    free(slow);
    check_mem(srv);
}

static void on_tick(uv_timer_t *t) {
    cap_server *srv = t->data;
    log_limit_quiet(srv);
    close_stalled(srv);
    check_mem(srv); /* handshakes that ended gave their reserve back */
    for (cap_client *c = srv->clients; c; c = c->next)
        if (c->proc) cap_store_flush_proc(srv->store, c->proc);
    for (cap_detached *d = srv->detached; d; d = d->next)
        if (d->proc) cap_store_flush_proc(srv->store, d->proc); /* not a hold */
    cap_store_stats_block(srv->store);
    check_store(srv);
}

static void on_status(uv_timer_t *t) {
    cap_server *srv = t->data;
    cap_totals tot;
    cap_store_totals(srv->store, &tot);
    cap_status_update(srv->n_active, cap_store_events(srv->store), tot.body_bytes);
}

static void on_deadline(uv_timer_t *t) {
    cap_server *srv = t->data;
    cap_logv("time limit reached");
    request_stop(srv, CAP_EXIT_OK);
}

/* SIGUSR1: drain. No new process is accepted (but for children of those
 * still connected); the capture ends when the last connected one leaves. */
static void on_drain(uv_signal_t *s, int signum) {
    cap_server *srv = s->data;
    (void)signum;
    if (srv->draining) return;
    srv->draining = 1;
    cap_logv("SIGUSR1: draining (%u processes connected)", srv->n_active);
    check_stop(srv);
}

/* SIGINT, SIGTERM and SIGHUP (the terminal of a daemon started in it
 * closed): the capture is finished now, the file whole. */
static void on_signal(uv_signal_t *s, int signum) {
    cap_server *srv = s->data;
    cap_logv("%s: finishing the capture",
             signum == SIGINT ? "SIGINT" : signum == SIGHUP ? "SIGHUP" : "SIGTERM");
    request_stop(srv, CAP_EXIT_OK);
}

/* Reads what the kernel already holds for a connected client, so that a
 * requested stop keeps every byte that reached this host. Bounded by the
 * socket's receive buffer: the client is not waited for. */
static void drain(cap_client *c) {
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)&c->conn.stream, &fd) != 0) return;
    while (c->state == CL_ACTIVE) {
        uv_buf_t b;
        on_alloc((uv_handle_t *)&c->conn.stream, 0, &b);
        if (b.base == NULL || b.len == 0) return;
        ssize_t n = recv(fd, b.base, b.len, MSG_DONTWAIT);
        if (n <= 0) return;
        on_read(&c->conn.stream, n, &b);
    }
}

static void do_stop(uv_timer_t *t) {
    cap_server *srv = t->data;
    for (cap_client *c = srv->clients, *next; c; c = next) {
        next = c->next;
        drain(c);
    }
    srv->stopping = 1;
    cap_listen_close(&srv->listen);
    uv_close((uv_handle_t *)&srv->tick, NULL);
    uv_close((uv_handle_t *)&srv->stop, NULL);
    /* Closing the signal handles restores the default actions: a SIGINT,
     * SIGTERM or SIGUSR1 then (a second Ctrl-C, python -m tracy draining
     * as its last client leaves) would kill the daemon before the trailer.
     * The capture is already finishing: they are ignored, and held blocked
     * in this thread (the only one that takes them: the writer blocks all)
     * from before the close until they are, so none lands in between. */
    sigset_t stops, old;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGUSR1);
    sigaddset(&stops, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stops, &old);
    uv_close((uv_handle_t *)&srv->sigint, NULL);
    uv_close((uv_handle_t *)&srv->sigterm, NULL);
    uv_close((uv_handle_t *)&srv->sigusr1, NULL);
    if (srv->have_sighup) uv_close((uv_handle_t *)&srv->sighup, NULL);
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (srv->have_status) uv_close((uv_handle_t *)&srv->status, NULL);
    if (srv->have_deadline) uv_close((uv_handle_t *)&srv->deadline, NULL);
    while (srv->clients) {
        cap_client *c = srv->clients;
        if (c->proc) end_client(c, LT_PROC_STOPPED, "capture stopped");
        else if (srv->draining) turn_away(c);
        else refuse_quiet(c, "capture stopped");
    }
    end_expired(srv, 1); /* detached: not resumed before the stop */
    uv_close((uv_handle_t *)&srv->grace, NULL);
    log_limit_quiet(srv);
    cap_store_stats_block(srv->store);
    cap_worker_detach(srv->wk);
    cap_status_clear();
}

static void request_stop(cap_server *srv, int code) {
    if (code != CAP_EXIT_OK && srv->exit_code == CAP_EXIT_OK)
        srv->exit_code = code;
    if (srv->stop_requested) return;
    srv->stop_requested = 1;
    uv_timer_start(&srv->stop, do_stop, 0, 0);
}

/* ---- Setup ------------------------------------------------------------- */

int cap_server_bind(cap_server **out, uv_loop_t *loop, const cap_opts *o) {
    cap_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        cap_log("out of memory");
        return CAP_EXIT_RUNTIME;
    }
    srv->loop = loop;
    srv->o = o;
    int rc = cap_listen_open(&srv->listen, loop, o, on_connection, srv);
    if (rc != 0) {
        free(srv);
        return rc;
    }
    *out = srv;
    return 0;
}

void cap_server_print_port(cap_server *srv) {
    if (srv->o->port != 0 || srv->port_printed) return;
    srv->port_printed = 1;
    cap_listen_print(&srv->listen);
}

/* How many connections the open-file limit leaves room for, keeping
 * FD_SPARE free: past it a connection is still accepted, told why and
 * closed, instead of being dropped unseen when accept(2) fails. */
static void compute_fd_cap(cap_server *srv) {
    struct rlimit rl;
    uint64_t room = lt__nofile_room();
    uint64_t cap = room > FD_SPARE ? room - FD_SPARE : 0;
    srv->fd_cap = cap < UINT32_MAX ? (uint32_t)cap : UINT32_MAX;
    if (srv->fd_cap < srv->o->max_clients && getrlimit(RLIMIT_NOFILE, &rl) == 0)
        cap_logv("the open-file limit (%llu) allows %u simultaneous clients",
                 (unsigned long long)rl.rlim_cur, srv->fd_cap);
}

/* A connection that arrived before the capture started (while -o waited
 * for a FIFO's reader) was left to libuv, which then stopped watching the
 * listener: accepting it now restarts the watcher. */
static void accept_later(cap_server *srv) {
    int pending = srv->accept_pending;
    srv->accept_pending = 0;
    if (pending & 1) on_connection((uv_stream_t *)&srv->listen.tcp, 0);
    if (pending & 2) on_connection((uv_stream_t *)&srv->listen.pipe, 0);
}

int cap_server_run(cap_server *srv, cap_store *store, cap_worker *wk) {
    const cap_opts *o = srv->o;
    srv->store = store;
    srv->wk = wk;
    srv->stop_after = o->n_clients ? o->n_clients : o->seconds > 0 ? 0 : 1;
    uv_timer_init(srv->loop, &srv->tick);
    uv_timer_init(srv->loop, &srv->stop);
    uv_timer_init(srv->loop, &srv->grace);
    srv->tick.data = srv->stop.data = srv->grace.data = srv;
    uv_timer_start(&srv->tick, on_tick, FLUSH_MS, FLUSH_MS);
    uv_signal_init(srv->loop, &srv->sigint);
    uv_signal_init(srv->loop, &srv->sigterm);
    srv->sigint.data = srv->sigterm.data = srv;
    uv_signal_start(&srv->sigint, on_signal, SIGINT);
    uv_signal_start(&srv->sigterm, on_signal, SIGTERM);
    struct sigaction hup;
    if (sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler != SIG_IGN) {
        uv_signal_init(srv->loop, &srv->sighup);
        srv->sighup.data = srv;
        uv_signal_start(&srv->sighup, on_signal, SIGHUP);
        srv->have_sighup = 1;
    }
    uv_signal_init(srv->loop, &srv->sigusr1);
    srv->sigusr1.data = srv;
    uv_signal_start(&srv->sigusr1, on_drain, SIGUSR1);
    if (o->seconds > 0) {
        uv_timer_init(srv->loop, &srv->deadline);
        srv->deadline.data = srv;
        srv->have_deadline = 1;
        uv_timer_start(&srv->deadline, on_deadline, (uint64_t)(o->seconds * 1000 + 0.5), 0);
    }
    if (o->verbosity >= 0) {
        uv_timer_init(srv->loop, &srv->status);
        srv->status.data = srv;
        srv->have_status = 1;
        uv_timer_start(&srv->status, on_status, STATUS_MS, STATUS_MS);
    }
    compute_fd_cap(srv);
    srv->hs_reserve = o->mem_limit / 4 > (1u << 20) ? o->mem_limit / 4 : (1u << 20);
    cap_server_print_port(srv); /* only now: a script may signal us right away */
    accept_later(srv);
    uv_run(srv->loop, UV_RUN_DEFAULT);
    return srv->exit_code;
}

void cap_server_counts(const cap_server *srv, uint32_t *active,
                       uint64_t *total) {
    *active = srv->n_active;
    *total = srv->n_welcomed;
}

void cap_server_free(cap_server *srv) {
    if (!srv) return;
    if (!srv->stopping) {
        cap_listen_close(&srv->listen);
        uv_run(srv->loop, UV_RUN_DEFAULT);
    }
    free(srv);
}
