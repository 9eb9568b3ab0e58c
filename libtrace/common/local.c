/* local.c -- the run folder and the identity of local peers (local.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include "local.h"

/* Room left in a socket path for "/daemon-<pid>.sock". */
#define SOCK_NAME_MAX 32

int lt__dir_private(const char *path, char *why, size_t why_len) {
    struct stat st;
    if (lstat(path, &st) != 0) {
        snprintf(why, why_len, "%s", strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        snprintf(why, why_len, "is a symbolic link");
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, why_len, "is not a folder");
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, why_len, "is owned by uid %lu, not by this user (uid %lu)",
                 (unsigned long)st.st_uid, (unsigned long)geteuid());
        return -1;
    }
    if (st.st_mode & 077) {
        snprintf(why, why_len, "can be entered by other users (mode %03o)",
                 (unsigned)(st.st_mode & 0777));
        return -1;
    }
    return 0;
}

/* Creates `path` (mode 0700) or finds it; 0 when it is private. A folder
 * made here gets 0700 whatever the umask. *planted: it existed and failed
 * the check (one that cannot be made is no news). */
static int make_private(const char *path, char *why, size_t why_len, int *planted) {
    *planted = 0;
    if (mkdir(path, 0700) == 0) {
        if (chmod(path, 0700) != 0) {
            snprintf(why, why_len, "%s", strerror(errno));
            return -1;
        }
        return lt__dir_private(path, why, why_len);
    }
    if (errno != EEXIST) {
        snprintf(why, why_len, "%s", strerror(errno));
        return -1;
    }
    if (lt__dir_private(path, why, why_len) == 0) return 0;
    *planted = 1;
    return -1;
}

/* Writes candidate number i to out; 0, or -1 when it does not apply. */
static int candidate(int i, char *out, size_t n) {
    const char *v;
    unsigned long uid = (unsigned long)geteuid();
    int k = -1;
    switch (i) {
    case 0:
        if ((v = getenv("XDG_RUNTIME_DIR")) && v[0] == '/')
            k = snprintf(out, n, "%s/tracy", v);
        break;
    case 1:
        if ((v = getenv("TMPDIR")) && v[0] == '/')
            k = snprintf(out, n, "%s/tracy-%lu", v, uid);
        break;
    case 2:
        k = snprintf(out, n, "/tmp/tracy-%lu", uid);
        break;
    case 3:
        if ((v = getenv("HOME")) && v[0] == '/') {
            char host[64] = "host";
            gethostname(host, sizeof host - 1);
            host[sizeof host - 1] = 0;
            /* $HOME/.cache first: made private if it is new */
            k = snprintf(out, n, "%s/.cache", v);
            if (k > 0 && (size_t)k < n && mkdir(out, 0700) != 0 && errno != EEXIST)
                return -1;
            k = snprintf(out, n, "%s/.cache/tracy-%s", v, host);
        }
        break;
    }
    return k > 0 && (size_t)k < n ? 0 : -1;
}

int lt__rundir(char *out, size_t out_len, char *note, size_t note_len) {
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)], why[160];
    if (note && note_len) note[0] = 0;
    for (int i = 0; i < 4; i++) {
        int planted;
        if (candidate(i, path, sizeof path - SOCK_NAME_MAX) < 0) continue;
        if (make_private(path, why, sizeof why, &planted) == 0) {
            if (strlen(path) >= out_len) return -1;
            memcpy(out, path, strlen(path) + 1);
            return 0;
        }
        if (planted && note && note_len && !note[0])
            snprintf(note, note_len, "%s: it %s", path, why);
    }
    return -1;
}

int lt__unix_peer(int fd, uid_t *uid, pid_t *pid) {
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) return -1;
    *uid = cr.uid;
    if (pid) *pid = cr.pid;
    return 0;
}

/* ---- loopback TCP ------------------------------------------------------- */

/* One end of a TCP connection as sock_diag takes it: a v4-mapped IPv6
 * address as the IPv4 one (the kernel finds dual-stack sockets by it). */
