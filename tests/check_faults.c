/* check_faults.c -- faults with the real daemon and real client processes:
 * the daemon or a client killed with SIGKILL, a full disk, unusable options,
 * a client started before its daemon, drop-mode accounting end to end. */
#include "faults.h"

/* ---- Client workloads (run in forked children) --------------------------- */

/* Units of work: ZONE_BEGIN(work) PLOT(seq) ZONE_END, three events each. */
typedef struct stream_args {
    int report_fd;          /* the child writes its flushed seq here, or -1 */
    int go_fd;              /* the child reads one byte here before its tail */
    uint64_t units;         /* 0: until the connection breaks (or 60 s) */
    uint64_t tail_units;    /* sent after go_fd said so */
    int open_outer;         /* keep an "outer" zone open all along */
    int pace_us;            /* sleep after each batch of 200 units */
} stream_args;

static void unit(uint32_t loc, uint32_t plot, uint64_t seq) {
    lt_zone_begin(loc);
    lt_plot(plot, (double)seq);
    lt_zone_end();
}

static int stream_client(void *arg) {
    stream_args *a = arg;
    if (lt_client_start() != 0) return 10;
    uint32_t outer = lt_loc_register(LT_LOC_USER, "outer", "check_faults.c", 1);
    uint32_t loc = lt_loc_register(LT_LOC_USER, "work", "check_faults.c", 2);
    uint32_t plot = lt_plot_register("seq");
    if (a->open_outer) lt_zone_begin(outer);
    uint64_t seq = 0, t0 = lt_now_ns();
    for (;;) {
        for (int i = 0; i < 200; i++) unit(loc, plot, seq++);
        if (a->report_fd >= 0) {
            /* Everything up to seq is on its way once the flush returns. */
            if (lt_client_flush() != 0) break;
            if (write(a->report_fd, &seq, sizeof seq) != sizeof seq) break;
        }
        if (a->pace_us) usleep((useconds_t)a->pace_us);
        if (a->units && seq >= a->units) break;
        if (!a->units && (!lt_client_active() || lt_now_ns() - t0 > 60000000000ull))
            break;
    }
    if (a->go_fd >= 0) {
        char c;
        if (read(a->go_fd, &c, 1) != 1) return 11;
        for (uint64_t i = 0; i < a->tail_units; i++) unit(loc, plot, seq++);
    }
    if (a->open_outer) lt_zone_end();
    return 0;
}

/* Reads the plot values of stream (p, 1) and checks they are 0, 1, 2, ...;
 * returns how many there are. Counts zone ends flagged aborted. */
static uint64_t seq_units(lt_reader *r, uint32_t p, uint64_t *aborted,
                          uint64_t *last_ts) {
    lt_event ev;
    uint64_t seq = 0, ab = 0;
    int rc;
    ck_assert_int_eq(lt_reader_select(r, p, 1), 0);
    while ((rc = lt_reader_next(r, &ev)) > 0) {
        if (ev.type == LT_EV_PLOT) {
            ck_assert_msg(ev.value == (double)seq, "process %u: plot %g, want %llu", p,
                          ev.value, (unsigned long long)seq);
            seq++;
        }
        if (ev.type == LT_EV_ZONE_END && (ev.flags & LT_EVF_ABORTED)) ab++;
        if (last_ts && ev.ts > *last_ts) *last_ts = ev.ts;
    }
    ck_assert_msg(rc == 0, "read error: %s", lt_reader_error(r));
    if (aborted) *aborted = ab;
    return seq;
}

/* ---- Daemon killed ----------------------------------------------------- */

START_TEST(daemon_kill9_loses_at_most_the_last_second) {
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    ft_daemon_start(&dm, &d, "-q", NULL);
    char cerr[160];
    snprintf(cerr, sizeof cerr, "%s/client.err", d.dir);
    stream_args a = {.report_fd = -1, .go_fd = -1, .pace_us = 2000};
    pid_t c = ft_client(dm.port, NULL, cerr, stream_client, &a);
    /* Let data reach the file, then let the client go on for a while. */
    ck_assert_uint_gt(ft_wait_events(d.out, 30000), 0);
    usleep(1500000);
    uint64_t t_kill = lt_now_ns();
    kill(dm.pid, SIGKILL);
    ck_assert_int_eq(ft_daemon_wait(&dm), 128 + SIGKILL);
    /* The client notices, warns once, and its program carries on to its
     * end. */
    ck_assert_int_eq(ft_wait(c, FT_WAIT_MS), 0);
    char *cs = ft_slurp(cerr);
    ck_assert_msg(ft_count_lines(cs) == 1 && strncmp(cs, "tracy: ", 7) == 0,
                  "client stderr: %s", cs);
    free(cs);

    lt_reader *r = ft_open(d.out);
    ck_assert_int_eq(lt_reader_info(r)->complete, 0);
    uint64_t last_ts = 0, n = seq_units(r, 1, NULL, &last_ts);
    ck_assert_uint_gt(n, 0);
    /* The daemon writes every stream at least once a second and the client
     * sends every 50 ms: what is missing is at most about the last second
     * (2 s allowed for scheduling on a busy machine). */
    ck_assert_msg(last_ts + 2000000000ull >= t_kill,
                  "last event %.3f s before the kill",
                  (double)(t_kill - last_ts) / 1e9);
    lt_reader_free(r);

    /* tracy-info: truncated, exit 3. */
    char out[160];
    snprintf(out, sizeof out, "%s/info.txt", d.dir);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-info"), d.out, NULL), 3);
    char *s = ft_slurp(out);
    ck_assert_msg(strstr(s, "truncated"), "%s", s);
    free(s);
    ft_dir_clean(&d);
}
END_TEST

/* ---- Client killed ---------------------------------------------------- */

