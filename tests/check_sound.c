/* check_sound.c -- one notion of a sound file, and readers linear in
 * streams: every tool (tracy-info, -json, -csv, -sql, -export, -diff, -cut,
 * -merge) refuses a file whose trailer contradicts its units, or a unit of
 * an unknown kind, with exit 4 and tracy-info --verify's message; and every
 * tool reads a trace of 65536 threads correctly within a memory bound. */
#define _GNU_SOURCE /* memmem */
#include "faults.h"
#include "scratch.h"
#include "file_int.h"

/* ---- Helpers ------------------------------------------------------------- */

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Copies `src` to `dst` frame by frame: units are dropped (drop_units) or
 * the first event unit's kind byte is set to `kind` (when not 0). */
static void rewrite(const char *src, const char *dst, int drop_units, uint8_t kind) {
    size_t len, o = 0, off = 0;
    uint8_t *in = slurp(src, &len), *out = malloc(len);
    int done = 0;
    while (off + 8 <= len) {
        uint32_t magic = rd32(in + off), cs = rd32(in + off + 4);
        size_t n = 8 + (size_t)cs;
        if (magic == LT__MAGIC_DESC) n = LT__UNIT_OVERHEAD + rd32(in + off + 8 + 16);
        ck_assert_uint_le(off + n, len);
        if (magic != LT__MAGIC_DESC || !drop_units) {
            memcpy(out + o, in + off, n);
            if (magic == LT__MAGIC_DESC && kind && !done && out[o + 8] == LT_BLOCK_EVENTS) {
                out[o + 8] = kind;
                done = 1;
            }
            o += n;
        }
        off += n;
    }
    ck_assert_uint_eq(off, len);
    ck_assert(drop_units || !kind || done);
    spit(dst, out, o);
    free(in);
    free(out);
}

static void gen(const ft_dir *d, const char *path, const char *threads, const char *zones,
                const char *depth) {
    ck_assert_int_eq(ft_tool("/dev/null", d->err, ft_bin("../tools/tracegen"), "-f", "-t",
                             threads, "-z", zones, "-d", depth, "-o", path, NULL),
                     0);
}

enum { NTOOLS = 13 };

/* Runs every tool on `bad` (tracy-diff with `good` as its base) and checks
 * that each exits 4 with the line tracy-info --verify prints (its text
 * after "tracy-info: "), which must hold `needle`. */
static void all_refuse(const ft_dir *d, const char *good, const char *bad, const char *needle) {
    char out[160], o2[160], e[160];
    snprintf(out, sizeof out, "%s/tool.out", d->dir);
    snprintf(o2, sizeof o2, "%s/tool2.tracy", d->dir);
    snprintf(e, sizeof e, "%s/verify.err", d->dir);
    ck_assert_int_eq(ft_tool(out, e, ft_bin("tracy-info"), "--verify", bad, NULL), 4);
    char *verr = ft_slurp(e), *line = strstr(verr, "tracy-info: ");
    ck_assert_ptr_nonnull(line);
    line += strlen("tracy-info: ");
    ck_assert_msg(strstr(line, needle), "want '%s' in: %s", needle, verr);
    const char *names[NTOOLS] = {"info", "json", "json --allow-truncated", "csv",
                                 "csv --allow-truncated", "sql", "export", "export --allow-truncated",
                                 "diff", "diff (new)", "cut", "merge", "merge (second)"};
    int rc[NTOOLS];
    char *errs[NTOOLS];
    int k = 0;
#define RUN(...) (rc[k] = ft_tool(out, d->err, __VA_ARGS__, NULL), errs[k++] = ft_slurp(d->err))
    RUN(ft_bin("tracy-info"), bad);
    RUN(ft_bin("tracy-json"), bad);
    RUN(ft_bin("tracy-json"), "--allow-truncated", bad);
    RUN(ft_bin("tracy-csv"), bad);
    RUN(ft_bin("tracy-csv"), "--allow-truncated", bad);
    RUN(ft_bin("tracy-sql"), "-o", o2, bad);
    RUN(ft_bin("tracy-export"), "-f", "folded", "-o", o2, bad);
    RUN(ft_bin("tracy-export"), "--allow-truncated", "-f", "folded", "-o", o2, bad);
    RUN(ft_bin("tracy-diff"), bad, good);
    RUN(ft_bin("tracy-diff"), good, bad);
    RUN(ft_bin("tracy-cut"), "-f", "-o", o2, bad);
    RUN(ft_bin("tracy-merge"), "-f", "-o", o2, bad);
    RUN(ft_bin("tracy-merge"), "-f", "-o", o2, good, bad);
#undef RUN
    for (int i = 0; i < NTOOLS; i++) {
        ck_assert_msg(rc[i] == 4, "tracy-%s exited %d, not 4: %s", names[i], rc[i], errs[i]);
        ck_assert_msg(strstr(errs[i], line), "tracy-%s: want '%s' in: %s", names[i], line,
                      errs[i]);
        free(errs[i]);
    }
    free(verr);
}

