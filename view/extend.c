/* extend.c -- what an extension of an index reloads (build_int.h): the
 * checks that the trace only grew since it was indexed, then the rows,
 * functions, plots, frames, totals and strings of the index, and each
 * stream's place and open zones, handed to the reader (resume.h). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build_int.h"
#include "format/resume.h"

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static int hash_at(int fd, uint64_t off, size_t n, uint64_t *h) {
    uint8_t buf[4096];
    if (n > sizeof buf || pread(fd, buf, n, (off_t)off) != (ssize_t)n) return -1;
    *h = fnv(0xcbf29ce484222325ull ^ n, buf, n);
    return 0;
}

int vw__trace_hashes(int fd, uint64_t end, uint64_t *head, uint64_t *tail) {
    size_t n = end < 4096 ? (size_t)end : 4096;
    if (hash_at(fd, 0, n, head) < 0 || hash_at(fd, end - n, n, tail) < 0) return -1;
    return 0;
}

/* The sections of the state (view_int.h), bounds checked. */
typedef struct state_view {
    const vw_state *st;
    const uint32_t *committed;
    const vw_track *tracks;
    const uint64_t *fzones;
    const vw_sstream *streams;
    const vw_szone *zones;
} state_view;

static const void *take(const vw_index *ix, uint64_t *at, uint64_t end, uint64_t elem, uint64_t n,
                        int align) {
    if (align) *at = (*at + 7) & ~7ull;
    if (n && elem > (end - *at) / n) return NULL;
    const void *p = *at <= end ? vw__section(ix, *at, elem * n) : NULL;
    *at += elem * n;
    return p;
}

static int state_of(const vw_index *ix, state_view *v) {
    const vw_header *h = vw__header(ix);
    uint64_t at = h->off_state, end = h->off_state + h->len_state;
    if (h->len_state < sizeof(vw_state)) return -1;
    v->st = take(ix, &at, end, sizeof *v->st, 1, 0);
    const vw_state *st = v->st;
    if (!st || st->magic != VW_STATE_MAGIC || st->n_rows != h->n_rows ||
        st->n_tracks != h->n_tracks || st->n_funcs != h->n_funcs)
        return -1;
    v->committed = take(ix, &at, end, 4, st->n_rows, 0);
    v->tracks = take(ix, &at, end, sizeof *v->tracks, st->n_tracks, 1);
    v->fzones = take(ix, &at, end, 8, st->n_funcs, 1);
    v->streams = take(ix, &at, end, sizeof *v->streams, st->n_streams, 0);
    v->zones = take(ix, &at, end, sizeof *v->zones, st->n_zones, 0);
    return v->committed && v->tracks && v->fzones && v->streams && v->zones ? 0 : -1;
}

/* Whether the trace is the one indexed, grown by appended units only. */
static int only_grew(builder *b, const vw_index *ix, const vw_state *st, const char *trace) {
    const vw_header *h = vw__header(ix);
    const lt_file_info *fi = lt_reader_info(b->r);
    if (!st->extendable || st->tot.complete) return 0;
    uint64_t size, mt, ino, dev;
    if (vw__identity(trace, &size, &mt, &ino, &dev) < 0 || ino != h->trace_ino || dev != h->trace_dev)
        return 0;
    if (fi->file_size - fi->bytes_ignored < st->body_end) return 0;
    uint64_t head, tail;
    int fd = open(trace, O_RDONLY | O_CLOEXEC);
    int ok = fd >= 0 && vw__trace_hashes(fd, st->body_end, &head, &tail) == 0 && head == st->head_hash &&
             tail == st->tail_hash;
    if (fd >= 0) close(fd);
    if (!ok) return 0;
    return !st->have_ts || (b->have_ts && b->origin == st->tot.origin);
}

/* The tracks: the indexed ones numbered as before (same streams), their
 * figures without open zones, their names kept when unchanged (a thread's
 * tid and name may come after its first events). */
static int load_tracks(builder *b, const vw_index *ix, const state_view *v) {
    int rc = vw__init_tracks(b);
    if (rc < 0) return rc;
    if (b->ntracks < v->st->n_tracks) return VW_REFUSED;
    for (uint32_t i = 0; i < b->ntracks; i++) {
        btrack *t = &b->tracks[i];
        const lt_thread *th = lt_reader_thread(b->r, t->t.process, t->t.thread);
        const char *name = th && th->name ? th->name : "";
        if (i < v->st->n_tracks) {
            const vw_track *o = &v->tracks[i];
            if (o->process != t->t.process || o->thread != t->t.thread) return VW_REFUSED;
            uint64_t tid = t->t.tid; /* named since, maybe */
            t->t = *o;
            t->t.tid = tid;
            if (!strcmp(vw_string(ix, o->name, NULL), name)) continue;
        }
        t->t.name = vw__put_str(b, name, strlen(name));
        if (t->t.name == UINT64_MAX) return LT_EIO;
    }
    return 0;
}

