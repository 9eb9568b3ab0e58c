/* index.c -- opening (and rebuilding) an index file, and its queries
 * (view.h). The file is mapped read-only; every offset and count in it is
 * checked against its size at open, so a damaged cache file is rebuilt,
 * never trusted. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace.h"
#include "view_int.h"

struct vw_index {
    char *trace;
    uint8_t *map;
    size_t len;
    uint8_t *rmap;         /* the records file, n_main records */
    size_t rlen;
    const vw_header *h;
    const uint8_t *recs;   /* the records kept in the index file (ids from n_main) */
    uint64_t n_main;
    const char *strings;
    const vw_chunk *chunks;
    const vw_row *rows;
    const uint32_t *rowchunks;
    const vw_track *tracks;
    const vw_func *funcs;
    const vw_plot *plots;
    const vw_frame *frames;
};

static int mkdirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        int rc = mkdir(path, 0700);
        *p = '/';
        if (rc < 0 && errno != EEXIST) return -1;
    }
    return mkdir(path, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

int vw_cache_dir(char *buf, size_t len) {
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (x && x[0] == '/') n = snprintf(buf, len, "%s/tracy/index", x);
    else if (home && home[0] == '/') n = snprintf(buf, len, "%s/.cache/tracy/index", home);
    else return -1;
    if (n < 0 || (size_t)n >= len) return -1;
    return mkdirs(buf);
}

/* Whether section [off, off + n * elem) lies inside the file. */
static int inside(const vw_index *ix, uint64_t off, uint64_t n, uint64_t elem) {
    if (off > ix->len || (elem && n > (ix->len - off) / elem)) return 0;
    return off % 8 == 0 || elem == 1 || elem == 4;
}

static int check(vw_index *ix) {
    const vw_header *h = ix->h;
    if (ix->len < VW_HEADER_SIZE || memcmp(h->magic, VW_MAGIC, 8) || h->version != VW_VERSION ||
        h->rec_size != VW_REC || h->file_size != ix->len)
        return -1;
    if (!inside(ix, h->off_strings, h->len_strings, 1) ||
        !inside(ix, h->off_chunks, h->n_chunks, sizeof(vw_chunk)) ||
        !inside(ix, h->off_rows, h->n_rows, sizeof(vw_row)) ||
        !inside(ix, h->off_rowchunks, h->n_rowchunks, 4) ||
        !inside(ix, h->off_tracks, h->n_tracks, sizeof(vw_track)) ||
        !inside(ix, h->off_funcs, h->n_funcs, sizeof(vw_func)) ||
        !inside(ix, h->off_plots, h->n_plots, sizeof(vw_plot)) ||
        !inside(ix, h->off_frames, h->n_frames, sizeof(vw_frame)) || h->text_row > h->n_rows ||
        h->n_main > h->n_recs || !inside(ix, h->off_recs, h->n_recs - h->n_main, VW_REC) ||
        !inside(ix, h->off_state, h->len_state, 1) ||
        h->n_rows > UINT32_MAX || h->n_tracks > UINT32_MAX || h->n_funcs > VW_FUNC_MASK)
        return -1;
    ix->recs = ix->map + h->off_recs;
    ix->n_main = h->n_main;
    ix->strings = (const char *)ix->map + h->off_strings;
    ix->chunks = (const vw_chunk *)(ix->map + h->off_chunks);
    ix->rows = (const vw_row *)(ix->map + h->off_rows);
    ix->rowchunks = (const uint32_t *)(ix->map + h->off_rowchunks);
    ix->tracks = (const vw_track *)(ix->map + h->off_tracks);
    ix->funcs = (const vw_func *)(ix->map + h->off_funcs);
    ix->plots = (const vw_plot *)(ix->map + h->off_plots);
    ix->frames = (const vw_frame *)(ix->map + h->off_frames);
    uint64_t next = 0;
    for (uint64_t i = 0; i < h->n_chunks; i++) {
        const vw_chunk *c = &ix->chunks[i];
        if (c->id != next || c->n == 0 || c->n > VW_CHUNK || c->row >= h->n_rows) return -1;
        if (c->id < h->n_main && c->id + c->n > h->n_main) return -1; /* in one place */
        next += c->n;
    }
    if (next != h->n_recs) return -1;
    for (uint64_t r = 0; r < h->n_rows; r++) {
        const vw_row *w = &ix->rows[r];
        if (w->chunks > h->n_rowchunks || w->nchunks > h->n_rowchunks - w->chunks) return -1;
        uint64_t pos = 0;
        for (uint32_t k = 0; k < w->nchunks; k++) {
            uint32_t c = ix->rowchunks[w->chunks + k];
            if (c >= h->n_chunks || ix->chunks[c].row != r || ix->chunks[c].first != pos) return -1;
            pos += ix->chunks[c].n;
        }
        if (pos != w->n) return -1;
    }
    return 0;
}

char *vw__rec_path(const char *idx_path) {
    size_t n = strlen(idx_path);
    char *p = malloc(n + 8);
    if (!p) return NULL;
    memcpy(p, idx_path, n + 1);
    if (n >= 4 && !strcmp(p + n - 4, ".idx")) n -= 4;
    strcpy(p + n, ".rec");
    return p;
}

static void unmap(vw_index *ix) {
    if (ix->map) munmap(ix->map, ix->len);
    if (ix->rmap) munmap(ix->rmap, ix->rlen);
    ix->map = ix->rmap = NULL;
}

/* Maps the records file of index file `path`: the n_main records the
 * header counts, from the file it names (inode and device). */
static int map_records(vw_index *ix, const char *path) {
    const vw_header *h = ix->h;
    if (!h->n_main) return 0;
    if (h->n_main > SIZE_MAX / VW_REC) return -1;
    char *rp = vw__rec_path(path);
    int fd = rp ? open(rp, O_RDONLY | O_CLOEXEC) : -1;
    free(rp);
    if (fd < 0) return -1;
    struct stat st;
    size_t want = (size_t)h->n_main * VW_REC;
    void *m = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_ino == h->rec_ino && (uint64_t)st.st_dev == h->rec_dev &&
        (uint64_t)st.st_size >= want)
        m = mmap(NULL, want, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return -1;
    ix->rmap = m;
    ix->rlen = want;
    return 0;
}

/* Maps index file `path` (and its records); 0, or -1 when absent or
 * damaged. */
static int map_files(vw_index *ix, const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size < (off_t)VW_HEADER_SIZE) {
        close(fd);
        return -1;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return -1;
    ix->map = m;
    ix->len = (size_t)st.st_size;
    ix->h = (const vw_header *)ix->map;
    if (check(ix) < 0 || map_records(ix, path) < 0) {
        unmap(ix);
        return -1;
    }
    return 0;
}

/* Maps index file `path` for `trace`; 0, or -1 when absent, damaged or
 * stale. */
static int map_index(vw_index *ix, const char *path) {
    if (map_files(ix, path) < 0) return -1;
    if (vw_stale(ix)) {
        unmap(ix);
        return -1;
    }
    return 0;
}

vw_index *vw__load(const char *path) {
    vw_index *ix = calloc(1, sizeof *ix);
    if (ix && map_files(ix, path) < 0) {
        free(ix);
        ix = NULL;
    }
    return ix;
}

const vw_header *vw__header(const vw_index *ix) { return ix->h; }

const void *vw__section(const vw_index *ix, uint64_t off, uint64_t len) {
    return off <= ix->len && len <= ix->len - off ? ix->map + off : NULL;
}

uint64_t vw_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

char *vw_index_path(const char *trace, const char *cache_dir) {
    char *abs = realpath(trace, NULL);
    char *path = abs ? malloc(strlen(cache_dir) + 40) : NULL;
    if (path) sprintf(path, "%s/%016llx.idx", cache_dir, (unsigned long long)vw_hash(abs));
    free(abs);
    return path;
}

int vw_open_built(vw_index **out, const char *trace, const char *cache_dir) {
    *out = NULL;
    char *abs = realpath(trace, NULL);
    if (!abs) return LT_EOPEN;
    vw_index *ix = calloc(1, sizeof *ix);
    char *path = vw_index_path(abs, cache_dir);
    if (!ix || !path) {
        free(ix), free(path), free(abs);
        return LT_ENOMEM;
    }
    ix->trace = abs;
    int rc = map_index(ix, path) < 0 ? 1 : 0;
    free(path);
    if (rc) vw_close(ix);
    else *out = ix;
    return rc;
}

int vw_open(vw_index **out, const char *trace, const char *cache_dir, int *rebuilt,
            char *err, size_t errlen) {
    if (rebuilt) *rebuilt = 0;
    if (err && errlen) err[0] = 0;
    int rc = vw_open_built(out, trace, cache_dir);
    if (rc <= 0) {
        if (rc < 0 && err) snprintf(err, errlen, "%s: %s", trace, rc == LT_EOPEN ? strerror(errno) : lt_strerror(rc));
        return rc;
    }
    char *path = vw_index_path(trace, cache_dir);
    if (!path) return LT_ENOMEM;
    rc = vw_update(trace, path, NULL, err, errlen);
    free(path);
    if (rc) return rc;
    if (rebuilt) *rebuilt = 1;
    rc = vw_open_built(out, trace, cache_dir);
    if (rc > 0) { /* changed while indexed: the next call tries again */
        if (err) snprintf(err, errlen, "%s changed while it was indexed", trace);
        return LT_EIO;
    }
    return rc;
}

int vw_stale(const vw_index *ix) {
    uint64_t size, mt, ino, dev;
    if (!ix->trace) return 1;
    if (vw__identity(ix->trace, &size, &mt, &ino, &dev) < 0) return -1;
    const vw_header *h = ix->h;
    return size != h->trace_size || mt != h->trace_mtime_ns || ino != h->trace_ino ||
           dev != h->trace_dev;
}

void vw_release(const vw_index *ix) {
    if (ix && ix->map && ix->len + ix->rlen > VW_RELEASE_MIN) {
        madvise(ix->map, ix->len, MADV_DONTNEED);
        if (ix->rmap) madvise(ix->rmap, ix->rlen, MADV_DONTNEED);
    }
}

void vw_close(vw_index *ix) {
    if (!ix) return;
    unmap(ix);
    free(ix->trace);
    free(ix);
}

const vw_totals *vw_totals_of(const vw_index *ix) { return &ix->h->totals; }

const char *vw_string(const vw_index *ix, uint64_t off, size_t *len) {
    uint64_t L = ix->h->len_strings;
    if (off >= L || L - off < 5) goto none;
    uint32_t n;
    memcpy(&n, ix->strings + off, 4);
    if (n > L - off - 5 || ix->strings[off + 4 + n]) goto none;
    if (len) *len = n;
    return ix->strings + off + 4;
none:
    if (len) *len = 0;
    return "";
}

uint32_t vw_ntracks(const vw_index *ix) { return (uint32_t)ix->h->n_tracks; }
const vw_track *vw_track_at(const vw_index *ix, uint32_t i) {
    return i < ix->h->n_tracks ? &ix->tracks[i] : NULL;
}
uint32_t vw_nfuncs(const vw_index *ix) { return (uint32_t)ix->h->n_funcs; }
uint64_t vw_nrecs(const vw_index *ix) { return ix->h->n_recs; }
const vw_func *vw_func_at(const vw_index *ix, uint32_t i) {
    return i < ix->h->n_funcs ? &ix->funcs[i] : NULL;
}
uint32_t vw_nplots(const vw_index *ix) { return (uint32_t)ix->h->n_plots; }
const vw_plot *vw_plot_at(const vw_index *ix, uint32_t i) {
    return i < ix->h->n_plots ? &ix->plots[i] : NULL;
}
uint32_t vw_nframes(const vw_index *ix) { return (uint32_t)ix->h->n_frames; }
const vw_frame *vw_frame_at(const vw_index *ix, uint32_t i) {
    return i < ix->h->n_frames ? &ix->frames[i] : NULL;
}

const vw_row *vw_row_at(const vw_index *ix, uint32_t row) {
    return row < ix->h->n_rows ? &ix->rows[row] : NULL;
}

long vw_find_row(const vw_index *ix, uint32_t kind, uint32_t key, uint32_t depth) {
    uint64_t lo = 0, hi = ix->h->n_rows;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        const vw_row *r = &ix->rows[mid];
        int less = r->kind != kind ? r->kind < kind : r->key != key ? r->key < key : r->depth < depth;
        if (less) lo = mid + 1;
        else hi = mid;
    }
    if (lo < ix->h->n_rows) {
        const vw_row *r = &ix->rows[lo];
        if (r->kind == kind && r->key == key && r->depth == depth) return (long)lo;
    }
    return -1;
}

