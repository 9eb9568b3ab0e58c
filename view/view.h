/* view.h -- the level-of-detail index of a .tracy file: what tracy-serve
 * answers pan and zoom queries from.
 *
 * Built in one streaming pass over the trace with libtrace's reader (zones
 * and markers stream by stream, then plots, frame marks and LOST records
 * merged when the trace has any), in memory bounded by the number of rows
 * (not of zones), and written to one file in a cache folder (never next to
 * the trace). The file is mapped read-only; a viewport touches the chunk
 * entries and, per pixel and row at most, one chunk of records.
 *
 * Layout (all little-endian, fixed 32-byte records):
 *   header (4 KiB) | record chunks | strings | chunk directory |
 *   row table | row chunk lists | tracks | functions | plots | frames |
 *   zone texts
 * A row is an ordered list of records of one kind and key: the zones of
 * one (track, depth) sorted by start (they never overlap within a depth,
 * so their ends are sorted too), the messages and signposts of one track,
 * the samples of one plot, the marks of one frame, the LOST records.
 * Records are written in chunks of VW_CHUNK records per row as the rows
 * fill; a zone's id is its record's position among all records of the
 * file, so an id finds its record in O(1) and its row in O(log chunks).
 * Index size: 32 bytes per zone plus strings and one chunk entry (56 B)
 * per VW_CHUNK records. Searches go through the chunk entries (their first
 * time, last end, longest zone and widest gap) before touching records: a
 * search gallops forward over the entries, then bisects one chunk's
 * records, and a run of narrow zones absorbs whole chunks from their
 * entries alone.
 *
 * Times in the index are ns relative to the trace's origin (the first
 * timestamp of its event blocks).
 *
 * Identity: the index records the trace's size, mtime, inode and device;
 * vw_open() brings it up to date when they differ. Zones open at the end
 * of a stream are indexed as open, flag VW_OPEN, with their end at the
 * stream's last timestamp.
 *
 * Extension: a trace being written only grows (units appended, then a
 * trailer). The records of full chunks go to a records file beside the
 * index (NAME.rec for NAME.idx) that only ever grows; each row's last,
 * partial chunk, its open zone and everything else are in the index file,
 * rewritten (temporary name, rename) at each update with the state an
 * extension resumes from: each stream's blocks read and its open zones,
 * and the totals without those zones. vw_update() reads only the new
 * blocks of each stream, from there: the open zones that ended are then
 * indexed as closed, those still open again as open. It builds whole
 * instead when the trace was not merely appended to (another inode or
 * device, a smaller size, the 4 KiB at its start or before the indexed
 * end changed, a stream's last indexed block gone, an earlier first
 * timestamp, threads numbered differently, a trailer indexed already), for
 * cut traces (LT_EVF_CUT zones), and when a plot sample, frame mark or LOST
 * record of one thread belongs before records of others already written to
 * the records file (one that belongs in a row's partial chunk is inserted
 * at its place), or a new plot or frame would be numbered before older
 * ones. An extension never
 * changes what an older index maps: the records file is only appended
 * to, under a lock. */
#ifndef VIEW_VIEW_H
#define VIEW_VIEW_H

#include <stddef.h>
#include <stdint.h>

#define VW_CHUNK 512u
#define VW_VERSION 5u

/* Zone flags (top bits of vw_zone.func_flags). */
#define VW_OPEN 0x80000000u    /* still open at the end of the data */
#define VW_ABORTED 0x40000000u /* closed by the daemon */
#define VW_CUT 0x20000000u     /* began before the recorded window */
#define VW_FUNC_MASK 0x1fffffffu

typedef struct vw_zone {
    uint64_t start, dur, self; /* ns; start relative to the origin */
    uint32_t func_flags;       /* function id | VW_* flags */
    uint32_t text;             /* 1-based index into the zone texts, 0: none */
} vw_zone;

typedef struct vw_marker {
    uint64_t t;
    uint64_t text, text2; /* string offsets (vw_string) */
    uint32_t track, kind; /* kind 0 message, 1 signpost */
} vw_marker;

typedef struct vw_sample {
    uint64_t t;
    double value;
    uint64_t count; /* LOST: events lost; frames: 1 */
    uint32_t track, pad;
} vw_sample;