START_TEST(client_kill9_keeps_its_data_and_others_go_on) {
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    ft_daemon_start(&dm, &d, "-n", "2", NULL);
    int rep[2], go[2];
    ck_assert_int_eq(pipe(rep), 0);
    ck_assert_int_eq(pipe(go), 0);
    /* The victim keeps an outer zone open and reports what it flushed. */
    stream_args va = {.report_fd = rep[1], .go_fd = -1, .open_outer = 1, .pace_us = 1000};
    pid_t victim = ft_client(dm.port, NULL, NULL, stream_client, &va);
    close(rep[1]);
    /* The survivor sends 20000 units, waits for the kill, sends 5000 more. */
    stream_args sa = {.report_fd = -1, .go_fd = go[0], .units = 20000, .tail_units = 5000};
    pid_t survivor = ft_client(dm.port, NULL, NULL, stream_client, &sa);
    close(go[0]);
    uint64_t flushed = 0, got;
    while (flushed < 10000 && read(rep[0], &got, sizeof got) == sizeof got) flushed = got;
    ck_assert_uint_ge(flushed, 10000);
    kill(victim, SIGKILL);
    ck_assert_int_eq(ft_wait(victim, FT_WAIT_MS), 128 + SIGKILL);
    close(rep[0]);
    ck_assert_int_eq(write(go[1], "g", 1), 1);
    close(go[1]);
    ck_assert_int_eq(ft_wait(survivor, FT_WAIT_MS), 0);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);

    lt_reader *r = ft_open(d.out);
    ck_assert_int_eq(lt_reader_info(r)->complete, 1);
    ck_assert_uint_eq(lt_reader_nprocesses(r), 2);
    uint32_t vi = 0, si = 0;
    for (uint32_t p = 1; p <= 2; p++) {
        if (lt_reader_process(r, p)->pid == (uint64_t)victim) vi = p;
        if (lt_reader_process(r, p)->pid == (uint64_t)survivor) si = p;
    }
    ck_assert(vi && si);
    const lt_process *vp = lt_reader_process(r, vi), *sp = lt_reader_process(r, si);
    /* The victim: everything it flushed, in order; ended abnormally; its
     * open zones closed at its last timestamp and flagged. */
    ck_assert_int_eq(vp->status, LT_PROC_LOST);
    uint64_t aborted;
    ck_assert_uint_ge(seq_units(r, vi, &aborted, NULL), flushed);
    ck_assert_uint_ge(aborted, 1);
    ck_assert_uint_eq(ft_total(r, "zones_aborted"), aborted);
    ck_assert_uint_eq(ft_total(r, "clients_lost"), 1);
    /* The survivor: all of it, before and after the kill. */
    ck_assert_int_eq(sp->status, LT_PROC_CLEAN);
    ck_assert_uint_eq(seq_units(r, si, &aborted, NULL), 25000);
    ck_assert_uint_eq(aborted, 0);
    ck_assert_uint_eq(sp->events_received, sp->events_sent);
    lt_reader_free(r);

    /* tracy-info and tracy-sql show the victim as lost; tracy-info's exit
     * code 6 says that data was lost. */
    char out[160];
    snprintf(out, sizeof out, "%s/info.json", d.dir);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-info"), "--json", d.out, NULL), 6);
    char *s = ft_slurp(out);
    ck_assert_msg(strstr(s, "\"status\":\"lost\""), "%s", s);
    ck_assert_msg(strstr(s, "\"status\":\"clean\""), "%s", s);
    free(s);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-sql"), d.out,
                             "SELECT status, count(*) FROM process GROUP BY status ORDER BY status",
                             NULL), 0);
    s = ft_slurp(out);
    ck_assert_str_eq(s, "status,count(*)\nclean,1\nlost,1\n");
    free(s);
    /* The aborted zones as slices: the daemon closed them, flagged. */
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-sql"), d.out,
                             "SELECT value FROM stats WHERE name = 'clients_lost' "
                             "AND severity = 'data_loss'", NULL), 0);
    s = ft_slurp(out);
    ck_assert_str_eq(s, "value\n1\n");
    free(s);
    ft_dir_clean(&d);
}
END_TEST

/* ---- Disk full -------------------------------------------------------- */

static int noisy_client(void *arg) {
    (void)arg;
    if (lt_client_start() != 0) return 10;
    uint64_t x = 88172645463325252ull;
    char text[240];
    /* Pseudo-random text compresses poorly: it fills the disk fast. */
    for (int m = 0; m < 200000 && lt_client_active(); m++) {
        for (size_t i = 0; i < sizeof text; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            text[i] = (char)('!' + x % 90);
        }
        lt_message(text, sizeof text);
    }
    return 0;
}

START_TEST(disk_full_stops_with_exit_4_and_a_readable_file) {
    ft_dir d;
    ft_dir_init(&d);
    char mnt[128], out[160], err[160];
    snprintf(mnt, sizeof mnt, "%s/small", d.dir);
    ck_assert_int_eq(mkdir(mnt, 0755), 0);
    /* A 256 KiB tmpfs when we may mount one, else a 256 KiB file size
     * limit: either way the output cannot grow past 256 KiB. */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=256k tmpfs '%s' 2>/dev/null", mnt);
    int mounted = geteuid() == 0 && system(cmd) == 0;
    snprintf(out, sizeof out, "%s/run.tracy", mnt);
    snprintf(err, sizeof err, "%s/stderr.txt", d.dir);
    ft_daemon dm;
    char *argv[] = {"/bin/sh", "-c", "ulimit -f 512; exec \"$0\" \"$@\"",
                    (char *)ft_bin("capture-release"), "-o", out, "-a", "127.0.0.1", "-p", "0", "-q",
                    "--level", "1", NULL};
    ft_spawn(&dm, mounted ? argv + 3 : argv, err, 1);
    pid_t c = ft_client(dm.port, (const char *[]){"TRACY_QUIET=1", NULL}, NULL,
                        noisy_client, NULL);
    int drc = ft_daemon_wait(&dm), crc = ft_wait(c, FT_WAIT_MS);
    if (mounted) {
        /* Read the result from a copy: the small disk goes before any
         * assertion can fail and leave it mounted. */
        char copy[160];
        snprintf(copy, sizeof copy, "%s/run.tracy", d.dir);
        snprintf(cmd, sizeof cmd, "cp '%s' '%s' && umount '%s'", out, copy, mnt);
        ck_assert_int_eq(system(cmd), 0);
        strcpy(out, copy);
    }
    ck_assert_int_eq(drc, 4);
    ck_assert_int_eq(crc, 0);
    char *s = ft_slurp(err);
    ck_assert_msg(strstr(s, mounted ? "no space left" : "file too large"), "%s", s);
    ck_assert_msg(strncmp(s, "capture-release: ", 17) == 0, "%s", s);
    free(s);
    lt_reader *r = ft_open(out);
    ck_assert_int_eq(lt_reader_info(r)->complete, 0);
    ck_assert_uint_gt(lt_reader_info(r)->n_events, 0);
    lt_event ev;
    int rc;
    uint64_t n = 0;
    while ((rc = lt_reader_next(r, &ev)) > 0) n++;
    ck_assert_msg(rc == 0, "%s", lt_reader_error(r));
    ck_assert_uint_ge(n, lt_reader_info(r)->n_events);
    lt_reader_free(r);
    char info[160];
    snprintf(info, sizeof info, "%s/info.txt", d.dir);
    ck_assert_int_eq(ft_tool(info, err, ft_bin("tracy-info"), out, NULL), 3);
    ft_dir_clean(&d);
}
END_TEST

/* ---- Unusable options: one line, documented exit code ------------------- */

static void expect_one_line(const ft_dir *d, int code, char *const *args) {
    char *argv[20] = {(char *)ft_bin("capture-release")};
    int n = 1;
    for (; *args; args++) argv[n++] = *args;
    argv[n] = NULL;
    ft_daemon dm;
    ft_spawn(&dm, argv, d->err, 0);
    int rc = ft_daemon_wait(&dm);
    char *s = ft_slurp(d->err);
    ck_assert_msg(rc == code, "%s %s: exit %d, want %d (%s)", argv[1], argv[2] ? argv[2] : "",
                  rc, code, s);
    ck_assert_msg(ft_count_lines(s) == 1 && strncmp(s, "capture-release: ", 17) == 0,
                  "%s %s: want one line, got: %s", argv[1], argv[2] ? argv[2] : "", s);
    free(s);
}

