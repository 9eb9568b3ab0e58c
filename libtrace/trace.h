/* trace.h -- libtrace: the .tracy file format, its writer and its reader.
 *
 * The format is specified in schema/FORMAT.md. Every function that can fail
 * returns 0 (or a positive count) on success and a negative LT_E* code on
 * failure; lt_strerror() turns a code into a message.
 */
#ifndef LIBTRACE_TRACE_H
#define LIBTRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(LT_BUILDING) && defined(__GNUC__)
#define LT_API __attribute__((visibility("default")))
#else
#define LT_API
#endif

/* The toolkit's version: the one place it is written (the Makefile, the
 * pkg-config file, every program's --version and the library's soname
 * take it from here). */
#define LT_VERSION_MAJOR 0
#define LT_VERSION_MINOR 1
#define LT_VERSION_PATCH 0
#define LT__STR_(x) #x
#define LT__STR(x) LT__STR_(x)
#define LT_VERSION_STRING                                                   \
    LT__STR(LT_VERSION_MAJOR) "." LT__STR(LT_VERSION_MINOR) "."             \
    LT__STR(LT_VERSION_PATCH)
#define LT_FORMAT_MAJOR 1
#define LT_FORMAT_MINOR 0

/* ---- Errors ----------------------------------------------------------- */

/* X(name, message). Codes are negative: LT_ENOMEM == -1, ... */
#define LT_ERRNO_MAP(X)                                                     \
    X(ENOMEM, "out of memory")                                              \
    X(EIO, "input/output error")                                            \
    X(EOPEN, "cannot open file")                                            \
    X(EEXIST, "file exists (use -f to overwrite)")                          \
    X(EFORMAT, "not a .tracy file")                                         \
    X(EVERSION, "file format version is newer than this reader")            \
    X(ECORRUPT, "corrupt data")                                             \
    X(ETRUNCATED, "file is truncated")                                      \
    X(EINVAL, "invalid argument")                                           \
    X(ELIMIT, "size limit exceeded")                                        \
    X(EPROTO, "protocol violation")                                         \
    X(ECONNECT, "cannot connect to capture daemon")                         \
    X(ENOSPC, "no space left on device")                                    \
    X(EFBIG, "file too large")                                              \
    X(ECOMPRESS, "compression error")

#define LT__ERR_IDX(name, msg) LT__IDX_##name,
enum lt__err_idx { LT_ERRNO_MAP(LT__ERR_IDX) LT__ERR_COUNT };
#undef LT__ERR_IDX
#define LT__ERR_ENUM(name, msg) LT_##name = -1 - LT__IDX_##name,
typedef enum { LT_OK = 0, LT_ERRNO_MAP(LT__ERR_ENUM) } lt_errcode;
#undef LT__ERR_ENUM

/* Returns a static message for an LT_E* code (or "success" for 0,
 * "unknown error" for anything else). Never NULL. */
LT_API const char *lt_strerror(int err);

/* Converts an errno value from a failed system call into an LT_E* code. */
LT_API int lt_from_errno(int errnum);

/* The version of the library in use ("0.1.0"), which may differ from the
 * LT_VERSION_STRING a program was compiled with. Never NULL. */
LT_API const char *lt_version(void);

/* ---- Format constants ------------------------------------------------- */

enum lt_block_kind { LT_BLOCK_EVENTS = 1, LT_BLOCK_META = 2, LT_BLOCK_STATS = 3,
                     LT_BLOCK_CUT = 17 /* format 1.1: zones cut at a window start */ };

enum lt_loc_kind {
    LT_LOC_PYTHON = 1,
    LT_LOC_C = 2,
    LT_LOC_LINE = 3,
    LT_LOC_USER = 4,
    LT_LOC_INTERNAL = 5
};