/* Row `r` of the index: its chunks in the records file, and the records
 * of its partial chunk that are not open zones, back in its buffer. */
static int load_row(builder *b, const vw_index *ix, const vw_chunk *chunks, const uint32_t *list,
                    uint32_t r, uint32_t committed, uint64_t n_main) {
    const vw_row *w = vw_row_at(ix, r);
    long ri = vw__new_row(b, w->kind, w->key, w->depth);
    if (ri != (long)r) return LT_ENOMEM;
    brow *br = &b->rows[r];
    uint64_t main_n = 0;
    for (uint32_t k = 0; k < w->nchunks; k++) {
        uint32_t c = list[w->chunks + k];
        if (chunks[c].id >= n_main) continue;
        if (vw__grow_arr((void **)&br->chunks, &br->capchunks, br->nchunks, sizeof *br->chunks) < 0)
            return LT_ENOMEM;
        br->chunks[br->nchunks++] = c;
        main_n += chunks[c].n;
    }
    if (committed > w->n - main_n) return VW_REFUSED;
    br->meta.n = main_n;
    for (uint64_t i = main_n; i < main_n + committed; i++) {
        int rc = vw__push_rec(b, r, vw_rec(ix, r, i));
        if (rc < 0) return rc;
    }
    return 0;
}

/* Points each track, plot, frame and the texts at their rows. */
static int link_row(builder *b, uint32_t r) {
    const vw_row *w = &b->rows[r].meta;
    if (w->kind == VW_ROW_TEXT) {
        b->text_row = r + 1;
        b->ntexts = w->n;
        return 0;
    }
    if (w->kind != VW_ROW_ZONES && w->kind != VW_ROW_MARKERS)
        return vw__umap_put(&b->misc_rows, (uint64_t)w->kind << 56 | w->key, r) < 0 ? LT_ENOMEM : 0;
    if (w->key >= b->ntracks) return VW_REFUSED;
    btrack *t = &b->tracks[w->key];
    if (w->kind == VW_ROW_MARKERS) {
        t->marker_row = r + 1;
        return 0;
    }
    if (w->depth >= t->ndepth) {
        uint32_t n = t->ndepth;
        if (vw__grow_arr((void **)&t->depth_row, &t->ndepth, w->depth, sizeof *t->depth_row) < 0)
            return LT_ENOMEM;
        memset(t->depth_row + n, 0, (size_t)(t->ndepth - n) * sizeof *t->depth_row);
    }
    t->depth_row[w->depth] = r + 1;
    return 0;
}

static int load_rows(builder *b, const vw_index *ix, const state_view *v) {
    const vw_header *h = vw__header(ix);
    const vw_chunk *chunks = vw__section(ix, h->off_chunks, h->n_chunks * sizeof(vw_chunk));
    const uint32_t *list = vw__section(ix, h->off_rowchunks, h->n_rowchunks * 4);
    if (!chunks || !list) return VW_REFUSED;
    uint64_t nmain = 0; /* the chunks in the records file come first */
    while (nmain < h->n_chunks && chunks[nmain].id < h->n_main) nmain++;
    if (nmain > UINT32_MAX || (nmain && chunks[nmain - 1].id + chunks[nmain - 1].n != h->n_main))
        return VW_REFUSED;
    b->chunks = malloc((nmain + 1) * sizeof *b->chunks);
    if (!b->chunks) return LT_ENOMEM;
    memcpy(b->chunks, chunks, nmain * sizeof *chunks);
    b->nchunks = b->capchunks = nmain;
    if (!nmain) b->capchunks = 1;
    b->nrecs = h->n_main;
    for (uint32_t r = 0; r < h->n_rows; r++) {
        int rc = load_row(b, ix, chunks, list, r, v->committed[r], h->n_main);
        if (rc == 0) rc = link_row(b, r);
        if (rc) return rc;
    }
    return 0;
}

static int load_funcs(builder *b, const vw_index *ix, const state_view *v) {
    uint32_t n = vw_nfuncs(ix);
    for (uint32_t i = 0; i < n; i++) {
        const vw_func *f = vw_func_at(ix, i);
        if (vw__grow_arr((void **)&b->funcs, &b->capfuncs, b->nfuncs, sizeof *b->funcs) < 0)
            return LT_ENOMEM;
        bfunc *c = &b->funcs[b->nfuncs];
        memset(c, 0, sizeof *c);
        c->name = strdup(vw_string(ix, f->name, NULL));
        c->file = strdup(vw_string(ix, f->file, NULL));
        if (!c->name || !c->file) {
            free(c->name);
            free(c->file);
            return LT_ENOMEM;
        }
        b->nfuncs++;
        c->name_off = f->name;
        c->file_off = f->file;
        c->line = f->line;
        c->kind = f->kind;
        c->zones = v->fzones[i];
        /* the slot a whole build gave it: functions come in the same order */
        c->hash = vw__func_hash(c->name, c->file, c->line, c->kind);
        while (vw__umap_has(&b->func_hash, c->hash)) c->hash++;
        if (vw__umap_put(&b->func_hash, c->hash, i) < 0) return LT_ENOMEM;
    }
    return 0;
}