typedef struct {
    int family;
    uint32_t addr[4];       /* network order, as the kernel holds it */
    uint16_t port;          /* network order */
} endpoint;

static void to_endpoint(const struct sockaddr_storage *ss, endpoint *e) {
    memset(e, 0, sizeof *e);
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        e->family = AF_INET;
        memcpy(e->addr, &a->sin_addr, 4);
        e->port = a->sin_port;
        return;
    }
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
    e->port = a->sin6_port;
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
        e->family = AF_INET;
        memcpy(e->addr, &a->sin6_addr.s6_addr[12], 4);
        return;
    }
    e->family = AF_INET6;
    memcpy(e->addr, &a->sin6_addr, 16);
}

/* Asks the kernel (NETLINK_SOCK_DIAG, one exact lookup) for the owner of
 * the TCP socket whose local end is `src` and remote end `dst`. Returns 0
 * with *uid, or -1. */
static int diag_uid(const endpoint *src, const endpoint *dst, uid_t *uid) {
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 r;
    } req;
    memset(&req, 0, sizeof req);
    req.nlh.nlmsg_len = sizeof req;
    req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.nlh.nlmsg_flags = NLM_F_REQUEST;
    req.r.sdiag_family = (uint8_t)src->family;
    req.r.sdiag_protocol = IPPROTO_TCP;
    req.r.idiag_states = ~0u;
    req.r.id.idiag_sport = src->port;
    req.r.id.idiag_dport = dst->port;
    memcpy(req.r.id.idiag_src, src->addr, sizeof req.r.id.idiag_src);
    memcpy(req.r.id.idiag_dst, dst->addr, sizeof req.r.id.idiag_dst);
    req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) return -1;
    struct sockaddr_nl nl = {.nl_family = AF_NETLINK};
    int rc = -1;
    union {
        struct nlmsghdr h;
        char b[1024];
    } ans;
    struct timeval tv = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (sendto(fd, &req, sizeof req, 0, (struct sockaddr *)&nl, sizeof nl) ==
        (ssize_t)sizeof req) {
        ssize_t n = recv(fd, &ans, sizeof ans, 0);
        if (n >= (ssize_t)NLMSG_LENGTH(sizeof(struct inet_diag_msg)) &&
            NLMSG_OK(&ans.h, (size_t)n) && ans.h.nlmsg_type == SOCK_DIAG_BY_FAMILY) {
            const struct inet_diag_msg *m = NLMSG_DATA(&ans.h);
            *uid = (uid_t)m->idiag_uid;
            rc = 0;
        }
    }
    close(fd);
    return rc;
}

int lt__tcp_peer_uid(int fd, uid_t *uid) {
    struct sockaddr_storage me, peer;
    socklen_t ml = sizeof me, pl = sizeof peer;
    if (getsockname(fd, (struct sockaddr *)&me, &ml) != 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &pl) != 0)
        return -1;
    endpoint m, p;
    to_endpoint(&me, &m);
    to_endpoint(&peer, &p);
    /* The peer's socket: its local end is our remote one, and the other way. */
    if (m.family != p.family || diag_uid(&p, &m, uid) < 0) {
        errno = ENOENT;
        return -1;
    }
    return 0;
}

int lt__is_loopback(const void *sockaddr) {
    const struct sockaddr *sa = sockaddr;
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family != AF_INET6) return 0;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a)) return 1;
    return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
}

/* ---- The open-file limit ------------------------------------------------ */

void lt__nofile_raise(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == rl.rlim_max) return;
    rlim_t want = rl.rlim_max;
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 && want > 65536) {
        rl.rlim_cur = 65536;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* Descriptors open now (32 when /proc cannot tell). */
static uint64_t open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) return 32;
    uint64_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n > 0 ? n - 1 : 0; /* the directory's own */
}

uint64_t lt__nofile_room(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
    uint64_t used = open_fds();
    return rl.rlim_cur > used ? rl.rlim_cur - used : 0;
}