START_TEST(unusable_options_one_line_documented_exit) {
    ft_dir d;
    ft_dir_init(&d);
    char nodir[160], token[160];
    snprintf(nodir, sizeof nodir, "%s/missing/run.tracy", d.dir);
    snprintf(token, sizeof token, "%s/no-token", d.dir);
    /* 2: the output cannot be created. */
    expect_one_line(&d, 2, (char *[]){"-o", nodir, "-a", "127.0.0.1", "-p", "0", NULL});
    expect_one_line(&d, 2, (char *[]){"-o", d.dir, "-f", "-a", "127.0.0.1", "-p", "0", NULL});
    expect_one_line(&d, 2, (char *[]){"-o", "/proc/run.tracy", "-a", "127.0.0.1", "-p", "0", NULL});
    /* 3: the port is taken. */
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(ls, 1), 0);
    socklen_t al = sizeof a;
    getsockname(ls, (struct sockaddr *)&a, &al);
    char port[16];
    snprintf(port, sizeof port, "%d", ntohs(a.sin_port));
    expect_one_line(&d, 3, (char *[]){"-o", d.out, "-a", "127.0.0.1", "-p", port, NULL});
    close(ls);
    ck_assert_int_eq(access(d.out, F_OK), -1);
    /* 1: bad values. */
    char *bad[][4] = {
        {"-p", "abc"}, {"-p", "70000"}, {"-p", "-1"}, {"-m", "0"}, {"-m", "lots"},
        {"-s", "soon"}, {"-s", "-1"}, {"-n", "x"}, {"-n", "-3"},
        {"--max-clients", "0"}, {"--max-message", "1"}, {"--handshake-timeout", "0"},
        {"--level", "99"}, {"-a", "1.2.3.999"}, {"-a", "localhost:80"},
        {"--token-file", token}, {"-a", "0.0.0.0"}, {"--bogus"}, {"-p"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *args[8] = {"-o", d.out, bad[i][0], bad[i][1], NULL};
        expect_one_line(&d, 1, args);
    }
    ck_assert_int_eq(access(d.out, F_OK), -1);
    ft_dir_clean(&d);
}
END_TEST

/* ---- The output file: links and a full disk ------------------------------ */

/* capture-release -o OUT -p 0 -q -s 0.2 EXTRA (no client): its exit code. */
static int short_capture(const ft_dir *d, const char *out, const char *extra) {
    char *argv[] = {(char *)ft_bin("capture-release"), "-o", (char *)out, "-a", "127.0.0.1", "-p", "0",
                    "-q", "-s", "0.2", (char *)extra, NULL};
    ft_daemon dm;
    ft_spawn(&dm, argv, d->err, 0);
    return ft_daemon_wait(&dm);
}

START_TEST(force_replaces_a_link_never_its_target) {
    ft_dir d;
    ft_dir_init(&d);
    char target[160];
    snprintf(target, sizeof target, "%s/precious.txt", d.dir);
    FILE *f = fopen(target, "w");
    fputs("precious", f);
    fclose(f);
    ck_assert_int_eq(symlink(target, d.out), 0);
    /* Without -f a link is an existing name, even a dangling one. */
    ck_assert_int_eq(short_capture(&d, d.out, NULL), 2);
    char *s = ft_slurp(d.err);
    ck_assert_msg(strstr(s, "file exists"), "%s", s);
    free(s);
    /* With -f the link is replaced by the capture; its target is kept. */
    ck_assert_int_eq(short_capture(&d, d.out, "-f"), 0);
    s = ft_slurp(target);
    ck_assert_str_eq(s, "precious");
    free(s);
    struct stat st;
    ck_assert_int_eq(lstat(d.out, &st), 0);
    ck_assert_msg(S_ISREG(st.st_mode), "the output is still a link");
    lt_reader *r = ft_open(d.out);
    ck_assert_int_eq(lt_reader_info(r)->complete, 1);
    lt_reader_free(r);
    /* No temporary file is left in the directory. */
    char cmd[200];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 3", d.dir);
    ck_assert_int_eq(system(cmd), 0);
    ft_dir_clean(&d);
}
END_TEST

START_TEST(full_disk_at_open_leaves_no_file) {
    ft_dir d;
    ft_dir_init(&d);
    char mnt[128], out[160], cmd[600];
    snprintf(mnt, sizeof mnt, "%s/small", d.dir);
    ck_assert_int_eq(mkdir(mnt, 0755), 0);
    /* A 64 KiB tmpfs filled up when we may mount one, else a file size
     * limit of 0: either way the header cannot be written. */
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=64k tmpfs '%s' 2>/dev/null", mnt);
    int mounted = geteuid() == 0 && system(cmd) == 0;
    if (mounted) {
        snprintf(cmd, sizeof cmd, "dd if=/dev/zero of='%s/fill' bs=4k 2>/dev/null", mnt);
        (void)system(cmd);
    }
    snprintf(out, sizeof out, "%s/run.tracy", mnt);
    char *argv[] = {"/bin/sh", "-c", "ulimit -f 0; exec \"$0\" \"$@\"",
                    (char *)ft_bin("capture-release"), "-o", out, "-a", "127.0.0.1", "-p", "0", "-q",
                    "-s", "0.2", NULL};
    ft_daemon dm;
    ft_spawn(&dm, mounted ? argv + 3 : argv, d.err, 0);
    int rc = ft_daemon_wait(&dm);
    int left = access(out, F_OK) == 0;
    if (mounted) {
        snprintf(cmd, sizeof cmd, "umount '%s'", mnt);
        ck_assert_int_eq(system(cmd), 0);
    }
    char *s = ft_slurp(d.err);
    ck_assert_msg(rc == 2, "exit %d: %s", rc, s);
    ck_assert_msg(strstr(s, mounted ? "no space left" : "file too large"), "%s", s);
    free(s);
    ck_assert_msg(!left, "a file was left at %s", out);
    /* The next run, without -f, creates it. */
    ck_assert_int_eq(short_capture(&d, out, NULL), 0);
    lt_reader *r = ft_open(out);
    ck_assert_int_eq(lt_reader_info(r)->complete, 1);
    lt_reader_free(r);
    ft_dir_clean(&d);
}
END_TEST

/* ---- Client started before the daemon ----------------------------------- */

typedef struct work_args {
    uint64_t units;
    int expect_active;
} work_args;

static int plain_work(void *arg) {
    work_args *a = arg;
    uint32_t loc = lt_loc_register(LT_LOC_USER, "work", "check_faults.c", 3);
    uint32_t plot = lt_plot_register("seq");
    uint64_t sum = 0;
    for (uint64_t i = 0; i < a->units; i++) {
        unit(loc, plot, i);
        sum += i;
    }
    if (lt_client_active() != a->expect_active) return 20;
    /* The program's own result is right either way. */
    return sum == a->units * (a->units - 1) / 2 ? 0 : 21;
}

