/* output.c -- the output side shared by tracy-merge and tracy-cut: its
 * options, creating, filling and closing it. */
#include "splice/output.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Parses a zstd level 1..19. Returns 0 or -1. */
static int sc_parse_level(const char *arg, int *level) {
    uint64_t v;
    if (cv_parse_u64(arg, &v) < 0 || v < 1 || v > 19) return -1;
    *level = (int)v;
    return 0;
}

int sc_option(int c, sc_output *o, const char *usage, char *const *argv) {
    switch (c) {
    case 'o':
        o->path = optarg;
        return cv_opt_set(&o->given_path, optarg) ? CV_EXIT_USAGE : SC_MORE;
    case 'f': o->force = 1; return SC_MORE;
    case 'q': o->quiet = 1; return SC_MORE;
    case SC_OPT_LEVEL:
        if (sc_parse_level(optarg, &o->level) < 0)
            return cv_usage_error("--level: '%s' is not a level from 1 to 19", optarg);
        return cv_opt_set(&o->given_level, optarg) ? CV_EXIT_USAGE : SC_MORE;
    case ':': return cv_usage_error("option '%s' needs a value", argv[optind - 1]);
    default: return cv_std_option(c, usage, argv);
    }
}

int sc_check_args(const sc_output *o, int argc) {
    if (!o->path) return cv_usage_error("no output given (-o FILE)");
    if (optind >= argc) return cv_usage_error("no input trace given");
    return 0;
}

int sc_open(lt_splice **s, const sc_output *o) {
    char creator[64];
    const char *out = o->path;
    snprintf(creator, sizeof creator, "%s %s", cv_prog, LT_VERSION_STRING);
    int rc = lt_splice_open(s, out, o->force ? LT_WRITE_FORCE : 0, creator, o->level);
    if (rc == LT_EEXIST) {
        cv_err("%s: file exists (use -f to overwrite it)", out);
        return CV_EXIT_OUTPUT;
    }
    if (rc < 0) {
        cv_err("%s: cannot create: %s", out, rc == LT_EOPEN ? strerror(errno) : lt_strerror(rc));
        return CV_EXIT_OUTPUT;
    }
    return 0;
}

static int sc_exit_for(int rc) {
    if (rc == LT_ECORRUPT) return CV_EXIT_CORRUPT;
    if (rc == LT_EIO || rc == LT_ENOSPC || rc == LT_EFBIG || rc == LT_ECOMPRESS ||
        rc == LT_EINVAL || rc == LT_ELIMIT)
        return CV_EXIT_OUTPUT;
    return cv_exit_for(rc);
}

int sc_abandon(lt_splice *s, const char *out) {
    cv_err("out of memory");
    lt_splice_free(s);
    (void)remove(out);
    return CV_EXIT_OUTPUT;
}

int sc_finish(lt_splice *s, const sc_output *o, int ok_exit) {
    const char *out = o->path;
    int rc = lt_splice_run(s);
    int code = 0;
    if (rc < 0) {
        cv_err("%s", lt_splice_error(s));
        code = sc_exit_for(rc);
        /* a corrupt input is reported as such even though reading failed */
        if (rc == LT_EIO && strstr(lt_splice_error(s), "cannot write") == NULL)
            code = CV_EXIT_INPUT;
    } else if ((rc = lt_splice_close(s, 0)) < 0) {
        cv_err("%s: %s", out, lt_splice_error(s));
        code = CV_EXIT_OUTPUT;
    }
    uint64_t events = lt_splice_events(s), dropped = lt_splice_dropped(s);
    lt_splice_free(s);
    if (code) {
        if (unlink(out) < 0 && errno != ENOENT)
            cv_warn("%s: cannot remove the incomplete output: %s", out, strerror(errno));
        return code;
    }
    if (!o->quiet)
        fprintf(stderr, "%s: wrote %s: %" PRIu64 " events (%" PRIu64 " of the input's left out)\n",
                cv_prog, out, events, dropped);
    return ok_exit;
}
