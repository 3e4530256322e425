-- The server starts an on-board controller remembers (SPEC.md §12.7;
-- sqlitestore/starts.go): each start id its Signal K server's hello named,
-- when a scan first read it and when its picture was first trusted, so that
-- a start one process saw settle is trusted at once by the next. At most
-- outbox.MaxServerStarts rows: adding one beyond drops the start first seen
-- earliest. A new table only; the checksum covers the row (rowsum.go).

CREATE TABLE server_starts (
    start_id      TEXT    NOT NULL PRIMARY KEY,
    first_seen_ms INTEGER NOT NULL,
    settled_ms    INTEGER,
    checksum      INTEGER NOT NULL
) STRICT;
