/* sql_btree.c -- bulk loading of SQLite b-trees (see sql_btree.h).
 *
 * Leaves are filled in key order and written as soon as they are full; the
 * interior levels are built at the end from the list of leaves, evenly
 * filled, and the top page goes to the tree's root page. A table tree keeps
 * every row in its leaves and repeats the largest rowid of each child in
 * the interior cells; an index tree moves one key out of the leaf sequence
 * between every two leaves and stores it in the interior cell. */
#include "convert/sql/sql_btree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convert/convert.h"

#define PAGE_LEAF_TABLE 0x0D
#define PAGE_INNER_TABLE 0x05
#define PAGE_LEAF_INDEX 0x0A
#define PAGE_INNER_INDEX 0x02

#define KEY_MAX 64                       /* longest index record accepted */
#define KEY_SLOT (KEY_MAX + 1)           /* length byte + record */
#define INDEX_CELL_MAX (2 + 1 + KEY_MAX) /* pointer + length + record */

struct sqb_file {
    int fd;
    char *path;
    uint32_t page_size, usable;
    uint32_t npages; /* the last page number in use */
    int fmt4;        /* serial types 8 and 9 (integers 0 and 1) allowed */
    uint8_t hdr[100];
};

typedef struct page {
    uint8_t *buf;
    uint32_t hdr;     /* 8 for a leaf, 12 for an interior page */
    uint32_t ncells;
    uint32_t content; /* offset of the lowest cell byte */
} page;

struct sqb_tree {
    sqb_file *f;
    uint32_t root;
    int is_index;
    page leaf;
    int64_t leaf_max;   /* table: largest rowid in the leaf */
    int64_t last_rowid; /* table: order check */
    int closed;         /* index: the leaf is full and `held` waits */
    uint8_t held[KEY_SLOT];
    /* The next level's children: page numbers, and the largest rowid under
     * each (table) or the key between child i and i+1 (index). */
    uint32_t *kids;
    int64_t *keys;
    uint8_t (*seps)[KEY_SLOT];
    size_t nkids, cap;
};

/* ---- Bytes ---------------------------------------------------------------- */

static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* SQLite's variable-length integer: big-endian groups of 7 bits with the
 * high bit set on all but the last, the ninth byte carrying 8 bits. */
static size_t put_varint(uint8_t *p, uint64_t v) {
    if (v <= 0x7f) {
        p[0] = (uint8_t)v;
        return 1;
    }
    if (v >> 56) {
        p[8] = (uint8_t)v;
        v >>= 8;
        for (int i = 7; i >= 0; i--, v >>= 7) p[i] = (uint8_t)((v & 0x7f) | 0x80);
        return 9;
    }
    uint8_t tmp[9];
    size_t n = 0;
    for (; v; v >>= 7) tmp[n++] = (uint8_t)((v & 0x7f) | 0x80);
    tmp[0] &= 0x7f;
    for (size_t i = 0; i < n; i++) p[i] = tmp[n - 1 - i];
    return n;
}

/* ---- File ----------------------------------------------------------------- */

static int file_fail(sqb_file *f, const char *what) {
    cv_err("%s: cannot %s: %s", f->path, what, strerror(errno ? errno : EIO));
    return -1;
}

/* The next free page number. SQLite never uses the page holding its lock
 * bytes (offset 1 GiB, https://www.sqlite.org/fileformat.html#the_lock_byte_page):
 * it is skipped, as SQLite itself skips it. */
static uint32_t new_page(sqb_file *f) {
    uint32_t lock_page = (uint32_t)(0x40000000u / f->page_size) + 1;
    if (++f->npages == lock_page) ++f->npages;
    return f->npages;
}

static int write_page(sqb_file *f, uint32_t pgno, const uint8_t *buf) {
    if (cv_pwrite_full(f->fd, buf, f->page_size, (uint64_t)(pgno - 1) * f->page_size))
        return file_fail(f, "write database pages");
    return 0;
}

sqb_file *sqb_file_open(const char *path) {
    sqb_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        cv_err("out of memory");
        return NULL;
    }
    struct stat st;
    f->fd = open(path, O_RDWR | O_CLOEXEC);
    if (f->fd < 0 || fstat(f->fd, &st) != 0 || pread(f->fd, f->hdr, 100, 0) != 100) {
        file_fail(f, "reopen the database");
        goto fail;
    }
    const uint8_t *h = f->hdr;
    uint32_t ps = (uint32_t)h[16] << 8 | h[17];
    f->page_size = ps == 1 ? 65536 : ps;
    f->usable = f->page_size - h[20];
    if (memcmp(h, "SQLite format 3", 16) != 0 || f->page_size < 512 || h[18] != 1 ||
        h[19] != 1 || get32(h + 52) != 0 || f->usable < 480) {
        cv_err("%s: unexpected database layout", path);
        goto fail;
    }
    f->fmt4 = get32(h + 44) >= 4;
    f->npages = get32(h + 24) == get32(h + 92) && get32(h + 28)
                    ? get32(h + 28)
                    : (uint32_t)((uint64_t)st.st_size / f->page_size);
    return f;