/* Record tags (FORMAT.md). */
enum lt_tag {
    LT_TAG_ZONE_BEGIN = 0x01,
    LT_TAG_ZONE_END = 0x02,
    LT_TAG_ZONE_END_ABORTED = 0x03,
    LT_TAG_ZONE_TEXT = 0x04,
    LT_TAG_ZONE_NAME = 0x05,
    LT_TAG_MESSAGE = 0x06,
    LT_TAG_SIGNPOST = 0x07,
    LT_TAG_PLOT = 0x08,
    LT_TAG_FRAME = 0x09,
    LT_TAG_LOST = 0x0A,
    LT_TAG_ZONE_BEGIN_SHORT = 0x80, /* 0x80 + loc, loc in 1..127 */
    LT_TAG_PROC_INFO = 0x20,
    LT_TAG_THREAD_INFO = 0x21,
    LT_TAG_LOC_DEF = 0x22,
    LT_TAG_PLOT_DEF = 0x23,
    LT_TAG_FRAME_DEF = 0x24,
    LT_TAG_PROC_END = 0x25,
    LT_TAG_STAT = 0x30,
    LT_TAG_CUT_OPEN = 0x40 /* format 1.1, in blocks of kind 17 only */
};

enum lt_proc_status {
    LT_PROC_RUNNING = -1, /* no PROC_END seen (file cut, or still running) */
    LT_PROC_CLEAN = 0,
    LT_PROC_LOST = 1,
    LT_PROC_REJECTED = 2,
    LT_PROC_STOPPED = 3,
    LT_PROC_CRASHED = 4   /* wire protocol 1.2: the client said goodbye while a fatal
                             signal ended it; end_reason names the signal */
};

enum lt_severity { LT_SEV_INFO = 0, LT_SEV_DATA_LOSS = 1, LT_SEV_ERROR = 2 };

#define LT_MAX_STRING 65535u
#define LT_MAX_BLOCK_RAW (16u << 20)
#define LT_BLOCK_TARGET (128u << 10)
#define LT_MAX_DEPTH 65536u
/* Limits shared by the capture daemon (which rejects a client that passes
 * them) and the reader (which holds what they allow): see FORMAT.md,
 * "Limits". Zones open at once in one process, all threads summed. */
#define LT_MAX_OPEN_ZONES (1u << 20)
/* Timestamps are below 2^63, so that they fit a signed 64-bit integer. */
#define LT_MAX_TS ((uint64_t)INT64_MAX)
/* Metadata (names of processes, threads, locations, plots, frames), as a
 * reader holds it: for each string its length and LT_META_STR_COST (argv
 * entries: twice that, for the pointer), and LT_META_REC_COST more for a
 * location or a process (the structure the reader keeps). lt__meta_cost()
 * counts it. A reader holds metadata and
 * decompressed blocks within LT_READER_BUDGET_PER_BYTE times the file size,
 * at least LT_READER_BUDGET_MIN whatever the size. The capture daemon keeps
 * a file's metadata within LT_MAX_META, or LT_META_PER_BYTE times what it
 * wrote before when that is more, and one client's within
 * LT_MAX_META_CLIENT: a file it writes is always within every reader's
 * budget (FORMAT.md, "Limits"). */
#define LT_META_REC_COST 64u
#define LT_META_STR_COST 8u
#define LT_MAX_META (64ull << 20)
#define LT_MAX_META_CLIENT (32ull << 20)
#define LT_META_PER_BYTE 16u
#define LT_READER_BUDGET_MIN (256ull << 20)
#define LT_READER_BUDGET_PER_BYTE 64u

/* ---- Metadata as the reader presents it -------------------------------- */

typedef struct lt_process {
    uint32_t index;        /* 1-based process index in the file */
    uint64_t pid;
    int64_t rank;          /* MPI rank, -1 when unknown */
    const char *hostname;
    const char *program;
    uint32_t argc;
    const char *const *argv;
    uint64_t anchor_mono_ns;
    uint64_t anchor_wall_ns;
    const char *client;
    int status;            /* enum lt_proc_status */
    const char *end_reason;
    uint64_t end_ts;
    uint64_t events_received, events_sent, events_lost;
    int has_info;          /* PROC_INFO seen: 0 for a process whose metadata
                              a cut file does not hold (fields above empty) */
} lt_process;

typedef struct lt_thread {
    uint32_t process;
    uint32_t index;        /* 1-based within its process */
    uint64_t tid;
    const char *name;      /* "" when never named */
} lt_thread;