START_TEST(client_without_daemon_warns_once_and_runs) {
    ft_dir d;
    ft_dir_init(&d);
    work_args w = {.units = 50000, .expect_active = 0};
    pid_t c = ft_client(ft_free_port(), NULL, d.err, plain_work, &w);
    ck_assert_int_eq(ft_wait(c, FT_WAIT_MS), 0);
    char *s = ft_slurp(d.err);
    ck_assert_msg(ft_count_lines(s) == 1, "want one warning, got: %s", s);
    ck_assert_msg(strncmp(s, "tracy: no capture daemon at 127.0.0.1:", 38) == 0, "%s", s);
    ck_assert_msg(strstr(s, "running unprofiled"), "%s", s);
    free(s);
    ft_dir_clean(&d);
}
END_TEST

START_TEST(client_waits_for_a_late_daemon_with_tracy_wait) {
    ft_dir d;
    ft_dir_init(&d);
    int port = ft_free_port();
    char cerr[160], ps[16];
    snprintf(cerr, sizeof cerr, "%s/client.err", d.dir);
    snprintf(ps, sizeof ps, "%d", port);
    work_args w = {.units = 3000, .expect_active = 1};
    pid_t c = ft_client(port, (const char *[]){"TRACY_WAIT=30", NULL}, cerr, plain_work, &w);
    usleep(500000); /* the client is retrying by now (or soon) */
    ft_daemon dm;
    char *argv[] = {(char *)ft_bin("capture-release"), "-o", d.out, "-a", "127.0.0.1", "-p", ps, "-q", NULL};
    ft_spawn(&dm, argv, d.err, 0);
    ck_assert_int_eq(ft_wait(c, FT_WAIT_MS), 0);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);
    char *s = ft_slurp(cerr);
    ck_assert_msg(*s == 0, "client stderr: %s", s);
    free(s);
    lt_reader *r = ft_open(d.out);
    ck_assert_uint_eq(lt_reader_nprocesses(r), 1);
    ck_assert_int_eq(lt_reader_process(r, 1)->status, LT_PROC_CLEAN);
    ck_assert_uint_eq(seq_units(r, 1, NULL, NULL), 3000);
    lt_reader_free(r);
    ft_dir_clean(&d);
}
END_TEST

/* ---- A daemon that answers wrongly --------------------------------------- */

/* Listens on loopback; returns the socket, port in *port. */
static int fake_listen(int *port) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(ls, 4), 0);
    socklen_t al = sizeof a;
    getsockname(ls, (struct sockaddr *)&a, &al);
    *port = ntohs(a.sin_port);
    return ls;
}

START_TEST(client_against_a_wrong_daemon_warns_once_and_runs) {
    static const struct {
        const char *answer;
        size_t len;
        const char *expect;
    } cases[] = {
        /* REFUSE 1.0 "no room" */
        {"\x0d\x00\x00\x00\x82\x01\x00\x00\x00\x07no room", 17, "refused the connection (no room"},
        /* WELCOME from a version 2 daemon */
        {"\x0e\x00\x00\x00\x81TRCYWIRE\x02\x00\x00\x00\x01", 18, "speaks protocol 2.0"},
        /* a reason with a line break and a terminal escape: still one line */
        {"\x13\x00\x00\x00\x82\x01\x00\x00\x00\x0dno\nroom\x1b[31m!", 23, "refused the connection (no?room?[31m!"},
        /* not a capture daemon at all */
        {"HTTP/1.0 400 Bad Request\r\n\r\n", 28, "not a capture daemon"},
        /* closes without a word */
        {"", 0, "closed the connection"},
    };
    ft_dir d;
    ft_dir_init(&d);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int port, ls = fake_listen(&port);
        work_args w = {.units = 20000, .expect_active = 0};
        pid_t c = ft_client(port, NULL, d.err, plain_work, &w);
        int fd = accept(ls, NULL, NULL);
        ck_assert_int_ge(fd, 0);
        uint8_t h[5], body[4096];
        ck_assert_int_eq(recv(fd, h, 5, MSG_WAITALL), 5);
        uint32_t len = h[0] | h[1] << 8 | h[2] << 16 | (uint32_t)h[3] << 24;
        ck_assert_int_eq(h[4], 0x01);
        ck_assert_uint_le(len - 1, sizeof body);
        ck_assert_int_eq(recv(fd, body, len - 1, MSG_WAITALL), (ssize_t)len - 1);
        if (cases[k].len) ck_assert_int_eq(send(fd, cases[k].answer, cases[k].len, 0),
                                           (ssize_t)cases[k].len);
        close(fd);
        ck_assert_int_eq(ft_wait(c, FT_WAIT_MS), 0);
        close(ls);
        char *s = ft_slurp(d.err);
        ck_assert_msg(ft_count_lines(s) == 1 && strncmp(s, "tracy: ", 7) == 0,
                      "case %zu: %s", k, s);
        ck_assert_msg(strstr(s, cases[k].expect), "case %zu: %s", k, s);
        ck_assert_msg(strstr(s, "running unprofiled"), "case %zu: %s", k, s);
        free(s);
    }
    ft_dir_clean(&d);
}
END_TEST

/* ---- The open-file limit ------------------------------------------------- */

enum { FD_FLOOD = 1000 };

START_TEST(fd_limit_refusals_are_told_counted_and_logged) {
    ft_dir d;
    ft_dir_init(&d);
    /* This process holds FD_FLOOD sockets: lift its own soft limit. */
    struct rlimit rl;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < FD_FLOOD + 64 && rl.rlim_max >= FD_FLOOD + 64) {
        rl.rlim_cur = FD_FLOOD + 64;
        ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    }
    ck_assert_uint_ge(rl.rlim_cur, FD_FLOOD + 64);
    ft_daemon dm;
    char *argv[] = {"/bin/sh", "-c", "ulimit -n 256; exec \"$0\" \"$@\"",
                    (char *)ft_bin("capture-release"), "-o", d.out, "-a", "127.0.0.1", "-p", "0", "-s", "600",
                    "--handshake-timeout", "600000", NULL};
    ft_spawn(&dm, argv, d.err, 1);
    /* Silent connections: the first ones hold the daemon's descriptors. */
    int fds[FD_FLOOD];
    for (int i = 0; i < FD_FLOOD; i++) fds[i] = ft_connect(dm.port, FT_WAIT_MS);
    /* A real client past the limit is told why and runs unprofiled. */
    char cerr[160];
    snprintf(cerr, sizeof cerr, "%s/client.err", d.dir);
    work_args w = {.units = 20000, .expect_active = 0};
    pid_t c = ft_client(dm.port, NULL, cerr, plain_work, &w);
    ck_assert_int_eq(ft_wait(c, FT_WAIT_MS), 0);
    char *s = ft_slurp(cerr);
    ck_assert_msg(ft_count_lines(s) == 1 && strstr(s, "refused the connection (too many "
                                                      "clients for the open-file limit"),
                  "client stderr: %s", s);
    ck_assert_msg(strstr(s, "running unprofiled"), "%s", s);
    free(s);
    /* Those refused were told so too. */
    int told = 0;
    for (int i = 0; i < FD_FLOOD; i++) {
        struct pollfd p = {fds[i], POLLIN, 0};
        uint8_t h[5];
        if (poll(&p, 1, 0) == 1 && recv(fds[i], h, 5, MSG_DONTWAIT) == 5 && h[4] == 0x82)
            told++;
        close(fds[i]);
    }
    ck_assert_int_gt(told, FD_FLOOD / 2);
    kill(dm.pid, SIGINT);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);
    /* Every connection is counted: those refused at the limit, those
     * closed before saying HELLO, the real client. */
    lt_reader *r = ft_open(d.out);
    ck_assert_uint_eq(ft_total(r, "clients_refused"), FD_FLOOD + 1);
    ck_assert_uint_eq(ft_total(r, "clients_connected"), 0);
    lt_reader_free(r);
    /* Logged, one line a second at most for the flood. */
    s = ft_slurp(d.err);
    int lines = 0;
    for (char *q = s; (q = strstr(q, "open-file limit")); q++) lines++;
    ck_assert_msg(lines >= 1 && lines < 50, "%d lines: %s", lines, s);
    ck_assert_msg(strstr(s, "more connections: too many clients for the open-file limit"),
                  "%s", s);
    free(s);
    ft_dir_clean(&d);
}
END_TEST