/* The records of chunk c. */
static inline const uint8_t *chunk_recs(const vw_index *ix, const vw_chunk *c) {
    return c->id < ix->n_main ? ix->rmap + c->id * VW_REC : ix->recs + (c->id - ix->n_main) * VW_REC;
}

/* The chunk of row `row` holding its record i. */
static const vw_chunk *chunk_of(const vw_index *ix, const vw_row *w, uint64_t i) {
    const uint32_t *list = ix->rowchunks + w->chunks;
    /* chunks are full (VW_CHUNK) unless a budget flush cut them: try the
     * direct guess first */
    uint64_t g = i / VW_CHUNK;
    if (g < w->nchunks) {
        const vw_chunk *c = &ix->chunks[list[g]];
        if (c->first <= i && i - c->first < c->n) return c;
    }
    uint32_t lo = 0, hi = w->nchunks;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ix->chunks[list[mid]].first <= i) lo = mid;
        else hi = mid;
    }
    return &ix->chunks[list[lo]];
}

const void *vw_rec(const vw_index *ix, uint32_t row, uint64_t i) {
    const vw_row *w = &ix->rows[row];
    const vw_chunk *c = chunk_of(ix, w, i);
    return chunk_recs(ix, c) + (i - c->first) * VW_REC;
}

uint64_t vw_rec_id(const vw_index *ix, uint32_t row, uint64_t i) {
    const vw_chunk *c = chunk_of(ix, &ix->rows[row], i);
    return c->id + (i - c->first);
}

