/* client_send.c -- the client's sender thread (ships metadata and every
 * thread's chunks straight from memory with sendmsg) and the TSC clock. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "client_internal.h"
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#define LT__SEND_PERIOD_NS 50000000u /* PROTOCOL.md: at least every 50 ms */
#define LT__IOV_BATCH 512           /* iovecs per sendmsg (IOV_MAX >= 1024) */

/* A slice of one chunk to send in this round. */
typedef struct work {
    lt__thr *t;
    lt__chunk *c;
    uint32_t from, to;
    uint32_t to_events;   /* events in the chunk up to `to` */
    int sealed;
    uint8_t hdr[16];
    uint8_t hdr_len;
} work;

/* Drops of a thread still running when the client stops, not yet written
 * as a LOST record by the thread itself: the last round sends the record. */
typedef struct late_lost {
    lt__thr *t;
    uint64_t count;
} late_lost;

typedef struct sender {
    work *w;
    size_t n, cap;
    late_lost *lost;
    size_t n_lost, cap_lost;
    uint64_t *forks;  /* children to announce this round (FORK) */
    size_t n_forks, cap_forks;
    lt__bytes meta;
    int crash_note;   /* the last round of a crash: send its note */
} sender;

/* ---- socket output ------------------------------------------------- */

/* One pass over a round's bytes (or BYE's) on the connection `fd`. The
 * bytes are generated the same way every pass, so that after a resumed
 * connection the pass starts again and skips what the daemon already has
 * (`skip` bytes of the round). The descriptor is checked before every
 * sendmsg (lt__fd_ours): one fstat per call, which carries a batch. */
typedef struct out {
    int fd;
    int gone;        /* fd is no longer ours: never touch it again */
    uint64_t skip;   /* bytes of the round the daemon already has */
    uint64_t pos;    /* bytes of the round generated so far */
} out;

/* Appends the piece p[0..n) to iov[*k] unless the daemon has it. */
static void add(out *o, struct iovec *iov, size_t *k, const void *p, size_t n) {
    uint64_t end = o->pos + n;
    if (end > o->skip) {
        size_t cut = o->pos < o->skip ? (size_t)(o->skip - o->pos) : 0;
        iov[*k].iov_base = (uint8_t *)p + cut;
        iov[*k].iov_len = n - cut;
        (*k)++;
    }
    o->pos = end;
}

/* Sends iov[0..n) completely. Returns 0 or -errno (o->gone when the
 * descriptor is no longer ours). */
static int send_all(out *o, struct iovec *iov, size_t n) {
    while (n > 0) {
        if (!lt__fd_ours(o->fd)) {
            o->gone = 1;
            return -EBADF;
        }
        struct msghdr mh = {0};
        mh.msg_iov = iov;
        mh.msg_iovlen = n;
        ssize_t k = sendmsg(o->fd, &mh, MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        while (n > 0 && (size_t)k >= iov->iov_len) {
            k -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + k;
            iov->iov_len -= (size_t)k;
        }
    }
    return 0;
}

/* Size of the metadata record at p (whole records only in the buffer). */
static size_t meta_len(const uint8_t *p, const uint8_t *end) {
    const uint8_t *q = p + 1;
    uint64_t v;
    const char *s;
    size_t n;
    switch (*p) {
    case LT_TAG_THREAD_INFO:
        lt__get_varint(&q, end, &v);
        lt__get_varint(&q, end, &v);
        lt__get_str(&q, end, &s, &n);
        break;
    case LT_TAG_LOC_DEF:
        lt__get_varint(&q, end, &v);
        q++;
        lt__get_varint(&q, end, &v);
        lt__get_str(&q, end, &s, &n);
        lt__get_str(&q, end, &s, &n);
        break;
    default: /* PLOT_DEF, FRAME_DEF */
        lt__get_varint(&q, end, &v);
        lt__get_str(&q, end, &s, &n);
        break;
    }
    return (size_t)(q - p);
}

/* Sends the metadata buffer as META messages below LT_WIRE_CLIENT_CHUNK. */
static int send_meta(out *o, const lt__bytes *m) {
    const uint8_t *p = m->p, *end = m->p + m->len;
    while (p < end) {
        const uint8_t *q = p;
        while (q < end) {
            size_t n = meta_len(q, end);
            if (q > p && (size_t)(q + n - p) > LT_WIRE_CLIENT_CHUNK) break;
            q += n;
        }
        uint8_t h[LT_WIRE_HEADER];
        lt__wire_header(h, LT_MSG_META, (size_t)(q - p));
        struct iovec iov[2];
        size_t k = 0;
        add(o, iov, &k, h, sizeof h);
        add(o, iov, &k, p, (size_t)(q - p));
        int rc = k ? send_all(o, iov, k) : 0;
        if (rc < 0) return rc;
        p = q;
    }
    return 0;
}

static int send_events(out *o, work *w, size_t n) {
    struct iovec iov[2 * LT__IOV_BATCH];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (w[i].to <= w[i].from) continue;
        uint8_t *h = w[i].hdr;
        size_t hn = lt__wire_events_header(h, w[i].t->pub.thread, w[i].to - w[i].from);
        add(o, iov, &k, h, hn);
        add(o, iov, &k, w[i].c->data + w[i].from, w[i].to - w[i].from);
        if (k + 2 > 2 * LT__IOV_BATCH) {
            int rc = send_all(o, iov, k);
            if (rc < 0) return rc;
            k = 0;
        }
    }
    return k ? send_all(o, iov, k) : 0;
}