/* ---- Accounting: drop mode ----------------------------------------------- */

typedef struct drop_args {
    int go_fd, done_fd;
} drop_args;

static int drop_client(void *arg) {
    drop_args *a = arg;
    if (lt_client_start() != 0) return 10;
    uint32_t loc = lt_loc_register(LT_LOC_USER, "work", "check_faults.c", 4);
    uint32_t plot = lt_plot_register("seq");
    for (uint64_t i = 0; i < 100; i++) unit(loc, plot, i);
    char ch;
    /* Once the daemon is stopped: far more than the 1 MiB of buffers and
     * what the sockets hold. */
    if (read(a->go_fd, &ch, 1) != 1) return 11;
    for (uint64_t i = 0; i < 1500000; i++) unit(loc, plot, i);
    if (write(a->done_fd, "d", 1) != 1) return 11;
    if (read(a->go_fd, &ch, 1) != 1) return 11;
    for (uint64_t i = 0; i < 1000; i++) unit(loc, plot, i);
    uint64_t sent, lost;
    lt_client_counts(&sent, &lost);
    return lost > 0 ? 0 : 12;
}

START_TEST(drop_mode_losses_are_counted_everywhere) {
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    ft_daemon_start(&dm, &d, "-q", NULL);
    int go[2], done[2];
    ck_assert_int_eq(pipe(go), 0);
    ck_assert_int_eq(pipe(done), 0);
    /* The daemon stops reading (SIGSTOP): the client's socket and buffers
     * fill up and, in drop mode, it drops and counts. */
    drop_args da = {go[0], done[1]};
    pid_t c = ft_client(dm.port,
                        (const char *[]){"TRACY_DROP=1", "TRACY_BUFFER_MB=1", NULL},
                        NULL, drop_client, &da);
    close(go[0]);
    close(done[1]);
    ck_assert_uint_gt(ft_wait_events(d.out, 1), 0);
    kill(dm.pid, SIGSTOP);
    ck_assert_int_eq(write(go[1], "g", 1), 1);
    char ch;
    ck_assert_int_eq(read(done[0], &ch, 1), 1);
    kill(dm.pid, SIGCONT);
    ck_assert_int_eq(write(go[1], "g", 1), 1);
    close(go[1]);
    close(done[0]);
    ck_assert_int_eq(ft_wait(c, FT_WAIT_MS), 0);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);

    lt_reader *r = ft_open(d.out);
    const lt_process *p = lt_reader_process(r, 1);
    ck_assert_int_eq(p->status, LT_PROC_CLEAN);
    /* LOST records in the stream add up to the client's own count. */
    lt_event ev;
    uint64_t lost_recs = 0, events = 0;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0) {
        if (!(ev.flags & LT_EVF_UNCLOSED)) events++;
        if (ev.type == LT_EV_LOST) lost_recs += ev.count;
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_gt(p->events_lost, 0);
    ck_assert_uint_eq(lost_recs, p->events_lost);
    ck_assert_uint_eq(ft_total(r, "events_lost_client"), p->events_lost);
    ck_assert_uint_eq(ft_total(r, "lost_events"), p->events_lost);
    /* Sent = stored: what was dropped never left the client. */
    ck_assert_uint_eq(p->events_received, p->events_sent);
    ck_assert_uint_eq(events, p->events_received);
    uint64_t lost = p->events_lost;
    lt_reader_free(r);

    char out[160], want[128];
    snprintf(out, sizeof out, "%s/q.txt", d.dir);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-info"), "--json", d.out, NULL),
                     lost ? 6 : 0);
    char *s = ft_slurp(out);
    snprintf(want, sizeof want, "\"lost_events\":%llu,", (unsigned long long)lost);
    ck_assert_msg(strstr(s, want), "want %s in %s", want, s);
    free(s);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-info"), d.out, NULL), lost ? 6 : 0);
    s = ft_slurp(out);
    snprintf(want, sizeof want, "lost events:      %llu\n", (unsigned long long)lost);
    ck_assert_msg(strstr(s, want), "want %s in %s", want, s);
    free(s);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-sql"), d.out,
                             "SELECT value FROM stats WHERE name = 'events_lost_client' "
                             "AND severity = 'data_loss'", NULL), 0);
    s = ft_slurp(out);
    snprintf(want, sizeof want, "value\n%llu\n", (unsigned long long)lost);
    ck_assert_str_eq(s, want);
    free(s);
    ft_dir_clean(&d);
}
END_TEST

/* ---- Bad protocol input, many at once ------------------------------------ */

enum { CYCLES = 2000, HELLO_CYCLES = 100 };

/* After the handshake: each breaks the protocol in one way. */
static void bad_after_hello(int port, int k) {
    int fd = raw_open(port, 900 + (uint64_t)k);
    raw_zones(fd, 5); /* 10 good events first: they stay */
    wbuf b = {.n = 0};
    switch (k) {
    case 0: /* invalid UTF-8 in a location name */
        w_u8(&b, LT_TAG_LOC_DEF), w_var(&b, 2), w_u8(&b, LT_LOC_USER), w_var(&b, 1);
        w_strn(&b, "bad\xff", 4), w_str(&b, "raw.c");
        raw_msg(fd, 0x03, &b);
        break;
    case 1: /* invalid UTF-8 in a message */
        w_var(&b, 1), w_u8(&b, LT_TAG_MESSAGE), w_var(&b, 1), w_strn(&b, "\xc0\xaf", 2);
        raw_msg(fd, 0x02, &b);
        break;
    case 2: /* definitions out of order: location 3 before 2 */
        w_u8(&b, LT_TAG_LOC_DEF), w_var(&b, 3), w_u8(&b, LT_LOC_USER), w_var(&b, 1);
        w_str(&b, "three"), w_str(&b, "raw.c");
        raw_msg(fd, 0x03, &b);
        break;
    case 3: /* an end before any begin, after good records in the message */
        w_var(&b, 1), w_u8(&b, 0x81), w_var(&b, 1), w_u8(&b, 0x02), w_var(&b, 1);
        w_u8(&b, 0x02), w_var(&b, 1);
        raw_msg(fd, 0x02, &b);
        break;
    case 4: /* oversized length */
        raw_msg_len(fd, 0x7fffffffu, 0x02, NULL);
        break;
    case 5: /* truncated: a length promising more than is ever sent */
        w_var(&b, 1), w_u8(&b, 0x81);
        raw_msg_len(fd, 100, 0x02, &b);
        shutdown(fd, SHUT_WR);
        break;
    case 6: /* a zone opened and the client gone */
        w_var(&b, 1), w_u8(&b, 0x81), w_var(&b, 1);
        raw_msg(fd, 0x02, &b);
        shutdown(fd, SHUT_WR);
        break;
    }
    raw_wait_closed(fd);
}

