tracy-sql small.tracy "SELECT s.name, thread.tid, thread.name AS thread FROM slice s JOIN thread_track tt ON s.track_id = tt.id JOIN thread USING(utid) ORDER BY s.id"