enum vw_row_kind { VW_ROW_ZONES = 1, VW_ROW_MARKERS = 2, VW_ROW_PLOT = 3,
                   VW_ROW_FRAME = 4, VW_ROW_LOST = 5 };

typedef struct vw_row {
    uint32_t kind;    /* enum vw_row_kind */
    uint32_t key;     /* track (zones, markers), plot, frame; 0 for LOST */
    uint32_t depth;   /* zones only */
    uint32_t nchunks;
    uint64_t n;       /* records */
    uint64_t chunks;  /* position of its first entry in the row chunk lists */
} vw_row;

typedef struct vw_track {
    uint32_t process, thread;
    uint64_t tid;
    uint64_t name;    /* string offset */
    uint32_t depths;  /* 1 + deepest depth, 0 without zones */
    uint32_t pad;
    uint64_t zones, first, last;
} vw_track;

typedef struct vw_func {
    uint64_t name, file; /* string offsets */
    uint32_t line, kind; /* enum lt_loc_kind */
    uint64_t zones;      /* its zones in the trace */
} vw_func;

typedef struct vw_plot {
    uint64_t name;
    uint32_t process, id;
    uint64_t samples;
    double min, max;
} vw_plot;

typedef struct vw_frame {
    uint64_t name;
    uint32_t process, id;
    uint64_t marks;
} vw_frame;

/* Totals of the trace, as the index saw them. */
typedef struct vw_totals {
    uint64_t origin;     /* absolute ns of time 0 */
    uint64_t duration;   /* last timestamp - origin */
    uint64_t zones, messages, signposts, samples, frame_marks;
    uint64_t lost_records, lost_events;
    uint64_t unclosed, aborted;
    uint32_t max_depth;  /* deepest depth + 1 */
    uint32_t complete;   /* the trace had its trailer */
} vw_totals;

typedef struct vw_index vw_index;

/* The cache folder: $XDG_CACHE_HOME/tracy/index, else
 * $HOME/.cache/tracy/index, created (0700) when missing. Writes it into buf
 * (len bytes). Returns 0, or -1 when neither variable is set or it cannot
 * be created. */
int vw_cache_dir(char *buf, size_t len);

/* Opens the index of `trace` kept in `cache_dir`, building it first when it
 * is missing, stale (the trace's size, mtime, inode or device changed) or
 * of another version (vw_update: extended when the trace only grew).
 * Returns 0 with *out, or a negative LT_E* code with a one-line reason in
 * err (LT_EFORMAT, LT_ECORRUPT, LT_EOPEN, LT_EIO, LT_ENOMEM, ...).
 * `rebuilt`, when non-NULL, is set to 1 when it was built or extended. */
int vw_open(vw_index **out, const char *trace, const char *cache_dir,
            int *rebuilt, char *err, size_t errlen);
/* The 64-bit FNV-1a hash of a string: the index file of a trace is named
 * by that of its resolved path (and tracy-serve's session ids too). */
uint64_t vw_hash(const char *s);

/* The index file of `trace` in `cache_dir` (malloc'd), NULL when the trace
 * cannot be resolved or on out-of-memory. */
char *vw_index_path(const char *trace, const char *cache_dir);
/* Opens the index of `trace` only when it exists and is current: 0 with
 * *out, 1 when it must be built first (vw_update or vw_build into
 * vw_index_path), or LT_EOPEN when the trace cannot be resolved. Builds may
 * run in another thread (they share no state). */
int vw_open_built(vw_index **out, const char *trace, const char *cache_dir);

/* Builds the index of `trace` into the file `out_path` (written under a
 * temporary name then renamed), and its records file beside it (see
 * "Extension"). Returns 0 or a negative LT_E* code. */
int vw_build(const char *trace, const char *out_path, char *err, size_t errlen);
/* Brings the index at `out_path` up to date with `trace`: nothing to do
 * when it is current, extends it when the trace only grew since (units
 * appended, a trailer at last), else builds it whole (vw_build). *extended (when non-NULL) is set to 1 when
 * it was extended. Returns 0 or a negative LT_E* code. Safe while other
 * threads or processes have the older index open: they keep what they
 * mapped. */
