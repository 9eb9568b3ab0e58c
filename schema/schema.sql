-- schema.sql -- the SQLite schema written by tracy-sql (documented in
-- schema/SQL.md). Table and column names follow Perfetto's trace processor
-- so that queries written for Perfetto run unchanged; additions are marked
-- "(tracy)". All times are nanoseconds of CLOCK_MONOTONIC of the traced host.
-- The statements after the "@indexes" marker run once the data is inserted.

CREATE TABLE metadata (
    name TEXT PRIMARY KEY,
    key_type TEXT NOT NULL DEFAULT 'single',
    int_value INTEGER,
    str_value TEXT
);

CREATE TABLE trace_bounds (
    start_ts INTEGER NOT NULL,
    end_ts INTEGER NOT NULL
);

CREATE TABLE process (
    upid INTEGER PRIMARY KEY,       -- process index in the trace, from 1
    pid INTEGER,
    name TEXT,                      -- program
    cmdline TEXT,                   -- argv joined with spaces
    start_ts INTEGER,               -- always NULL (not recorded)
    end_ts INTEGER,                 -- when the process ended (NULL: running)
    parent_upid INTEGER,
    uid INTEGER,
    arg_set_id INTEGER,
    rank INTEGER,                   -- (tracy) MPI rank, NULL when unknown
    hostname TEXT,                  -- (tracy)
    client TEXT,                    -- (tracy) client library and version
    status TEXT,                    -- (tracy) running|clean|lost|rejected|stopped|crashed
    end_reason TEXT,                -- (tracy)
    events_received INTEGER,        -- (tracy) events the daemon stored
    events_sent INTEGER,            -- (tracy) events the client sent
    events_lost INTEGER,            -- (tracy) events the client dropped
    clock_anchor_mono_ns INTEGER,   -- (tracy) monotonic time of the anchor
    clock_anchor_wall_ns INTEGER    -- (tracy) Unix time of the same moment
);

CREATE TABLE thread (
    utid INTEGER PRIMARY KEY,       -- from 1, in (process, thread) order
    tid INTEGER,
    name TEXT,
    upid INTEGER REFERENCES process(upid),
    start_ts INTEGER,               -- always NULL (not recorded)
    end_ts INTEGER,                 -- always NULL (not recorded)
    is_main_thread INTEGER,         -- tid = pid
    thread_index INTEGER            -- (tracy) index within its process, from 1
);

CREATE TABLE track (
    id INTEGER PRIMARY KEY,
    name TEXT,
    type TEXT NOT NULL              -- 'thread_track' or 'counter_track'
);

CREATE TABLE thread_track (
    id INTEGER PRIMARY KEY REFERENCES track(id),
    name TEXT,
    type TEXT NOT NULL DEFAULT 'thread_track',
    utid INTEGER REFERENCES thread(utid)
);

CREATE TABLE counter_track (
    id INTEGER PRIMARY KEY REFERENCES track(id),
    name TEXT,
    type TEXT NOT NULL DEFAULT 'counter_track',
    upid INTEGER REFERENCES process(upid),
    unit TEXT
);

CREATE VIEW process_counter_track AS
    SELECT id, name, type, upid, unit FROM counter_track;

CREATE TABLE counter (
    id INTEGER PRIMARY KEY,
    ts INTEGER NOT NULL,
    track_id INTEGER NOT NULL REFERENCES counter_track(id),
    value REAL,
    arg_set_id INTEGER
);

