/* reader_int.h -- the reader's private state, shared by reader.c (open,
 * descriptor scan, metadata) and reader_merge.c (stream cursors, k-way
 * merge). */
#ifndef LIBTRACE_READER_INT_H
#define LIBTRACE_READER_INT_H

#include <zstd.h>
#include "common/file_int.h"

#define LT__NONE UINT32_MAX
#define LT__PARK_EVICTED 1
#define LT__PARK_UNSTARTED 2
#define LT__EV_PARKED 0xFF   /* ev.type of a parked stream */
/* Unit kinds from this one up belong to later minor versions: skipped.
 * 4..15 are corruption (FORMAT.md, "Descriptor"). */
#define LT__KIND_SKIPPABLE 16
/* Decompressed block buffers and zone texts held at once never exceed 64
 * times the file size, or this much for small files (see lt__raw_budget). */
#define LT__RAW_BUDGET_MIN LT_READER_BUDGET_MIN

/* One unit of the file, from its descriptor. */
typedef struct lt__blk {
    uint64_t off;              /* offset of the descriptor frame */
    uint64_t first_ts, last_ts;
    uint32_t raw, comp, n_events;
    uint32_t process, thread;
    uint32_t next;             /* next block of the same stream, or LT__NONE */
    uint8_t kind;
} lt__blk;

/* An open zone of a stream: 24 bytes, as a stream may hold 65536 and a
 * process LT_MAX_OPEN_ZONES. Its ZONE_NAME / ZONE_TEXT strings, rare, are
 * kept apart (lt__zstr, same index) when `has` says so. */
#define LT__HAS_NAME 1
#define LT__HAS_TEXT 2
typedef struct lt__zframe {
    uint64_t begin_ts, child_ns;
    uint32_t loc;
    uint8_t has;               /* LT__HAS_NAME | LT__HAS_TEXT */
    uint8_t cut;               /* open at the recorded window's start */
} lt__zframe;

typedef struct lt__zstr {
    char *name, *text;
    uint32_t name_len, text_len, name_cap, text_cap;
} lt__zstr;

typedef struct lt__rstream {
    lt_thread info;
    uint32_t first_blk, last_blk;
    /* cursor */
    uint32_t blk;              /* block being decoded, or LT__NONE */
    uint32_t next_blk;         /* next block to load */
    int done;
    uint8_t *raw;
    size_t raw_cap;
    const uint8_t *p, *end;
    uint64_t ts;
    uint32_t blk_events;
    uint64_t blk_first;
    uint32_t max_loc, max_plot, max_frame;
    lt__zframe *stack;
    uint32_t depth, stack_cap;
    uint32_t cut_depth;        /* zones open at the window's start (kind 17) */
    uint32_t cut_left;         /* of those, begins not yet delivered */
    uint8_t summarised;        /* lt_reader_check: a trailer summary seen */
    lt__zstr *strs;            /* by depth, up to the deepest zone with text */
    uint32_t strs_cap;
    /* LT__PARK_EVICTED: its block was released (see lt__make_room); the
     * offsets restore p, end and the event's texts once it is decompressed
     * again. LT__PARK_UNSTARTED: in the heap by its first block's first_ts,
     * nothing decompressed yet. */
    int parked;
    uint8_t saved_type;        /* ev.type while ev.type is LT__EV_PARKED */
    size_t p_off, end_off, text_off, text2_off;
    lt_event ev;               /* the event the cursor stands on */
    /* lt__stream_resume: the cursor starts at block start_blk (its timestamp
     * start_ts) with the open zones rz (strings in rzs), not at the
     * stream's first block. */
    int resumed;
    uint32_t start_blk, nrz;
    uint64_t start_ts;
    lt__zframe *rz;
    lt__zstr *rzs;
} lt__rstream;

/* A merge heap entry: the stream's next timestamp and its (process, thread)
 * order kept beside the pointer, so comparisons touch only the heap. */
typedef struct lt__hent {
    uint64_t ts;
    uint64_t ord;              /* process << 32 | thread index */
    lt__rstream *s;
} lt__hent;

typedef struct lt__rproc {
    lt_process info;
    uint64_t meta_bytes;       /* raw bytes of its metadata blocks: bounds ids */
    lt_loc **locs;
    uint32_t nlocs, locs_cap;     /* highest id defined; slots allocated */
    const char **plots, **frames;
    uint32_t nplots, nframes;
    uint32_t plots_cap, frames_cap;
    lt__rstream **threads;
    uint32_t nthreads, threads_cap;
    int has_events;            /* an event block seen */
} lt__rproc;

