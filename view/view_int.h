/* view_int.h -- the on-disk layout of the index shared by view/build.c and
 * view/index.c (see view.h for the overview). */
#ifndef VIEW_VIEW_INT_H
#define VIEW_VIEW_INT_H

#include <stdint.h>

#include "view.h"

#define VW_MAGIC "TRCYVIX1"
#define VW_HEADER_SIZE 4096u
#define VW_REC 32u

/* One chunk of consecutive records of one row. */
typedef struct vw_chunk {
    uint64_t id;      /* global id of its first record */
    uint64_t first;   /* position of its first record in its row */
    uint32_t row, n;
    uint64_t lo;      /* its first record's time (start) */
    uint64_t hi;      /* zones: its last end (ends are sorted); others: last time */
    uint64_t maxdur;  /* zones: the longest one */
    uint64_t maxgap;  /* zones: the widest gap between two of its zones */
} vw_chunk;

typedef struct vw_header {
    char magic[8];
    uint32_t version, rec_size;
    uint64_t trace_size, trace_mtime_ns, trace_ino, trace_dev;
    vw_totals totals;
    uint64_t off_recs, n_recs;
    uint64_t off_strings, len_strings;
    uint64_t off_chunks, n_chunks;
    uint64_t off_rows, n_rows;
    uint64_t off_rowchunks, n_rowchunks; /* uint32_t chunk numbers */
    uint64_t off_tracks, n_tracks;
    uint64_t off_funcs, n_funcs;
    uint64_t off_plots, n_plots;
    uint64_t off_frames, n_frames;
    uint64_t text_row;                   /* row + 1 of the zone texts, 0 none */
    uint64_t file_size;
    /* Records live in two places: ids below n_main in the records file
     * (vw__rec_path, id * VW_REC, append-only: an extension adds to it,
     * never changes what an older index maps), the others (each row's
     * last, partial chunk and its open zone) here at off_recs. */
    uint64_t n_main;
    uint64_t rec_ino, rec_dev;           /* the records file it goes with */
    uint64_t off_state, len_state;       /* what an extension resumes from */
} vw_header;

/* The state an extension resumes from (section off_state): the trace as it
 * was indexed, the totals without the zones still open (they are indexed
 * as open, and again when they end), then
 *   uint32_t committed[n_rows] (records of each row's partial chunk that
 *     are not open zones or their texts), padded to 8 bytes,
 *   vw_track tracks[n_tracks] (without open zones),
 *   uint64_t func_zones[n_funcs] (idem),
 *   vw_sstream streams[n_streams], vw_szone zones[n_zones]. */
#define VW_STATE_MAGIC 0x3154535843495756ull
typedef struct vw_state {
    uint64_t magic;
    uint64_t extendable;   /* 0: a cut trace, built whole each time */
    uint64_t body_end;     /* bytes of complete units indexed */
    uint64_t head_hash, tail_hash; /* of the 4 KiB at 0 and before body_end */
    uint64_t have_ts;      /* the trace had event blocks (origin is set) */
    vw_totals tot;
    uint64_t n_rows, n_tracks, n_funcs, n_streams, n_zones;
} vw_state;

/* A stream as indexed: its event blocks read, the last one's offset and
 * last timestamp, and the zones open at its end (nzones vw_szone). */
typedef struct vw_sstream {
    uint32_t process, thread, blocks, nzones;
    uint64_t last_off, last_ts;
} vw_sstream;

typedef struct vw_szone {
    uint64_t begin_ts, child_ns;
    uint64_t name, text;   /* string offsets, UINT64_MAX: none */
    uint32_t loc, pad;
} vw_szone;

/* The records file of index file `idx_path` (malloc'd): its name with
 * ".rec" for ".idx". */
char *vw__rec_path(const char *idx_path);
/* Maps index file `path` and its records file, checked, whatever the
 * trace's state: NULL when absent or damaged. */
vw_index *vw__load(const char *path);
const vw_header *vw__header(const vw_index *ix);
/* [off, off + len) of the index file, or NULL when outside it. */
const void *vw__section(const vw_index *ix, uint64_t off, uint64_t len);

/* Zone text record (a row of kind VW_ROW_TEXT). */
#define VW_ROW_TEXT 6u
typedef struct vw_text {
    uint64_t name, text; /* string offsets, UINT64_MAX: none */
    uint64_t pad[2];
} vw_text;

/* The identity of a trace file as the index records it. */
int vw__identity(const char *path, uint64_t *size, uint64_t *mtime_ns,
                 uint64_t *ino, uint64_t *dev);

#endif