-- (tracy) One row per distinct function: kind, name, file and line. Zones
-- of every process that share these share the row.
CREATE TABLE func (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    category TEXT NOT NULL,         -- python|c|line|user|internal
    kind INTEGER NOT NULL,          -- the same as a number (FORMAT.md)
    src_file TEXT,
    src_line INTEGER,
    calls INTEGER NOT NULL DEFAULT 0,   -- its zones, and the sums of their
    total_dur INTEGER NOT NULL DEFAULT 0, -- dur and self_dur, filled by
    self_dur INTEGER NOT NULL DEFAULT 0,  -- tracy-sql (function_stats reads
    min_dur INTEGER,                    -- them instead of the 10M rows
    max_dur INTEGER                     -- of a large slice_data)
);
-- total_dur adds a zone's dur only when no enclosing zone of its thread has
-- the same location (cProfile's cumulative time): the inner calls of a
-- recursion are already inside the outermost one. self_dur adds every zone.

-- (tracy) The zones; read them through the slice view.
CREATE TABLE slice_data (
    id INTEGER PRIMARY KEY,         -- numbered in order of zone start, from 1
    ts INTEGER NOT NULL,
    dur INTEGER NOT NULL,
    track_id INTEGER NOT NULL,      -- thread_track.id
    depth INTEGER NOT NULL,         -- 0 for a top-level zone
    parent_id INTEGER,              -- enclosing zone, NULL at depth 0
    arg_set_id INTEGER,             -- args of the zone text, else NULL
    func_id INTEGER NOT NULL REFERENCES func(id),
    self_dur INTEGER NOT NULL,      -- dur less the time in direct children
    flags INTEGER NOT NULL          -- 1 aborted by the daemon, 2 unclosed
);

CREATE VIEW slice AS
    SELECT d.id, d.ts, d.dur, d.track_id, f.category, f.name, d.depth,
           d.parent_id, d.arg_set_id, f.src_file, f.src_line, d.self_dur,
           f.category AS kind, d.flags, d.func_id, 'slice' AS type
    FROM slice_data d JOIN func f ON f.id = d.func_id;

CREATE TABLE args (
    id INTEGER PRIMARY KEY,
    arg_set_id INTEGER NOT NULL,
    flat_key TEXT NOT NULL,
    key TEXT NOT NULL,
    int_value INTEGER,
    string_value TEXT,
    real_value REAL,
    value_type TEXT NOT NULL        -- 'int', 'string' or 'real'
);

CREATE TABLE stats (
    name TEXT NOT NULL,
    idx INTEGER,
    severity TEXT NOT NULL,         -- 'info', 'data_loss' or 'error'
    source TEXT NOT NULL,           -- 'trace' (the capture) or 'tracy-sql'
    value INTEGER NOT NULL,
    description TEXT
);

-- (tracy) Phase markers.
CREATE TABLE signpost (
    id INTEGER PRIMARY KEY,
    ts INTEGER NOT NULL,
    utid INTEGER REFERENCES thread(utid),
    upid INTEGER REFERENCES process(upid),
    header TEXT NOT NULL,
    body TEXT                       -- NULL when none
);

-- (tracy) Log messages.
CREATE TABLE message (
    id INTEGER PRIMARY KEY,
    ts INTEGER NOT NULL,
    utid INTEGER REFERENCES thread(utid),
    upid INTEGER REFERENCES process(upid),
    text TEXT NOT NULL
);

-- (tracy) Frame marks; name NULL for the default frame.
CREATE TABLE frame_mark (
    id INTEGER PRIMARY KEY,
    ts INTEGER NOT NULL,
    utid INTEGER REFERENCES thread(utid),
    name TEXT
);

-- (tracy) Events a client reported dropping, where and when.
CREATE TABLE lost_event (
    id INTEGER PRIMARY KEY,
    ts INTEGER NOT NULL,
    utid INTEGER REFERENCES thread(utid),
    count INTEGER NOT NULL
);

-- (tracy) Per-function totals over the whole trace.
CREATE VIEW function_stats AS
    SELECT name, src_file, src_line, category, calls, total_dur AS total,
           self_dur AS self, CAST(total_dur AS REAL) / calls AS mean,
           min_dur AS min, max_dur AS max
    FROM func WHERE calls > 0;

-- @indexes
-- per thread in time order; dur, depth and func_id make it a covering index
-- for per-thread questions on slice (no look-up of each row)
CREATE INDEX slice_data_track_ts ON slice_data(track_id, ts, dur, depth, func_id);
CREATE INDEX slice_data_func ON slice_data(func_id);
CREATE INDEX func_name ON func(name);
CREATE INDEX counter_track_ts ON counter(track_id, ts);
CREATE INDEX args_set ON args(arg_set_id);
CREATE INDEX thread_upid ON thread(upid);
CREATE INDEX thread_track_utid ON thread_track(utid);
