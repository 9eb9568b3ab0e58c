/* check_hostile.c -- what a legal but extreme client, or a hostile file,
 * does to the daemon and the readers: thousands of streams at once, zones
 * nested past the shared limits, timestamps and loss counts at the edge of
 * 64 bits, a process missing from a cut file, a forged trailer. */
#define _GNU_SOURCE 1 /* posix_openpt, ptsname, cfmakeraw */
#include <sys/resource.h>
#include <termios.h>
#include "faults.h"
#include "file_int.h"
#include "trace_builder.h"

/* ---- Helpers ------------------------------------------------------------- */

/* Peak RSS, in MiB, that the tools run through run_tool() added over a
 * child that does nothing (ft_peak_mib). */
static long g_peak_mib;

/* Runs a tool (NULL-terminated arguments) like ft_tool(); returns its exit
 * code and raises g_peak_mib to what it used. */
static int run_tool(const char *out, const char *err, ...) {
    char *argv[16];
    int n = 0, rc;
    va_list ap;
    va_start(ap, err);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 15) argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    long mib = ft_peak_mib(argv, out, err, &rc);
    if (mib > g_peak_mib) g_peak_mib = mib;
    return rc;
}

/* Runs every converter on `path`: tracy-csv, tracy-json and tracy-sql must
 * exit with `conv`, tracy-info --verify with `verify`, plain tracy-info with
 * `plain`; stderr of the last failing run holds `needle` (when not NULL). */
static void converters_exit(const ft_dir *d, const char *path, int conv, int verify,
                            int plain, const char *needle) {
    char out[160], sql[160];
    snprintf(out, sizeof out, "%s/conv.out", d->dir);
    snprintf(sql, sizeof sql, "%s/conv.sqlite", d->dir);
    const char *names[5] = {"tracy-csv", "tracy-json", "tracy-sql", "tracy-info --verify",
                            "tracy-info"};
    int want[5] = {conv, conv, conv, verify, plain}, rc[5];
    char *errs[5];
    rc[0] = run_tool(out, d->err, ft_bin("tracy-csv"), path, NULL);
    errs[0] = ft_slurp(d->err);
    rc[1] = run_tool(out, d->err, ft_bin("tracy-json"), path, NULL);
    errs[1] = ft_slurp(d->err);
    rc[2] = run_tool(out, d->err, ft_bin("tracy-sql"), path, "-o", sql, NULL);
    errs[2] = ft_slurp(d->err);
    rc[3] = run_tool(out, d->err, ft_bin("tracy-info"), "--verify", path, NULL);
    errs[3] = ft_slurp(d->err);
    rc[4] = run_tool(out, d->err, ft_bin("tracy-info"), path, NULL);
    errs[4] = ft_slurp(d->err);
    for (int i = 0; i < 5; i++) {
        ck_assert_msg(rc[i] == want[i], "%s exited %d, not %d: %s", names[i], rc[i], want[i],
                      errs[i]);
        if (needle && rc[i] != 0 && want[i] == 4)
            ck_assert_msg(strstr(errs[i], needle), "%s: want '%s' in: %s", names[i], needle,
                          errs[i]);
    }
    for (int i = 0; i < 5; i++) free(errs[i]);
    unlink(sql);
}

/* ---- Many streams at once -------------------------------------------------- */

enum { MANY_THREADS = 2100 };

/* One raw client announcing MANY_THREADS threads, one zone on each. */
static void many_thread_client(int port) {
    int fd = raw_open(port, 4242);
    wbuf b = {.n = 0};
    for (uint32_t t = 2; t <= MANY_THREADS; t++) {
        if (b.n > sizeof b.p - 64) raw_msg(fd, 0x03, &b), b.n = 0;
        w_u8(&b, LT_TAG_THREAD_INFO), w_var(&b, t), w_var(&b, 10000 + t), w_str(&b, "worker");
    }
    raw_msg(fd, 0x03, &b);
    for (uint32_t t = 1; t <= MANY_THREADS; t++) {
        b.n = 0;
        w_var(&b, t), w_u8(&b, 0x81), w_var(&b, 1000 + t), w_u8(&b, 0x02), w_var(&b, 5);
        raw_msg(fd, 0x02, &b);
    }
    b.n = 0;
    w_var(&b, 2 * MANY_THREADS), w_var(&b, 0);
    raw_msg(fd, 0x04, &b);
    raw_wait_closed(fd);
}

