/* listen.c -- capture-release's listeners and who may use them.
 *
 * Local clients reach the daemon on a Unix socket in its user's run folder
 * (libtrace/common/local.h), which no other user can enter; the daemon also
 * checks each such client's user (SO_PEERCRED). TCP is opened only for an
 * address given with -a: a loopback client there must be this user's (the
 * kernel's socket table says whose it is) unless the daemon requires a
 * token, which is then the proof, as for remote clients.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "capture.h"
#include "common/local.h"

/* -p 0 without TCP: the socket's number is picked in [PICK_FIRST,
 * PICK_FIRST + PICK_SPAN), starting from the pid, so that TRACY_PORT can
 * name it as it names a port. */
#define PICK_FIRST 49152
#define PICK_SPAN 16383
#define PICK_TRIES 64

/* A socket in the run folder older than this, that no one listens on,
 * was left by a daemon that was killed (a daemon binds and listens at
 * once). The kernel's table of Unix sockets (/proc/net/unix) shows only
 * the sockets of the reader's network namespace, so a live daemon in
 * another one (a container, `unshare --net`, a service with a private
 * network, all sharing /tmp) sets its socket's time every TOUCH_S: its
 * socket is never that old. */
#define STALE_AGE_S 60
#define TOUCH_S 15

/* Whether a daemon listens at path (connect succeeds or is not refused). */
static int unix_alive(const char *path) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return 1;
    int alive = connect(fd, (struct sockaddr *)&a, sizeof a) == 0 ||
                (errno != ECONNREFUSED && errno != ENOENT);
    close(fd);
    return alive;
}

/* Whether a socket listens at path, from the kernel's table of Unix
 * sockets (asking by connecting would disturb a live daemon). -1: unknown. */
static int unix_listening(const char *path) {
    FILE *f = fopen("/proc/net/unix", "re");
    char line[4200];
    int found = 0;
    if (!f) return -1;
    size_t n = strlen(path);
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long flags;
        char *p = strchr(line, '/');
        line[strcspn(line, "\n")] = 0;
        found = p && strlen(p) == n && memcmp(p, path, n) == 0 &&
                sscanf(line, "%*s %*s %*s %lx", &flags) == 1 && (flags & 0x10000ul);
    }
    fclose(f);
    return found;
}

/* The pids file of the socket at sock (daemon-N.sock: daemon-N.pids)
 * into out; 0, or -1 when sock is not so named. */
static int pids_path(const char *sock, char *out, size_t n) {
    size_t len = strlen(sock);
    if (len < 5 || strcmp(sock + len - 5, ".sock") != 0 || len >= n) return -1;
    memcpy(out, sock, len - 5);
    memcpy(out + len - 5, ".pids", 6);
    return 0;
}

/* A regular file of this user at path, untouched for STALE_AGE_S. */
static int stale_file(const char *path, time_t now) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
           now - st.st_mtime >= STALE_AGE_S;
}

/* Removes the daemon-<N>.sock files of dir (this user's private run folder)
 * that daemons killed without cleaning up left behind: sockets of this
 * user, older than STALE_AGE_S, on which nothing listens; and the
 * daemon-<N>.pids files of sockets gone, as old. */
static void sweep_stale(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[sizeof ((struct sockaddr_un *)0)->sun_path], other[sizeof path];
    long n;
    char tail;
    if (!d) return;
    time_t now = time(NULL);
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        int sock = sscanf(e->d_name, "daemon-%ld.soc%c", &n, &tail) == 2 && tail == 'k';
        int pids = !sock && sscanf(e->d_name, "daemon-%ld.pid%c", &n, &tail) == 2 &&
                   tail == 's';
        if ((!sock && !pids) ||
            (size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path)
            continue;
        if (pids) {
            snprintf(other, sizeof other, "%s/" LT_LOCAL_SOCK_FMT, dir, n);
            if (stale_file(path, now) && lstat(other, &st) != 0 && errno == ENOENT)
                unlink(path);
            continue;
        }
        if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid() ||
            now - st.st_mtime < STALE_AGE_S || unix_listening(path) != 0)
            continue;
        unlink(path);
        if (pids_path(path, other, sizeof other) == 0 && stale_file(other, now))
            unlink(other);
    }
    closedir(d);
}

