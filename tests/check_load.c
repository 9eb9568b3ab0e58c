/* check_load.c -- load on the real daemon: 256 client processes with
 * several threads each, every event accounted for exactly; a sustained
 * capture whose daemon RSS stays flat. */
#include <pthread.h>
#include "faults.h"

enum { NPROC = 256, NTHREAD = 4, UNITS = 500 };

typedef struct load_args {
    int ready_fd, go_fd;
    uint64_t units;
    int pace_us;            /* sustained mode: sleep between batches */
    uint64_t until_ns;      /* sustained mode: stop at this time */
} load_args;

typedef struct thr_args {
    const load_args *a;
    uint32_t loc, plot;
    int index;
} thr_args;

/* ZONE_BEGIN(work) PLOT(seq) ZONE_END per unit: 3 events. */
static void *thr_main(void *arg) {
    thr_args *t = arg;
    char name[16];
    snprintf(name, sizeof name, "worker-%d", t->index);
    lt_thread_name(name);
    uint64_t seq = 0;
    for (;;) {
        int batch = t->a->units ? 200 : 50;
        for (int i = 0; i < batch && (!t->a->units || seq < t->a->units); i++) {
            lt_zone_begin(t->loc);
            lt_plot(t->plot, (double)seq++);
            lt_zone_end();
        }
        if (t->a->units && seq >= t->a->units) break;
        if (!t->a->units && lt_now_ns() >= t->a->until_ns) break;
        if (t->a->pace_us) usleep((useconds_t)t->a->pace_us);
    }
    return NULL;
}

static int load_client(void *arg) {
    load_args *a = arg;
    if (lt_client_start() != 0) return 10;
    thr_args t[NTHREAD];
    pthread_t th[NTHREAD];
    uint32_t loc = lt_loc_register(LT_LOC_USER, "work", "check_load.c", 1);
    uint32_t plot = lt_plot_register("seq");
    char c = 'r';
    /* Connected: tell the parent, wait until everybody is. */
    if (a->ready_fd >= 0 && write(a->ready_fd, &c, 1) != 1) return 11;
    if (a->go_fd >= 0 && read(a->go_fd, &c, 1) != 1) return 11;
    for (int i = 0; i < NTHREAD; i++) {
        t[i] = (thr_args){a, loc, plot, i};
        if (i > 0 && pthread_create(&th[i], NULL, thr_main, &t[i]) != 0) return 12;
    }
    thr_main(&t[0]);
    for (int i = 1; i < NTHREAD; i++) pthread_join(th[i], NULL);
    return lt_client_active() ? 0 : 13;
}

/* Checks every thread of process p: plots 0..units-1 in order (units 0:
 * any count, returned in *total). Returns the process's event count. */
static uint64_t check_process(lt_reader *r, uint32_t p, uint64_t units,
                              uint64_t *plots_total) {
    uint32_t nt = lt_reader_nthreads(r, p);
    ck_assert_uint_ge(nt, NTHREAD);
    uint64_t events = 0, plots = 0, worker_threads = 0;
    for (uint32_t t = 1; t <= nt; t++) {
        lt_event ev;
        uint64_t seq = 0;
        int rc;
        ck_assert_int_eq(lt_reader_select(r, p, t), 0);
        while ((rc = lt_reader_next(r, &ev)) > 0) {
            if (!(ev.flags & LT_EVF_UNCLOSED)) events++;
            if (ev.type == LT_EV_PLOT) {
                ck_assert_msg(ev.value == (double)seq, "process %u thread %u: %g, want %llu",
                              p, t, ev.value, (unsigned long long)seq);
                seq++;
            }
        }
        ck_assert_msg(rc == 0, "%s", lt_reader_error(r));
        if (seq) worker_threads++;
        if (units) ck_assert_uint_eq(seq, seq ? units : 0);
        plots += seq;
    }
    ck_assert_uint_eq(worker_threads, NTHREAD);
    if (plots_total) *plots_total = plots;
    return events;
}