START_TEST(thousands_of_streams_from_one_client_are_read) {
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    ft_daemon_start(&dm, &d, "-q", "-s", "600", NULL);
    many_thread_client(dm.port);
    kill(dm.pid, SIGINT);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);
    lt_reader *r = ft_open(d.out);
    ck_assert_uint_eq(lt_reader_nthreads(r, 1), MANY_THREADS);
    lt_event ev;
    uint64_t zones = 0;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0) zones += ev.type == LT_EV_ZONE_END;
    ck_assert_msg(rc == 0, "%s", lt_reader_error(r));
    ck_assert_uint_eq(zones, MANY_THREADS);
    lt_reader_free(r);
    converters_exit(&d, d.out, 0, 0, 0, NULL);
    char out[160];
    snprintf(out, sizeof out, "%s/z.csv", d.dir);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-csv"), d.out, NULL), 0);
    char *s = ft_slurp(out);
    ck_assert_int_eq(ft_count_lines(s), 1 + MANY_THREADS);
    free(s);
    ft_dir_clean(&d);
}
END_TEST

/* ---- Open zones past the shared limit -------------------------------------- */

/* Opens `depth` nested zones on thread `t` (announced first when > 1). */
static void raw_nest(int fd, uint32_t t, uint32_t depth) {
    wbuf b = {.n = 0};
    if (t > 1) {
        w_u8(&b, LT_TAG_THREAD_INFO), w_var(&b, t), w_var(&b, 500 + t), w_str(&b, "deep");
        raw_msg(fd, 0x03, &b);
    }
    for (uint32_t i = 0; i < depth;) {
        b.n = 0;
        w_var(&b, t);
        for (; i < depth && b.n < sizeof b.p - 4; i++) w_u8(&b, 0x81), w_u8(&b, 1);
        raw_msg(fd, 0x02, &b);
    }
}

START_TEST(open_zones_past_the_process_limit_reject_the_client) {
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    ft_daemon_start(&dm, &d, "-q", "-s", "600", NULL);
    int good = raw_open(dm.port, 1);
    raw_zones(good, 100);
    int deep = raw_open(dm.port, 2);
    /* 16 threads of LT_MAX_DEPTH open zones fill LT_MAX_OPEN_ZONES exactly;
     * the 17th thread's first zone is one too many. */
    uint32_t full = LT_MAX_OPEN_ZONES / LT_MAX_DEPTH;
    for (uint32_t t = 1; t <= full + 1; t++) raw_nest(deep, t, LT_MAX_DEPTH);
    raw_wait_closed(deep);
    raw_zones(good, 100);
    wbuf b = {.n = 0};
    w_var(&b, 400), w_var(&b, 0);
    raw_msg(good, 0x04, &b);
    raw_wait_closed(good);
    kill(dm.pid, SIGINT);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);

    lt_reader *r = ft_open(d.out);
    const lt_process *gp = lt_reader_process(r, 1), *dp = lt_reader_process(r, 2);
    ck_assert_int_eq(gp->status, LT_PROC_CLEAN);
    ck_assert_uint_eq(gp->events_received, 400);
    ck_assert_int_eq(dp->status, LT_PROC_REJECTED);
    ck_assert_msg(strstr(dp->end_reason, "LT_MAX_OPEN_ZONES"), "%s", dp->end_reason);
    ck_assert_uint_eq(dp->events_received, (uint64_t)full * LT_MAX_DEPTH);
    lt_reader_free(r);
    /* What the daemon kept, every reader holds: the limit is shared. The
     * rejected client is data lost: tracy-info says so in its exit code. */
    converters_exit(&d, d.out, 0, 6, 6, NULL);
    ck_assert_msg(g_peak_mib < 512, "a converter used %ld MiB", g_peak_mib);
    ft_dir_clean(&d);
}
END_TEST

enum { DEEP_THREADS = 200 }; /* 13 million open zones: past the budget */