void cap_listen_pids(cap_listen *l, const char *text, size_t len) {
    char path[sizeof l->path], tmp[sizeof l->path + 16];
    if (!l->number || !l->path[0] || pids_path(l->path, path, sizeof path) < 0) return;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return;
    ssize_t k = write(fd, text, len);
    close(fd);
    if (k != (ssize_t)len || rename(tmp, path) != 0) {
        unlink(tmp);
        return;
    }
    l->pids_written = 1;
}

/* Sets the socket's time to now (STALE_AGE_S), while it is the one bound
 * here. */
static void touch_socket(uv_timer_t *t) {
    cap_listen *l = t->data;
    struct stat st;
    if (l->path[0] && lstat(l->path, &st) == 0 && st.st_ino == l->ino && st.st_dev == l->dev)
        (void)utimensat(AT_FDCWD, l->path, NULL, AT_SYMLINK_NOFOLLOW);
}

/* Binds the pipe at path; a socket left there by a daemon that died (no
 * one answers) is replaced. Returns 0 or a libuv error. */
static int bind_unix(cap_listen *l, const char *path) {
    int rc = uv_pipe_bind(&l->pipe, path);
    if (rc == UV_EADDRINUSE) {
        struct stat st;
        if (unix_alive(path)) return UV_EADDRINUSE;
        if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
            return UV_EADDRINUSE;
        unlink(path);
        rc = uv_pipe_bind(&l->pipe, path);
    }
    return rc;
}

/* Binds daemon-<n>.sock in dir; n == 0: the first free number of the
 * range, from one of the daemon's own. */
static int bind_numbered(cap_listen *l, const char *dir, int n) {
    int rc = UV_EADDRINUSE;
    for (int i = 0; i < PICK_TRIES && rc == UV_EADDRINUSE; i++) {
        l->number = n ? n : PICK_FIRST + (int)(((unsigned)getpid() + (unsigned)i) % PICK_SPAN);
        snprintf(l->path, sizeof l->path, "%s/" LT_LOCAL_SOCK_FMT, dir, (long)l->number);
        rc = bind_unix(l, l->path);
        if (n) break;
    }
    return rc;
}

/* The Unix socket: --socket PATH, or daemon-<N>.sock in the run folder,
 * N the port (or the TCP port picked). */
static int open_unix(cap_listen *l, uv_loop_t *loop, const cap_opts *o,
                     uv_connection_cb cb) {
    char dir[sizeof l->path - 24], note[300];
    int rc;
    if (!o->socket) {
        if (lt__rundir(dir, sizeof dir, note, sizeof note) < 0) {
            cap_log("no private run folder for the socket%s%s", note[0] ? ": " : "",
                    note);
            return CAP_EXIT_BIND;
        }
        if (note[0]) cap_logn("not using %s", note);
        sweep_stale(dir);
    }
    uv_pipe_init(loop, &l->pipe, 0);
    l->pipe.data = l->data;
    l->have_pipe = 1;
    if (o->socket) {
        snprintf(l->path, sizeof l->path, "%s", o->socket);
        rc = bind_unix(l, l->path);
    } else {
        rc = bind_numbered(l, dir, o->port ? o->port : l->port);
    }
    if (rc < 0 || (rc = uv_listen((uv_stream_t *)&l->pipe, 4096, cb)) < 0) {
        cap_log("cannot listen on %s: %s", l->path,
                rc == UV_EADDRINUSE ? "another daemon listens there" : uv_strerror(rc));
        l->path[0] = 0;
        return CAP_EXIT_BIND;
    }
    struct stat st;
    if (lstat(l->path, &st) == 0) {
        l->dev = st.st_dev;
        l->ino = st.st_ino;
    }
    uv_timer_init(loop, &l->touch);
    l->touch.data = l;
    l->have_touch = 1;
    uv_timer_start(&l->touch, touch_socket, TOUCH_S * 1000, TOUCH_S * 1000);
    uv_unref((uv_handle_t *)&l->touch); /* (does not keep the daemon running) */
    return 0;
}