fail:
    if (f->fd >= 0) close(f->fd);
    free(f->path);
    free(f);
    return NULL;
}

int sqb_file_close(sqb_file *f) {
    uint8_t *h = f->hdr;
    uint32_t change = get32(h + 24) + 1;
    put32(h + 24, change);
    put32(h + 92, change);
    put32(h + 28, f->npages);
    int rc = cv_pwrite_full(f->fd, h, 100, 0) ? file_fail(f, "write the database header") : 0;
    if (close(f->fd) != 0 && !rc) rc = file_fail(f, "close the database");
    free(f->path);
    free(f);
    return rc;
}

size_t sqb_record(const sqb_file *f, uint8_t *out, const int64_t *v, uint32_t nulls, int n) {
    uint8_t *h = out + 1, *b = out + 1 + n;
    out[0] = (uint8_t)(1 + n);
    for (int i = 0; i < n; i++) {
        int64_t x = v[i];
        if (nulls >> i & 1) {
            *h++ = 0;
            continue;
        }
        if (f->fmt4 && (x == 0 || x == 1)) {
            *h++ = (uint8_t)(8 + x);
            continue;
        }
        uint64_t u = x < 0 ? ~(uint64_t)x : (uint64_t)x;
        int type = u <= 0x7f ? 1 : u <= 0x7fff ? 2 : u <= 0x7fffff ? 3 : u <= 0x7fffffff ? 4
                 : u <= 0x7fffffffffffULL ? 5 : 6;
        int len = type == 5 ? 6 : type == 6 ? 8 : type;
        *h++ = (uint8_t)type;
        for (int k = len - 1; k >= 0; k--, x = (int64_t)((uint64_t)x >> 8)) b[k] = (uint8_t)x;
        b += len;
    }
    return (size_t)(b - out);
}

/* ---- Pages ---------------------------------------------------------------- */

static void page_reset(const sqb_file *f, page *p, uint32_t hdr) {
    memset(p->buf, 0, f->page_size);
    p->hdr = hdr;
    p->ncells = 0;
    p->content = f->usable;
}

static uint32_t page_free(const page *p) { return p->content - p->hdr - 2 * p->ncells; }

/* Appends a cell of `n` bytes; the caller checked page_free() >= n + 2. */
static uint8_t *page_cell(page *p, size_t n) {
    p->content -= (uint32_t)n;
    put16(p->buf + p->hdr + 2 * p->ncells++, p->content);
    return p->buf + p->content;
}

static int page_write(const sqb_tree *t, page *p, uint8_t type, uint32_t right,
                      uint32_t pgno) {
    uint8_t *b = p->buf;
    b[0] = type;
    put16(b + 3, p->ncells);
    put16(b + 5, p->content == 65536 ? 0 : p->content);
    if (p->hdr == 12) put32(b + 8, right);
    return write_page(t->f, pgno, b);
}

/* ---- Trees ---------------------------------------------------------------- */

sqb_tree *sqb_tree_new(sqb_file *f, uint32_t root, int is_index) {
    sqb_tree *t = calloc(1, sizeof *t);
    if (!t || !(t->leaf.buf = malloc(f->page_size))) {
        free(t);
        cv_err("out of memory");
        return NULL;
    }
    t->f = f;
    t->root = root;
    t->is_index = is_index;
    t->last_rowid = INT64_MIN;
    page_reset(f, &t->leaf, 8);
    return t;
}

void sqb_tree_free(sqb_tree *t) {
    if (!t) return;
    free(t->leaf.buf);
    free(t->kids);
    free(t->keys);
    free(t->seps);
    free(t);
}

/* Adds a child for the next level: its page, its largest rowid (table) or
 * the key after it (index, NULL for the last child). */
static int push_kid(sqb_tree *t, uint32_t pgno, int64_t key, const uint8_t *sep) {
    if (t->nkids == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        uint32_t *k = realloc(t->kids, cap * sizeof *k);
        if (k) t->kids = k;
        void *v = k ? (t->is_index ? realloc(t->seps, cap * KEY_SLOT)
                                   : realloc(t->keys, cap * sizeof *t->keys))
                    : NULL;
        if (!v) {
            cv_err("out of memory");
            return -1;
        }
        if (t->is_index) t->seps = v;
        else t->keys = v;
        t->cap = cap;
    }
    t->kids[t->nkids] = pgno;
    if (t->is_index) {
        if (sep) memcpy(t->seps[t->nkids], sep, (size_t)sep[0] + 1);
    } else {
        t->keys[t->nkids] = key;
    }
    t->nkids++;
    return 0;
}

/* Writes the leaf to a new page and starts an empty one; `sep` is the key
 * that follows it (index). */
