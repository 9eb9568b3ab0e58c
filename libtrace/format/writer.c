/* writer.c -- appends header, units (descriptor + zstd frame) and the
 * trailer, which it can make itself from the descriptors (writer_sums.c). */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include "file_int.h"
#include "rotate.h"
#include "zstack.h"

struct lt_writer {
    int fd;
    int err;          /* sticky: first error met */
    uint64_t bytes;   /* bytes of the header and every complete unit */
    ZSTD_CCtx *cctx;
    uint8_t *buf;     /* descriptor + compressed frame of one unit */
    size_t cap;
    char *creator;    /* for the headers of rotated files */
    lt__rot *rot;     /* rotation to numbered files, or NULL */
    uint64_t header_bytes; /* of the current file */
    lt__sums sums;    /* the current file's, from the descriptors */
    uint8_t *cut;     /* the raw blocks of lt__writer_cut */
    size_t cut_cap;
};

/* Writes all of buf; converts errno once, here. */
static int lt__write_all(int fd, const uint8_t *buf, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return lt_from_errno(errno);
        }
        if (n == 0) return LT_EIO;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Appends one complete piece; on failure cuts the file back to its last
 * complete unit so that no partial unit is left behind, when possible. */
static int lt__append(lt_writer *w, const uint8_t *buf, size_t len) {
    if (w->err) return w->err;
    int rc = lt__write_all(w->fd, buf, len);
    if (rc < 0) {
        w->err = rc;
        if (ftruncate(w->fd, (off_t)w->bytes) == 0)
            (void)lseek(w->fd, (off_t)w->bytes, SEEK_SET);
        return rc;
    }
    w->bytes += len;
    return 0;
}

static int lt__write_trailer(lt_writer *w, const lt_stream_summary *s,
                             size_t ns, const lt_total *t, size_t nt);
static int lt__sync(int fd);

/* Grows *buf to hold `need` bytes. */
static int lt__grow(uint8_t **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 4096;
    while (c < need) c *= 2;
    uint8_t *b = realloc(*buf, c);
    if (!b) return LT_ENOMEM;
    *buf = b;
    *cap = c;
    return 0;
}

static int lt__write_header(lt_writer *w, const char *creator, int minor) {
    size_t clen = strlen(creator);
    if (clen > LT_MAX_STRING || !lt__utf8_valid(creator, clen)) return LT_EINVAL;
    /* its own buffer: a rotation writes a header while a unit waits in buf */
    uint8_t *h = malloc(8 + 32 + 10 + clen);
    if (!h) return LT_ENOMEM;
    uint8_t *p = h + 8;
    memcpy(p, LT__FILE_MAGIC, 8);
    lt__le16(p + 8, LT_FORMAT_MAJOR);
    lt__le16(p + 10, (uint16_t)minor);
    lt__le32(p + 12, 0);
    lt__le64(p + 16, lt_wall_ns());
    lt__le64(p + 24, lt_now_ns());
    uint8_t *e = lt__put_str(p + 32, creator, clen);
    lt__le32(h, LT__MAGIC_HEADER);
    lt__le32(h + 4, (uint32_t)(e - p));
    int rc = lt__append(w, h, (size_t)(e - h));
    free(h);
    return rc;
}

/* Creates a file that did not exist (O_EXCL: never through a link). */
static int lt__create_excl(const char *path) {
    return open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
}

/* Creates a new file next to `path` for replacing it; its name goes to
 * `tmp` (at least strlen(path) + 32 bytes). */
