-- Schema version 5: outbox entries share their chunks' records. A chunk
-- entry's payload is stored in two parts: the row keeps the bytes around
-- the records array (chunk_index, payload_sha256, protocol; revision,
-- snapshot_id, vessel_id), and outbox_bodies the array's content, once
-- per vessel and payload_sha256 (the SHA-256 of {"records":[...]}, which
-- the store checks before it shares). A cycle whose chunks repeat the
-- last one's therefore writes entry rows and no records
-- (sqlitestore/outbox.go). body_id names the body, body_at where in the
-- row's payload it goes; both NULL for an entry stored whole, as every
-- entry written before this version is: the migration rewrites no row.
-- A body is kept while any entry names it; entries are never deleted.
-- first_revision is the lowest revision of an entry naming the body.
-- Each body row carries a checksum of its own (sqlitestore/rowsum.go),
-- and an entry's checksum covers its payload whole, as before.
--
-- The lookup of a delivered chunk by digest (outbox_digest, version 4)
-- finds a shared body by its key and the delivered entries naming it in
-- outbox_pending's order, from first_revision: outbox_digest keeps the
-- chunk entries stored whole only, so that a commit does not write an
-- index entry per chunk in as many places as it has chunks.

CREATE TABLE outbox_bodies (
  id             INTEGER PRIMARY KEY,
  vessel_id      BLOB    NOT NULL CHECK (length(vessel_id) = 16),
  digest         BLOB    NOT NULL CHECK (length(digest) = 32),
  first_revision INTEGER NOT NULL,
  body           BLOB    NOT NULL,
  checksum       INTEGER NOT NULL,
  UNIQUE (vessel_id, digest)
) STRICT;

ALTER TABLE outbox ADD COLUMN body_id INTEGER;

ALTER TABLE outbox ADD COLUMN body_at INTEGER;

DROP INDEX outbox_digest;

CREATE INDEX outbox_digest ON outbox (vessel_id, digest, revision) WHERE body_id IS NULL AND chunk_index >= 0;
