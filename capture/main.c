/* main.c -- capture-release: accepts profiled processes over TCP and writes
 * their events into one .tracy file. Options, setup and the exit code; the
 * work is in server.c, store.c and worker.c. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "capture.h"
#include "common/local.h"

#define FIFO_POLL_MS 50

static int write_exit(int err) {
    return err == LT_EIO || err == LT_ENOSPC || err == LT_EFBIG ? CAP_EXIT_WRITE
                                                                : CAP_EXIT_RUNTIME;
}

/* Runs the capture into an open writer; closes it. Returns the exit code. */
static int capture(cap_server *srv, uv_loop_t *loop, const cap_opts *o,
                   lt_writer *w) {
    cap_worker *wk = NULL;
    int rc = o->rotate ? lt_writer_set_rotation(w, o->output, o->max_size) : 0;
    if (rc == 0) rc = cap_worker_start(&wk, loop, w, cap_server_done, srv);
    cap_store *st = rc == 0 ? cap_store_new(wk, o->max_names) : NULL;
    if (st) cap_store_set_rotating(st, o->rotate);
    if (st && o->max_size) {
        cap_store_set_max_size(st, o->max_size, o->rotate);
        cap_store_stats_block(st); /* the limit is in the file from its start */
    }
    /* Tables are freed only when their process ends: half of -m at most,
     * so that blocks and read buffers always have room to drain. */
    if (st) cap_store_set_table_limit(st, o->mem_limit / 2);
    if (!st) {
        cap_log("cannot start the writer thread: %s", lt_strerror(LT_ENOMEM));
        if (wk) {
            cap_worker_detach(wk);
            uv_run(loop, UV_RUN_NOWAIT);
            cap_worker_finish(wk);
        }
        lt_writer_close(w, NULL, 0, NULL, 0);
        return CAP_EXIT_RUNTIME;
    }
    int code = cap_server_run(srv, st, wk);
    cap_store_done(st, cap_worker_finish(wk));
    if (code == CAP_EXIT_OK && cap_store_error(st)) {
        cap_log("writing the output failed: %s", lt_strerror(cap_store_error(st)));
        code = write_exit(cap_store_error(st));
    }
    uint64_t file_bytes = lt_writer_bytes(w);
    rc = cap_store_close_writer(st, w);
    if (rc < 0 && code == CAP_EXIT_OK) {
        cap_log("finishing '%s' failed: %s", o->output, lt_strerror(rc));
        code = write_exit(rc);
    }
    cap_totals t;
    uint32_t active;
    uint64_t clients;
    cap_store_totals(st, &t);
    cap_server_counts(srv, &active, &clients);
    cap_summary(o->output, &t, st, clients, file_bytes, code);
    cap_store_free(st);
    return code;
}

/* ---- -o on a FIFO -------------------------------------------------------- */

typedef struct fifo_wait {
    const char *path;
    uv_timer_t poll;
    uv_signal_t sigint, sigterm;
    int fd;                 /* the FIFO open for writing, once it has a reader */
    int err;                /* errno of a failed open; -1: stopped by a signal */
    int closed;             /* handles closed (3: all) */
} fifo_wait;

static void fifo_closed(uv_handle_t *h) {
    ((fifo_wait *)h->data)->closed++;
}

static void fifo_done(fifo_wait *f) {
    uv_close((uv_handle_t *)&f->poll, fifo_closed);
    uv_close((uv_handle_t *)&f->sigint, fifo_closed);
    uv_close((uv_handle_t *)&f->sigterm, fifo_closed);
    uv_stop(f->poll.loop); /* the listener keeps the loop alive */
}

/* Opening a FIFO for writing blocks until it has a reader; with O_NONBLOCK
 * it fails with ENXIO instead: tried on a timer, the loop stays free. */
static void fifo_try(uv_timer_t *t) {
    fifo_wait *f = t->data;
    int fd = open(f->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENXIO) return;
    if (fd < 0) f->err = errno;
    f->fd = fd;
    fifo_done(f);
}

static void fifo_signal(uv_signal_t *s, int signum) {
    fifo_wait *f = s->data;
    (void)signum;
    f->err = -1;
    fifo_done(f);
}