/* ---- A trailer that contradicts the file --------------------------------- */

/* Header and trailer of a valid trace, every unit removed: the trailer
 * still counts thousands of events. */
START_TEST(units_removed_refused_by_every_tool) {
    ft_dir d;
    ft_dir_init(&d);
    char good[160], bad[160];
    snprintf(good, sizeof good, "%s/good.tracy", d.dir);
    snprintf(bad, sizeof bad, "%s/bad.tracy", d.dir);
    gen(&d, good, "3", "4000", "4");
    rewrite(good, bad, 1, 0);
    all_refuse(&d, good, bad, "trailer does not match the file: stream 1.1 events");
    /* The library says so too, before any event. */
    lt_reader *r;
    ck_assert_int_eq(lt_reader_open(&r, bad, NULL, 0), 0);
    ck_assert_int_eq(lt_reader_sound(r), LT_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(lt_reader_error(r), "trailer does not match the file"));
    lt_event ev;
    ck_assert_int_eq(lt_reader_next(r, &ev), LT_ECORRUPT);
    ck_assert_int_eq(lt_reader_next(r, &ev), LT_ECORRUPT); /* sticky */
    ck_assert_int_eq(lt_reader_check(r), LT_ECORRUPT);
    lt_reader_free(r);
    ck_assert_int_eq(lt_reader_open(&r, good, NULL, 0), 0);
    ck_assert_int_eq(lt_reader_sound(r), 0);
    lt_reader_free(r);
    ft_dir_clean(&d);
}
END_TEST

/* ---- Unit kinds ------------------------------------------------------------ */

START_TEST(unknown_unit_kind_refused_by_every_tool) {
    ft_dir d;
    ft_dir_init(&d);
    char good[160], bad[160];
    snprintf(good, sizeof good, "%s/good.tracy", d.dir);
    snprintf(bad, sizeof bad, "%s/bad.tracy", d.dir);
    gen(&d, good, "3", "4000", "4");
    rewrite(good, bad, 0, 4); /* an event unit's kind 1 changed to 4 */
    all_refuse(&d, good, bad, "unknown unit kind");
    /* Kinds 4..15 mean nothing: corrupt. 16 and above belong to later
     * minor versions: skipped, and then the trailer's counts disagree. */
    for (unsigned k = 4; k < 256; k++) {
        rewrite(good, bad, 0, (uint8_t)k);
        lt_reader *r;
        char detail[256] = "";
        int rc = lt_reader_open(&r, bad, detail, sizeof detail);
        if (k < 16) {
            ck_assert_msg(rc == LT_ECORRUPT && strstr(detail, "unknown unit kind"), "kind %u: %d %s",
                          k, rc, detail);
            continue;
        }
        if (k == LT_BLOCK_CUT) { /* a cut block (1.1): its fields are checked */
            ck_assert_msg(rc == LT_ECORRUPT, "kind %u: %d", k, rc);
            continue;
        }
        ck_assert_msg(rc == 0, "kind %u: %s", k, detail);
        ck_assert_msg(lt_reader_sound(r) == LT_ECORRUPT, "kind %u: trailer believed", k);
        lt_reader_free(r);
    }
    ft_dir_clean(&d);
}
END_TEST

/* ---- Many streams -------------------------------------------------------- */