typedef struct lt_loc {
    uint32_t id;
    uint8_t kind;          /* enum lt_loc_kind */
    uint32_t line;
    const char *name;
    const char *file;
} lt_loc;

typedef struct lt_stat {
    const char *name;
    uint8_t severity;      /* enum lt_severity */
    uint64_t value;
    const char *description;
} lt_stat;

/* ---- Reader ----------------------------------------------------------- */

typedef struct lt_reader lt_reader;

/* Event types delivered by lt_reader_next(). */
enum lt_event_type {
    LT_EV_ZONE_BEGIN = 1,
    LT_EV_ZONE_END = 2,    /* also for ZONE_END_ABORTED and open-ended zones
                              (flags say which) */
    LT_EV_MESSAGE = 3,
    LT_EV_SIGNPOST = 4,
    LT_EV_PLOT = 5,
    LT_EV_FRAME = 6,
    LT_EV_LOST = 7
};

#define LT_EVF_ABORTED 0x1  /* zone closed by the daemon (ZONE_END_ABORTED) */
#define LT_EVF_UNCLOSED 0x2 /* zone still open at the end of its stream */
#define LT_EVF_CUT 0x4      /* zone already open where the recorded window
                               starts: its begin_ts is the window's start,
                               its real beginning is not in the file */

typedef struct lt_event {
    uint8_t type;          /* enum lt_event_type */
    uint8_t flags;         /* LT_EVF_* */
    uint32_t process;      /* 1-based */
    uint32_t thread;       /* 1-based within process */
    uint64_t ts;           /* ns */
    /* ZONE_BEGIN / ZONE_END */
    uint32_t loc;          /* location id (lt_reader_loc) */
    uint32_t depth;        /* 0 for a top-level zone */
    uint64_t begin_ts;     /* ZONE_END: when the zone began */
    uint64_t child_ns;     /* ZONE_END: time spent in direct children */
    const char *name;      /* ZONE_END: ZONE_NAME override or NULL */
    size_t name_len;
    /* ZONE_END: ZONE_TEXT; MESSAGE: text; SIGNPOST: header */
    const char *text;
    size_t text_len;
    const char *text2;     /* SIGNPOST body ("" when none) */
    size_t text2_len;
    uint32_t id;           /* PLOT: plot id; FRAME: frame id */
    double value;          /* PLOT */
    uint64_t count;        /* LOST */
} lt_event;

typedef struct lt_file_info {
    uint16_t major, minor;
    const char *creator;
    uint64_t created_wall_ns;
    uint64_t file_size;
    uint64_t body_bytes;     /* bytes of complete units */
    uint64_t raw_bytes;      /* decompressed size of all blocks */
    uint64_t bytes_ignored;  /* incomplete unit at the end of a cut file */
    int complete;            /* 1 when a valid trailer is present */
    uint64_t n_blocks;
    uint64_t n_events;       /* sum of descriptor n_events */
    uint64_t first_ts, last_ts; /* over all event blocks, 0 when none */
} lt_file_info;

/* Opens `path`, checks its header, scans its descriptors (seeking past the
 * data frames) and decodes its metadata and statistics blocks. No event data
 * is decompressed yet. On success *out owns the file until lt_reader_free().
 * A cut file is not an error: see lt_file_info.bytes_ignored and .complete.
 * Returns 0, or LT_EOPEN, LT_EIO, LT_EFORMAT (not a trace), LT_EVERSION
 * (newer major version), LT_ECORRUPT, LT_ENOMEM. On failure, when `detail` is
 * non-NULL, a one-line explanation (with versions or the file offset) is
 * written into it (at most detail_len bytes, NUL-terminated). */
LT_API int lt_reader_open(lt_reader **out, const char *path, char *detail,
                          size_t detail_len);

/* Frees the reader. Accepts NULL. Every pointer obtained from it becomes
 * invalid. */
LT_API void lt_reader_free(lt_reader *r);

LT_API const lt_file_info *lt_reader_info(const lt_reader *r);

/* Restricts lt_reader_next() to one stream (process, thread), or to all
 * streams again with (0, 0). Rewinds to the first event. Returns 0 or
 * LT_EINVAL for an unknown stream. */
LT_API int lt_reader_select(lt_reader *r, uint32_t process, uint32_t thread);

