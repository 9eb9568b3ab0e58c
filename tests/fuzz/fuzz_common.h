/* fuzz_common.h -- helpers shared by the libFuzzer targets: an in-memory
 * file (memfd) that the path-based reader and writer APIs can open. */
#ifndef TESTS_FUZZ_COMMON_H
#define TESTS_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* One memfd per process, reused by every input: "/proc/self/fd/N". */
static int fz_memfd(char *path, size_t n) {
    static int fd = -1;
    if (fd < 0) {
        fd = memfd_create("fuzz", 0);
        if (fd < 0) {
            perror("memfd_create");
            abort();
        }
    }
    snprintf(path, n, "/proc/self/fd/%d", fd);
    return fd;
}

/* Replaces the memfd's content with data[0..n). */
static void fz_fill(int fd, const void *data, size_t n) {
    const char *p = data;
    if (ftruncate(fd, 0) != 0) abort();
    size_t off = 0;
    while (off < n) {
        ssize_t w = pwrite(fd, p + off, n - off, (off_t)off);
        if (w <= 0) abort();
        off += (size_t)w;
    }
}

#endif