START_TEST(a_small_file_of_deep_zones_is_refused_within_budget) {
    ft_dir d;
    ft_dir_init(&d);
    lt_builder *b;
    ck_assert_int_eq(lt_builder_open(&b, d.out, 0, "check"), 0);
    const char *argv[] = {"deep"};
    ck_assert_int_eq(lt_builder_process(b, 1, -1, "h", "deep", 1, argv, 0, 0), 1);
    ck_assert_int_eq(lt_builder_loc(b, 1, LT_LOC_USER, "f", "f.c", 1), 1);
    int rc = 0;
    for (uint32_t t = 1; t <= DEEP_THREADS; t++) {
        ck_assert_int_eq(lt_builder_thread(b, 1, t, "t"), (int)t);
        for (uint32_t i = 0; i < LT_MAX_DEPTH; i++) rc |= lt_builder_zone_begin(b, 1, t, i, 1);
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(lt_builder_close(b, 0), 0);
    struct stat st;
    ck_assert_int_eq(stat(d.out, &st), 0);
    ck_assert_int_lt(st.st_size, 1 << 20);
    /* 13 million zones open at once in one process: more than the daemon
     * lets a process hold, refused by every reader before it holds more
     * than its budget. */
    converters_exit(&d, d.out, 4, 4, 0, "zones open at once");
    ck_assert_msg(g_peak_mib < 768, "a converter used %ld MiB", g_peak_mib);
    ft_dir_clean(&d);
}
END_TEST

/* ---- Streams whose blocks together exceed the reader's budget -------------- */

enum { BIG_STREAMS = 40, BIG_MSGS = 128 }; /* 40 blocks of 8 MiB: 320 MiB */

/* Writes BIG_STREAMS streams of one block each, BIG_MSGS messages of 64 KiB
 * per block; the streams follow each other in time, or interleave. */
static void write_big_blocks(const char *path, int interleave) {
    static uint8_t buf[BIG_MSGS * (LT_MAX_STRING + 16) + 64];
    static char text[LT_MAX_STRING];
    memset(text, 'a', sizeof text);
    lt_writer *w;
    ck_assert_int_eq(lt_writer_open(&w, path, 0, "check", 0), 0);
    uint8_t *p = buf + lt_block_header(buf, LT_BLOCK_META, 1, 0, 0);
    *p++ = LT_TAG_PROC_INFO;
    p = lt__put_varint_(p, 7), p = lt__put_varint_(p, 1); /* pid, rank -1 */
    p = lt__put_str(p, "h", 1), p = lt__put_str(p, "big", 3), p = lt__put_varint_(p, 0);
    p = lt__put_varint_(p, 0), p = lt__put_varint_(p, 0), p = lt__put_str(p, "c", 1);
    for (uint32_t t = 1; t <= BIG_STREAMS; t++) {
        *p++ = LT_TAG_THREAD_INFO;
        p = lt__put_varint_(p, t), p = lt__put_varint_(p, t), p = lt__put_str(p, "t", 1);
    }
    lt_block_desc md = {.kind = LT_BLOCK_META, .process = 1};
    ck_assert_int_eq(lt_writer_block(w, &md, buf, (size_t)(p - buf)), 0);
    for (uint32_t t = 1; t <= BIG_STREAMS; t++) {
        uint64_t ts0 = interleave ? t : (uint64_t)t * 1000000, step = interleave ? 100 : 1;
        p = buf + lt_block_header(buf, LT_BLOCK_EVENTS, 1, t, ts0);
        for (int k = 0; k < BIG_MSGS; k++) {
            *p++ = LT_TAG_MESSAGE;
            p = lt__put_varint_(p, k ? step : 0);
            p = lt__put_str(p, text, sizeof text);
        }
        lt_block_desc d = {.kind = LT_BLOCK_EVENTS, .process = 1, .thread = t,
                           .n_events = BIG_MSGS, .first_ts = ts0,
                           .last_ts = ts0 + (BIG_MSGS - 1) * step};
        ck_assert_int_eq(lt_writer_block(w, &d, buf, (size_t)(p - buf)), 0);
    }
    ck_assert_int_eq(lt_writer_close(w, NULL, 0, NULL, 0), 0);
}

START_TEST(streams_whose_blocks_exceed_the_budget_are_read_in_turn) {
    ft_dir d;
    ft_dir_init(&d);
    write_big_blocks(d.out, 0);
    /* 320 MiB of blocks in a file of a few KB: each decompressed when its
     * stream's turn comes, released when done. */
    char out[160];
    snprintf(out, sizeof out, "%s/info.json", d.dir);
    ck_assert_int_eq(run_tool(out, d.err, ft_bin("tracy-info"), "--verify", "--json", d.out,
                             NULL), 3);
    char *s = ft_slurp(out), want[64];
    snprintf(want, sizeof want, "\"messages\":%d,", BIG_STREAMS * BIG_MSGS);
    ck_assert_msg(strstr(s, want), "%s", s);
    free(s);
    ck_assert_int_eq(run_tool(out, d.err, ft_bin("tracy-csv"), "-m", "--allow-truncated", d.out,
                             NULL), 0);
    s = ft_slurp(out);
    ck_assert_int_eq(ft_count_lines(s), 1 + BIG_STREAMS * BIG_MSGS);
    free(s);
    ck_assert_msg(g_peak_mib < 128, "a converter used %ld MiB", g_peak_mib);
    ft_dir_clean(&d);
}
END_TEST

START_TEST(interleaved_blocks_beyond_the_budget_are_refused_promptly) {
    ft_dir d;
    ft_dir_init(&d);
    write_big_blocks(d.out, 1);
    /* Every stream is needed at every moment: releasing blocks would mean
     * decompressing one for each message. Refused, within the budget. */
    char out[160];
    snprintf(out, sizeof out, "%s/info.txt", d.dir);
    ck_assert_int_eq(run_tool(out, d.err, ft_bin("tracy-info"), "--verify", d.out, NULL), 4);
    char *e = ft_slurp(d.err);
    ck_assert_msg(strstr(e, "interleave for the reader's memory budget"), "%s", e);
    free(e);
    ck_assert_msg(g_peak_mib < 400, "tracy-info used %ld MiB", g_peak_mib);
    ft_dir_clean(&d);
}
END_TEST

/* ---- Timestamps and loss counts at the edge of 64 bits ---------------------- */

START_TEST(lost_counts_saturate_and_late_timestamps_are_refused) {
    ft_dir d;
    ft_dir_init(&d);
    ft_daemon dm;
    ft_daemon_start(&dm, &d, "-q", "-s", "600", NULL);
    for (int k = 0; k < 2; k++) {
        int fd = raw_open(dm.port, 10 + (uint64_t)k);
        wbuf b = {.n = 0};
        /* The first client's record is at timestamp 0: the trailer's first_ts
         * must say 0 too (tracy-info checks it against the descriptors). */
        w_var(&b, 1), w_u8(&b, LT_TAG_LOST), w_var(&b, k ? 7 : 0), w_var(&b, UINT64_MAX);
        raw_msg(fd, 0x02, &b);
        b.n = 0;
        w_var(&b, 1), w_var(&b, 0);
        raw_msg(fd, 0x04, &b);
        raw_wait_closed(fd);
    }
    /* A timestamp of 2^63 does not fit a signed 64-bit integer: rejected. */
    int fd = raw_open(dm.port, 12);
    wbuf b = {.n = 0};
    w_var(&b, 1), w_u8(&b, 0x81), w_var(&b, 1ull << 63), w_u8(&b, 0x02), w_var(&b, 1);
    raw_msg(fd, 0x02, &b);
    raw_wait_closed(fd);
    kill(dm.pid, SIGINT);
    ck_assert_int_eq(ft_daemon_wait(&dm), 0);
    lt_reader *r = ft_open(d.out);
    ck_assert_uint_eq(ft_total(r, "events_lost_client"), UINT64_MAX);
    ck_assert_uint_eq(ft_total(r, "lost_events"), UINT64_MAX);
    const lt_process *p = lt_reader_process(r, 3);
    ck_assert_int_eq(p->status, LT_PROC_REJECTED);
    ck_assert_msg(strstr(p->end_reason, "timestamp out of range"), "%s", p->end_reason);
    ck_assert_uint_eq(ft_total(r, "first_ts"), 0);
    lt_reader_free(r);
    /* Intact, with data lost: exit 6, and the count on stderr. */
    char out[160];
    snprintf(out, sizeof out, "%s/info.txt", d.dir);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-info"), d.out, NULL), 6);
    char *e = ft_slurp(d.err);
    ck_assert_msg(strstr(e, "data lost while capturing: 18446744073709551615 lost events"), "%s",
                  e);
    free(e);
    ft_dir_clean(&d);
}
END_TEST

/* ---- Damaged files ----------------------------------------------------------- */

/* Copies `in` to `out` keeping the header and the units for which keep()
 * says yes; stops at the trailer (left out). */
static void filter_units(const char *in, const char *out, int (*keep)(const uint8_t *desc)) {
    FILE *f = fopen(in, "rb"), *g = fopen(out, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(g);
    uint8_t h[8], desc[40];
    static uint8_t data[1 << 20];
    int first = 1;
    while (fread(h, 1, 8, f) == 8) {
        uint32_t magic = lt__rd32(h), cs = lt__rd32(h + 4);
        if (magic == 0x184D2A5Eu) break;
        if (first) {
            ck_assert_uint_le(cs, sizeof data);
            ck_assert_uint_eq(fread(data, 1, cs, f), cs);
            fwrite(h, 1, 8, g), fwrite(data, 1, cs, g);
            first = 0;
            continue;
        }
        ck_assert_uint_eq(magic, 0x184D2A51u);
        ck_assert_uint_eq(fread(desc, 1, 40, f), 40);
        uint32_t comp = lt__rd32(desc + 16);
        ck_assert_uint_le(comp, sizeof data);
        ck_assert_uint_eq(fread(data, 1, comp, f), comp);
        if (keep(desc)) fwrite(h, 1, 8, g), fwrite(desc, 1, 40, g), fwrite(data, 1, comp, g);
    }
    fclose(f);
    ck_assert_int_eq(fclose(g), 0);
}

static int not_process_2(const uint8_t *desc) { return lt__rd32(desc + 4) != 2; }

START_TEST(info_json_lists_a_process_missing_from_a_cut_file) {
    ft_dir d;
    ft_dir_init(&d);
    char full[160], out[160];
    snprintf(full, sizeof full, "%s/full.tracy", d.dir);
    snprintf(out, sizeof out, "%s/info.json", d.dir);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("../tools/tracegen"), "-p", "3", "-z", "300",
                             "-o", full, NULL), 0);
    /* Processes 1 and 3 whole, nothing yet of process 2: a cut file whose
     * units came out of process order. */
    filter_units(full, d.out, not_process_2);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-info"), "--json", d.out, NULL), 3);
    char *s = ft_slurp(out);
    ck_assert_msg(strstr(s, "{\"index\":2,\"metadata\":false"), "%s", s);
    ck_assert_msg(strstr(s, "{\"index\":3,\"metadata\":true"), "%s", s);
    free(s);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-info"), d.out, NULL), 3);
    s = ft_slurp(out);
    ck_assert_msg(strstr(s, "processes:        3\n"), "%s", s);
    ck_assert_msg(strstr(s, "  2: no metadata"), "%s", s);
    free(s);
    ft_dir_clean(&d);
}
END_TEST

