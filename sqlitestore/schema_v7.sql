-- Schema version 7: staged chunks share their records (SPEC.md §8.4:
-- identical cycles; sqlitestore/chunkbody.go). A chunk row keeps the bytes
-- around its records array (chunk_index, payload_sha256, protocol;
-- revision, snapshot_id, vessel_id), and chunk_bodies the array's
-- content, once per vessel and payload_sha256: the SHA-256 of
-- {"records":[...]} of that content, which the store computes before it
-- writes a body, so that a body row always holds the records of its
-- digest. A chunk shares a body only when its bytes are the body's byte
-- for byte. An identical cycle, whose chunks a manifest index resolves
-- from the held ones (§6.7), therefore writes chunk rows of a few hundred
-- bytes each and no records, where each cycle used to copy every record.
-- body_id names the body, body_at where in chunk_canonical it goes; both
-- NULL for a chunk stored whole, as every chunk written before this
-- version is: the migration rewrites no row. A chunk's checksum covers
-- its canonical bytes whole, its body put back; a body row carries a
-- checksum of its own (rowsum.go). A body is deleted with the last chunk
-- naming it (DeleteSnapshot), which chunks_body finds.

CREATE TABLE chunk_bodies (
  id             INTEGER PRIMARY KEY,
  vessel_id      BLOB    NOT NULL CHECK (length(vessel_id) = 16),
  payload_sha256 BLOB    NOT NULL CHECK (length(payload_sha256) = 32),
  body           BLOB    NOT NULL,
  checksum       INTEGER NOT NULL,
  UNIQUE (vessel_id, payload_sha256)
) STRICT;

ALTER TABLE chunks ADD COLUMN body_id INTEGER;

ALTER TABLE chunks ADD COLUMN body_at INTEGER;

CREATE INDEX chunks_body ON chunks (body_id) WHERE body_id IS NOT NULL;