static int lt__create_temp(const char *path, char *tmp, size_t cap) {
    static unsigned seq;
    for (int i = 0; i < 100; i++) {
        snprintf(tmp, cap, "%s.%ld.%u.tmp", path, (long)getpid(),
                 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
        int fd = lt__create_excl(tmp);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
}

/* Whether `path`, with -f, is written in place rather than replaced: a
 * device, FIFO or socket, or a link to one (nothing there to overwrite),
 * and any name under /dev or /proc (/dev/stdout, /proc/self/fd/N stand for
 * an open file, and no file may be created beside them). */
static int lt__in_place(const char *path, const struct stat *lst) {
    struct stat st;
    const struct stat *t = lst;
    if (S_ISLNK(lst->st_mode)) {
        if (stat(path, &st) != 0) return 0; /* dangling: replaced */
        t = &st;
    }
    if (S_ISCHR(t->st_mode) || S_ISFIFO(t->st_mode) || S_ISSOCK(t->st_mode) ||
        S_ISBLK(t->st_mode))
        return 1;
    char dir[PATH_MAX], real[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) slash[1] = 0;
    else *slash = 0;
    if (!realpath(dir, real)) return 0;
    return strncmp(real, "/dev", 4) == 0 && (real[4] == 0 || real[4] == '/')
               ? 1
               : strncmp(real, "/proc", 5) == 0 && (real[5] == 0 || real[5] == '/');
}

/* Every writer holds a write lock on its file (an open file description's:
 * it goes with the file's closing or the process's end), so that
 * LT_WRITE_FORCE does not replace a file another writer is writing (two
 * processes given one output: the later one's rename left the earlier one
 * writing into a file no name reaches, and its trace was lost unsaid). */
static void lt__lock_out(int fd) {
#ifdef F_OFD_SETLK
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    (void)fcntl(fd, F_OFD_SETLK, &l);
#endif
}

/* 1 when the regular file at `path` (not through a link) is locked by a
 * writer (lt__lock_out). */
static int lt__being_written(const char *path) {
#ifdef F_OFD_GETLK
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return 0;
    struct stat st;
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    int busy = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
               fcntl(fd, F_OFD_GETLK, &l) == 0 && l.l_type != F_UNLCK;
    close(fd);
    return busy;
#else
    (void)path;
    return 0;
#endif
}

/* Opens the output. Without LT_WRITE_FORCE an existing name (a symbolic
 * link included) is refused. With it, what lt__in_place() says is written
 * in place, and anything else is replaced by a new file renamed over it
 * once its header is written: a link to a file is replaced, never written
 * through, and a failure leaves the old file untouched. *tmp is set when a
 * rename is pending; *created when the file at `path` was created here. */
static int lt__open_out(const char *path, int flags, char **tmp, int *created) {
    struct stat st, tst;
    *tmp = NULL;
    *created = 0;
    if (!(flags & LT_WRITE_FORCE) || lstat(path, &st) != 0) {
        int fd = lt__create_excl(path);
        if (fd >= 0) *created = 1;
        if (fd >= 0 || !(flags & LT_WRITE_FORCE) || errno != EEXIST) return fd;
        if (lstat(path, &st) != 0) return -1;
    }
    if (S_ISDIR(st.st_mode) ||
        (S_ISLNK(st.st_mode) && stat(path, &tst) == 0 && S_ISDIR(tst.st_mode))) {
        errno = EISDIR;
        return -1;
    }
    if (lt__in_place(path, &st)) return open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (lt__being_written(path)) {
        errno = EBUSY;
        return -1;
    }
    size_t cap = strlen(path) + 48;
    *tmp = malloc(cap);
    if (!*tmp) {
        errno = ENOMEM;
        return -1;
    }
    int fd = lt__create_temp(path, *tmp, cap);
    if (fd < 0) {
        int e = errno;
        free(*tmp);
        *tmp = NULL;
        errno = e;
    }
    return fd;
}

static int lt__open_error(int e) {
    int rc = e == EEXIST ? LT_EEXIST : lt_from_errno(e);
    if (rc != LT_EEXIST && rc != LT_ENOSPC && rc != LT_ENOMEM) rc = LT_EOPEN;
    return rc;
}

int lt_writer_open(lt_writer **out, const char *path, int flags,
                   const char *creator, int level) {
    int rc = LT_ENOMEM, created = 0, e = 0;
    char *tmp = NULL;
    lt_writer *w = calloc(1, sizeof *w);
    *out = NULL;
    if (!w) return LT_ENOMEM;
    w->fd = -1;
    w->cctx = ZSTD_createCCtx();
    if (!w->cctx) goto err;
    if (level == 0) level = 3;
    if (ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1))) {
        rc = LT_EINVAL;
        goto err;
    }
    w->fd = lt__open_out(path, flags, &tmp, &created);
    if (w->fd < 0) {
        e = errno;
        rc = lt__open_error(e);
        goto err;
    }
    lt__lock_out(w->fd);
    rc = lt__write_header(w, creator ? creator : "libtrace",
                          (flags & LT_WRITE_CUTS) ? 1 : LT_FORMAT_MINOR);
    if (rc < 0) {
        e = errno;
        goto err;
    }
    w->header_bytes = w->bytes;
    if (!(w->creator = strdup(creator ? creator : "libtrace"))) {
        rc = LT_ENOMEM;
        goto err;
    }
    if (tmp && rename(tmp, path) != 0) {
        e = errno;
        rc = lt__open_error(e);
        goto err;
    }
    free(tmp);
    *out = w;
    return 0;
err:
    if (w->fd >= 0) close(w->fd);
    /* Nothing half-made stays behind: a run without -f must not find it. */
    if (tmp) unlink(tmp);
    else if (created) unlink(path);
    free(tmp);
    ZSTD_freeCCtx(w->cctx);
    free(w->buf);
    free(w);
    errno = e;
    return rc;
}

