/* client_fdtab.c -- the sender's private descriptor table (PROTOCOL.md,
 * "The daemon's socket").
 *
 * The sender thread is the only one that uses the daemon's socket once the
 * handshake is done. When it starts it calls unshare(CLONE_FILES): the
 * thread gets a copy of the process's descriptor table, of its own. It
 * closes every copy there but the socket (holding none of the program's
 * pipes open: a reader waiting for their end of file still gets it), and the
 * thread that connected then closes the socket in the program's table. From
 * then on the program cannot see the socket (/proc/self/fd), close it or put
 * its own descriptor in its place, a child it forks or starts does not
 * inherit it, and the socket goes away with the sender thread (at exit, or
 * exec, which ends every other thread).
 *
 * The sender has no stderr of its own then: a line it prints (lt__say) is
 * written through the program's descriptor 2, borrowed for the write with
 * pidfd_getfd (same open file: same offset, O_APPEND or not). Where
 * unshare, pidfd_open or pidfd_getfd is not allowed (a seccomp filter in
 * a container; kernels before 5.6) or TRACY_PRIVATE_FD=0, the socket stays
 * in the program's table as a guarded descriptor, as before, and nothing
 * is said. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "client_internal.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* In the sender thread once its table is private: a pidfd of this process
 * (its descriptor table is the program's), for lt__say. */
static __thread int my_pidfd = -1;

static int pidfd_self(void) {
    return (int)syscall(SYS_pidfd_open, (pid_t)getpid(), 0u);
}

/* Whether pidfd_open and pidfd_getfd work here: both are needed before the
 * table is made private (then there is no way back). The test pidfd lives
 * a moment in the shared table. */
static int pidfd_usable(void) {
    int pfd = pidfd_self();
    if (pfd < 0) return 0;
    /* descriptor -1 is never valid: EBADF says the call exists and is allowed */
    long rc = syscall(SYS_pidfd_getfd, pfd, -1, 0u);
    int ok = rc < 0 && errno == EBADF;
    if (rc >= 0) close((int)rc);
    close(pfd);
    return ok;
}

/* Closes every descriptor of the (private) table but `keep`. */
static void close_all_but(int keep) {
    if ((keep == 0 || syscall(SYS_close_range, 0u, (unsigned)keep - 1, 0u) == 0) &&
        syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) == 0)
        return;
    /* No close_range (before Linux 5.9): this thread's table, as listed by
     * /proc/thread-self/fd (/proc/self/fd is the main thread's). */
    for (int pass = 0; pass < 4; pass++) {
        DIR *d = opendir("/proc/thread-self/fd");
        if (!d) return;
        int closed = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            char *end;
            long n = strtol(e->d_name, &end, 10);
            if (*end || end == e->d_name || n == keep || n == dirfd(d)) continue;
            close((int)n);
            closed++;
        }
        closedir(d);
        if (!closed) return;
    }
}

/* Puts /dev/null at 0, 1 and 2 of the private table: a stray write to
 * stdout or stderr from this thread goes nowhere, and a socket opened to
 * resume never gets one of those numbers. */
static void null_std(void) {
    for (int i = 0; i < 3; i++) {
        int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (fd < 0) return;
        if (fd > 2) {
            close(fd);
            return;
        }
    }
}

/* Called by the sender thread before its first round, the socket fd open
 * in the process's table. Returns 1 when the thread's table is private and
 * holds the socket (the caller then closes it in the program's table), 0
 * when it stays shared. */
int lt__fdtab_private(int fd) {
    if (fd < 0 || !lt__g.private_wanted || !pidfd_usable()) return 0;
    if (unshare(CLONE_FILES) < 0) return 0;
    close_all_but(fd);
    null_std();
    my_pidfd = pidfd_self(); /* tested above: this works */
    return 1;
}

void lt__say(const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
    if (my_pidfd < 0) {
        fputs(line, stderr);
        return;
    }
    int err = (int)syscall(SYS_pidfd_getfd, my_pidfd, 2, 0u);
    if (err < 0) return; /* the program has no stderr */
    for (size_t off = 0; off < (size_t)n;) {
        ssize_t k = write(err, line + off, (size_t)n - off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        off += (size_t)k;
    }
    close(err);
}