/* One EVENTS message per thread holding a LOST record at the thread's last
 * timestamp (dt 0). Returns 0 or -errno. */
static int send_late_lost(out *o, const sender *s) {
    for (size_t i = 0; i < s->n_lost; i++) {
        uint8_t rec[24], b[LT_WIRE_EVENTS_HDR_MAX + sizeof rec];
        uint8_t *p = rec;
        *p++ = LT_TAG_LOST;
        p = lt__put_varint(p, 0);
        p = lt__put_varint(p, s->lost[i].count);
        size_t rn = (size_t)(p - rec);
        size_t hn = lt__wire_events_header(b, s->lost[i].t->pub.thread, rn);
        memcpy(b + hn, rec, rn);
        struct iovec iov;
        size_t k = 0;
        add(o, &iov, &k, b, hn + rn);
        int rc = k ? send_all(o, &iov, k) : 0;
        if (rc < 0) return rc;
    }
    return 0;
}

/* The note of a crash (client_crash.c) as a MESSAGE record of the crashing
 * thread, after its last records: its length, 0 when that thread recorded
 * nothing; *thread set. */
static uint8_t crash_rec[32 + LT__MAX_TEXT];
static size_t crash_record(uint32_t *thread) {
    uint64_t dt;
    const char *text;
    size_t len = lt__crash_note(thread, &dt, &text);
    if (*thread == 0) return 0;
    uint8_t *p = crash_rec;
    *p++ = LT_TAG_MESSAGE;
    p = lt__put_varint(p, dt);
    p = lt__put_text(p, text, len, LT__MAX_TEXT);
    return (size_t)(p - crash_rec);
}

/* The crash's note to the daemon. Returns 0 or -errno; *events 1 when
 * sent. */
static int send_crash_note(out *o, uint64_t *events) {
    static uint8_t b[LT_WIRE_EVENTS_HDR_MAX + 32 + LT__MAX_TEXT];
    static size_t bn;
    if (bn == 0) { /* the same bytes on every pass */
        uint32_t thread;
        size_t rn = crash_record(&thread);
        if (rn == 0) return 0; /* the thread recorded nothing */
        size_t hn = lt__wire_events_header(b, thread, rn);
        memcpy(b + hn, crash_rec, rn);
        bn = hn + rn;
    }
    struct iovec iov;
    size_t k = 0;
    add(o, &iov, &k, b, bn);
    *events = 1;
    return k ? send_all(o, &iov, k) : 0;
}

#define LT__MAX_RESUMES 16 /* resumed connections in one round */

/* The connection failed during a pass (o->gone: the program closed or
 * replaced the descriptor; else a send error on our own socket). Opens a
 * new connection that resumes the process, and sets *start (the round's
 * first byte in the stream) and *skip (the bytes of the round the daemon
 * has) for the next pass. Returns 0, or -1 with the reason in why (the
 * client then runs unprofiled). */
