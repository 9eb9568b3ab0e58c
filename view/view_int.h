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
} vw_header;

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