static int load_numbered(builder *b, const vw_index *ix) {
    uint32_t np = vw_nplots(ix), nf = vw_nframes(ix);
    if (np && vw__grow_arr((void **)&b->plots, &b->capplots, np, sizeof *b->plots) < 0) return LT_ENOMEM;
    if (nf && vw__grow_arr((void **)&b->frames, &b->capframes, nf, sizeof *b->frames) < 0) return LT_ENOMEM;
    for (uint32_t i = 0; i < np; i++) {
        b->plots[b->nplots++] = *vw_plot_at(ix, i);
        if (vw__umap_put(&b->plot_ids, (uint64_t)b->plots[i].process << 32 | b->plots[i].id, i) < 0)
            return LT_ENOMEM;
    }
    for (uint32_t i = 0; i < nf; i++) {
        b->frames[b->nframes++] = *vw_frame_at(ix, i);
        if (vw__umap_put(&b->frame_ids, (uint64_t)b->frames[i].process << 32 | b->frames[i].id, i) < 0)
            return LT_ENOMEM;
    }
    return 0;
}

/* Each stream indexed before: the same blocks still there, resumed after
 * them with its open zones. */
static int resume_streams(builder *b, const vw_index *ix, const state_view *v) {
    const vw_szone *z = v->zones;
    uint64_t left = v->st->n_zones;
    lt__open_zone *oz = NULL;
    int rc = 0;
    for (uint64_t i = 0; i < v->st->n_streams && !rc; i++) {
        const vw_sstream *s = &v->streams[i];
        uint64_t off, last;
        if (s->nzones > left || s->blocks == 0 ||
            lt__stream_nblocks(b->r, s->process, s->thread) < s->blocks ||
            lt__stream_block(b->r, s->process, s->thread, s->blocks - 1, &off, &last) < 0 ||
            off != s->last_off || last != s->last_ts ||
            /* an empty last block (no timestamp in its descriptor): where
             * its open zones end is in the block alone */
            (s->nzones && !s->last_ts)) {
            rc = VW_REFUSED;
            break;
        }
        free(oz);
        oz = calloc(s->nzones + 1, sizeof *oz);
        if (!oz) {
            rc = LT_ENOMEM;
            break;
        }
        for (uint32_t k = 0; k < s->nzones; k++) {
            oz[k].begin_ts = z[k].begin_ts;
            oz[k].child_ns = z[k].child_ns;
            oz[k].loc = z[k].loc;
            if (z[k].name != UINT64_MAX) oz[k].name = vw_string(ix, z[k].name, &oz[k].name_len);
            if (z[k].text != UINT64_MAX) oz[k].text = vw_string(ix, z[k].text, &oz[k].text_len);
        }
        rc = lt__stream_resume(b->r, s->process, s->thread, s->blocks, oz, s->nzones);
        if (rc == LT_EINVAL) rc = VW_REFUSED;
        z += s->nzones;
        left -= s->nzones;
    }
    free(oz);
    return rc;
}

static int copy_strings_in(builder *b, const vw_index *ix) {
    const vw_header *h = vw__header(ix);
    const void *s = vw__section(ix, h->off_strings, h->len_strings);
    if (!s) return VW_REFUSED;
    if (h->len_strings && fwrite(s, 1, h->len_strings, b->str) != h->len_strings) return LT_EIO;
    b->strlen_ = h->len_strings;
    return 0;
}

static int load(builder *b, const vw_index *ix, const char *trace, int rec_fd) {
    const vw_header *h = vw__header(ix);
    state_view v;
    struct stat rs;
    if (fstat(rec_fd, &rs) < 0 || (uint64_t)rs.st_ino != h->rec_ino || (uint64_t)rs.st_dev != h->rec_dev ||
        state_of(ix, &v) < 0 || !only_grew(b, ix, v.st, trace))
        return VW_REFUSED;
    int rc = copy_strings_in(b, ix);
    if (!rc) rc = load_tracks(b, ix, &v);
    if (!rc) rc = load_rows(b, ix, &v);
    if (!rc) rc = load_funcs(b, ix, &v);
    if (!rc) rc = load_numbered(b, ix);
    if (rc) return rc;
    b->tot = v.st->tot;
    if ((rc = resume_streams(b, ix, &v)) != 0) return rc;
    /* what an extension that failed may have left past the index's end */
    if (ftruncate(rec_fd, (off_t)(h->n_main * VW_REC)) < 0) return LT_EIO;
    return 0;
}

int vw__extend_load(builder *b, const char *trace, const char *idx_path, int rec_fd) {
    vw_index *ix = vw__load(idx_path);
    if (!ix) return VW_REFUSED;
    int rc = load(b, ix, trace, rec_fd);
    vw_close(ix);
    if (rc < 0 && b->err && b->errlen && !b->err[0]) vw__fail(b, rc, "extending the index: %s", lt_strerror(rc));
    return rc;
}