static int reconnect(out *o, int rc, uint64_t *start, uint64_t *skip, int *resumes,
                     char *why, size_t why_len) {
    lt__client *g = &lt__g;
    char r[256];
    int n = snprintf(why, why_len, "%s",
                     o->gone ? "the program closed or replaced its descriptor"
                             : strerror(-rc));
    /* Ours (checked again: the program may have closed it since the last
     * check, and reused the number): nobody else's. */
    if (!o->gone && lt__fd_ours(g->fd)) close(g->fd);
    g->fd = -1;
    if (++*resumes > LT__MAX_RESUMES) {
        snprintf(why + n, why_len - (size_t)n, "; %d times in one round", LT__MAX_RESUMES);
        return -1;
    }
    uint64_t d;
    if (lt__resume(&d, r, sizeof r) < 0) {
        snprintf(why + n, why_len - (size_t)n, "; %s", r);
        return -1;
    }
    if (d < *start) {
        /* Bytes handed to the kernel before the round never arrived (they
         * cannot on a local socket): counted; the stream goes on from what
         * the daemon has. */
        g->bytes_unreceived += *start - d;
        *start = d;
    }
    *skip = d - *start;
    return 0;
}

/* Sends one message (BYE, EXEC, EXEC_FAILED), on a resumed connection
 * when needed. Returns 0, or -1 with the reason in why. */
static int send_one(const uint8_t *b, size_t n, char *why, size_t why_len) {
    lt__client *g = &lt__g;
    uint64_t start = g->stream_off, skip = 0;
    int resumes = 0;
    for (;;) {
        out o = {.fd = g->fd, .skip = skip};
        struct iovec iov;
        size_t k = 0;
        add(&o, &iov, &k, b, n);
        int rc = o.fd < 0 ? -ENOTCONN : k ? send_all(&o, &iov, k) : 0;
        if (rc == 0) break;
        if (reconnect(&o, rc, &start, &skip, &resumes, why, why_len) < 0) return -1;
    }
    g->stream_off = start + n;
    return 0;
}

/* The connection cannot go on: unprofiled from now on, said in one line
 * (by a process of a run, left to the run: lt__client.of_run). */
static void give_up(const char *why) {
    lt__client *g = &lt__g;
    __atomic_store_n(&g->broken, 1, __ATOMIC_RELAXED);
    if (!g->quiet && !g->of_run)
        lt__say("tracy: lost the connection to the capture daemon at %s (%s); "
                "running unprofiled\n", g->where, why);
}

/* EXEC after the round that shipped everything recorded before
 * lt_client_exec_prepare, or EXEC_FAILED before the round after the failed
 * exec (PROTOCOL.md, exec). Only to a daemon that speaks 1.2. */
static void send_exec(int failed) {
    lt__client *g = &lt__g;
    uint8_t b[LT_WIRE_BYE_MAX];
    char why[512];
    if (__atomic_load_n(&g->broken, __ATOMIC_RELAXED) || g->fd < 0 || g->daemon_minor < 2)
        return;
    size_t n = failed ? lt__wire_exec_failed(b)
                      : lt__wire_exec(b, __atomic_load_n(&g->events_sent, __ATOMIC_RELAXED),
                                      __atomic_load_n(&g->events_lost, __ATOMIC_RELAXED));
    if (send_one(b, n, why, sizeof why) < 0) give_up(why);
}

/* FORK for each child forked before the round (PROTOCOL.md, fork), after
 * the round's events. Only to a daemon that speaks 1.3. */
static void send_forks(sender *s) {
    lt__client *g = &lt__g;
    char why[512];
    for (size_t i = 0; i < s->n_forks; i++) {
        uint8_t b[LT_WIRE_FORK_MAX];
        if (__atomic_load_n(&g->broken, __ATOMIC_RELAXED) || g->fd < 0 || g->daemon_minor < 3)
            break;
        if (send_one(b, lt__wire_fork(b, s->forks[i]), why, sizeof why) < 0) give_up(why);
    }
    s->n_forks = 0;
}

static volatile sig_atomic_t end_sig; /* lt__end_signal */

void lt__end_signal(int sig) { end_sig = sig; }