/* Rewrites the value of trailer total `name` in place (a varint of the same
 * length, padded with continuation bytes). */
static void forge_total(const char *path, const char *name, uint64_t value) {
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    uint8_t *buf = malloc((size_t)size);
    fseek(f, 0, SEEK_SET);
    ck_assert_uint_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
    size_t nl = strlen(name);
    long at = -1;
    for (long i = size - 16; i > 0 && at < 0; i--)
        if (buf[i - 1] == nl && memcmp(buf + i, name, nl) == 0) at = i + (long)nl;
    ck_assert_int_ge(at, 0);
    int len = 1;
    while (buf[at + len - 1] & 0x80) len++;
    for (int i = 0; i < len; i++, value >>= 7)
        buf[at + i] = (uint8_t)((value & 0x7f) | (i < len - 1 ? 0x80 : 0));
    ck_assert_uint_eq(value, 0);
    fseek(f, at, SEEK_SET);
    ck_assert_uint_eq(fwrite(buf + at, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    free(buf);
}

START_TEST(a_forged_trailer_fails_verify) {
    ft_dir d;
    ft_dir_init(&d);
    char out[160];
    snprintf(out, sizeof out, "%s/info.txt", d.dir);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("../tools/tracegen"), "-z", "1986", "-o", d.out,
                             NULL), 0);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-info"), "--verify", d.out, NULL), 0);
    forge_total(d.out, "zones", 5);
    ck_assert_int_eq(ft_tool(out, d.err, ft_bin("tracy-info"), "--verify", d.out, NULL), 4);
    char *e = ft_slurp(d.err);
    ck_assert_msg(strstr(e, "trailer does not match the file: zones 5 in the trailer, 1986 in the file"), "%s", e);
    free(e);
    ft_dir_clean(&d);
}
END_TEST

