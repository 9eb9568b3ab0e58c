/* main.c -- tracy-serve: options, then the server (http.c). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "common/local.h"
#include "serve.h"

#define MAX_TOKEN 4096

static const char usage_text[] =
    "Usage: tracy-serve [OPTIONS] PATH...\n"
    "Serves the traces in PATH (files, or folders searched recursively) to a\n"
    "browser: sessions, a zoomable timeline, statistics. Prints the URL to open.\n"
    "\n"
    "  -a, --addr ADDR       address to listen on (default 127.0.0.1); a\n"
    "                        non-loopback address needs --token-file\n"
    "  -p, --port PORT       port (default 8791; 0 picks a free one)\n"
    "      --token-file FILE require the secret in FILE (URL-safe characters)\n"
    "      --cache DIR       index folder (default $XDG_CACHE_HOME/tracy/index\n"
    "                        or ~/.cache/tracy/index)\n"
    "  -h, --help            this help\n"
    "  -V, --version         the version\n"
    "\n"
    "Exit status: 0 stopped by a signal; 1 usage; 2 a PATH cannot be read;\n"
    "3 cannot listen.\n";

enum { OPT_TOKEN = 256, OPT_CACHE };

/* The secret: the file's content without trailing newlines; the file must
 * not be readable or writable by others, and the secret URL-safe (it is
 * printed in the URL and kept in a cookie). */
static int read_token(sv_opts *o, const char *path) {
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f) {
        cv_err("cannot read token file '%s': %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP))) {
        cv_err("token file '%s' is open to other users: chmod 600 it", path);
        fclose(f);
        return -1;
    }
    char *buf = malloc(MAX_TOKEN + 2);
    size_t n = buf ? fread(buf, 1, MAX_TOKEN + 1, f) : 0;
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) n--;
    int ok = buf && n > 0 && n <= MAX_TOKEN;
    for (size_t i = 0; ok && i < n; i++)
        ok = (buf[i] >= 'a' && buf[i] <= 'z') || (buf[i] >= 'A' && buf[i] <= 'Z') ||
             (buf[i] >= '0' && buf[i] <= '9') || strchr("-._~", buf[i]);
    if (!ok) {
        cv_err("token file '%s' must hold 1 to %d characters of A-Z a-z 0-9 - . _ ~", path,
               MAX_TOKEN);
        free(buf);
        return -1;
    }
    buf[n] = 0;
    o->token = buf;
    o->token_len = n;
    return 0;
}

static int is_loopback_addr(const char *a) {
    struct sockaddr_in v4 = {.sin_family = AF_INET};
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};
    if (inet_pton(AF_INET, a, &v4.sin_addr) == 1) return lt__is_loopback(&v4);
    if (inet_pton(AF_INET6, a, &v6.sin6_addr) == 1) return lt__is_loopback(&v6);
    return -1;
}

static int parse(sv_opts *o, int argc, char **argv) {
    static const struct option longs[] = {
        {"addr", required_argument, NULL, 'a'},   {"port", required_argument, NULL, 'p'},
        {"token-file", required_argument, NULL, OPT_TOKEN},
        {"cache", required_argument, NULL, OPT_CACHE},
        CV_STD_LONG_OPTIONS,                      {NULL, 0, NULL, 0}};
    /* Each option holds one value: given again, only with the same one. */
    cv_opt addr = {0}, port = {0}, token = {0}, cache = {0};
    int c, rc;
    o->addr = "127.0.0.1";
    o->port = SV_DEFAULT_PORT;
    opterr = 0;
    while ((c = cv_getopt(argc, argv, ":a:p:hV", longs)) != -1) {
        char *e;
        long v;
        cv_opt *slot = c == 'a' ? &addr : c == 'p' ? &port : c == OPT_TOKEN ? &token
                     : c == OPT_CACHE ? &cache : NULL;
        if (slot && (rc = cv_opt_set(slot, optarg))) return rc;
        switch (c) {
        case 'a': o->addr = optarg; break;
        case 'p':
            v = strtol(optarg, &e, 10);
            if (*e || e == optarg || v < 0 || v > 65535) {
                cv_err("bad port '%s'", optarg);
                return CV_EXIT_USAGE;
            }
            o->port = (int)v;
            break;
        case OPT_TOKEN:
            if (!o->token && read_token(o, optarg) < 0) return CV_EXIT_USAGE;
            break;
        case OPT_CACHE:
            if (snprintf(o->cache, sizeof o->cache, "%s", optarg) >= (int)sizeof o->cache)
                return cv_usage_error("--cache: a path of at most %zu bytes",
                                      sizeof o->cache - 1);
            break;
        default:
            if ((rc = cv_std_option(c, usage_text, argv)) == 0) exit(0); /* -h, -V */
            return rc;
        }
    }
    if (optind >= argc) {
        cv_err("no PATH given (a trace or a folder of traces; see --help)");
        return CV_EXIT_USAGE;
    }
    int lb = is_loopback_addr(o->addr);
    if (lb < 0) {
        cv_err("-a needs a numeric address, not '%s'", o->addr);
        return CV_EXIT_USAGE;
    }
    if (!lb && !o->token) {
        cv_err("a non-loopback address (%s) needs --token-file", o->addr);
        return CV_EXIT_USAGE;
    }
    o->paths = argv + optind;
    o->npaths = argc - optind;
    return 0;
}

/* The index folder: made when missing; a folder this process can write
 * into. Returns 0, or -1 after one line. */
static int check_cache(const char *dir) {
    struct stat st;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        cv_err("cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    int err = stat(dir, &st) < 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR
                                   : access(dir, W_OK | X_OK) < 0 ? errno : 0;
    if (err) {
        cv_err("index folder %s: %s", dir, strerror(err));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    sv_opts o;
    memset(&o, 0, sizeof o);
    cv_prog = SV_NAME;
    int rc = parse(&o, argc, argv);
    if (rc) return rc;
    if (!o.cache[0] && vw_cache_dir(o.cache, sizeof o.cache) < 0) {
        cv_err("no cache folder: set XDG_CACHE_HOME or HOME, or give --cache");
        return CV_EXIT_USAGE;
    }
    if (check_cache(o.cache) < 0) return CV_EXIT_USAGE;
    sv_sessions ss;
    if (sv_sessions_init(&ss, o.paths, o.npaths, o.cache) < 0) return CV_EXIT_INPUT;
    rc = sv_run(&o, &ss);
    sv_sessions_free(&ss);
    free(o.token);
    return rc;
}
