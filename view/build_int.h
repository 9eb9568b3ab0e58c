/* build_int.h -- the index builder's state, shared by view/build.c (the
 * streaming pass and the output) and view/extend.c (what an extension
 * reloads from the index it extends, and the checks that the trace only
 * grew). */
#ifndef VIEW_BUILD_INT_H
#define VIEW_BUILD_INT_H

#include <stdio.h>

#include "trace.h"
#include "view_int.h"

typedef struct brow {
    vw_row meta;
    uint8_t *buf;      /* VW_REC-byte records */
    uint32_t nbuf, cap;
    uint32_t *chunks;  /* chunk numbers */
    uint32_t nchunks, capchunks;
} brow;

/* Open addressing u64 -> u32 map (value + 1 stored, 0 empty). */
typedef struct umap {
    uint64_t *keys;
    uint32_t *vals;
    uint32_t size, used;
} umap;

typedef struct btrack {
    vw_track t;          /* without the zones still open */
    uint32_t *depth_row; /* row + 1 per depth */
    uint32_t ndepth;
    uint32_t marker_row; /* row + 1 */
    vw_szone *open;      /* zones open at the stream's end, outermost first */
    uint32_t nopen, capopen;
} btrack;

typedef struct bfunc {
    char *name, *file;
    uint64_t name_off, file_off; /* in the strings */
    uint32_t line, kind;
    uint64_t hash;
    uint64_t zones;
} bfunc;

/* A zone still open at the end of its stream: indexed (flag VW_OPEN) as
 * the last record of its row, but kept out of the state an extension
 * resumes from. */
typedef struct bopen {
    uint32_t row, track, depth, func;
    vw_zone z;
    vw_text text;
    int has_text;
} bopen;

/* Buffers written to the records file with one call at most (4 full
 * chunks: 64 KiB; view/build.c rec_hand). */
#define VW_REC_OUT 4u

typedef struct builder {
    lt_reader *r;
    int rec;             /* the records file (full chunks), -1: none */
    uint8_t *rec_out[VW_REC_OUT]; /* row buffers handed over, not written yet */
    uint32_t rec_len[VW_REC_OUT], nrec_out;
    uint32_t rec_cap[VW_REC_OUT]; /* VW_CHUNK: a row's, 0: a staging buffer */
    uint8_t *rec_spare[VW_REC_OUT]; /* written, kept for rows: VW_CHUNK records */
    uint32_t nrec_spare, rec_pending; /* bytes handed over, not written */
    FILE *idx;           /* the index file, written at the end */
    FILE *str;           /* strings, copied into the index at the end */
    char *err;
    size_t errlen;
    uint64_t origin;
    int have_ts;
    brow *rows;
    uint32_t nrows, caprows;
    vw_chunk *chunks;
    uint64_t nchunks, capchunks;
    uint64_t nrecs;      /* records in the records file */
    uint64_t rec_reserved; /* its blocks reserved up to there, UINT64_MAX: not */
    uint64_t buffered;   /* bytes in row buffers */
    uint64_t strlen_;    /* bytes written to the strings file */
    btrack *tracks;
    uint32_t ntracks;
    uint32_t *proc_base; /* first track of each process (1-based index) */
    uint32_t nproc;
    uint32_t **loc_cache; /* per process: loc -> func + 1, locs below LOC_CACHE */

    umap loc_func;       /* (process << 32 | loc) -> func */
    umap func_hash;      /* hash -> func */
    bfunc *funcs;
    uint32_t nfuncs, capfuncs;
    umap misc_rows;      /* (kind << 56 | key) -> row, plots/frames/lost/text */
    umap plot_ids, frame_ids; /* (process << 32 | id) -> plot / frame */
    vw_plot *plots;
    uint32_t nplots, capplots;
    vw_frame *frames;
    uint32_t nframes, capframes;
    uint32_t text_row;   /* row + 1 */
    uint64_t ntexts;
    vw_totals tot;       /* without the zones still open */
    bopen *open;         /* zones open at the end, in the order seen */
    uint32_t nopen, capopen;
    int extending;       /* resuming from an index */
    int refused;         /* the extension met what it cannot append */
    int cut;             /* the trace has cut zones: never extended */
    uint64_t last_stream; /* process << 32 | thread of the last zone end */
    long last_track;      /* its track */
} builder;

int vw__fail(builder *b, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int vw__grow_arr(void **p, uint32_t *cap, uint32_t want, size_t elem);
int vw__umap_put(umap *m, uint64_t key, uint32_t val);
int vw__umap_has(const umap *m, uint64_t key);
uint64_t vw__put_str(builder *b, const char *s, size_t len);
long vw__new_row(builder *b, uint32_t kind, uint32_t key, uint32_t depth);
int vw__push_rec(builder *b, uint32_t ri, const void *rec);
int vw__init_tracks(builder *b);
uint64_t vw__func_hash(const char *name, const char *file, uint32_t line, uint32_t kind);

/* Code of an extension that cannot be done: the caller builds whole. */
#define VW_REFUSED 1

/* Loads the index at `idx_path` into the builder (whose reader is open on
 * the grown trace, its tracks set), cuts its records file (rec_fd, locked)
 * back to the records that index counts, and resumes each stream after
 * its indexed blocks. Returns 0, VW_REFUSED when the trace did not merely
 * grow (or the index cannot be extended), or a negative LT_E* code. */
int vw__extend_load(builder *b, const char *trace, const char *idx_path, int rec_fd);

/* The hashes of the 4 KiB at the start of `fd` and before `end`. */
int vw__trace_hashes(int fd, uint64_t end, uint64_t *head, uint64_t *tail);

#endif /* VIEW_BUILD_INT_H */