static void send_bye(void) {
    lt__client *g = &lt__g;
    uint8_t b[LT_WIRE_BYE_MAX];
    size_t n = lt__wire_bye(b, __atomic_load_n(&g->events_sent, __ATOMIC_RELAXED),
                            __atomic_load_n(&g->events_lost, __ATOMIC_RELAXED));
    unsigned sig = lt__crash_signal() ? lt__crash_signal() : (unsigned)end_sig;
    if (sig && g->daemon_minor >= 2) /* 1.2: the signal that ends it */
        n = lt__wire_bye_crash(b, __atomic_load_n(&g->events_sent, __ATOMIC_RELAXED),
                               __atomic_load_n(&g->events_lost, __ATOMIC_RELAXED), sig);
    char why[512];
    if (send_one(b, n, why, sizeof why) < 0) return;
    /* Wait (bounded) for the daemon to close: then it has read everything.
     * Its STORED answer says how many events it kept. The descriptor is
     * checked before each use: the program may close it meanwhile. */
    int fd = g->fd;
    if (!lt__fd_ours(fd)) return;
    shutdown(fd, SHUT_WR);
    struct pollfd pf = {fd, POLLIN, 0};
    uint8_t in[256];
    size_t have = 0;
    ssize_t k;
    while (poll(&pf, 1, 2000) > 0 && lt__fd_ours(fd) &&
           (k = read(fd, in + have, sizeof in - have)) > 0) {
        have += (size_t)k;
        while (have >= LT_WIRE_HEADER) {
            uint32_t len = lt__wire_length(in);
            if (len < 1 || len + 4 > sizeof in) {
                have = 0; /* not ours to decode: drain */
                break;
            }
            if (have < len + 4) break;
            uint64_t v;
            const char *why2;
            if (in[4] == LT_MSG_STORED &&
                lt__wire_stored_decode(in + LT_WIRE_HEADER, len - 1, &v, &why2) == 0) {
                lt__g.events_stored = v;
                lt__g.stored_known = 1;
            }
            memmove(in, in + 4 + len, have - (len + 4));
            have -= len + 4;
        }
        if (have == sizeof in) have = 0;
    }
}

/* ---- the round -------------------------------------------------------- */

/* Takes the snapshot (mu held): every chunk's published size, then the
 * metadata; a record that uses a definition was published after the
 * definition was queued, so the definition is in this round's META. */
static int snapshot(sender *s) {
    lt__client *g = &lt__g;
    s->n = 0;
    for (lt__thr *t = g->threads; t; t = t->next) {
        for (lt__chunk *c = t->head; c; c = c->next) {
            uint64_t word = __atomic_load_n(&c->committed, __ATOMIC_ACQUIRE);
            uint32_t to = (uint32_t)word;
            if (to <= c->sent && !c->sealed) continue;
            if (s->n == s->cap) {
                size_t cap = s->cap ? 2 * s->cap : 64;
                work *w = realloc(s->w, cap * sizeof *w);
                if (!w) return -1; /* next round */
                s->w = w;
                s->cap = cap;
            }
            work *x = &s->w[s->n++];
            x->t = t;
            x->c = c;
            x->from = c->sent;
            x->to = to;
            x->to_events = (uint32_t)(word >> 32);
            x->sealed = (int)c->sealed;
        }
    }
    s->n_lost = 0;
    for (lt__thr *t = g->threads; g->stopping && t; t = t->next) {
        if (t->finished || !__atomic_load_n(&t->lost_pending, __ATOMIC_RELAXED)) continue;
        if (s->n_lost == s->cap_lost) {
            size_t cap = s->cap_lost ? 2 * s->cap_lost : 16;
            late_lost *l = realloc(s->lost, cap * sizeof *l);
            if (!l) break; /* still counted in BYE */
            s->lost = l;
            s->cap_lost = cap;
        }
        s->lost[s->n_lost].t = t;
        s->lost[s->n_lost++].count = __atomic_exchange_n(&t->lost_pending, 0, __ATOMIC_RELAXED);
    }
    lt__bytes tmp = s->meta;
    s->meta = g->meta;
    g->meta = tmp;
    g->meta.len = 0;
    uint64_t *f = s->forks;
    size_t fc = s->cap_forks;
    s->forks = g->forks;
    s->n_forks = g->n_forks;
    s->cap_forks = g->cap_forks;
    g->forks = f;
    g->cap_forks = fc;
    g->n_forks = 0;
    return 0;
}

