tracy-sql --csv small.tracy "SELECT id, ts, dur, track_id, category, name, depth, parent_id, arg_set_id, src_file, src_line, self_dur, kind, flags FROM slice ORDER BY id"