int vw_locate(const vw_index *ix, uint64_t id, uint32_t *row, uint64_t *i) {
    if (id >= ix->h->n_recs) return -1;
    uint64_t lo = 0, hi = ix->h->n_chunks;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (ix->chunks[mid].id <= id) lo = mid;
        else hi = mid;
    }
    const vw_chunk *c = &ix->chunks[lo];
    *row = c->row;
    *i = c->first + (id - c->id);
    return 0;
}

int vw_zone_text(const vw_index *ix, uint32_t text, uint64_t *name, uint64_t *txt) {
    *name = *txt = UINT64_MAX;
    if (!text || !ix->h->text_row) return -1;
    uint32_t row = (uint32_t)ix->h->text_row - 1;
    if (text > ix->rows[row].n) return -1;
    const vw_text *t = vw_rec(ix, row, text - 1);
    *name = t->name;
    *txt = t->text;
    return 0;
}

static inline const vw_zone *zone(const vw_index *ix, uint32_t row, uint64_t i) {
    return vw_rec(ix, row, i);
}

/* Whether a record's key passes: key >= t (ge) or key > t. */
static inline int pass(uint64_t key, uint64_t t, int ge) { return ge ? key >= t : key > t; }

/* The number (in its row's list) of the chunk holding row position i. */
static uint32_t chunk_no(const vw_index *ix, const vw_row *w, uint64_t i) {
    const uint32_t *list = ix->rowchunks + w->chunks;
    uint64_t g = i / VW_CHUNK;
    if (g < w->nchunks) {
        const vw_chunk *c = &ix->chunks[list[g]];
        if (c->first <= i && i - c->first < c->n) return (uint32_t)g;
    }
    uint32_t lo = 0, hi = w->nchunks;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ix->chunks[list[mid]].first <= i) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* Whether chunk m of the row may hold the first passing record: by end,
 * its last end passes; by start, the next chunk's first start passes (or
 * it is the last chunk). */
