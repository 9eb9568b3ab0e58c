/* main.c -- capture-release: accepts profiled processes over TCP and writes
 * their events into one .tracy file. Options, setup and the exit code; the
 * work is in server.c, store.c and worker.c. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include "capture.h"

/* Many clients need many descriptors: use all the hard limit allows. */
static void raise_nofile(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == rl.rlim_max) return;
    rlim_t want = rl.rlim_max;
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 && want > 65536) {
        rl.rlim_cur = 65536;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
}

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

int main(int argc, char **argv) {
    cap_opts o;
    uv_loop_t loop;
    cap_server *srv = NULL;
    lt_writer *w = NULL;
    int code, rc = cap_opts_parse(&o, argc, argv);
    if (rc != 0) {
        cap_opts_free(&o);
        return rc > 0 ? CAP_EXIT_OK : CAP_EXIT_USAGE;
    }
    cap_log_init(o.verbosity);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* a file size limit must give EFBIG, not a kill */
    raise_nofile();
    if (uv_loop_init(&loop) != 0) {
        cap_log("cannot start the event loop");
        cap_opts_free(&o);
        return CAP_EXIT_RUNTIME;
    }
    code = cap_server_bind(&srv, &loop, &o);
    if (code != 0) goto out;
    errno = 0;
    rc = lt_writer_open(&w, o.output, o.force ? LT_WRITE_FORCE : 0,
                        CAP_NAME " " LT_VERSION_STRING, o.level);
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