/* Marks what was sent and releases the chunks that are done (mu held).
 * A crash's last round frees nothing: the crashing thread may hold the
 * allocator's lock (a heap corruption found in free), and the goodbye must
 * not wait for it. */
static void release(sender *s) {
    if (s->crash_note) return;
    for (size_t i = 0; i < s->n; i++) {
        work *x = &s->w[i];
        x->c->sent = x->to;
        x->c->sent_events = x->to_events;
        if (x->sealed && x->to == (uint32_t)x->c->committed) lt__buf_release(x->t, x->c);
    }
    lt__buf_reap(0);
    pthread_cond_broadcast(&lt__g.pool_cv);
}

/* Flight recorder: the round's data goes to the ring (client_flight.c). */
static int keep(sender *s) {
    uint64_t now = lt__now();
    lt__ring_meta(s->meta.p, s->meta.len);
    for (size_t i = 0; i < s->n; i++) {
        work *x = &s->w[i];
        if (x->to > x->from &&
            lt__ring_slice(x->t->pub.thread, x->c->data + x->from, x->to - x->from,
                           x->to_events - x->c->sent_events,
                           x->from == 0 ? &x->c->snap : NULL, now) < 0)
            return -ENOMEM;
    }
    if (s->crash_note) { /* the note, then the dump marks the process crashed */
        uint32_t thread;
        size_t rn = crash_record(&thread);
        if (rn && lt__ring_slice(thread, crash_rec, (uint32_t)rn, 1, NULL, now) < 0)
            return -ENOMEM;
        lt__ring_crashed(lt__crash_signal());
    }
    return 0;
}

static void ship(sender *s) {
    lt__client *g = &lt__g;
    uint64_t events = 0;
    for (size_t i = 0; i < s->n; i++)
        events += s->w[i].to_events - s->w[i].c->sent_events;
    if (__atomic_load_n(&g->broken, __ATOMIC_RELAXED)) return;
    if (lt__ring_on()) {
        if (keep(s) < 0) {
            __atomic_store_n(&g->broken, 1, __ATOMIC_RELAXED);
            if (!g->quiet) lt__say("tracy: flight recorder: out of memory; running unprofiled\n");
            return;
        }
        __atomic_fetch_add(&g->events_sent, events, __ATOMIC_RELAXED);
        return;
    }
    /* The round's messages stay valid until it ends: when the connection
     * fails, a resumed one gets again what the daemon did not receive. */
    uint64_t start = g->stream_off, skip = 0;
    int resumes = 0;
    char why[512];
    for (;;) {
        out o = {.fd = g->fd, .skip = skip};
        int rc = o.fd < 0 ? -ENOTCONN : send_meta(&o, &s->meta);
        if (rc == 0) rc = send_events(&o, s->w, s->n);
        if (rc == 0) rc = send_late_lost(&o, s);
        uint64_t noted = 0;
        if (rc == 0 && s->crash_note) rc = send_crash_note(&o, &noted);
        if (rc == 0) {
            events += noted;
            g->stream_off = start + o.pos;
            break;
        }
        if (reconnect(&o, rc, &start, &skip, &resumes, why, sizeof why) < 0) {
            give_up(why);
            return;
        }
    }
    events += s->n_lost;
    __atomic_fetch_add(&g->events_sent, events, __ATOMIC_RELAXED);
}

static void wait_kick(void) {
    lt__client *g = &lt__g;
    /* after EXEC: nothing until the exec fails (or the client stops) */
    while (g->exec_held && !g->exec_cancel && !g->stopping)
        pthread_cond_wait(&g->send_cv, &g->mu);
    if (g->kick || g->stopping) return;
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_nsec += LT__SEND_PERIOD_NS;
    if (dl.tv_nsec >= 1000000000) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&g->send_cv, &g->mu, &dl);
}