size_t lt_block_header(uint8_t *buf, uint8_t kind, uint32_t process,
                       uint32_t thread, uint64_t base_ts) {
    uint8_t *p = buf;
    *p++ = kind;
    p = lt__put_varint_(p, process);
    p = lt__put_varint_(p, thread);
    p = lt__put_varint_(p, base_ts);
    return (size_t)(p - buf);
}

void lt__desc_encode(uint8_t out[LT__DESC_SIZE], const lt_block_desc *d,
                     uint32_t raw_size, uint32_t comp_size) {
    memset(out, 0, LT__DESC_SIZE);
    out[0] = d->kind;
    lt__le32(out + 4, d->process);
    lt__le32(out + 8, d->thread);
    lt__le32(out + 12, raw_size);
    lt__le32(out + 16, comp_size);
    lt__le32(out + 20, d->n_events);
    lt__le64(out + 24, d->first_ts);
    lt__le64(out + 32, d->last_ts);
}

/* Compresses one unit into *buf (grown as needed); returns its size in
 * *len. */
static int lt__compress_unit(lt_writer *w, uint8_t **buf, size_t *cap,
                             const lt_block_desc *d, const void *raw,
                             size_t raw_len, size_t *len) {
    if (d->kind == 0) return LT_EINVAL;
    if (raw_len > LT_MAX_BLOCK_RAW) return LT_ELIMIT;
    size_t bound = ZSTD_compressBound(raw_len);
    if (lt__grow(buf, cap, LT__UNIT_OVERHEAD + bound) < 0) return LT_ENOMEM;
    size_t comp = ZSTD_compress2(w->cctx, *buf + LT__UNIT_OVERHEAD, bound,
                                 raw, raw_len);
    if (ZSTD_isError(comp) || comp > lt__comp_limit(raw_len))
        return LT_ECOMPRESS;
    lt__le32(*buf, LT__MAGIC_DESC);
    lt__le32(*buf + 4, LT__DESC_SIZE);
    lt__desc_encode(*buf + 8, d, (uint32_t)raw_len, (uint32_t)comp);
    *len = LT__UNIT_OVERHEAD + comp;
    return 0;
}

int lt_writer_block(lt_writer *w, const lt_block_desc *d, const void *raw,
                    size_t raw_len) {
    if (w->err) return w->err;
    size_t len, *cap = &w->cap;
    uint8_t **buf = &w->buf;
    if (w->rot) lt__rot_pending(w->rot, &buf, &cap); /* buf stays free for a trailer */
    int rc = lt__compress_unit(w, buf, cap, d, raw, raw_len, &len);
    if (rc < 0) return rc;
    if (w->rot && (rc = lt__rot_before(w, w->rot, len)) < 0) {
        if (!w->err) w->err = rc;
        return rc;
    }
    rc = lt__append(w, *buf, len);
    if (rc == 0) rc = lt__sums_add(&w->sums, d, raw_len, len - LT__UNIT_OVERHEAD);
    if (rc == 0 && w->rot) rc = lt__rot_after(w->rot, d, raw, raw_len);
    if (rc < 0 && !w->err) w->err = rc;
    return rc;
}

int lt__writer_replay(lt_writer *w, const lt_block_desc *d, const void *raw,
                      size_t raw_len, uint8_t **buf, size_t *cap, size_t *len) {
    int rc = lt__compress_unit(w, buf, cap, d, raw, raw_len, len);
    if (rc == 0) rc = lt__append(w, *buf, *len);
    if (rc == 0) rc = lt__sums_add(&w->sums, d, raw_len, *len - LT__UNIT_OVERHEAD);
    return rc;
}

int lt__writer_reopen(lt_writer *w, const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return errno == EEXIST ? LT_EEXIST : lt_from_errno(errno);
    lt__lock_out(fd);
    close(w->fd);
    w->fd = fd;
    w->bytes = 0;
    lt__sums_reset(&w->sums);
    int rc = lt__write_header(w, w->creator, 1);
    w->header_bytes = w->bytes;
    return rc;
}

uint64_t lt__writer_bytes(const lt_writer *w) { return w->bytes; }

int lt_writer_set_rotation(lt_writer *w, const char *path, uint64_t max_bytes) {
    if (w->rot || !path || max_bytes == 0) return LT_EINVAL;
    return lt__rot_new(&w->rot, path, max_bytes);
}