START_TEST(bad_input_flood_counted_and_others_unharmed) {
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    ft_daemon_start(&dm, &d, "-s", "600", "--handshake-timeout", "300", NULL);
    int good = raw_open(dm.port, 1);
    raw_zones(good, 1000);
    /* Connect and disconnect, thousands of times. */
    for (int i = 0; i < CYCLES; i++) close(ft_connect(dm.port, FT_WAIT_MS));
    /* Connect, say HELLO, disconnect. */
    for (int i = 0; i < HELLO_CYCLES; i++) close(raw_open(dm.port, 100 + (uint64_t)i));
    /* Refused in the handshake: wrong magic, wrong version, oversized,
     * truncated HELLO, silence. */
    for (int k = 0; k < 5; k++) {
        int fd = ft_connect(dm.port, FT_WAIT_MS);
        wbuf b = {.n = 0};
        if (k == 0) ft_hello_body(&b, "TRCYWIRX", 1, 7), raw_msg(fd, 0x01, &b);
        if (k == 1) ft_hello_body(&b, "TRCYWIRE", 9, 7), raw_msg(fd, 0x01, &b);
        if (k == 2) raw_msg_len(fd, 0xfffffff0u, 0x01, NULL);
        if (k == 3) {
            ft_hello_body(&b, "TRCYWIRE", 1, 7);
            raw_msg_len(fd, (uint32_t)b.n + 1, 0x01, NULL);
            (void)ft_send_all(fd, b.p, b.n / 2);
            shutdown(fd, SHUT_WR);
        }
        raw_wait_closed(fd);
    }
    for (int k = 0; k < 7; k++) bad_after_hello(dm.port, k);
    /* The good client is still served. */
    raw_zones(good, 1000);
    wbuf b = {.n = 0};
    w_var(&b, 4000), w_var(&b, 0);
    raw_msg(good, 0x04, &b);
    raw_wait_closed(good);
    kill(dm.pid, SIGINT);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);

    lt_reader *r = ft_open(d.out);
    ck_assert_int_eq(lt_reader_info(r)->complete, 1);
    const lt_process *gp = lt_reader_process(r, 1);
    ck_assert_int_eq(gp->status, LT_PROC_CLEAN);
    ck_assert_uint_eq(gp->events_received, 4000);
    ck_assert_uint_eq(gp->events_sent, 4000);
    ck_assert_uint_eq(lt_reader_nprocesses(r), 1 + HELLO_CYCLES + 7);
    uint64_t refused = CYCLES + 5, rejected = 5, lost_clients = HELLO_CYCLES + 2;
    ck_assert_uint_eq(ft_total(r, "clients_refused"), refused);
    ck_assert_uint_eq(ft_total(r, "clients_connected"), 1 + HELLO_CYCLES + 7);
    ck_assert_uint_eq(ft_total(r, "clients_rejected"), rejected);
    ck_assert_uint_eq(ft_total(r, "clients_lost"), lost_clients);
    ck_assert_uint_eq(ft_total(r, "zones_aborted"), 1);
    uint64_t ev_rej = ft_total(r, "events_rejected"), by_rej = ft_total(r, "bytes_rejected");
    ck_assert_uint_ge(ev_rej, 3); /* the bad message, the end without begin */
    ck_assert_uint_gt(by_rej, 0);
    /* Each bad client: its good prefix kept, a reason recorded. */
    for (uint32_t p = 2 + HELLO_CYCLES; p <= lt_reader_nprocesses(r); p++) {
        const lt_process *bp = lt_reader_process(r, p);
        ck_assert_uint_ge(bp->events_received, 10);
        ck_assert_msg(bp->end_reason && *bp->end_reason, "process %u: no reason", p);
        ck_assert_int_eq(bp->status, p < 2 + HELLO_CYCLES + 5 ? LT_PROC_REJECTED
                                                              : LT_PROC_LOST);
    }
    lt_reader_free(r);
    /* Every refusal and rejection is logged with its reason. */
    char *s = ft_slurp(d.err);
    int refusals = 0, rejections = 0;
    for (char *q = s; (q = strstr(q, "refused connection from")); q++) refusals++;
    for (char *q = s; (q = strstr(q, " rejected: ")); q++) rejections++;
    ck_assert_int_eq(refusals, (int)refused);
    ck_assert_int_eq(rejections, (int)rejected);
    ck_assert_msg(strstr(s, "not valid UTF-8"), "%s", s + strlen(s) / 2);
    ck_assert_msg(strstr(s, "out of order"), "no out-of-order reason");
    free(s);

    /* The same numbers in tracy-info --json and tracy-sql's stats; exit 6:
     * data was lost. */
    char out[160], q[512], want[512];
    snprintf(out, sizeof out, "%s/q.txt", d.dir);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-info"), "--json", d.out, NULL), 6);
    s = ft_slurp(out);
    snprintf(want, sizeof want, "\"rejected_events\":%llu,", (unsigned long long)ev_rej);
    ck_assert_msg(strstr(s, want), "want %s", want);
    free(s);
    snprintf(q, sizeof q,
             "SELECT name, value FROM stats WHERE severity = 'data_loss' AND name IN "
             "('clients_rejected', 'clients_lost', 'events_rejected', 'bytes_rejected', "
             "'zones_aborted') ORDER BY name");
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-sql"), d.out, q, NULL), 0);
    s = ft_slurp(out);
    snprintf(want, sizeof want,
             "name,value\nbytes_rejected,%llu\nclients_lost,%llu\nclients_rejected,%llu\n"
             "events_rejected,%llu\nzones_aborted,1\n",
             (unsigned long long)by_rej, (unsigned long long)lost_clients,
             (unsigned long long)rejected, (unsigned long long)ev_rej);
    ck_assert_str_eq(s, want);
    free(s);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-sql"), d.out,
                             "SELECT severity, value FROM stats WHERE name = 'clients_refused'",
                             NULL), 0);
    s = ft_slurp(out);
    snprintf(want, sizeof want, "severity,value\nerror,%llu\n", (unsigned long long)refused);
    ck_assert_str_eq(s, want);
    free(s);
    ft_dir_clean(&d);
}
END_TEST

/* ---- The memory bound ----------------------------------------------------- */

/* An EVENTS message of exactly `len` (type + body) on thread 1: MESSAGE
 * records of up to 64 KiB of text. Returns the number of events. */