/* ---- Names on a terminal --------------------------------------------------- */

/* Runs argv (NULL-terminated) with stdout on a new pseudo-terminal; returns
 * what it printed (caller frees) and its exit code in *rc. */
static char *run_on_pty(char *const argv[], const char *err_path, int *rc) {
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    ck_assert_int_ge(m, 0);
    ck_assert_int_eq(grantpt(m), 0);
    ck_assert_int_eq(unlockpt(m), 0);
    char *slave = ptsname(m);
    ck_assert_ptr_nonnull(slave);
    struct termios tio;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int s = open(slave, O_RDWR | O_NOCTTY);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (s < 0 || tcgetattr(s, &tio) < 0) _exit(126);
        cfmakeraw(&tio); /* bytes as the program wrote them */
        tcsetattr(s, TCSANOW, &tio);
        dup2(s, 1);
        dup2(e, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    for (;;) {
        struct pollfd p = {m, POLLIN, 0};
        if (poll(&p, 1, FT_WAIT_MS) <= 0) break;
        ssize_t k = read(m, out + n, cap - n - 1);
        if (k <= 0) break; /* EIO once the child closed the terminal */
        n += (size_t)k;
        if (n + 1 == cap) out = realloc(out, cap *= 2);
    }
    out[n] = 0;
    close(m);
    *rc = ft_wait(pid, FT_WAIT_MS);
    return out;
}

START_TEST(names_reach_a_terminal_without_escapes) {
    ft_dir d;
    ft_dir_init(&d);
    lt_builder *b;
    ck_assert_int_eq(lt_builder_open(&b, d.out, 0, "check"), 0);
    const char *argv[] = {"prog"};
    ck_assert_int_eq(lt_builder_process(b, 1, -1, "h", "prog", 1, argv, 0, 0), 1);
    ck_assert_int_eq(lt_builder_thread(b, 1, 1, "main"), 1);
    /* ESC [2J clears the screen; U+009B is the one-character CSI. */
    ck_assert_int_eq(lt_builder_loc(b, 1, LT_LOC_USER, "evil\x1b[2Jname\xc2\x9b" "31m",
                                    "f\rile.py", 1), 1);
    ck_assert_int_eq(lt_builder_zone_begin(b, 1, 1, 10, 1), 0);
    ck_assert_int_eq(lt_builder_zone_end(b, 1, 1, 20), 0);
    ck_assert_int_eq(lt_builder_close(b, 0), 0);
    int rc;
    char *csv_argv[] = {(char *)ft_bin("tracy-csv"), d.out, NULL};
    char *out = run_on_pty(csv_argv, d.err, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(!strchr(out, 0x1b) && !strstr(out, "\xc2\x9b") && !strchr(out, '\r'),
                  "raw control characters reached the terminal: %s", out);
    ck_assert_msg(strstr(out, "evil?[2Jname?31m,") && strstr(out, "f?ile.py"), "%s", out);
    free(out);
    char *sql_argv[] = {(char *)ft_bin("tracy-sql"), d.out, "SELECT name, src_file FROM func",
                        NULL};
    for (int fmt = 0; fmt < 2; fmt++) { /* the table (a terminal's default), CSV */
        char *a[6] = {sql_argv[0], sql_argv[1], sql_argv[2], fmt ? "--csv" : NULL, NULL};
        out = run_on_pty(a, d.err, &rc);
        ck_assert_int_eq(rc, 0);
        ck_assert_msg(!strchr(out, 0x1b) && !strstr(out, "\xc2\x9b") && !strchr(out, '\r'),
                      "raw control characters reached the terminal: %s", out);
        ck_assert_msg(strstr(out, "evil?[2Jname?31m"), "%s", out);
        free(out);
    }
    /* Into a file the bytes are the data, unchanged. */
    char path[160];
    snprintf(path, sizeof path, "%s/out.csv", d.dir);
    ck_assert_int_eq(ft_tool(path, d.err, ft_bin("tracy-csv"), d.out, NULL), 0);
    out = ft_slurp(path);
    ck_assert_msg(strstr(out, "evil\x1b[2Jname\xc2\x9b" "31m"), "%s", out);
    free(out);
    ft_dir_clean(&d);
}
END_TEST

Suite *hostile_suite(void) {
    Suite *s = suite_create("hostile");
    TCase *tc = tcase_create("limits");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, thousands_of_streams_from_one_client_are_read);
    tcase_add_test(tc, open_zones_past_the_process_limit_reject_the_client);
    tcase_add_test(tc, a_small_file_of_deep_zones_is_refused_within_budget);
    tcase_add_test(tc, streams_whose_blocks_exceed_the_budget_are_read_in_turn);
    tcase_add_test(tc, interleaved_blocks_beyond_the_budget_are_refused_promptly);
    tcase_add_test(tc, lost_counts_saturate_and_late_timestamps_are_refused);
    suite_add_tcase(s, tc);
    tc = tcase_create("damaged_files");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, info_json_lists_a_process_missing_from_a_cut_file);
    tcase_add_test(tc, a_forged_trailer_fails_verify);
    tcase_add_test(tc, names_reach_a_terminal_without_escapes);
    suite_add_tcase(s, tc);
    return s;
}