static inline int chunk_ok(const vw_index *ix, const vw_row *w, uint32_t m, uint64_t t, int by_end, int ge) {
    const uint32_t *list = ix->rowchunks + w->chunks;
    if (by_end) return pass(ix->chunks[list[m]].hi, t, ge);
    return m + 1 >= w->nchunks || pass(ix->chunks[list[m + 1]].lo, t, ge);
}

/* First position i in [from, n) whose key (end or start) passes t; keys
 * are sorted. Gallops over the chunk entries from the chunk of `from`, then
 * bisects one chunk's records. */
static uint64_t search(const vw_index *ix, uint32_t row, uint64_t from, uint64_t t, int by_end, int ge) {
    const vw_row *w = &ix->rows[row];
    if (from >= w->n) return w->n;
    const uint32_t *list = ix->rowchunks + w->chunks;
    uint32_t k = chunk_no(ix, w, from), m = k;
    if (!chunk_ok(ix, w, k, t, by_end, ge)) {
        uint32_t step = 1, lo = k; /* chunk lo fails */
        uint32_t hi = k;
        for (;;) {
            hi = lo + step < w->nchunks - 1 ? lo + step : w->nchunks - 1;
            if (chunk_ok(ix, w, hi, t, by_end, ge)) break;
            if (hi == w->nchunks - 1) return w->n; /* by end: nothing passes */
            lo = hi;
            step *= 2;
        }
        while (hi - lo > 1) {              /* lo fails, hi passes */
            uint32_t mid = lo + (hi - lo) / 2;
            if (chunk_ok(ix, w, mid, t, by_end, ge)) hi = mid;
            else lo = mid;
        }
        m = hi;
    }
    const vw_chunk *c = &ix->chunks[list[m]];
    const uint8_t *base = chunk_recs(ix, c);
    uint64_t a = m == k ? from - c->first : 0, b = c->n;
    while (a < b) {
        uint64_t mid = a + (b - a) / 2;
        const uint64_t *r = (const uint64_t *)(base + mid * VW_REC); /* every record starts with t */
        if (pass(by_end ? r[0] + r[1] : r[0], t, ge)) b = mid;
        else a = mid + 1;
    }
    return c->first + a; /* c->first + c->n: the next chunk's first */
}

