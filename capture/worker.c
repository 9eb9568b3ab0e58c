/* worker.c -- the writer thread: compresses and appends blocks in order.
 *
 * One dedicated thread rather than libuv's pool: blocks must reach the file
 * in the order they were queued (a process's metadata before its events),
 * and a single FIFO consumer keeps that order with no sequencing. The event
 * loop never calls zstd or write(2) on the output.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include "capture.h"

struct cap_worker {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    cap_blk *head, *tail;       /* queued, oldest first */
    cap_blk *done, *done_tail;  /* written, not yet taken back */
    int quit;
    int async_live;             /* the loop still listens on `async` */
    uv_async_t async;
    lt_writer *w;
    cap_done_fn on_done;
    void *arg;
    uint64_t written;           /* file bytes, read by the loop (atomic) */
};

static void on_async(uv_async_t *a) {
    cap_worker *wk = a->data;
    pthread_mutex_lock(&wk->mu);
    cap_blk *list = wk->done;
    wk->done = wk->done_tail = NULL;
    pthread_mutex_unlock(&wk->mu);
    if (list) wk->on_done(wk->arg, list);
}

static void write_one(cap_worker *wk, cap_blk *b) {
    uint64_t before = lt_writer_bytes(wk->w);
    b->rc = lt_writer_block(wk->w, &b->desc, b->data, b->len);
    b->unit_bytes = lt_writer_bytes(wk->w) - before;
    __atomic_store_n(&wk->written, before + b->unit_bytes, __ATOMIC_RELAXED);
}

uint64_t cap_worker_bytes(const cap_worker *wk) {
    return __atomic_load_n(&wk->written, __ATOMIC_RELAXED);
}

static void *worker_main(void *arg) {
    cap_worker *wk = arg;
    pthread_mutex_lock(&wk->mu);
    for (;;) {
        while (!wk->head && !wk->quit) pthread_cond_wait(&wk->cv, &wk->mu);
        cap_blk *list = wk->head;
        if (!list) break; /* quit and drained */
        wk->head = wk->tail = NULL;
        pthread_mutex_unlock(&wk->mu);

        cap_blk *first = list, *last = list;
        for (cap_blk *b = list; b; b = b->next) {
            write_one(wk, b);
            last = b;
        }

        pthread_mutex_lock(&wk->mu);
        if (wk->done_tail) wk->done_tail->next = first;
        else wk->done = first;
        wk->done_tail = last;
        if (wk->async_live) uv_async_send(&wk->async);
    }
    pthread_mutex_unlock(&wk->mu);
    return NULL;
}

int cap_worker_start(cap_worker **out, uv_loop_t *loop, lt_writer *w,
                     cap_done_fn done, void *arg) {
    cap_worker *wk = calloc(1, sizeof *wk);
    if (!wk) return LT_ENOMEM;
    wk->w = w;
    wk->on_done = done;
    wk->arg = arg;
    pthread_mutex_init(&wk->mu, NULL);
    pthread_cond_init(&wk->cv, NULL);
    if (uv_async_init(loop, &wk->async, on_async) < 0) goto err;
    wk->async.data = wk;
    wk->async_live = 1;
    /* The writer takes no signal: SIGINT/SIGTERM/SIGUSR1 reach the loop's
     * thread, which alone can hold them off while it stops (do_stop). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&wk->thread, NULL, worker_main, wk);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        wk->async_live = 0;
        uv_close((uv_handle_t *)&wk->async, NULL);
        uv_run(loop, UV_RUN_NOWAIT); /* let the close finish */
        goto err;
    }
    *out = wk;
    return 0;
err:
    pthread_cond_destroy(&wk->cv);
    pthread_mutex_destroy(&wk->mu);
    free(wk);
    return LT_ENOMEM;
}

void cap_worker_push(cap_worker *wk, cap_blk *b) {
    b->next = NULL;
    pthread_mutex_lock(&wk->mu);
    if (wk->tail) wk->tail->next = b;
    else wk->head = b;
    wk->tail = b;
    pthread_cond_signal(&wk->cv);
    pthread_mutex_unlock(&wk->mu);
}

void cap_worker_detach(cap_worker *wk) {
    pthread_mutex_lock(&wk->mu);
    int live = wk->async_live;
    wk->async_live = 0;
    pthread_mutex_unlock(&wk->mu);
    if (live) uv_close((uv_handle_t *)&wk->async, NULL);
}

cap_blk *cap_worker_finish(cap_worker *wk) {
    if (!wk) return NULL;
    pthread_mutex_lock(&wk->mu);
    wk->quit = 1;
    pthread_cond_signal(&wk->cv);
    pthread_mutex_unlock(&wk->mu);
    pthread_join(wk->thread, NULL);
    cap_blk *list = wk->done;
    pthread_cond_destroy(&wk->cv);
    pthread_mutex_destroy(&wk->mu);
    free(wk);
    return list;
}
