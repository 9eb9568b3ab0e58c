/* input.c -- opening a trace and taking its events, with one line on
 * failure and the exit code it maps to (input.h). */
#include "prog/input.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- Input -------------------------------------------------------------- */

/* Every trace this program opened, by file (device and inode, as opened:
 * its name may be replaced later): cv_check_output refuses each of them as
 * an output. */
typedef struct cv_seen {
    dev_t dev;
    ino_t ino;
    const char *path;
} cv_seen;
static cv_seen *g_seen;
static size_t g_nseen;

static void note_input(const char *path) {
    struct stat st;
    cv_seen *s;
    if (stat(path, &st) != 0) return;
    if (!(s = realloc(g_seen, (g_nseen + 1) * sizeof *s))) return;
    g_seen = s;
    g_seen[g_nseen++] = (cv_seen){st.st_dev, st.st_ino, path};
}

int cv_check_output(const char *out) {
    struct stat st;
    if (!out || strcmp(out, "-") == 0 || stat(out, &st) != 0) return 0;
    for (size_t i = 0; i < g_nseen; i++)
        if (g_seen[i].dev == st.st_dev && g_seen[i].ino == st.st_ino)
            return cv_usage_error("%s: the output would overwrite the input %s", out,
                                  g_seen[i].path);
    return 0;
}

int cv_exit_for(int lt_err) {
    switch (lt_err) {
    case LT_OK: return CV_EXIT_OK;
    case LT_ETRUNCATED: return CV_EXIT_TRUNCATED;
    case LT_ECORRUPT: return CV_EXIT_CORRUPT;
    case LT_ENOSPC: case LT_EFBIG: return CV_EXIT_OUTPUT;
    default: return CV_EXIT_INPUT;
    }
}

/* Opens without refusing a trailer that contradicts the file (tracy-info
 * reports it after its summary). */
static int cv_open_any(const char *path, lt_reader **out) {
    char detail[512] = "";
    int rc = lt_reader_open(out, path, detail, sizeof detail);
    if (rc == 0) {
        note_input(path);
        return 0;
    }
    *out = NULL;
    /* The detail is the better message; it may already name the file. */
    if (!detail[0])
        cv_err("%s: %s", path, lt_strerror(rc));
    else if (strncmp(detail, path, strlen(path)) == 0)
        cv_err("%s", detail);
    else
        cv_err("%s: %s", path, detail);
    return cv_exit_for(rc) == CV_EXIT_OK ? CV_EXIT_INPUT : cv_exit_for(rc);
}

int cv_open(const char *path, lt_reader **out) {
    int code = cv_open_any(path, out);
    if (code) return code;
    if (lt_reader_sound(*out) < 0) { /* tracy-info --verify's line and code */
        cv_err("%s: %s", path, lt_reader_error(*out));
        lt_reader_free(*out);
        *out = NULL;
        return CV_EXIT_CORRUPT;
    }
    return 0;
}

int cv_check_complete(const lt_reader *r, const char *path, int allow_truncated) {
    const lt_file_info *fi = lt_reader_info(r);
    if (fi->complete) return 0;
    cv_warn("%s: truncated: %llu bytes ignored after the last complete unit%s",
            path, (unsigned long long)fi->bytes_ignored,
            allow_truncated ? "" : " (--allow-truncated accepts this)");
    return allow_truncated ? 0 : CV_EXIT_TRUNCATED;
}

int cv_next(lt_reader *r, lt_event *ev, const char *path, int *err) {
    int rc = lt_reader_next(r, ev);
    if (rc >= 0) return rc;
    *err = rc;
    cv_err("%s: %s", path, lt_reader_error(r));
    return -1;
}

int cv_final_exit(int read_exit, int trunc_exit) {
    return read_exit ? read_exit : trunc_exit;
}

/* ---- The event loop ----------------------------------------------------- */

int cv_run_open(cv_run *c, const char *path, int truncated) {
    memset(c, 0, sizeof *c);
    c->path = path;
    int code = truncated == CV_TRUNC_SILENT ? cv_open_any(path, &c->r) : cv_open(path, &c->r);
    if (code) return code;
    if (truncated != CV_TRUNC_SILENT)
        c->trunc = cv_check_complete(c->r, path, truncated == CV_TRUNC_ALLOW);
    return 0;
}

int cv_run_exit(const cv_run *c, int output_failed) {
    return output_failed ? CV_EXIT_OUTPUT : cv_final_exit(c->read_exit, c->trunc);
}

void cv_run_close(cv_run *c) {
    lt_reader_free(c->r);
    c->r = NULL;
}
