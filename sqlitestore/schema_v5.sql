-- Schema version 5: outbox entries share their chunks' records. A chunk
-- entry's payload is stored in two parts: the row keeps the bytes around
-- the records array (chunk_index, payload_sha256, protocol; revision,
-- snapshot_id, vessel_id), and outbox_bodies the array's content, once
-- per vessel and content, keyed by its SHA-256. A cycle whose chunks
-- repeat the last one's therefore writes entry rows and no records
-- (sqlitestore/outbox.go). body_id names the body, body_at where in the
-- row's payload it goes; both NULL for an entry stored whole, as every
-- entry written before this version is: the migration rewrites no row.
-- A body is kept while any entry names it; entries are never deleted.
-- Each body row carries a checksum of its own (sqlitestore/rowsum.go),
-- and an entry's checksum covers its payload whole, as before.

CREATE TABLE outbox_bodies (
  id        INTEGER PRIMARY KEY,
  vessel_id BLOB    NOT NULL CHECK (length(vessel_id) = 16),
  sha256    BLOB    NOT NULL CHECK (length(sha256) = 32),
  body      BLOB    NOT NULL,
  checksum  INTEGER NOT NULL,
  UNIQUE (vessel_id, sha256)
) STRICT;

ALTER TABLE outbox ADD COLUMN body_id INTEGER;

ALTER TABLE outbox ADD COLUMN body_at INTEGER;