/* Rewinds to the first event of the current selection. */
LT_API int lt_reader_rewind(lt_reader *r);

/* Fetches the next event, all selected streams merged in timestamp order
 * (ties broken by process, thread, then stream order). Returns 1 with *ev
 * filled (fields that do not apply to the event's type are 0 or NULL), 0
 * at the end, or a negative code (LT_ECORRUPT, LT_ENOMEM, LT_EIO).
 * String pointers in *ev stay valid until the next call. Zones left open at
 * the end of a stream are closed at that stream's last timestamp with
 * LT_EVF_UNCLOSED. Memory stays bounded whatever the file's length or its
 * number of streams: a stream's block is decompressed when its turn comes,
 * blocks are released under pressure, and open zones count in the budget
 * (FORMAT.md, "Limits"); a file beyond it fails with LT_ECORRUPT. */
LT_API int lt_reader_next(lt_reader *r, lt_event *ev);

/* Whether the file is sound as far as its descriptors tell, checked by
 * lt_reader_open() without reading a block: when the file has a trailer,
 * each stream summary (events, blocks, raw and compressed bytes, first and
 * last timestamps) and the totals `events`, `threads`, `raw_bytes`,
 * `body_bytes`, `first_ts`, `last_ts` agree with the descriptors (units
 * of unknown kind and descriptors out of range already fail the open).
 * Returns 0, or LT_ECORRUPT with lt_reader_error() naming the mismatch;
 * lt_reader_next() then fails with the same error at its first call. Every
 * tool refuses such a file (exit 4); tracy-info prints its summary first. */
LT_API int lt_reader_sound(lt_reader *r);

/* Checks what lt_reader_open() does not, without decoding records:
 * decompresses every event block (zstd checksum, content size, block header
 * against its descriptor), then lt_reader_sound().
 * Returns 0, or LT_ECORRUPT (lt_reader_error() names the unit or the
 * mismatch), LT_EIO, LT_ENOMEM. Does not move the event iterator. */
LT_API int lt_reader_check(lt_reader *r);

/* A one-line description of the last error of lt_reader_next (with the file
 * offset of a corrupt unit). Never NULL. */
LT_API const char *lt_reader_error(const lt_reader *r);

/* Metadata look-ups. Indices are 1-based; NULL when unknown. Returned
 * pointers live as long as the reader. */
LT_API uint32_t lt_reader_nprocesses(const lt_reader *r);
LT_API const lt_process *lt_reader_process(const lt_reader *r, uint32_t process);
LT_API uint32_t lt_reader_nthreads(const lt_reader *r, uint32_t process);
LT_API const lt_thread *lt_reader_thread(const lt_reader *r, uint32_t process,
                                         uint32_t thread);
LT_API const lt_loc *lt_reader_loc(const lt_reader *r, uint32_t process,
                                   uint32_t loc);
LT_API const char *lt_reader_plot_name(const lt_reader *r, uint32_t process,
                                       uint32_t plot);
LT_API const char *lt_reader_frame_name(const lt_reader *r, uint32_t process,
                                        uint32_t frame);
/* Capture statistics: the final values (trailer, else the last statistics
 * block). */
LT_API size_t lt_reader_nstats(const lt_reader *r);
LT_API const lt_stat *lt_reader_stat(const lt_reader *r, size_t i);
/* Value of a statistic or trailer total by name; returns 0 and leaves *value
 * untouched when absent, 1 when found. */
LT_API int lt_reader_total(const lt_reader *r, const char *name, uint64_t *value);

/* ---- Writer ----------------------------------------------------------- */

typedef struct lt_writer lt_writer;

#define LT_WRITE_FORCE 0x1 /* overwrite an existing file */
#define LT_WRITE_CUTS 0x2  /* the file may hold cut blocks (kind 17): its
                              header says format 1.1 */