/* With -f, an output that is a FIFO is opened once a reader opened it: the
 * port is printed first, one line says the daemon waits, and SIGINT or
 * SIGTERM ends the wait. Returns 0 with *fd open for writing (keep it open
 * while lt_writer_open() opens the path again: it then cannot block), or
 * an exit code. */
static int wait_for_fifo_reader(cap_server *srv, uv_loop_t *loop, const char *path,
                                int *fd) {
    fifo_wait f = {.path = path, .fd = -1};
    *fd = -1;
    cap_server_print_port(srv);
    uv_timer_init(loop, &f.poll);
    uv_signal_init(loop, &f.sigint);
    uv_signal_init(loop, &f.sigterm);
    f.poll.data = f.sigint.data = f.sigterm.data = &f;
    uv_signal_start(&f.sigint, fifo_signal, SIGINT);
    uv_signal_start(&f.sigterm, fifo_signal, SIGTERM);
    uv_timer_start(&f.poll, fifo_try, 0, FIFO_POLL_MS);
    uv_run(loop, UV_RUN_ONCE); /* a reader already there: no line */
    if (f.fd < 0 && f.err == 0)
        cap_logn("'%s' is a FIFO: waiting for a reader to open it (clients are "
                 "served from then on)", path);
    if (!uv_is_closing((uv_handle_t *)&f.poll)) uv_run(loop, UV_RUN_DEFAULT);
    /* The handles live on this stack: their closing ends here. */
    while (f.closed < 3) uv_run(loop, UV_RUN_NOWAIT);
    if (f.fd >= 0) {
        *fd = f.fd;
        return 0;
    }
    if (f.err < 0)
        cap_log("stopped before a reader opened the FIFO '%s': nothing written", path);
    else
        cap_log("cannot open '%s': %s", path, strerror(f.err));
    return CAP_EXIT_OUTPUT;
}

static int is_fifo(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISFIFO(st.st_mode);
}

int main(int argc, char **argv) {
    cap_opts o;
    uv_loop_t loop;
    cap_server *srv = NULL;
    lt_writer *w = NULL;
    if (cap_connect_wanted(argc, argv)) return cap_connect_main(argc, argv);
    int code, rc = cap_opts_parse(&o, argc, argv);
    if (rc != 0) {
        cap_opts_free(&o);
        return rc > 0 ? CAP_EXIT_OK : CAP_EXIT_USAGE;
    }
    cap_log_init(o.verbosity);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* a file size limit must give EFBIG, not a kill */
    lt__nofile_raise();
    if (uv_loop_init(&loop) != 0) {
        cap_log("cannot start the event loop");
        cap_opts_free(&o);
        return CAP_EXIT_RUNTIME;
    }
    code = cap_server_bind(&srv, &loop, &o);
    if (code != 0) goto out;
    int fifo_fd = -1;
    if (is_fifo(o.output)) {
        if (!o.force) {
            cap_log("'%s' is a FIFO: give -f to write the capture into it (the "
                    "daemon then waits for a reader)", o.output);
            code = CAP_EXIT_OUTPUT;
            goto out;
        }
        if ((code = wait_for_fifo_reader(srv, &loop, o.output, &fifo_fd)) != 0) goto out;
    }
    errno = 0;
    rc = lt_writer_open(&w, o.output, o.force ? LT_WRITE_FORCE : 0,
                        CAP_NAME " " LT_VERSION_STRING, o.level);
    if (fifo_fd >= 0) close(fifo_fd);
    if (rc < 0) {
        int e = errno;
        if (rc == LT_EOPEN && e)
            cap_log("cannot create '%s': %s", o.output, strerror(e));
        else
            cap_log("cannot create '%s': %s", o.output, lt_strerror(rc));
        code = rc == LT_ENOMEM ? CAP_EXIT_RUNTIME : CAP_EXIT_OUTPUT;
        goto out;
    }
    code = capture(srv, &loop, &o, w);
out:
    cap_server_free(srv);
    if (uv_loop_close(&loop) != 0 && code == CAP_EXIT_OK) {
        cap_log("internal error: event loop not closed cleanly");
        code = CAP_EXIT_RUNTIME;
    }
    cap_opts_free(&o);
    return code;
}