static void *sender_main(void *arg) {
    lt__client *g = &lt__g;
    sender s = {0};
    (void)arg;
    int priv = lt__fdtab_private(g->fd);
    pthread_mutex_lock(&g->mu);
    g->fd_private = priv;
    g->sender_ready = 1;
    pthread_cond_broadcast(&g->done_cv);
    for (;;) {
        if (lt__crash_signal()) g->stopping = 1; /* a crash: the last round */
        s.crash_note = g->stopping && lt__crash_signal();
        int last = g->stopping;
        int cancel = g->exec_cancel;
        if (cancel) g->exec_cancel = g->exec_held = 0;
        int exec_now = g->exec_req && !last;
        g->exec_req = 0;
        uint64_t round = ++g->rounds_started;
        g->kick = 0;
        if (snapshot(&s) < 0) s.n = 0;
        pthread_mutex_unlock(&g->mu);

        if (cancel) send_exec(1);
        ship(&s);
        send_forks(&s);
        if (exec_now) send_exec(0);
        s.meta.len = 0;
        if (lt__ring_on()) lt__ring_round(last, lt__now(), round);
        lt__clock_tick();

        pthread_mutex_lock(&g->mu);
        release(&s);
        if (exec_now) g->exec_held = 1;
        g->rounds_done = round;
        pthread_cond_broadcast(&g->done_cv);
        if (last) break;
        wait_kick();
    }
    pthread_mutex_unlock(&g->mu);
    if (!__atomic_load_n(&g->broken, __ATOMIC_RELAXED) && g->fd >= 0) send_bye();
    if (lt__crash_signal()) { /* the crashing thread dies now */
        __atomic_store_n(&g->state, LT__OFF, __ATOMIC_RELEASE);
        lt__crash_done();
    }
    free(s.w);
    free(s.lost);
    free(s.forks);
    lt__bytes_free(&s.meta);
    return NULL;
}

int lt__thread_nosig(pthread_t *t, void *(*fn)(void *), int detached) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t a;
    pthread_attr_init(&a);
    if (detached) {
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&a, 64u << 10);
    }
    int rc = pthread_create(t, &a, fn, NULL);
    pthread_attr_destroy(&a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc == 0 ? 0 : -1;
}

int lt__sender_start(void) {
    lt__client *g = &lt__g;
    /* The sender must not take signals meant for the program. */
    g->sender_ready = g->fd_private = 0;
    if (lt__thread_nosig(&g->sender, sender_main, 0) < 0) return LT_ENOMEM;
    g->sender_running = 1;
    pthread_mutex_lock(&g->mu);
    while (!g->sender_ready) pthread_cond_wait(&g->done_cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    return 0;
}

void lt__sender_stop(void) {
    lt__client *g = &lt__g;
    pthread_mutex_lock(&g->mu);
    if (!g->sender_running) {
        pthread_mutex_unlock(&g->mu);
        return;
    }
    g->stopping = 1;
    g->kick = 1;
    pthread_cond_signal(&g->send_cv);
    pthread_cond_broadcast(&g->pool_cv);
    pthread_mutex_unlock(&g->mu);

    pthread_join(g->sender, NULL);

    pthread_mutex_lock(&g->mu);
    g->sender_running = 0;
    __atomic_store_n(&g->state, LT__OFF, __ATOMIC_RELEASE);
    lt__buf_reap(1);
    lt__pool_trim();
    lt__bytes_free(&g->meta);
    pthread_cond_broadcast(&g->pool_cv);
    pthread_cond_broadcast(&g->done_cv);
    pthread_mutex_unlock(&g->mu);
    /* A private socket went with the sender's table; a shared one is
     * closed when it is still ours (not the program's) */
    if (g->fd >= 0 && !g->fd_private && lt__fd_ours(g->fd)) close(g->fd);
    g->fd = -1;
    g->fd_private = 0;
}

/* ---- TSC clock ------------------------------------------------------ */

LT_API const lt__clock_map *lt__clk;

#if defined(__x86_64__)
#define LT__CLOCK_RING 256
#define LT__CLOCK_EVERY 200000000u  /* recalibrate every 200 ms */
#define LT__CLOCK_HORIZON 1000000000 /* correct the error over 1 s */
#define LT__CLOCK_FIRST 500000u      /* baseline of the first map: 0.5 ms */

static struct {
    int usable; /* 0 unknown, 1 yes, -1 no */
    int provisional; /* the map is the first one, from a short baseline */
    uint64_t t_first, n_first, n_last;
    unsigned idx;
    lt__clock_map ring[LT__CLOCK_RING];
} ck;

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A (tsc, ns) pair read as close together as possible. */
static void clock_pair(uint64_t *tsc, uint64_t *ns) {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t a = __builtin_ia32_rdtsc();
        uint64_t n = mono_ns();
        uint64_t b = __builtin_ia32_rdtsc();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = n;
        }
    }
}