/* Creates `path` (mode 0644 less the umask) and writes the file header. An
 * existing name, a symbolic link included, gives LT_EEXIST unless
 * LT_WRITE_FORCE; then a device, FIFO or socket (or a link to one) and any
 * name under /dev or /proc (/dev/stdout) is written in place, and anything
 * else is replaced by a new file renamed over it (a link to a file is
 * replaced, never written through) unless another writer is still writing
 * it (LT_EOPEN, errno EBUSY: every writer locks its file). On failure
 * nothing new is left at `path`. `creator` names the program (NULL: "libtrace").
 * `level` is the zstd level (0: default 3). Returns 0 or LT_EEXIST, LT_EOPEN,
 * LT_EIO, LT_ENOSPC, LT_ENOMEM. */
LT_API int lt_writer_open(lt_writer **out, const char *path, int flags,
                          const char *creator, int level);

/* Compresses one block (its raw bytes, block header included, see
 * lt_block_header()) and appends descriptor + frame. Blocking; may be called
 * from any one thread at a time. Returns 0 or LT_EIO, LT_ENOSPC, LT_EFBIG,
 * LT_ECOMPRESS, LT_ELIMIT. After an error the file holds every unit written
 * before it and further calls fail with the same code.
 * An event block's descriptor also says how many of its events are zone
 * begins, messages (and signposts), plot values and frame marks, and the
 * sum of its LOST counts: the writer adds them up per stream for the
 * trailer it writes itself (rotation); they are not stored in the file. */
typedef struct lt_block_desc {
    uint8_t kind;
    uint32_t process, thread;
    uint32_t n_events;
    uint64_t first_ts, last_ts;
    uint32_t zones, messages, plots, frames;
    uint64_t lost;
} lt_block_desc;
LT_API int lt_writer_block(lt_writer *w, const lt_block_desc *d,
                           const void *raw, size_t raw_len);

/* Writes the block header (kind, process, thread, base_ts) into buf, which
 * must hold at least 32 bytes. Returns the number of bytes written. */
LT_API size_t lt_block_header(uint8_t *buf, uint8_t kind, uint32_t process,
                              uint32_t thread, uint64_t base_ts);

/* Summary for the trailer, filled by the caller. */
typedef struct lt_stream_summary {
    uint32_t process, thread;
    uint64_t events, zones, messages, lost;
    uint64_t first_ts, last_ts;
    uint64_t blocks, raw_bytes, comp_bytes;
} lt_stream_summary;

typedef struct lt_total {
    const char *name;
    uint64_t value;
} lt_total;

/* Writes the trailer (when streams/totals are given; pass n_streams =
 * n_totals = 0 and a NULL pointer to write none), flushes, fsyncs and closes
 * the file, and frees the writer. Accepts NULL. Returns 0 or the first error
 * met (including one from an earlier lt_writer_block). */
LT_API int lt_writer_close(lt_writer *w, const lt_stream_summary *streams,
                           size_t n_streams, const lt_total *totals,
                           size_t n_totals);

/* Bytes written so far (header and units) into the current file. */
LT_API uint64_t lt_writer_bytes(const lt_writer *w);

/* Rotation: before a unit would take the current file past max_bytes (and
 * once it holds events), the writer ends it with a trailer of its own and
 * goes on in a new file, a complete trace of its own: `path` (the first
 * file's name) with ".1", ".2", ... inserted before a final ".tracy"
 * (run.tracy, run.1.tracy, run.2.tracy; else appended). A new file starts
 * with the metadata of every process that has not ended, the last
 * statistics block, and the zones open at that moment as cut zones (format
 * 1.1); new files are never put over existing ones (LT_EEXIST). Their
 * trailers carry the totals rotation_index (1, 2, ...) and the caller's
 * statistics totals. Returns 0, LT_EINVAL (already set, no path or size) or
 * LT_ENOMEM. */
LT_API int lt_writer_set_rotation(lt_writer *w, const char *path, uint64_t max_bytes);
/* Flushes written units to the kernel (they are written with write(2) as
 * they come, so this is only fdatasync). */
LT_API int lt_writer_sync(lt_writer *w);

/* ---- Clock -------------------------------------------------------------- */

/* CLOCK_MONOTONIC and CLOCK_REALTIME in ns. */
LT_API uint64_t lt_now_ns(void);
LT_API uint64_t lt_wall_ns(void);

#ifdef __cplusplus
}
#endif
#endif /* LIBTRACE_TRACE_H */