static int flush_leaf(sqb_tree *t, const uint8_t *sep) {
    uint32_t pgno = new_page(t->f);
    uint8_t type = t->is_index ? PAGE_LEAF_INDEX : PAGE_LEAF_TABLE;
    if (page_write(t, &t->leaf, type, 0, pgno) || push_kid(t, pgno, t->leaf_max, sep)) return -1;
    page_reset(t->f, &t->leaf, 8);
    return 0;
}

int sqb_table_add(sqb_tree *t, int64_t rowid, const uint8_t *rec, size_t len) {
    if (rowid <= t->last_rowid) {
        cv_err("internal error: table rows out of order");
        return -1;
    }
    uint8_t head[18];
    size_t h = put_varint(head, len);
    h += put_varint(head + h, (uint64_t)rowid);
    if (page_free(&t->leaf) < h + len + 2) {
        if (t->leaf.ncells == 0) {
            cv_err("internal error: row larger than a page");
            return -1;
        }
        if (flush_leaf(t, NULL)) return -1;
    }
    uint8_t *c = page_cell(&t->leaf, h + len);
    memcpy(c, head, h);
    memcpy(c + h, rec, len);
    t->leaf_max = t->last_rowid = rowid;
    return 0;
}

static void index_cell(page *p, const uint8_t *rec, size_t len) {
    uint8_t *c = page_cell(p, len + 1);
    c[0] = (uint8_t)len; /* len <= KEY_MAX: a one-byte varint */
    memcpy(c + 1, rec, len);
}

int sqb_index_add(sqb_tree *t, const uint8_t *rec, size_t len) {
    if (len > KEY_MAX) {
        cv_err("internal error: index key too long");
        return -1;
    }
    if (t->closed) {
        /* A key follows the held one: the held key separates the full leaf
         * from the next. */
        if (flush_leaf(t, t->held)) return -1;
        t->closed = 0;
    } else if (page_free(&t->leaf) < len + 3 + INDEX_CELL_MAX) {
        /* Full but for the room kept for one more key: the key waits, so
         * that if it is the last it can still go into this leaf. */
        t->held[0] = (uint8_t)len;
        memcpy(t->held + 1, rec, len);
        t->closed = 1;
        return 0;
    }
    index_cell(&t->leaf, rec, len);
    return 0;
}

/* Builds one interior level over t's children (at least 2), in place;
 * when it fits one page, that page is the root. */
static int build_level(sqb_tree *t, uint8_t *buf) {
    size_t n = t->nkids, maxcell = 4 + 9 + 2;
    if (t->is_index) {
        maxcell = 0;
        for (size_t i = 0; i + 1 < n; i++)
            if ((size_t)4 + 1 + t->seps[i][0] + 2 > maxcell) maxcell = 4 + 1 + t->seps[i][0] + 2;
    }
    size_t per = (t->f->usable - 12) / maxcell + 1; /* children per page */
    size_t npages = (n + per - 1) / per, out = 0, i = 0;
    page p = {.buf = buf};
    for (size_t k = 0; k < npages; k++) {
        size_t m = n / npages + (k < n % npages);
        page_reset(t->f, &p, 12);
        for (size_t j = i; j < i + m - 1; j++) {
            if (t->is_index) {
                uint8_t *c = page_cell(&p, 4 + 1 + t->seps[j][0]);
                put32(c, t->kids[j]);
                memcpy(c + 4, t->seps[j], (size_t)t->seps[j][0] + 1);
            } else {
                uint8_t tmp[9];
                size_t v = put_varint(tmp, (uint64_t)t->keys[j]);
                uint8_t *c = page_cell(&p, 4 + v);
                put32(c, t->kids[j]);
                memcpy(c + 4, tmp, v);
            }
        }
        uint32_t pgno = npages == 1 ? t->root : new_page(t->f);
        uint8_t type = t->is_index ? PAGE_INNER_INDEX : PAGE_INNER_TABLE;
        if (page_write(t, &p, type, t->kids[i + m - 1], pgno)) return -1;
        /* Children k of the next level reuse the slots from the front. */
        t->kids[out] = pgno;
        if (t->is_index) {
            if (k + 1 < npages) memmove(t->seps[out], t->seps[i + m - 1], KEY_SLOT);
        } else {
            t->keys[out] = t->keys[i + m - 1];
        }
        out++;
        i += m;
    }
    t->nkids = out;
    return 0;
}

int sqb_tree_finish(sqb_tree *t) {
    int rc = 0;
    if (t->closed) {
        index_cell(&t->leaf, t->held + 1, t->held[0]);
        t->closed = 0;
    }
    uint8_t type = t->is_index ? PAGE_LEAF_INDEX : PAGE_LEAF_TABLE;
    if (t->nkids == 0) {
        /* One leaf at most: it is the root (an empty tree stays as it is). */
        if (t->leaf.ncells) rc = page_write(t, &t->leaf, type, 0, t->root);
    } else {
        rc = flush_leaf(t, NULL);
        while (!rc && t->nkids > 1) rc = build_level(t, t->leaf.buf);
    }
    sqb_tree_free(t);
    return rc;
}