uint64_t vw_lower_end(const vw_index *ix, uint32_t row, uint64_t t) {
    return search(ix, row, 0, t, 1, 1);
}
uint64_t vw_lower_start(const vw_index *ix, uint32_t row, uint64_t t) {
    return search(ix, row, 0, t, 0, 1);
}
uint64_t vw_upper_start(const vw_index *ix, uint32_t row, uint64_t t) {
    return search(ix, row, 0, t, 0, 0);
}

/* The zones from *j on that join a run chunk by chunk: the rest of *j's
 * chunk and the chunks after it, as long as each holds only zones narrower
 * than a pixel with gaps of at most a pixel, ends by t1, and (when whole)
 * starts within a pixel of the run's end. Reads chunk entries only. The
 * caller has just joined zone *j - 1, so a chunk entered in its middle is
 * close. */
static void absorb(const vw_index *ix, uint32_t row, uint64_t *j, uint64_t *end, uint64_t px, uint64_t t1) {
    const vw_row *w = &ix->rows[row];
    if (*j >= w->n) return;
    const uint32_t *list = ix->rowchunks + w->chunks;
    for (uint32_t k = chunk_no(ix, w, *j); k < w->nchunks; k++) {
        const vw_chunk *c = &ix->chunks[list[k]];
        if (c->maxdur >= px || c->maxgap > px || c->hi > t1) return;
        if (*j == c->first && c->lo > *end + px) return;
        if (c->hi > *end) *end = c->hi;
        *j = c->first + c->n;
    }
}

int vw_view_row(const vw_index *ix, uint32_t row, uint64_t t0, uint64_t t1, double ns_per_px,
                vw_item_fn fn, void *ctx) {
    const vw_row *w = vw_row_at(ix, row);
    if (!w || w->kind != VW_ROW_ZONES || t1 < t0) return 0;
    uint64_t n = w->n, px = ns_per_px < 1 ? 1 : (uint64_t)ns_per_px;
    uint64_t i = search(ix, row, 0, t0, 1, 1);
    while (i < n) {
        const vw_zone *z = zone(ix, row, i);
        if (z->start > t1) break;
        vw_item it = {z->start, z->dur, vw_rec_id(ix, row, i), 1, z->func_flags};
        if (z->dur < px) {
            /* a run: every following zone that ends within a pixel of the
             * run's end, as long as the next one is narrow and near */
            uint64_t end = z->start + z->dur, j = i + 1;
            for (;;) {
                j = search(ix, row, j, end + px, 1, 1); /* [.., j) end before end+px */
                if (j > i + 1) {
                    const vw_zone *p = zone(ix, row, j - 1);
                    if (p->start > t1) j = search(ix, row, i + 1, t1, 0, 0);
                    if (j > i + 1) {
                        const vw_zone *q = zone(ix, row, j - 1);
                        if (q->start + q->dur > end) end = q->start + q->dur;
                    }
                }
                if (j >= n) break;
                const vw_zone *nx = zone(ix, row, j);
                if (nx->start > t1 || nx->dur >= px || nx->start > end + px) break;
                end = nx->start + nx->dur; /* narrow and close: joins the run */
                j++;
                absorb(ix, row, &j, &end, px, t1);
            }
            it.count = j - i;
            it.dur = end - z->start;
            if (it.count > 1) it.func_flags &= VW_FUNC_MASK;
            i = j;
        } else {
            i++;
        }
        int rc = fn(ctx, &it);
        if (rc) return rc;
    }
    return 0;
}

int vw_parent(const vw_index *ix, uint32_t row, uint64_t i, uint32_t *prow, uint64_t *pi) {
    const vw_row *w = vw_row_at(ix, row);
    if (!w || w->kind != VW_ROW_ZONES || w->depth == 0 || i >= w->n) return -1;
    long pr = vw_find_row(ix, VW_ROW_ZONES, w->key, w->depth - 1);
    if (pr < 0) return -1;
    const vw_zone *z = zone(ix, row, i);
    uint64_t k = search(ix, (uint32_t)pr, 0, z->start, 0, 0); /* first start > z.start */
    if (k == 0) return -1;
    *prow = (uint32_t)pr;
    *pi = k - 1;
    return 0;
}