static uint64_t big_events_msg(uint8_t *m, uint32_t len) {
    m[0] = (uint8_t)len, m[1] = (uint8_t)(len >> 8), m[2] = (uint8_t)(len >> 16);
    m[3] = (uint8_t)(len >> 24), m[4] = 0x02, m[5] = 1; /* thread 1 */
    uint8_t *w = m + 6, *end = m + 4 + len;
    uint64_t events = 0;
    while (w < end) {
        size_t rec = (size_t)(end - w) < 65536 ? (size_t)(end - w) : 65536;
        size_t n = rec - 5; /* tag, dt, 3-byte length */
        ck_assert_uint_ge(n, 16384);
        *w++ = LT_TAG_MESSAGE, *w++ = 1;
        *w++ = (uint8_t)(n | 0x80), *w++ = (uint8_t)((n >> 7) | 0x80), *w++ = (uint8_t)(n >> 14);
        memset(w, 'a', n);
        w += n;
        events++;
    }
    return events;
}

/* Sends the bytes [sent[i], upto[i]) of `data` on every fd, as the sockets
 * take them, until all are sent or nothing moved for `idle_ms`. Returns
 * how many fds still have bytes to send. */
static int pump(const int *fds, int n, const uint8_t *const *data, size_t *sent,
                const size_t *upto, int idle_ms) {
    struct pollfd *p = calloc((size_t)n, sizeof *p);
    int left = n;
    while (left > 0) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (sent[i] < upto[i]) p[k++] = (struct pollfd){fds[i], POLLOUT, 0};
        left = k;
        if (k == 0 || poll(p, (nfds_t)k, idle_ms) <= 0) break;
        for (int j = 0; j < k; j++) {
            if (!(p[j].revents & POLLOUT)) continue;
            int i = 0;
            while (fds[i] != p[j].fd) i++;
            ssize_t w = send(fds[i], data[i] + sent[i], upto[i] - sent[i],
                             MSG_DONTWAIT | MSG_NOSIGNAL);
            ck_assert_msg(w > 0 || errno == EAGAIN, "send: %s", strerror(errno));
            if (w > 0) sent[i] += (size_t)w;
        }
    }
    free(p);
    return left;
}

enum { HOLDERS = 128, BIG = 1 << 20 };

START_TEST(partial_messages_count_against_the_memory_limit) {
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    ft_daemon_start(&dm, &d, "-q", "-s", "600", "-m", "16", NULL);
    /* Each holder says HELLO, then sends a 1 MiB message but its last byte
     * and waits: the daemon may hold only what -m allows. */
    uint8_t *msg = malloc(4 + (size_t)BIG + 8);
    uint64_t events = big_events_msg(msg, BIG);
    uint8_t *bye = msg + 4 + BIG; /* BYE: events sent, 0 lost */
    bye[0] = 3, bye[1] = bye[2] = bye[3] = 0, bye[4] = 0x04, bye[5] = (uint8_t)events,
    bye[6] = 0;
    ck_assert_uint_lt(events, 128);
    int fds[HOLDERS];
    const uint8_t *data[HOLDERS];
    size_t sent[HOLDERS], upto[HOLDERS];
    for (int i = 0; i < HOLDERS; i++) {
        fds[i] = raw_open(dm.port, 5000 + (uint64_t)i);
        data[i] = msg;
        sent[i] = 0;
        upto[i] = 4 + (size_t)BIG - 1;
    }
    (void)pump(fds, HOLDERS, data, sent, upto, 2000);
    /* Let the daemon take from its sockets all it will (until its size
     * stays the same for half a second, 20 s at most). */
    uint64_t rss = 0, prev = 1;
    for (int i = 0, same = 0; i < 200 && same < 5; i++, prev = rss) {
        usleep(100000);
        rss = ft_rss_kib(dm.pid);
        same = rss == prev ? same + 1 : 0;
    }
    /* Then every message ends and every holder says goodbye. */
    for (int i = 0; i < HOLDERS; i++) upto[i] = 4 + (size_t)BIG + 7;
    ck_assert_int_eq(pump(fds, HOLDERS, data, sent, upto, FT_WAIT_MS), 0);
    for (int i = 0; i < HOLDERS; i++) raw_wait_closed(fds[i]);
    uint64_t peak = ft_status_kib(dm.pid, "VmHWM:"); /* peak resident size */
    kill(dm.pid, SIGINT);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);
    free(msg);
    /* The documented bound: -m plus 64 MiB. */
    ck_assert_msg(peak > 0 && peak < (16 + 64) * 1024, "peak RSS %llu KiB with -m 16",
                  (unsigned long long)peak);
    /* Nothing was lost on the way. */
    lt_reader *r = ft_open(d.out);
    ck_assert_uint_eq(lt_reader_nprocesses(r), HOLDERS);
    for (uint32_t p = 1; p <= HOLDERS; p++) {
        const lt_process *pp = lt_reader_process(r, p);
        ck_assert_int_eq(pp->status, LT_PROC_CLEAN);
        ck_assert_uint_eq(pp->events_received, events);
    }
    lt_reader_free(r);
    ft_dir_clean(&d);
}
END_TEST

enum { STALLERS = 16 };

START_TEST(clients_stalled_in_a_message_give_their_memory_back) {
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    /* -m 8: a few 1 MiB partial messages fill it. */
    ft_daemon_start(&dm, &d, "-s", "600", "-m", "8", "--handshake-timeout", "500", NULL);
    uint8_t *msg = malloc(4 + (size_t)BIG + 8);
    uint64_t events = big_events_msg(msg, BIG);
    int fds[STALLERS];
    const uint8_t *data[STALLERS];
    size_t sent[STALLERS], upto[STALLERS];
    for (int i = 0; i < STALLERS; i++) {
        fds[i] = raw_open(dm.port, 6000 + (uint64_t)i);
        data[i] = msg;
        sent[i] = 0;
        upto[i] = 4 + (size_t)BIG - 1; /* and then nothing */
    }
    (void)pump(fds, STALLERS, data, sent, upto, 2000);
    /* A client with a long message needs memory the stalled ones hold:
     * they are closed in turn until it fits. */
    int good = raw_open(dm.port, 1);
    uint8_t *bye = msg + 4 + BIG;
    bye[0] = 3, bye[1] = bye[2] = bye[3] = 0, bye[4] = 0x04, bye[5] = (uint8_t)events,
    bye[6] = 0;
    ck_assert_int_eq(ft_send_all(good, msg, 4 + (size_t)BIG + 7), 0);
    raw_wait_closed(good);
    for (int i = 0; i < STALLERS; i++) close(fds[i]);
    free(msg);
    kill(dm.pid, SIGINT);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);
    lt_reader *r = ft_open(d.out);
    const lt_process *gp = NULL;
    for (uint32_t p = 1; p <= lt_reader_nprocesses(r); p++)
        if (lt_reader_process(r, p)->pid == 1) gp = lt_reader_process(r, p);
    ck_assert_ptr_nonnull(gp);
    ck_assert_int_eq(gp->status, LT_PROC_CLEAN);
    ck_assert_uint_eq(gp->events_received, events);
    /* The stalled ones: lost, with the reason (those not needed were
     * still there at the end). */
    int stalled = 0;
    for (uint32_t p = 1; p <= lt_reader_nprocesses(r); p++) {
        const lt_process *sp = lt_reader_process(r, p);
        if (sp->pid != 1 && sp->status == LT_PROC_LOST && strstr(sp->end_reason, "stalled"))
            stalled++;
    }
    ck_assert_int_ge(stalled, 1);
    lt_reader_free(r);
    char *s = ft_slurp(d.err);
    ck_assert_msg(strstr(s, "in the middle of a message (1048579 bytes) while other clients "
                            "waited for memory (-m)"), "%s", s);
    free(s);
    ft_dir_clean(&d);
}
END_TEST