static size_t count_lines(const char *path) {
    char *s = ft_slurp(path);
    size_t n = 0;
    for (char *p = s; *p; p++) n += *p == '\n';
    free(s);
    return n;
}

/* memmem, not strstr: a sanitizer's strstr measures the rest of the text
 * at every call, which made this quadratic under ASan (minutes). */
static size_t count_str(const char *path, const char *needle) {
    char *s = ft_slurp(path);
    const char *p = s, *end = s + strlen(s);
    size_t n = 0, nl = strlen(needle);
    for (; (p = memmem(p, (size_t)(end - p), needle, nl)); p++) n++;
    free(s);
    return n;
}

#define MANY 65536
#define MANY_S "65536"
/* What a tool may hold for 65536 streams: the documented cost per stream
 * (FORMAT.md, "Limits": under 2 KB for a reader, 4 KB for tracy-diff's two
 * inputs) with room to spare. */
#define MANY_MIB 320

/* One zone on each of 65536 threads: every tool reads it whole, within
 * FT_WAIT_MS (the readers were quadratic: tracy-diff took minutes) and
 * within a memory bound. */
START_TEST(many_streams_read_by_every_tool) {
    ft_dir d;
    ft_dir_init(&d);
    char in[160], out[160], o2[160], o3[160];
    snprintf(in, sizeof in, "%s/many.tracy", d.dir);
    snprintf(out, sizeof out, "%s/out.txt", d.dir);
    snprintf(o2, sizeof o2, "%s/out2", d.dir);
    snprintf(o3, sizeof o3, "%s/out3.tracy", d.dir);
    gen(&d, in, MANY_S, MANY_S, "1");
    int rc;
    long mib, worst = 0;
#define TOOL(...)                                                                        \
    (mib = ft_peak_mib((char *[]){__VA_ARGS__, NULL}, out, d.err, &rc),                  \
     worst = mib > worst ? mib : worst,                                                  \
     ck_assert_msg(rc == 0, "%s exited %d: %s", #__VA_ARGS__, rc, ft_slurp(d.err)),      \
     ck_assert_msg(mib < MANY_MIB, "%s used %ld MiB", #__VA_ARGS__, mib))
    TOOL((char *)ft_bin("tracy-info"), "--verify", in);
    ck_assert_uint_eq(count_str(out, "threads:          " MANY_S "\n"), 1);
    TOOL((char *)ft_bin("tracy-json"), in);
    ck_assert_uint_eq(count_str(out, "\"ph\":\"X\""), MANY);
    ck_assert_uint_eq(count_str(out, "\"name\":\"thread_name\""), MANY);
    TOOL((char *)ft_bin("tracy-csv"), "-u", in);
    ck_assert_uint_eq(count_lines(out), MANY + 1);
    TOOL((char *)ft_bin("tracy-sql"), in, "SELECT count(*) FROM thread; "
                                          "SELECT count(*) FROM slice");
    ck_assert_uint_eq(count_str(out, MANY_S "\n"), 2);
    TOOL((char *)ft_bin("tracy-export"), "-f", "folded", "--per-thread", "-o", "-", in);
    ck_assert_uint_eq(count_lines(out), MANY);
    TOOL((char *)ft_bin("tracy-diff"), "-f", "csv", in, in);
    TOOL((char *)ft_bin("tracy-cut"), "-q", "-f", "-o", o3, in);
    TOOL((char *)ft_bin("tracy-merge"), "-q", "-f", "-o", o2, in, o3);
    TOOL((char *)ft_bin("tracy-info"), "--verify", o2);
    ck_assert_uint_eq(count_str(out, "threads:          131072\n"), 1);
#undef TOOL
    fprintf(stderr, "sound: 65536 streams: largest peak %ld MiB\n", worst);
    ft_dir_clean(&d);
}
END_TEST

Suite *sound_suite(void) {
    Suite *s = suite_create("sound");
    TCase *t = tcase_create("sound");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, units_removed_refused_by_every_tool);
    tcase_add_test(t, unknown_unit_kind_refused_by_every_tool);
    tcase_add_test(t, many_streams_read_by_every_tool);
    suite_add_tcase(s, t);
    return s;
}
