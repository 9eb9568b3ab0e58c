/* options.c -- command line of capture-release and its usage text. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "capture.h"
#include "common/wire.h"

#define MAX_TOKEN 4096

static const char usage_text[] =
    "Usage: " CAP_NAME " -o FILE [options]\n"
    "Accepts profiled processes of this user (on a Unix socket in a private\n"
    "folder; over TCP with -a) and writes their events into one .tracy file.\n"
    "\n"
    "  -o FILE               output file (required)\n"
    "  -f                    replace FILE if it exists (a new file renamed\n"
    "                        over it; a link is replaced, not followed)\n"
    "  -p PORT               port, default $TRACY_PORT or 8086: local clients\n"
    "                        reach the daemon at daemon-PORT.sock in this user's\n"
    "                        run folder; 0 picks a free one and prints where\n"
    "                        (unix:PATH, or the TCP port with -a) on stdout\n"
    "  -a ADDR               also listen on TCP at ADDR (numeric IPv4/IPv6);\n"
    "                        loopback clients of other users are refused\n"
    "                        unless --token-file is given\n"
    "  --socket PATH         the Unix socket's path (instead of the run folder)\n"
    "  -s SECONDS            stop after SECONDS\n"
    "  -n CLIENTS            stop once CLIENTS clients have connected and all\n"
    "                        have disconnected (default 1, unless -s is given)\n"
    "  -m MIB                memory for client data (blocks, partial messages,\n"
    "                        thread tables), default 256; at the limit the\n"
    "                        daemon stops reading (nothing is dropped)\n"
    "  -v                    log connections and disconnections\n"
    "  -q                    quiet: no status line, summary or client warnings\n"
    "  --token-file FILE     require the secret in FILE from every client\n"
    "                        (clients send TRACY_TOKEN); refused when other\n"
    "                        users can read it or group/others can write it\n"
    "  --insecure            allow a non-loopback -a without a token\n"
    "  --max-clients N       simultaneous connections, default 4096\n"
    "  --max-message BYTES   largest message accepted, default 1048576 (at\n"
    "                        most a quarter of -m)\n"
    "  --max-names N         threads+locations+plots+frames per client,\n"
    "                        default 262144\n"
    "  --handshake-timeout MS  drop a client that has not said HELLO by then,\n"
    "                        default 5000\n"
    "  --level N             zstd compression level 1..19, default 3\n"
    "  --max-size MIB        stop recording events once the file has MIB MiB;\n"
    "                        later events are counted (events_dropped_size_limit)\n"
    "                        and dropped, the file stays complete\n"
    "  --rotate              with --max-size: go on in a new file instead, each a\n"
    "                        complete trace: FILE, then FILE.1, FILE.2, ... (the\n"
    "                        number before a final .tracy: run.1.tracy)\n"
    "  -h, --help            print this help and exit\n"
    "  --version             print the version and exit\n"
    "\n"
    "Stops when the last client disconnects (or per -n/-s), or on SIGINT or\n"
    "SIGTERM; the file is then complete (trailer written). SIGUSR1 drains:\n"
    "no new client (but children of connected ones); stops when they leave.\n"
    "\n"
    "Exit status: 0 capture complete; 1 usage error; 2 output exists or cannot\n"
    "be created; 3 cannot bind or listen; 4 writing the output failed (the file\n"
    "holds everything written before the failure); 5 other runtime error.\n";

enum {
    OPT_TOKEN = 256,
    OPT_INSECURE,
    OPT_MAX_CLIENTS,
    OPT_MAX_MESSAGE,
    OPT_MAX_NAMES,
    OPT_HANDSHAKE,
    OPT_LEVEL,
    OPT_VERSION,
    OPT_MAX_SIZE,
    OPT_ROTATE,
    OPT_SOCKET
};

static const struct option long_opts[] = {
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {"token-file", required_argument, NULL, OPT_TOKEN},
    {"insecure", no_argument, NULL, OPT_INSECURE},
    {"max-clients", required_argument, NULL, OPT_MAX_CLIENTS},
    {"max-message", required_argument, NULL, OPT_MAX_MESSAGE},
    {"max-names", required_argument, NULL, OPT_MAX_NAMES},
    {"handshake-timeout", required_argument, NULL, OPT_HANDSHAKE},
    {"level", required_argument, NULL, OPT_LEVEL},
    {"max-size", required_argument, NULL, OPT_MAX_SIZE},
    {"rotate", no_argument, NULL, OPT_ROTATE},
    {"socket", required_argument, NULL, OPT_SOCKET},
    {NULL, 0, NULL, 0}};

static int bad(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, CAP_NAME ": ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, " (try --help)\n");
    return -1;
}

/* Parses a decimal integer in [lo, hi]; the whole string must be used. */
static int parse_u64(const char *what, const char *s, uint64_t lo,
                     uint64_t hi, uint64_t *out) {
    char *end;
    if (*s < '0' || *s > '9') return bad("invalid %s '%s'", what, s);
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi) {
        char range[64];
        snprintf(range, sizeof range, "%llu..%llu", (unsigned long long)lo,
                 (unsigned long long)hi);
        fprintf(stderr, CAP_NAME ": invalid %s '%s' (expected %s)\n", what,
                s, range);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_u32(const char *what, const char *s, uint32_t lo,
                     uint32_t hi, uint32_t *out) {
    uint64_t v;
    if (parse_u64(what, s, lo, hi, &v) < 0) return -1;
    *out = (uint32_t)v;
    return 0;
}

static int parse_seconds(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s || !isfinite(v) || v <= 0 || v > 1e9)
        return bad("invalid -s '%s'%s: expected a positive number of seconds",
                   s, "");
    *out = v;
    return 0;
}