int lt__writer_frame(lt_writer *w, const lt_block_desc *d, uint32_t raw_size,
                     const void *frame, size_t comp) {
    if (w->err) return w->err;
    if (comp > lt__comp_limit(raw_size)) return LT_EINVAL;
    uint8_t u[LT__UNIT_OVERHEAD];
    lt__le32(u, LT__MAGIC_DESC);
    lt__le32(u + 4, LT__DESC_SIZE);
    lt__desc_encode(u + 8, d, raw_size, (uint32_t)comp);
    int rc = lt__append(w, u, sizeof u);
    if (rc < 0) return rc;
    rc = lt__append(w, frame, comp);
    if (rc < 0) { /* no half unit: cut back to before its descriptor */
        w->bytes -= sizeof u;
        if (ftruncate(w->fd, (off_t)w->bytes) == 0)
            (void)lseek(w->fd, (off_t)w->bytes, SEEK_SET);
        return rc;
    }
    return lt__sums_add(&w->sums, d, raw_size, comp);
}

/* Appends one block of the writer's own making, never rotating. */
static int lt__own_block(lt_writer *w, const lt_block_desc *d, size_t raw_len) {
    size_t len;
    int rc = w->err ? w->err
                    : lt__compress_unit(w, &w->buf, &w->cap, d, w->cut, raw_len, &len);
    if (rc == 0) rc = lt__append(w, w->buf, len);
    if (rc == 0) rc = lt__sums_add(&w->sums, d, raw_len, len - LT__UNIT_OVERHEAD);
    if (rc < 0 && !w->err) w->err = rc;
    return rc;
}

int lt__writer_cut(lt_writer *w, uint32_t process, uint32_t thread, uint64_t ts,
                   uint64_t depth, const lt__zstack *open) {
    size_t need = 64 + (open ? lt__zstack_size(open) : 0);
    if (lt__grow(&w->cut, &w->cut_cap, need) < 0) return LT_ENOMEM;
    uint8_t *p = w->cut + lt_block_header(w->cut, LT_BLOCK_CUT, process, thread, 0);
    *p++ = LT_TAG_CUT_OPEN;
    p = lt__put_varint_(p, ts);
    p = lt__put_varint_(p, depth);
    lt_block_desc d = {.kind = LT_BLOCK_CUT, .process = process, .thread = thread};
    int rc = lt__own_block(w, &d, (size_t)(p - w->cut));
    if (rc < 0 || !open) return rc;
    p = w->cut + lt_block_header(w->cut, LT_BLOCK_EVENTS, process, thread, ts);
    p = lt__zstack_records(open, p);
    d = (lt_block_desc){.kind = LT_BLOCK_EVENTS, .process = process, .thread = thread,
                        .n_events = (uint32_t)depth, .first_ts = ts, .last_ts = ts,
                        .zones = (uint32_t)depth};
    return lt__own_block(w, &d, (size_t)(p - w->cut));
}

int lt__writer_stream(lt_writer *w, uint32_t process, uint32_t thread) {
    return lt__sums_stream(&w->sums, process, thread) ? 0 : LT_ENOMEM;
}

void lt__writer_sort_streams(lt_writer *w) { w->sums.sorted = 1; }

static int lt__write_trailer(lt_writer *w, const lt_stream_summary *s,
                             size_t ns, const lt_total *t, size_t nt) {
    size_t need = 8 + 8 + 10 + ns * 11 * 10 + 10 + 16;
    for (size_t i = 0; i < nt; i++) {
        size_t len = strlen(t[i].name);
        if (len > LT_MAX_STRING) return LT_EINVAL;
        need += 20 + len;
    }
    if (need > UINT32_MAX) return LT_ELIMIT;
    if (lt__grow(&w->buf, &w->cap, need) < 0) return LT_ENOMEM;
    uint8_t *p = w->buf + 8;
    memcpy(p, LT__TRAILER_MAGIC, 8);
    p += 8;
    p = lt__put_varint_(p, ns);
    for (size_t i = 0; i < ns; i++) {
        const uint64_t v[11] = {s[i].process, s[i].thread, s[i].events,
                                s[i].zones, s[i].messages, s[i].lost,
                                s[i].first_ts, s[i].last_ts, s[i].blocks,
                                s[i].raw_bytes, s[i].comp_bytes};
        for (int k = 0; k < 11; k++) p = lt__put_varint_(p, v[k]);
    }
    p = lt__put_varint_(p, nt);
    for (size_t i = 0; i < nt; i++) {
        p = lt__put_str(p, t[i].name, strlen(t[i].name));
        p = lt__put_varint_(p, t[i].value);
    }
    uint32_t content = (uint32_t)(p + 16 - (w->buf + 8));
    lt__le64(p, content);
    memcpy(p + 8, LT__TRAILER_END, 8);
    lt__le32(w->buf, LT__MAGIC_TRAILER);
    lt__le32(w->buf + 4, content);
    return lt__append(w, w->buf, 8 + content);
}