START_TEST(clients_256_processes_every_event_accounted) {
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    ft_daemon_start(&dm, &d, "-q", "-n", "256", NULL);
    int ready[2], go[2];
    ck_assert_int_eq(pipe(ready), 0);
    ck_assert_int_eq(pipe(go), 0);
    load_args a = {.ready_fd = ready[1], .go_fd = go[0], .units = UNITS};
    pid_t *pids = calloc(NPROC, sizeof *pids);
    for (int i = 0; i < NPROC; i++)
        pids[i] = ft_client(dm.port, (const char *[]){"TRACY_BUFFER_MB=4", NULL}, NULL,
                            load_client, &a);
    close(ready[1]);
    close(go[0]);
    /* All 256 connected at once before any starts its work. */
    for (int i = 0; i < NPROC; i++) {
        char c;
        ck_assert_int_eq(read(ready[0], &c, 1), 1);
    }
    char ones[NPROC];
    memset(ones, 'g', sizeof ones);
    ck_assert_int_eq(write(go[1], ones, sizeof ones), NPROC);
    close(go[1]);
    close(ready[0]);
    for (int i = 0; i < NPROC; i++) ck_assert_int_eq(ft_wait(pids[i], FT_WAIT_MS * 3), 0);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);

    lt_reader *r = ft_open(d.out);
    ck_assert_int_eq(lt_reader_info(r)->complete, 1);
    ck_assert_uint_eq(lt_reader_nprocesses(r), NPROC);
    ck_assert_uint_eq(ft_total(r, "clients_connected"), NPROC);
    uint64_t sent = 0, stored = 0;
    for (uint32_t p = 1; p <= NPROC; p++) {
        const lt_process *pr = lt_reader_process(r, p);
        ck_assert_int_eq(pr->status, LT_PROC_CLEAN);
        ck_assert_uint_eq(pr->events_lost, 0);
        /* received == sent, exactly, per process and per event read back */
        ck_assert_uint_eq(pr->events_received, pr->events_sent);
        ck_assert_uint_eq(check_process(r, p, UNITS, NULL), pr->events_received);
        sent += pr->events_sent;
        stored += pr->events_received;
    }
    ck_assert_uint_ge(sent, (uint64_t)NPROC * NTHREAD * UNITS * 3);
    ck_assert_uint_eq(ft_total(r, "events"), sent);
    ck_assert_uint_eq(stored, sent);
    ck_assert_uint_eq(ft_total(r, "lost_events"), 0);
    lt_reader_free(r);
    free(pids);
    ft_dir_clean(&d);
}
END_TEST

START_TEST(sustained_capture_daemon_rss_flat) {
    enum { NCL = 4, SECONDS = 18 };
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    ft_daemon_start(&dm, &d, "-q", "-n", "4", "-m", "16", NULL);
    load_args a = {.ready_fd = -1, .go_fd = -1, .pace_us = 20000,
                   .until_ns = lt_now_ns() + SECONDS * 1000000000ull};
    pid_t pids[NCL];
    for (int i = 0; i < NCL; i++)
        pids[i] = ft_client(dm.port, NULL, NULL, load_client, &a);
    /* RSS at a third of the run and at its end: no growth with length
     * (a generous margin for allocator noise; not a timing assertion). */
    usleep(SECONDS * 1000000 / 3);
    uint64_t rss_third = ft_rss_kib(dm.pid);
    while (lt_now_ns() + 500000000ull < a.until_ns) usleep(100000);
    uint64_t rss_end = ft_rss_kib(dm.pid);
    for (int i = 0; i < NCL; i++) ck_assert_int_eq(ft_wait(pids[i], FT_WAIT_MS), 0);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);
    ck_assert_uint_gt(rss_third, 0);
    ck_assert_msg(rss_end <= rss_third + rss_third / 2 + 16 * 1024,
                  "daemon RSS grew from %llu KiB to %llu KiB",
                  (unsigned long long)rss_third, (unsigned long long)rss_end);
    lt_reader *r = ft_open(d.out);
    uint64_t sum = 0;
    for (uint32_t p = 1; p <= NCL; p++) {
        const lt_process *pr = lt_reader_process(r, p);
        ck_assert_int_eq(pr->status, LT_PROC_CLEAN);
        ck_assert_uint_eq(pr->events_received, pr->events_sent);
        ck_assert_uint_eq(check_process(r, p, 0, NULL), pr->events_received);
        sum += pr->events_received;
    }
    ck_assert_uint_eq(ft_total(r, "events"), sum);
    lt_reader_free(r);
    ft_dir_clean(&d);
}
END_TEST

Suite *load_suite(void) {
    Suite *s = suite_create("load");
    TCase *tc = tcase_create("many_clients");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, clients_256_processes_every_event_accounted);
    suite_add_tcase(s, tc);
    tc = tcase_create("sustained");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, sustained_capture_daemon_rss_flat);
    suite_add_tcase(s, tc);
    return s;
}
