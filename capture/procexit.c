/* procexit.c -- how a local client's process ended, as this host's kernel
 * tells it to a process that is not its parent.
 *
 * A process that dies without goodbye (SIGKILL, a signal whose handler could
 * not ship) is recorded as lost; the signal that ended it is the reason a
 * reader wants. Two sources, both read without waiting:
 *   - /proc/PID/stat while the process is a zombie: its exit code (field
 *     52, in wait() form), set before its descriptors were closed;
 *   - once its parent has reaped it, a pidfd opened while it ran (Linux
 *     6.15+: PIDFD_GET_INFO with PIDFD_INFO_EXIT keeps the exit status for
 *     whoever holds a pidfd). The pidfd also pins the identity: a pid
 *     reused by another process is not mistaken for the client's. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "capture.h"

/* The kernel's (linux/pidfd.h, 6.15), declared here: the build machine's
 * headers may be older than the kernel the daemon runs on. */
struct cap_pidfd_info {
    uint64_t mask, cgroupid;
    uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
    int32_t exit_code;
};
#define CAP_PIDFD_GET_INFO _IOWR(0xFF, 11, struct cap_pidfd_info)
#define CAP_PIDFD_INFO_EXIT (1ull << 3)

int cap_pidfd_open(uint64_t pid) {
#ifdef SYS_pidfd_open
    if (pid == 0 || pid > INT32_MAX) return -1;
    long fd = syscall(SYS_pidfd_open, (pid_t)pid, 0); /* close-on-exec */
    return fd < 0 ? -1 : (int)fd;
#else
    (void)pid;
    return -1;
#endif
}

int cap_process_exe(uint64_t pid, char *buf, size_t n) {
    char path[48];
    snprintf(path, sizeof path, "/proc/%llu/exe", (unsigned long long)pid);
    ssize_t k = n > 1 ? readlink(path, buf, n - 1) : -1;
    if (k <= 0) return -1;
    buf[k] = 0;
    return 0;
}

/* The fields of /proc/PID/stat after the process's name (the state on),
 * read into buf[0..n); NULL when unreadable. */
static const char *stat_fields(uint64_t pid, char *buf, size_t n) {
    char path[48];
    snprintf(path, sizeof path, "/proc/%llu/stat", (unsigned long long)pid);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    size_t got = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[got] = 0;
    const char *p = strrchr(buf, ')'); /* the name may hold spaces and ')' */
    return p ? p + 1 : NULL;
}

uint64_t cap_process_parent(uint64_t pid) {
    char buf[1024];
    const char *p = stat_fields(pid, buf, sizeof buf);
    unsigned long long pp = 0;
    if (!p || sscanf(p, " %*c %llu", &pp) != 1) return 0;
    return pp;
}

/* The state letter and the exit code of /proc/PID/stat; 0 when unreadable. */
static int proc_stat(uint64_t pid, char *state, int *exit_code) {
    char buf[1024];
    const char *p = stat_fields(pid, buf, sizeof buf);
    if (!p || sscanf(p, " %c", state) != 1) return 0;
    *exit_code = -1;
    /* fields 3..52: the state is field 3, the exit code field 52 */
    int field = 2;
    for (const char *q = p; *q; q++) {
        if (*q != ' ') continue;
        if (++field == 52) {
            sscanf(q + 1, "%d", exit_code);
            break;
        }
    }
    return 1;
}

int cap_process_gone(uint64_t pid) {
    char st = 0;
    int code;
    if (!proc_stat(pid, &st, &code)) return access("/proc/self/stat", R_OK) == 0;
    return st == 'Z' || st == 'X' || st == 'x';
}

/* The exit status the pidfd keeps once the process was reaped, or -1. */
static int reaped_status(int pidfd) {
    struct cap_pidfd_info info;
    memset(&info, 0, sizeof info);
    info.mask = CAP_PIDFD_INFO_EXIT;
    if (pidfd < 0 || ioctl(pidfd, CAP_PIDFD_GET_INFO, &info) < 0 ||
        !(info.mask & CAP_PIDFD_INFO_EXIT))
        return -1;
    return info.exit_code;
}

unsigned cap_process_end_signal(uint64_t pid, int pidfd) {
    int status = reaped_status(pidfd);
    char st = 0;
    int code;
    if (status < 0 && pid) {
        if (proc_stat(pid, &st, &code)) {
            if (st == 'Z' || st == 'X') status = code;
        } else {
            status = reaped_status(pidfd); /* reaped in between */
        }
    }
    return status >= 0 && WIFSIGNALED(status) ? (unsigned)WTERMSIG(status) : 0;
}