/* A secret others can read is no secret, and one others can write lets them
 * choose it: refused, as ssh refuses such a private key. Group read is
 * allowed for a secret shared by a cluster's group. */
static int token_private(FILE *f, const char *path) {
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) return 1;
    if (!(st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP))) return 1;
    fprintf(stderr, CAP_NAME ": token file '%s' can be %s by other users "
            "(mode %04o): make it private with chmod 600\n", path,
            st.st_mode & S_IROTH ? "read" : "written", (unsigned)(st.st_mode & 07777));
    return 0;
}

/* Reads the shared secret: the file's content without trailing newlines. */
static int read_token(cap_opts *o, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, CAP_NAME ": cannot read token file '%s': %s\n", path,
                strerror(errno));
        return -1;
    }
    if (!token_private(f, path)) {
        fclose(f);
        return -1;
    }
    char *buf = malloc(MAX_TOKEN + 1);
    size_t n = buf ? fread(buf, 1, MAX_TOKEN + 1, f) : 0;
    int err = ferror(f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) n--;
    if (!buf || err || n == 0 || n > MAX_TOKEN) {
        fprintf(stderr, CAP_NAME ": token file '%s' %s\n", path,
                !buf ? "cannot be read: out of memory"
                : err ? "cannot be read"
                : n == 0 ? "is empty"
                         : "is too long (at most 4096 bytes)");
        free(buf);
        return -1;
    }
    free(o->token);
    o->token = buf;
    o->token_len = n;
    return 0;
}

static void defaults(cap_opts *o) {
    memset(o, 0, sizeof *o);
    o->port = LT_DEFAULT_PORT;
    o->mem_limit = 256ull << 20;
    o->max_clients = 4096;
    o->max_message = LT_WIRE_MAX_MESSAGE;
    o->max_names = 262144;
    o->handshake_ms = LT_WIRE_HANDSHAKE_MS;
    o->level = 3;
}

static int env_port(cap_opts *o) {
    const char *e = getenv("TRACY_PORT");
    uint32_t v;
    if (!e || !*e) return 0;
    if (parse_u32("TRACY_PORT", e, 0, 65535, &v) < 0) return -1;
    o->port = (int)v;
    return 0;
}