static int lt__std_index(const char *name) {
    for (int i = 0; i < LT__N_STD; i++)
        if (strcmp(name, lt__std_totals[i]) == 0) return i;
    return -1;
}

/* The trailer from the sums. In a rotation's file (rot_index > 0): its
 * streams with a block, the 13 standard totals with rot[0] processes and
 * rot[1] threads, and the non-standard totals of `extra`. Else: every
 * stream, 12 standard totals, those of `extra` replacing the writer's, then
 * the others. */
static int lt__sums_trailer(lt_writer *w, unsigned rot_index, const uint64_t rot[2],
                            const lt_total *extra, size_t n_extra) {
    lt_stream_summary *sum = malloc((w->sums.n + 1) * sizeof *sum);
    lt_total *t = malloc((LT__N_STD + n_extra) * sizeof *t);
    uint64_t std[LT__N_STD];
    int rc = LT_ENOMEM;
    if (sum && t) {
        size_t ns = lt__sums_summaries(&w->sums, sum, rot_index > 0, std), nt = 0;
        size_t n_std = rot_index ? LT__N_STD : LT__N_STD - 1;
        std[11] = w->bytes - w->header_bytes;
        if (rot_index) std[0] = rot[0], std[1] = rot[1], std[12] = rot_index;
        for (size_t i = 0; i < n_extra && !rot_index; i++) {
            int k = lt__std_index(extra[i].name);
            if (k >= 0) std[k] = extra[i].value;
        }
        for (size_t i = 0; i < n_std; i++) t[nt++] = (lt_total){lt__std_totals[i], std[i]};
        for (size_t i = 0; i < n_extra; i++)
            if (lt__std_index(extra[i].name) < 0) t[nt++] = extra[i];
        rc = lt__write_trailer(w, sum, ns, t, nt);
    }
    free(sum);
    free(t);
    return rc;
}

int lt__writer_rot_trailer(lt_writer *w, uint64_t processes, uint64_t threads,
                           unsigned index, const lt_total *extra, size_t n_extra) {
    const uint64_t rot[2] = {processes, threads};
    int rc = w->err ? w->err : lt__sums_trailer(w, index, rot, extra, n_extra);
    if (rc == 0) rc = lt__sync(w->fd);
    if (rc < 0 && !w->err) w->err = rc;
    return rc;
}

/* fsync may be refused by special files (/dev/null); that is no failure. */
static int lt__sync(int fd) {
    if (fdatasync(fd) == 0 || errno == EINVAL || errno == EROFS ||
        errno == ENOTSUP)
        return 0;
    return lt_from_errno(errno);
}

/* Syncs, closes and frees; returns rc or the first error of these. */
static int lt__writer_end(lt_writer *w, int rc) {
    if (rc == 0) rc = lt__sync(w->fd);
    if (close(w->fd) < 0 && rc == 0) rc = lt_from_errno(errno);
    ZSTD_freeCCtx(w->cctx);
    lt__rot_free(w->rot);
    lt__sums_free(&w->sums);
    free(w->creator);
    free(w->buf);
    free(w->cut);
    free(w);
    return rc;
}

int lt_writer_close(lt_writer *w, const lt_stream_summary *streams,
                    size_t n_streams, const lt_total *totals, size_t n_totals) {
    if (!w) return 0;
    int rc = w->err;
    if (rc == 0 && (streams || totals || n_streams || n_totals)) {
        if (w->rot && lt__rot_index(w->rot) > 1) /* this file's own summary */
            rc = lt__rot_trailer(w, w->rot, totals, n_totals);
        else
            rc = lt__write_trailer(w, streams, n_streams, totals, n_totals);
    }
    return lt__writer_end(w, rc);
}

int lt__writer_finish(lt_writer *w, const lt_total *totals, size_t n_totals) {
    if (!w) return 0;
    int rc = w->err;
    if (rc == 0) {
        if (w->rot && lt__rot_index(w->rot) > 1) /* this file's own summary */
            rc = lt__rot_trailer(w, w->rot, totals, n_totals);
        else
            rc = lt__sums_trailer(w, 0, NULL, totals, n_totals);
    }
    return lt__writer_end(w, rc);
}

uint64_t lt_writer_bytes(const lt_writer *w) { return w->bytes; }

int lt_writer_sync(lt_writer *w) {
    if (w->err) return w->err;
    return lt__sync(w->fd);
}