typedef struct lt__arena {
    struct lt__chunk_a *head;
    size_t used, cap;
    uint64_t total;            /* bytes of all chunks */
} lt__arena;

typedef struct lt__named {
    const char *name;
    uint64_t value;
} lt__named;

struct lt_reader {
    int fd;
    lt_file_info info;
    lt__arena arena;
    lt__blk *blks;
    uint32_t nblks, blks_cap;
    uint64_t max_index;        /* bound on process and thread indices */
    int have_ts;               /* info.first_ts is set */
    lt__rproc **procs;         /* indexed by process index (0 = capture) */
    uint32_t nprocs;           /* highest index + 1 */
    uint32_t procs_cap;
    lt__rstream **streams;     /* every stream, in creation order */
    uint32_t nstreams, streams_cap;
    lt_stat *stats;
    size_t nstats;
    lt__named *totals;
    size_t ntotals;
    lt_stream_summary *sums;   /* the trailer's stream summaries */
    size_t nsums;
    ZSTD_DCtx *dctx;
    uint8_t *cbuf;
    size_t cbuf_cap;
    uint64_t raw_held;         /* bytes of block buffers and zone texts held */
    uint64_t stack_held;       /* bytes of open-zone stacks */
    uint64_t reloaded;         /* raw bytes decompressed again after eviction */
    uint64_t reload_limit;     /* beyond it: refused (see lt__make_room) */
    uint64_t zone_procs;       /* processes with event blocks */
    /* merge */
    uint32_t sel_process, sel_thread;
    lt__hent *heap;           /* merge heap, keyed by the streams' next event */
    uint32_t nheap;
    int started, pending;
    int fast;                  /* started, no error, no block to load first */
    int err;
    char errmsg[256];
    int unsound;               /* LT_ECORRUPT: the trailer contradicts the file */
    char unsound_msg[256];     /* ... and how */
};

/* The most bytes of block buffers, open zones and their strings the
 * reader holds at once: 64 times the file size, at least
 * LT__RAW_BUDGET_MIN. */
static inline uint64_t lt__raw_budget(const lt_reader *r) {
    uint64_t b = r->info.file_size * LT_READER_BUDGET_PER_BYTE;
    return b < LT__RAW_BUDGET_MIN ? LT__RAW_BUDGET_MIN : b;
}

/* Open zones may take, on top of that, LT_MAX_OPEN_ZONES per process with
 * events: what the capture daemon lets each process hold open. */
static inline uint64_t lt__zone_budget(const lt_reader *r) {
    /* the sum of raw_held and stack_held */
    return lt__raw_budget(r) +
           r->zone_procs * (uint64_t)LT_MAX_OPEN_ZONES * sizeof(lt__zframe);
}

/* Reads and decompresses block `b` into *buf (grown as needed); checks the
 * frame and the block header against the descriptor. Returns 0 with *rec
 * and *base_ts set to the records and the header's base, or LT_ECORRUPT
 * (r->errmsg set), LT_EIO, LT_ENOMEM. */
int lt__load_block(lt_reader *r, const lt__blk *b, uint8_t **buf, size_t *cap,
                   const uint8_t **rec, uint64_t *base_ts);

/* Makes room for `n` more bytes of block buffers within lt__raw_budget()
 * by releasing the blocks of streams other than the one owning `keep` (they
 * are decompressed again when their turn comes). Returns 0, or -1 when even
 * that is not enough. */
int lt__make_room(lt_reader *r, uint64_t n, uint8_t *const *keep);

/* Formats r->errmsg for a corrupt unit at `off`; returns LT_ECORRUPT. */
int lt__corrupt(lt_reader *r, uint64_t off, const char *why);

/* Compares the trailer of a complete file with the descriptors (stream
 * summaries, totals): no block is read. Returns 0, or LT_ECORRUPT with
 * r->errmsg set, or LT_ENOMEM. */
int lt__check_trailer(lt_reader *r);

/* Grows a cursor's string slots to cover depth index `i`, within the
 * budget (reader_merge.c). Returns 0, LT_ENOMEM or LT_ECORRUPT. */
int lt__grow_strs(lt_reader *r, lt__rstream *s, uint32_t i);

/* Puts the open zones a resumed stream starts with on its stack (see
 * resume.c). Returns 0, LT_ENOMEM or LT_ECORRUPT (beyond the budget). */
int lt__resume_install(lt_reader *r, lt__rstream *s);
/* Frees what lt__stream_resume kept of a stream. */
void lt__resume_free(lt__rstream *s);

/* Frees every stream's cursor state and empties the merge heap. */
void lt__merge_reset(lt_reader *r);

#endif /* LIBTRACE_READER_INT_H */