static int one_opt(cap_opts *o, int c, const char *arg) {
    uint32_t v;
    uint64_t mib;
    switch (c) {
    case 'o': o->output = arg; return 0;
    case 'a': o->addr = arg; return 0;
    case 'f': o->force = 1; return 0;
    case 'p':
        if (parse_u32("port", arg, 0, 65535, &v) < 0) return -1;
        o->port = (int)v;
        return 0;
    case 's': return parse_seconds(arg, &o->seconds);
    case 'm':
        if (parse_u64("-m (MiB)", arg, 1, 1u << 20, &mib) < 0) return -1;
        o->mem_limit = mib << 20;
        return 0;
    case 'n': return parse_u32("-n (clients)", arg, 1, UINT32_MAX, &o->n_clients);
    case 'v':
    case 'q':
        if (o->verbosity != 0 && o->verbosity != (c == 'v' ? 1 : -1))
            return bad("-v and -q exclude each other%s%s", "", "");
        o->verbosity = c == 'v' ? 1 : -1;
        return 0;
    case OPT_TOKEN: return read_token(o, arg);
    case OPT_INSECURE: o->insecure = 1; return 0;
    case OPT_MAX_CLIENTS:
        return parse_u32("--max-clients", arg, 1, 1u << 20, &o->max_clients);
    case OPT_MAX_MESSAGE:
        o->max_message_set = 1;
        return parse_u32("--max-message", arg, 64, LT_MAX_BLOCK_RAW / 2,
                         &o->max_message);
    case OPT_MAX_NAMES:
        return parse_u32("--max-names", arg, 1, 1u << 24, &o->max_names);
    case OPT_HANDSHAKE:
        return parse_u32("--handshake-timeout", arg, 1, 3600000, &o->handshake_ms);
    case OPT_MAX_SIZE:
        if (parse_u64("--max-size (MiB)", arg, 1, 1ull << 30, &mib) < 0) return -1;
        o->max_size = mib << 20;
        return 0;
    case OPT_ROTATE: o->rotate = 1; return 0;
    case OPT_SOCKET:
        if (!*arg || strlen(arg) >= 108) return bad("invalid --socket '%s'%s", arg, "");
        o->socket = arg;
        return 0;
    case OPT_LEVEL:
        if (parse_u32("--level", arg, 1, 19, &v) < 0) return -1;
        o->level = (int)v;
        return 0;
    default: return bad("unknown option%s%s", "", "");
    }
}

/* A message is read whole before it is checked: the longest must fit four
 * times in -m, or a few clients in the middle of one would hold all of it. */
static int check_message_limit(cap_opts *o) {
    uint64_t most = o->mem_limit / 4;
    if (o->max_message <= most) return 0;
    if (!o->max_message_set) {
        o->max_message = (uint32_t)most;
        return 0;
    }
    char m[32], q[32];
    snprintf(m, sizeof m, "%u", o->max_message);
    snprintf(q, sizeof q, "%llu", (unsigned long long)most);
    return bad("--max-message %s is more than a quarter of -m (%s bytes)", m, q);
}

int cap_opts_parse(cap_opts *o, int argc, char **argv) {
    int c;
    defaults(o);
    if (env_port(o) < 0) return -1;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":o:a:p:fs:m:n:vqh", long_opts,
                            NULL)) != -1) {
        if (c == 'h') {
            fputs(usage_text, stdout);
            return 1;
        }
        if (c == OPT_VERSION) {
            printf(CAP_NAME " " LT_VERSION_STRING
                   " (file format %d.%d, wire protocol %d.%d)\n",
                   LT_FORMAT_MAJOR, LT_FORMAT_MINOR, LT_WIRE_MAJOR,
                   LT_WIRE_MINOR);
            return 1;
        }
        if (c == ':')
            return bad("option '%s' needs a value%s", argv[optind - 1], "");
        if (c == '?')
            return bad("unknown option '%s'%s", argv[optind - 1], "");
        if (one_opt(o, c, optarg) < 0) return -1;
    }
    if (optind < argc)
        return bad("unexpected argument '%s'%s", argv[optind], "");
    if (!o->output || !*o->output)
        return bad("an output file is required: -o FILE%s%s", "", "");
    if (o->rotate && !o->max_size)
        return bad("--rotate needs --max-size%s%s", "", "");
    return check_message_limit(o);
}

void cap_opts_free(cap_opts *o) {
    if (o->token) memset(o->token, 0, o->token_len);
    free(o->token);
    o->token = NULL;
}