/* The TCP listener of -a ADDR. */
static int open_tcp(cap_listen *l, uv_loop_t *loop, const cap_opts *o,
                    uv_connection_cb cb) {
    struct sockaddr_storage ss;
    struct sockaddr *sa = (struct sockaddr *)&ss;
    int rc;
    if (strchr(o->addr, ':') ? uv_ip6_addr(o->addr, o->port, (struct sockaddr_in6 *)&ss)
                             : uv_ip4_addr(o->addr, o->port, (struct sockaddr_in *)&ss)) {
        cap_log("invalid address '%s' (expected a numeric IPv4 or IPv6 address)",
                o->addr);
        return CAP_EXIT_USAGE;
    }
    if (!lt__is_loopback(sa) && !o->token && !o->insecure) {
        cap_log("refusing to listen on non-loopback address %s without "
                "--token-file (or --insecure)", o->addr);
        return CAP_EXIT_USAGE;
    }
    uv_tcp_init(loop, &l->tcp);
    l->tcp.data = l->data;
    l->have_tcp = 1;
    if ((rc = uv_tcp_bind(&l->tcp, sa, 0)) < 0 ||
        (rc = uv_listen((uv_stream_t *)&l->tcp, 4096, cb)) < 0) {
        cap_log("cannot listen on %s port %d: %s", o->addr, o->port, uv_strerror(rc));
        return CAP_EXIT_BIND;
    }
    int len = sizeof ss;
    uv_tcp_getsockname(&l->tcp, sa, &len);
    l->port = ntohs(sa->sa_family == AF_INET6 ? ((struct sockaddr_in6 *)sa)->sin6_port
                                              : ((struct sockaddr_in *)sa)->sin_port);
    return 0;
}

int cap_listen_open(cap_listen *l, uv_loop_t *loop, const cap_opts *o,
                    uv_connection_cb cb, void *data) {
    memset(l, 0, sizeof *l);
    l->data = data;
    int rc = o->addr ? open_tcp(l, loop, o, cb) : 0;
    if (rc == 0) rc = open_unix(l, loop, o, cb);
    if (rc != 0) {
        cap_listen_close(l);
        uv_run(loop, UV_RUN_DEFAULT);
    }
    return rc;
}

void cap_listen_print(const cap_listen *l) {
    printf("%d\n", l->have_tcp ? l->port : l->number);
    fflush(stdout);
}

void cap_listen_close(cap_listen *l) {
    struct stat st;
    if (l->have_tcp && !uv_is_closing((uv_handle_t *)&l->tcp))
        uv_close((uv_handle_t *)&l->tcp, NULL);
    if (l->have_pipe && !uv_is_closing((uv_handle_t *)&l->pipe))
        uv_close((uv_handle_t *)&l->pipe, NULL);
    if (l->have_touch && !uv_is_closing((uv_handle_t *)&l->touch))
        uv_close((uv_handle_t *)&l->touch, NULL);
    char pids[sizeof l->path];
    if (l->pids_written && pids_path(l->path, pids, sizeof pids) == 0) unlink(pids);
    l->pids_written = 0;
    /* Removed only while it is still the socket bound here. */
    if (l->path[0] && lstat(l->path, &st) == 0 && st.st_ino == l->ino &&
        st.st_dev == l->dev)
        unlink(l->path);
    l->path[0] = 0;
}

const char *cap_listen_admit(uv_stream_t *s, const cap_opts *o, char *peer,
                             size_t peer_len, uint64_t *peer_pid) {
    uv_os_fd_t fd;
    uid_t uid;
    pid_t pid;
    if (uv_fileno((uv_handle_t *)s, &fd) != 0) return "cannot tell who connected";
    if (s->type == UV_NAMED_PIPE) {
        if (lt__unix_peer(fd, &uid, &pid) < 0) {
            snprintf(peer, peer_len, "local process");
            return "cannot tell which user connected";
        }
        snprintf(peer, peer_len, "pid %ld, uid %lu", (long)pid, (unsigned long)uid);
        *peer_pid = pid > 0 ? (uint64_t)pid : 0;
        return uid == geteuid() ? NULL
                                : "a process of another user (share a daemon between "
                                  "users over TCP with --token-file)";
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0) return "connection gone";
    if (o->token || !lt__is_loopback(&ss)) return NULL; /* the token decides */
    if (lt__tcp_peer_uid(fd, &uid) < 0) return "cannot tell which user connected";
    if (uid == geteuid()) return NULL;
    size_t k = strlen(peer);
    snprintf(peer + k, peer_len - k, " (uid %lu)", (unsigned long)uid);
    return "a process of another user (share this daemon with --token-file)";
}