int vw_update(const char *trace, const char *out_path, int *extended, char *err, size_t errlen);
/* Whether the trace changed since the index was built (a stat): 1 yes,
 * 0 no, -1 it is gone. */
int vw_stale(const vw_index *ix);
void vw_close(vw_index *ix);
/* Drops the pages of the mapping from the process (they stay in the page
 * cache) when the index is larger than VW_RELEASE_MIN: a caller that
 * answered a query calls it so that its resident size does not keep every
 * page any query touched. */
#define VW_RELEASE_MIN (128u << 20)
void vw_release(const vw_index *ix);

const vw_totals *vw_totals_of(const vw_index *ix);
/* The string at offset `off` (NUL-terminated; "" for an invalid offset);
 * *len its length when len is non-NULL. */
const char *vw_string(const vw_index *ix, uint64_t off, size_t *len);

uint32_t vw_ntracks(const vw_index *ix);
const vw_track *vw_track_at(const vw_index *ix, uint32_t i);
uint32_t vw_nfuncs(const vw_index *ix);
const vw_func *vw_func_at(const vw_index *ix, uint32_t i);
uint32_t vw_nplots(const vw_index *ix);
const vw_plot *vw_plot_at(const vw_index *ix, uint32_t i);
uint32_t vw_nframes(const vw_index *ix);
const vw_frame *vw_frame_at(const vw_index *ix, uint32_t i);
/* Zone text: name override and text (string offsets, UINT64_MAX: none). */
int vw_zone_text(const vw_index *ix, uint32_t text, uint64_t *name, uint64_t *txt);

/* Rows. vw_find_row returns the row of (kind, key, depth) or -1. */
long vw_find_row(const vw_index *ix, uint32_t kind, uint32_t key, uint32_t depth);
const vw_row *vw_row_at(const vw_index *ix, uint32_t row);
/* Record i of a row (i < n): a vw_zone, vw_marker or vw_sample. */
const void *vw_rec(const vw_index *ix, uint32_t row, uint64_t i);
/* How many records the index holds (zones, markers, plot samples, frame
 * marks, lost ranges): their global ids are 0..n-1. */
uint64_t vw_nrecs(const vw_index *ix);
/* Global id of record i of a row. */
uint64_t vw_rec_id(const vw_index *ix, uint32_t row, uint64_t i);
/* The row and position of record `id`; returns 0, or -1 when out of range. */
int vw_locate(const vw_index *ix, uint64_t id, uint32_t *row, uint64_t *i);

/* Zones of a zones row: the first whose end (start + dur) is >= t. */
uint64_t vw_lower_end(const vw_index *ix, uint32_t row, uint64_t t);
/* Any row: the first record whose start (t) is >= t, and > t. */
uint64_t vw_lower_start(const vw_index *ix, uint32_t row, uint64_t t);
uint64_t vw_upper_start(const vw_index *ix, uint32_t row, uint64_t t);

/* One item of a viewport: a zone (count 1) or a run of `count` adjacent
 * zones narrower than a pixel each (start of the first, end of the last,
 * id and func of the first). */
typedef struct vw_item {
    uint64_t start, dur, id, count;
    uint32_t func_flags;
} vw_item;

/* Walks the zones of `row` that overlap [t0, t1] (start <= t1 and
 * end >= t0) with `ns_per_px` ns per pixel (>= 1), calling fn for each item
 * in start order; every such zone is counted in exactly one item. Cost
 * O(pixels x log n). Stops when fn returns nonzero (returned). */
typedef int (*vw_item_fn)(void *ctx, const vw_item *it);
int vw_view_row(const vw_index *ix, uint32_t row, uint64_t t0, uint64_t t1,
                double ns_per_px, vw_item_fn fn, void *ctx);

/* The zone enclosing zone (row, i) at depth - 1: its record position in
 * *prow / *pi. Returns 0, or -1 at depth 0 or when not found. */
int vw_parent(const vw_index *ix, uint32_t row, uint64_t i, uint32_t *prow, uint64_t *pi);

#endif /* VIEW_VIEW_H */