/* The TSC is used where it ticks at a constant rate in every power state
 * and on every core: where the kernel keeps its clock by it (clocksource
 * tsc), or where the processor says so (CPUID 0x80000007, EDX bit 8:
 * invariant TSC), as in virtual machines whose kernel keeps kvm-clock,
 * itself read from the TSC. TRACY_NO_TSC turns it off. */
static int tsc_usable(void) {
    if (ck.usable) return ck.usable > 0;
    ck.usable = -1;
    const char *off = getenv("TRACY_NO_TSC");
    if (off && *off && strcmp(off, "0") != 0) return 0;
    unsigned a, b, c, d;
    if (__get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8))) {
        ck.usable = 1;
        return 1;
    }
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (!f) return 0;
    char buf[32] = "";
    if (fgets(buf, sizeof buf, f) && strncmp(buf, "tsc", 3) == 0 &&
        (buf[3] == '\n' || buf[3] == 0))
        ck.usable = 1;
    fclose(f);
    return ck.usable > 0;
}

static void clock_publish(const lt__clock_map *m) {
    lt__clock_map *slot = &ck.ring[++ck.idx % LT__CLOCK_RING];
    *slot = *m;
    slot->off = m->ns0 - (uint64_t)(((unsigned __int128)m->tsc0 * m->mult) >> 32) +
                (uint64_t)lt__mono_bias;
    __atomic_store_n(&lt__clk, slot, __ATOMIC_RELEASE);
}

void lt__clock_start(void) {
    if (lt__clk || !tsc_usable()) return;
    clock_pair(&ck.t_first, &ck.n_first);
    ck.n_last = ck.n_first;
}

void lt__clock_first(void) {
    if (lt__clk || !ck.n_first) return;
    uint64_t T, N;
    for (;;) {
        clock_pair(&T, &N);
        if (N - ck.n_first >= LT__CLOCK_FIRST) break;
        struct timespec d = {0, (long)(LT__CLOCK_FIRST - (N - ck.n_first))};
        nanosleep(&d, NULL);
    }
    if (T <= ck.t_first) { /* no usable baseline: the sender starts one */
        ck.n_first = 0;
        return;
    }
    lt__clock_map m = {.tsc0 = T, .ns0 = N,
                       .mult = (uint64_t)(((unsigned __int128)(N - ck.n_first) << 32) /
                                          (T - ck.t_first))};
    ck.n_last = N;
    ck.provisional = 1;
    clock_publish(&m);
}

void lt__clock_tick(void) {
    if (!tsc_usable()) return;
    uint64_t T = 0, N = 0;
    clock_pair(&T, &N);
    if (ck.n_first == 0 || T <= ck.t_first || N <= ck.n_first) {
        ck.t_first = T;
        ck.n_first = N;
        ck.n_last = N;
        return;
    }
    /* a first map from a short baseline is refined at the first round */
    uint64_t every = ck.provisional ? LT__SEND_PERIOD_NS : LT__CLOCK_EVERY;
    if (N - ck.n_last < every && lt__clk) return;
    if (N - ck.n_first < LT__SEND_PERIOD_NS) return;
    ck.n_last = N;
    ck.provisional = 0;
    /* ns per tick over the whole baseline, 32.32 */
    uint64_t rate = (uint64_t)(((unsigned __int128)(N - ck.n_first) << 32) /
                               (T - ck.t_first));
    const lt__clock_map *cur = lt__clk;
    lt__clock_map m = {.tsc0 = T, .ns0 = N, .mult = rate};
    if (cur && T >= cur->tsc0) {
        uint64_t M = cur->ns0 +
            (uint64_t)(((unsigned __int128)(T - cur->tsc0) * cur->mult) >> 32);
        int64_t err = (int64_t)(M - N);
        if (err > -1000000 && err < 1000000) {
            /* continuous at T; slope corrected to meet the clock in 1 s */
            m.ns0 = M;
            m.mult = (uint64_t)((unsigned __int128)rate *
                                (uint64_t)(LT__CLOCK_HORIZON - err) /
                                LT__CLOCK_HORIZON);
        }
    }
    clock_publish(&m);
}
#else
void lt__clock_start(void) {}
void lt__clock_first(void) {}
void lt__clock_tick(void) {}
#endif