enum { MANY_THREADS = 262143, RECONNECTS = 6 };

/* A client announcing MANY_THREADS threads (with the location raw_open
 * defines: the default --max-names), one event, goodbye. When the daemon
 * may reject it, sending stops at the first refused write. */
static void many_threads_client(int port, uint64_t pid, int may_be_rejected) {
    int fd = raw_open(port, pid);
    enum { CHUNK = 50000 };
    uint8_t *m = malloc(5 + (size_t)CHUNK * 16);
    for (uint32_t first = 2; first <= MANY_THREADS; first += CHUNK) {
        uint8_t *w = m + 5;
        for (uint32_t t = first; t < first + CHUNK && t <= MANY_THREADS; t++) {
            *w++ = LT_TAG_THREAD_INFO;
            for (uint64_t v = t; ; v >>= 7) {
                *w++ = (uint8_t)(v < 0x80 ? v : (v & 0x7f) | 0x80);
                if (v < 0x80) break;
            }
            *w++ = 1, *w++ = 1, *w++ = 't'; /* tid 1, name "t" */
        }
        uint32_t len = (uint32_t)(w - m - 4);
        m[0] = (uint8_t)len, m[1] = (uint8_t)(len >> 8), m[2] = (uint8_t)(len >> 16);
        m[3] = 0, m[4] = 0x03;
        int rc = ft_send_all(fd, m, (size_t)(w - m));
        if (rc < 0 && may_be_rejected) break;
        ck_assert_int_eq(rc, 0);
    }
    free(m);
    raw_zones(fd, 1);
    wbuf b = {.n = 0};
    w_var(&b, 2), w_var(&b, 0);
    raw_msg(fd, 0x04, &b);
    raw_wait_closed(fd);
}

START_TEST(thread_tables_are_freed_on_disconnect) {
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    ft_daemon_start(&dm, &d, "-s", "600", NULL);
    uint64_t first = 0, last = 0;
    for (int i = 0; i < RECONNECTS; i++) {
        many_threads_client(dm.port, FT_FAKE_PID + 7000 + (uint64_t)i, 0);
        /* The peak: what is resident after a free depends on the
         * allocator's trimming, the peak grows only when nothing is
         * reused. */
        last = ft_status_kib(dm.pid, "VmHWM:");
        if (i == 1) first = last; /* the allocator has its working set */
    }
    kill(dm.pid, SIGINT);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);
    /* Reconnecting does not grow the daemon: what a process announced goes
     * with it (about 20 MB per client before). */
    ck_assert_msg(last < first + 8 * 1024, "peak RSS %llu KiB after the second client, "
                  "%llu KiB after %d", (unsigned long long)first, (unsigned long long)last, RECONNECTS);
    /* Every thread counted (the summary; reading a file of 1.5 million
     * threads back is the readers' test). */
    char *s = ft_slurp(d.err), want[96];
    snprintf(want, sizeof want, ": %d clients, %d events in %d streams,", RECONNECTS,
             2 * RECONNECTS, RECONNECTS * MANY_THREADS);
    ck_assert_msg(strstr(s, want), "want '%s' in: %s", want, s);
    free(s);
    ft_dir_clean(&d);
}
END_TEST

START_TEST(thread_tables_stay_within_half_the_memory_limit) {
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    /* 262143 threads take some 40 MB of tables; half of -m 8 holds about
     * 30000: the first 50000 announced are refused. */
    ft_daemon_start(&dm, &d, "-s", "600", "-m", "8", NULL);
    int fd = raw_open(dm.port, 1);
    raw_zones(fd, 10);
    wbuf b = {.n = 0};
    for (uint32_t t = 2; t < 200; t++) {
        w_u8(&b, LT_TAG_THREAD_INFO), w_var(&b, t), w_var(&b, 1), w_str(&b, "t");
    }
    raw_msg(fd, 0x03, &b);
    raw_zones(fd, 10);
    many_threads_client(dm.port, 2, 1); /* rejected, the daemon goes on */
    w_var(&b, 0);
    b.n = 0;
    w_var(&b, 40), w_var(&b, 0);
    raw_msg(fd, 0x04, &b);
    raw_wait_closed(fd);
    kill(dm.pid, SIGINT);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);
    char *s = ft_slurp(d.err);
    ck_assert_msg(strstr(s, "past 4 MiB (half of -m)"), "%s", s);
    free(s);
    lt_reader *r = ft_open(d.out);
    ck_assert_int_eq(lt_reader_process(r, 1)->status, LT_PROC_CLEAN);
    ck_assert_uint_eq(lt_reader_process(r, 1)->events_received, 40);
    ck_assert_int_eq(lt_reader_process(r, 2)->status, LT_PROC_REJECTED);
    ck_assert_uint_eq(ft_total(r, "clients_rejected"), 1);
    ck_assert_uint_eq(ft_total(r, "threads"), 199 + 1);
    lt_reader_free(r);
    ft_dir_clean(&d);
}
END_TEST

Suite *faults_suite(void) {
    Suite *s = suite_create("faults");
    TCase *tc = tcase_create("kills");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, daemon_kill9_loses_at_most_the_last_second);
    tcase_add_test(tc, client_kill9_keeps_its_data_and_others_go_on);
    suite_add_tcase(s, tc);

    tc = tcase_create("output_and_options");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, disk_full_stops_with_exit_4_and_a_readable_file);
    tcase_add_test(tc, unusable_options_one_line_documented_exit);
    tcase_add_test(tc, force_replaces_a_link_never_its_target);
    tcase_add_test(tc, full_disk_at_open_leaves_no_file);
    suite_add_tcase(s, tc);

    tc = tcase_create("late_daemon");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, client_without_daemon_warns_once_and_runs);
    tcase_add_test(tc, client_waits_for_a_late_daemon_with_tracy_wait);
    tcase_add_test(tc, client_against_a_wrong_daemon_warns_once_and_runs);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad_input");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, bad_input_flood_counted_and_others_unharmed);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fd_limit_refusals_are_told_counted_and_logged);
    suite_add_tcase(s, tc);

    tc = tcase_create("memory");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, thread_tables_are_freed_on_disconnect);
    tcase_add_test(tc, thread_tables_stay_within_half_the_memory_limit);
    tcase_add_test(tc, partial_messages_count_against_the_memory_limit);
    tcase_add_test(tc, clients_stalled_in_a_message_give_their_memory_back);
    suite_add_tcase(s, tc);

    tc = tcase_create("accounting");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, drop_mode_losses_are_counted_everywhere);
    suite_add_tcase(s, tc);
    return s;
}
