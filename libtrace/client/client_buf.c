/* client_buf.c -- client per-thread chunk buffers, the chunk pool and the
 * slow paths of the hot path (refill, waiting, drop mode). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "client_internal.h"

LT_API __thread lt__tbuf *lt__tls __attribute__((tls_model("initial-exec")));

/* Where a thread's records go once the client is stopped: overwritten over
 * and over, never sent. Only hot-path records (<= 16 bytes) land here. */
#define LT__SCRATCH 1024u
static __thread uint8_t scratch_buf[LT__SCRATCH];
static __thread uint64_t scratch_committed;

static pthread_key_t tb_key;
static pthread_once_t tb_key_once = PTHREAD_ONCE_INIT;

/* Largest record the hot path writes into the slack (ZONE_END). */
#define LT__END_MAX 11u

/* ---- chunk pool (mu held) --------------------------------------------- */

/* Chunks are mapped, not taken from malloc: the program's heap then grows
 * and fragments as it would without the client (chunks are allocated while
 * the program runs and released by the sender thread), and its mallocs cost
 * what they would. Under AddressSanitizer they come from malloc, so that
 * their bounds are checked. */
#if defined(__SANITIZE_ADDRESS__)
static lt__chunk *chunk_map(void) { return malloc(sizeof(lt__chunk)); }
static void chunk_unmap(lt__chunk *c) { free(c); }
#else
static lt__chunk *chunk_map(void) {
    void *p = mmap(NULL, sizeof(lt__chunk), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}
static void chunk_unmap(lt__chunk *c) { munmap(c, sizeof *c); }
#endif

static lt__chunk *chunk_alloc(void) {
    lt__chunk *c = chunk_map();
    if (c) memset(&c->snap, 0, sizeof c->snap);
    return c;
}

static void chunk_free(lt__chunk *c) {
    free(c->snap.loc);
    chunk_unmap(c);
}

/* Chunks the pool may hold: max_chunks for data on its way to the daemon,
 * plus one per live thread (the chunk it writes): threads that hold their
 * chunk while blocked (at a barrier, say) never starve the others. */
static size_t pool_limit(void) { return lt__g.max_chunks + lt__g.n_live; }

/* A free chunk, or NULL when the pool is at its limit. `force` allows going
 * over the limit (a zone end with no room left, rather than wait forever). */
static lt__chunk *pool_take(int force) {
    lt__client *g = &lt__g;
    lt__chunk *c = g->free_chunks;
    if (c) {
        g->free_chunks = c->next;
    } else if (force || g->n_chunks < pool_limit()) {
        c = chunk_alloc();
        if (!c) return NULL;
        g->n_chunks++;
    } else {
        return NULL;
    }
    c->next = NULL;
    c->committed = 0;
    c->sent = 0;
    c->sent_events = 0;
    c->sealed = 0;
    c->snap.ok = 0;
    return c;
}

static void pool_put(lt__chunk *c) {
    lt__client *g = &lt__g;
    if (g->n_chunks > pool_limit()) {
        chunk_free(c);
        g->n_chunks--;
        return;
    }
    c->next = g->free_chunks;
    g->free_chunks = c;
}

void lt__pool_trim(void) {
    lt__client *g = &lt__g;
    while (g->free_chunks) {
        lt__chunk *c = g->free_chunks;
        g->free_chunks = c->next;
        chunk_free(c);
        g->n_chunks--;
    }
}

/* Appends c to the thread's chunk list (mu held). */
static void tb_link(lt__thr *t, lt__chunk *c) {
    if (t->head == NULL) {
        t->head = c;
    } else {
        lt__chunk *x = t->head;
        while (x->next) x = x->next;
        x->next = c;
    }
}

static uint32_t session_now(void) {
    return __atomic_load_n(&lt__g.session, __ATOMIC_SEQ_CST);
}

int lt__buf_stale(const lt__thr *t) { return t->session != session_now(); }

/* Sets the thread's limit (producer side). A new session may have begun
 * meanwhile: lt__buf_new_session bumps the session, then clears the limit;
 * reading the session after this store keeps the limit clear whatever the
 * order (both sequentially consistent), so the next write takes the slow
 * path, which renews the buffer. */
static void set_limit(lt__thr *t, uint8_t *limit) {
    __atomic_store_n(&t->pub.limit, limit, __ATOMIC_SEQ_CST);
    if (limit && t->session != session_now())
        __atomic_store_n(&t->pub.limit, NULL, __ATOMIC_SEQ_CST);
}

/* Whether the thread's zone stack has room for `more` beyond its depth
 * (the scratch area, where every record comes to the slow path): 0, or -1
 * when its zones are nested too deeply. */
static int stk_room(lt__thr *t, uint32_t more) {
    return (uint64_t)t->pub.depth + more <= LT__STK_MAX ? 0 : -1;
}

/* The hot path's limit in the current chunk: none (every record to the
 * slow path) while a chunk's begins could open more than LT_MAX_DEPTH
 * zones, the most a trace holds; begins beyond are dropped (refill). */
static uint8_t *open_limit(const lt__thr *t) {
    return t->pub.depth + LT__STK_ROOM < LT_MAX_DEPTH ? t->real_limit : NULL;
}

/* Flight mode: the thread's state where chunk c starts (lt__chunk_snap).
 * Names and texts are not kept by the hot path: once one was written, the
 * snapshots are marked unusable until a chunk starts with no zone open. */
static void tb_snap(lt__thr *t, lt__chunk *c) {
    lt__chunk_snap *s = &c->snap;
    uint32_t d = t->pub.depth;
    s->ok = 0;
    if (!lt__ring_on()) return;
    if (d == 0) t->decorated = 0;
    if (t->decorated || d >= LT_MAX_DEPTH) return;
    if (d > s->cap) {
        uint32_t *v = realloc(s->loc, (size_t)d * sizeof *v);
        if (!v) return;
        s->loc = v;
        s->cap = d;
    }
    if (d) memcpy(s->loc, lt__stk(&t->pub), (size_t)d * sizeof *s->loc);
    s->depth = d;
    s->ts = t->pub.last_ts;
    s->ok = 1;
}

/* Makes c the thread's write chunk (producer side). */
static void tb_install(lt__thr *t, lt__chunk *c) {
    tb_snap(t, c);
    t->cur = c;
    t->pub.base = c->data;
    t->pub.wp = c->data;
    t->pub.committed = &c->committed;
    t->pub.cbias = -(uint64_t)(uintptr_t)c->data;
    t->real_limit = c->data + LT__CHUNK_CAP - LT__SLACK;
    set_limit(t, t->skip ? NULL : open_limit(t));
}

static void tb_use_scratch(lt__thr *t) {
    t->pub.base = scratch_buf;
    t->pub.wp = scratch_buf;
    t->pub.committed = &scratch_committed;
    t->pub.cbias = -(uint64_t)(uintptr_t)scratch_buf;
    t->real_limit = scratch_buf + LT__SCRATCH - LT__SLACK;
    /* every write comes to the slow path, which renews the buffer once a
     * new session records (lt__buf_new_session) */
    t->pub.limit = NULL;
}

static int tb_in_scratch(const lt__thr *t) { return t->pub.base == scratch_buf; }

static uint8_t *tb_end(const lt__thr *t) { return t->real_limit + LT__SLACK; }

static void count_lost(lt__thr *t, uint64_t n) {
    __atomic_fetch_add(&t->lost_pending, n, __ATOMIC_RELAXED);
    __atomic_fetch_add(&lt__g.events_lost, n, __ATOMIC_RELAXED);
}

static int recording(void) {
    return __atomic_load_n(&lt__g.state, __ATOMIC_ACQUIRE) == LT__ACTIVE;
}

/* ---- records written by the slow path ------------------------------- */

void lt__commit(lt__thr *t, uint8_t *end, int event) {
    t->pub.wp = end;
    if (event) t->pub.cbias += (uint64_t)1 << 32;
    __atomic_store_n(t->pub.committed, (uint64_t)(uintptr_t)end + t->pub.cbias,
                     __ATOMIC_RELEASE);
}

static uint8_t *put_begin_rec(uint8_t *p, uint32_t loc, uint64_t dt) {
    if (loc < 128) {
        *p++ = (uint8_t)(LT_TAG_ZONE_BEGIN_SHORT | loc);
        return lt__put_varint(p, dt);
    }
    *p++ = LT_TAG_ZONE_BEGIN;
    p = lt__put_varint(p, dt);
    return lt__put_varint(p, loc);
}

/* The wait for memory [ts, now] as a zone of the internal location. */
static void write_wait_zone(lt__thr *t, uint64_t ts) {
    uint8_t *p = put_begin_rec(t->pub.wp, lt__g.wait_loc, lt__dt(&t->pub, ts));
    t->pub.cbias += (uint64_t)1 << 32;
    *p++ = LT_TAG_ZONE_END;
    p = lt__put_varint(p, lt__dt(&t->pub, lt__now()));
    lt__commit(t, p, 1);
}

static void write_lost(lt__thr *t, uint64_t ts) {
    uint8_t *p = t->pub.wp;
    *p++ = LT_TAG_LOST;
    p = lt__put_varint(p, lt__dt(&t->pub, ts));
    p = lt__put_varint(p, __atomic_exchange_n(&t->lost_pending, 0, __ATOMIC_RELAXED));
    lt__commit(t, p, 1);
}

/* ---- making room ---------------------------------------------------- */

/* Waits (mu held) for a free chunk until the client's longest wait has
 * passed. Returns the chunk, or NULL on timeout (the thread is then
 * `starved`: it drops without waiting until it gets a chunk again) or when
 * the client stops (`*stop` set). */
static lt__chunk *wait_chunk(lt__thr *t, int *stop) {
    lt__client *g = &lt__g;
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += (time_t)(g->wait_max_ms / 1000);
    dl.tv_nsec += (long)(g->wait_max_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    g->kick = 1;
    pthread_cond_signal(&g->send_cv);
    for (;;) {
        int rc = pthread_cond_timedwait(&g->pool_cv, &g->mu, &dl);
        if (g->stopping || g->state != LT__ACTIVE) {
            *stop = 1;
            return NULL;
        }
        lt__chunk *c = pool_take(0);
        if (c) return c;
        if (rc == ETIMEDOUT) {
            t->starved = 1;
            return NULL;
        }
    }
}

/* Hands the current chunk to the sender and installs a fresh one. When no
 * chunk is free it waits, at most TRACY_WAIT_MAX seconds (default 10), then
 * drops like drop mode; with TRACY_DROP=1 it does not wait. A record that
 * may be dropped (`droppable` 1) then returns -1 (nothing changed). An end
 * (droppable 0) is written into the slack of the current chunk while there
 * is room for it, else a chunk is taken over the limit: no thread blocks
 * forever. Once the client no longer records, writes go to the scratch
 * area. */
static int make_room(lt__thr *t, uint64_t ts, int droppable) {
    lt__client *g = &lt__g;
    lt__chunk *c = NULL;
    int waited = 0, stop = 0;

    if (!recording() || tb_in_scratch(t)) {
        tb_use_scratch(t);
        return 0;
    }
    pthread_mutex_lock(&g->mu);
    if (g->stopping) goto scratch;
    c = pool_take(0);
    if (!c && !g->drop && !t->starved) {
        waited = 1;
        c = wait_chunk(t, &stop);
        if (stop) goto scratch;
    }
    if (!c) {
        if (droppable) {
            pthread_mutex_unlock(&g->mu);
            return -1;
        }
        if ((size_t)(tb_end(t) - t->pub.wp) >= LT__END_MAX) {
            pthread_mutex_unlock(&g->mu);
            return 0;
        }
        c = pool_take(1);
        if (!c) goto scratch; /* out of memory: nothing more is recorded */
    }
    /* The last record is published; no more writes go to this chunk, which
     * the sender may free as soon as it is sent. */
    t->cur->sealed = 1;
    t->cur = NULL;
    t->starved = 0;
    g->kick = 1;
    pthread_cond_signal(&g->send_cv);
    tb_link(t, c);
    pthread_mutex_unlock(&g->mu);
    tb_install(t, c);
    if (waited && g->wait_loc && t->pub.depth < LT_MAX_DEPTH) write_wait_zone(t, ts);
    if (t->lost_pending) write_lost(t, ts);
    return 0;

scratch:
    pthread_mutex_unlock(&g->mu);
    tb_use_scratch(t);
    return 0;
}

/* ---- sessions (trace windows, client_file.c) ------------------------- */

/* Buffers of earlier sessions whose thread is alive (mu). */
static lt__thr *retired;

static void list_unlink(lt__thr **head, lt__thr *t) {
    for (lt__thr **pp = head; *pp; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            return;
        }
    }
}

void lt__buf_new_session(void) {
    lt__client *g = &lt__g;
    lt__buf_reap(1);
    __atomic_add_fetch(&g->session, 1, __ATOMIC_SEQ_CST);
    for (lt__thr *t = g->threads, *n; t; t = n) {
        n = t->next;
        __atomic_store_n(&t->pub.limit, NULL, __ATOMIC_SEQ_CST);
        t->next = retired;
        retired = t;
    }
    g->threads = NULL;
    g->n_threads = 0;
    g->n_live = 0;
}

/* A thread's first chunk of a session (mu held): a thread always gets one,
 * over the pool's limit if need be, while the client records. NULL when it
 * does not (or memory is exhausted). */
static lt__chunk *first_chunk(void) {
    lt__client *g = &lt__g;
    lt__chunk *c = NULL;
    if (g->state == LT__ACTIVE && !g->stopping) {
        g->n_live++;
        c = pool_take(0);
        if (!c) c = pool_take(1);
        if (!c) g->n_live--;
    }
    return c;
}

/* t joins the current session's thread list with chunk c (mu held): a
 * thread index, its name in the metadata. */
static void tb_join(lt__thr *t, lt__chunk *c, const char *name) {
    lt__client *g = &lt__g;
    t->pub.thread = ++g->n_threads;
    t->session = g->session;
    const char *pending = lt__pending_name(t->tid);
    lt__meta_thread(t->pub.thread, t->tid, pending ? pending : name);
    t->next = g->threads;
    g->threads = t;
    tb_link(t, c);
}

/* The calling thread's buffer of an earlier session joins the current one:
 * a fresh chunk, a new thread index, its name again, no zone open (ends of
 * zones begun before are not sent). Returns 0, or -1 when the client does
 * not record. */
static int adopt(lt__thr *t) {
    lt__client *g = &lt__g;
    char name[64] = "";
    (void)pthread_getname_np(pthread_self(), name, sizeof name);
    pthread_mutex_lock(&g->mu);
    lt__chunk *c = first_chunk();
    if (!c) {
        pthread_mutex_unlock(&g->mu);
        return -1;
    }
    list_unlink(&retired, t);
    while (t->head) {
        lt__chunk *x = t->head;
        t->head = x->next;
        pool_put(x);
    }
    t->cur = NULL;
    t->pub.depth = 0;
    t->pub.last_ts = 0;
    t->skip = 0;
    t->starved = 0;
    t->lost_pending = 0;
    tb_join(t, c, name);
    pthread_mutex_unlock(&g->mu);
    tb_install(t, c);
    return 0;
}

/* The slow path of a thread writing into the scratch area or into a buffer
 * of an earlier session: renewed when a session records, else (back) into
 * the scratch area. Returns 0 (write, room made) or -1 (skip the record:
 * an end with no zone open). */
static int renew(lt__thr *t, int end) {
    if (lt__buf_stale(t) && recording() && adopt(t) == 0) return end ? -1 : 0;
    tb_use_scratch(t);
    if (!end) return stk_room(t, 1); /* a begin: room for its zone */
    return t->pub.depth == 0 ? -1 : 0;
}

int lt__tbuf_refill(lt__tbuf *pt, uint64_t ts) {
    lt__thr *t = (lt__thr *)pt;
    if (__builtin_expect(tb_in_scratch(t) || lt__buf_stale(t), 0)) return renew(t, 0);
    if (t->skip) { /* inside a dropped zone: drop its children too */
        t->skip++;
        count_lost(t, 1);
        return -1;
    }
    if (pt->depth >= LT_MAX_DEPTH) { /* nested deeper than a trace holds */
        t->skip = 1;
        pt->limit = NULL;
        count_lost(t, 1);
        return -1;
    }
    if (pt->wp <= t->real_limit) {
        pt->limit = open_limit(t);
        return 0;
    }
    if (make_room(t, ts, 1) < 0) {
        t->skip = 1;
        pt->limit = NULL; /* so that the matching end comes here */
        count_lost(t, 1);
        return -1;
    }
    return tb_in_scratch(t) ? stk_room(t, 1) : 0;
}

int lt__tbuf_refill_end(lt__tbuf *pt, uint64_t ts) {
    lt__thr *t = (lt__thr *)pt;
    if (__builtin_expect(tb_in_scratch(t) || lt__buf_stale(t), 0)) return renew(t, 1);
    if (t->skip) {
        count_lost(t, 1);
        if (--t->skip == 0) {
            pt->limit = open_limit(t);
            if (pt->wp <= t->real_limit && t->lost_pending) write_lost(t, ts);
        }
        return -1;
    }
    if (pt->depth == 0) return -1;
    if (pt->wp <= t->real_limit) {
        pt->limit = open_limit(t);
        return 0;
    }
    (void)make_room(t, ts, 0);
    return 0;
}

uint8_t *lt__reserve(lt__thr *t, size_t n, uint64_t ts) {
    if (lt__buf_stale(t) && (!recording() || adopt(t) < 0)) return NULL;
    if (!recording() || tb_in_scratch(t)) return NULL;
    /* At most twice: a fresh chunk may begin with a wait zone and LOST. */
    while (t->pub.wp + n > t->real_limit) {
        if (make_room(t, ts, 1) < 0) {
            count_lost(t, 1);
            return NULL;
        }
        if (tb_in_scratch(t)) return NULL;
    }
    if (t->lost_pending) {
        write_lost(t, ts);
        if (t->pub.wp + n > t->real_limit) return lt__reserve(t, n, ts);
    }
    return t->pub.wp;
}

/* Records the drops not yet written as LOST, waiting for room if needed:
 * called when the thread (or the client) is about to end. */
static void flush_lost(lt__thr *t) {
    if (!t->lost_pending || !recording() || tb_in_scratch(t)) return;
    if (t->pub.wp + 24 > t->real_limit) (void)make_room(t, lt__now(), -1);
    if (t->lost_pending && !tb_in_scratch(t)) write_lost(t, lt__now());
}

void lt__buf_thread_done(void) {
    if (lt__tls) flush_lost((lt__thr *)lt__tls);
}

/* ---- thread buffers ------------------------------------------------- */

/* A thread's buffer and its zone stack (lt__stk), zeroed: mapped, so that
 * only the pages of the stack in use take memory. Under AddressSanitizer
 * from calloc, so that the leak checker sees the chunks it points to. */
#define THR_BYTES (LT__STK_OFF + (size_t)LT__STK_MAX * sizeof(uint32_t))

#if defined(__SANITIZE_ADDRESS__)
static lt__thr *thr_alloc(void) { return calloc(1, THR_BYTES); }
static void thr_free(lt__thr *t) { free(t); }
#else
static lt__thr *thr_alloc(void) {
    void *p = mmap(NULL, THR_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void thr_free(lt__thr *t) { munmap(t, THR_BYTES); }
#endif

static void tb_free(lt__thr *t) {
    while (t->head) {
        lt__chunk *c = t->head;
        t->head = c->next;
        pool_put(c);
    }
    thr_free(t);
}

/* Unlinks t from lt__g.threads (mu held). */
static void tb_unlink(lt__thr *t) { list_unlink(&lt__g.threads, t); }

/* Thread exit: the sender ships what is left, then frees the buffer. */
static void tb_exit(void *arg) {
    lt__thr *t = arg;
    lt__client *g = &lt__g;
    flush_lost(t);
    if (lt__tls == &t->pub) lt__tls = NULL;
    lt__altstack_done();
    pthread_mutex_lock(&g->mu);
    if (t->session != g->session) { /* a buffer of an earlier session */
        list_unlink(&retired, t);
        tb_free(t);
        pthread_mutex_unlock(&g->mu);
        return;
    }
    t->finished = 1;
    if (g->n_live) g->n_live--;
    if (g->state == LT__ACTIVE && g->sender_running) {
        if (t->cur) t->cur->sealed = 1; /* NULL: already sealed */
        g->kick = 1;
        pthread_cond_signal(&g->send_cv);
    } else if (!g->sender_running) {
        tb_unlink(t);
        tb_free(t);
    }
    pthread_mutex_unlock(&g->mu);
}

static int key_made;
static void make_key(void) {
    key_made = pthread_key_create(&tb_key, tb_exit) == 0;
}

lt__tbuf *lt__tbuf_create(void) {
    lt__client *g = &lt__g;
    char name[64] = "";
    if (lt__tls) return lt__tls;
    int st = __atomic_load_n(&g->state, __ATOMIC_ACQUIRE);
    if (st == LT__UNINIT) {
        (void)lt_client_start();
        st = __atomic_load_n(&g->state, __ATOMIC_ACQUIRE);
    }
    if (st != LT__ACTIVE) return NULL;
    pthread_once(&tb_key_once, make_key);
    if (!key_made) return NULL;
    lt__thr *t = thr_alloc();
    if (!t) return NULL;
    t->tid = (uint64_t)gettid();
    (void)pthread_getname_np(pthread_self(), name, sizeof name);

    pthread_mutex_lock(&g->mu);
    lt__chunk *c = first_chunk();
    if (!c) {
        pthread_mutex_unlock(&g->mu);
        thr_free(t);
        return NULL;
    }
    tb_join(t, c, name);
    pthread_mutex_unlock(&g->mu);

    tb_install(t, c);
    lt__tls = &t->pub;
    (void)pthread_setspecific(tb_key, t);
    lt__altstack_init();
    return &t->pub;
}

/* ---- fork ----------------------------------------------------------- */

/* Child side of fork(): the child is a new process that connects on its
 * first event. Its copy of the parent's buffers belongs to nobody: their
 * chunks are dropped. The lt__thr of each stays allocated (on `kept`), so
 * that no buffer of the child is ever at the address of one of them: the
 * Python hook tells a frame begun before fork by its buffer's address. */
static lt__thr *stale, *kept;

void lt__buf_atfork_child(void) {
    lt__client *g = &lt__g;
    /* the forking thread's buffer is nobody's now: a frame begun before
     * fork that ends here finds it full (the Python hook's inline end
     * then takes its slow path, which compares the buffer with lt__tls) */
    if (lt__tls) lt__tls->limit = NULL;
    lt__tls = NULL;
    if (key_made) (void)pthread_setspecific(tb_key, NULL);
    if (g->threads) {
        lt__thr *last = g->threads;
        while (last->next) last = last->next;
        last->next = stale;
        stale = g->threads;
    }
    if (retired) {
        lt__thr *last = retired;
        while (last->next) last = last->next;
        last->next = stale;
        stale = retired;
        retired = NULL;
    }
    g->threads = NULL;
    g->n_threads = 0;
    g->n_live = 0;
}

/* ---- used by the sender --------------------------------------------- */

void lt__buf_release(lt__thr *t, lt__chunk *c) {
    /* c is t->head: chunks are released in order */
    t->head = c->next;
    pool_put(c);
}

void lt__buf_reap(int all) {
    lt__client *g = &lt__g;
    for (lt__thr **pp = &g->threads; *pp;) {
        lt__thr *t = *pp;
        if (t->finished && (all || t->head == NULL)) {
            *pp = t->next;
            tb_free(t);
        } else {
            pp = &t->next;
        }
    }
    if (all) {
        while (stale) {
            lt__thr *t = stale;
            stale = t->next;
            while (t->head) {
                lt__chunk *c = t->head;
                t->head = c->next;
                pool_put(c);
            }
            t->next = kept;
            kept = t;
        }
    }
}
