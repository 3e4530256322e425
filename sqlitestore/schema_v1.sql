-- Source Catalog protocol v2 in one SQLite file: schema version 1 (user_version),
-- application_id 0x59534331. Run by sqlitestore.Open in one transaction.
-- Statements are separated by a semicolon at the end of a line.
--
-- Identifiers are 16-byte BLOBs, digests 32-byte BLOBs. Canonical bytes
-- (manifest, chunk_canonical, record, payload) are BLOBs exactly as
-- received. A time is *_sec, Unix seconds, and *_nsec, the nanoseconds
-- within that second (0 to 999999999): every time of the years 0000 to
-- 9999 survives exactly. Text compares as bytes (BINARY collation).

-- Receiver: one row per vessel, its active pointer.
CREATE TABLE vessels (
  vessel_id                 BLOB    NOT NULL PRIMARY KEY CHECK (length(vessel_id) = 16),
  active_snapshot_id        BLOB    CHECK (length(active_snapshot_id) = 16),
  active_revision           INTEGER NOT NULL DEFAULT 0,
  active_discovered_at_sec  INTEGER,
  active_discovered_at_nsec INTEGER CHECK (active_discovered_at_nsec BETWEEN 0 AND 999999999),
  active_document_sha256    BLOB    CHECK (length(active_document_sha256) = 32)
) STRICT, WITHOUT ROWID;

CREATE TABLE snapshots (
  vessel_id       BLOB    NOT NULL,
  snapshot_id     BLOB    NOT NULL CHECK (length(snapshot_id) = 16),
  revision        INTEGER NOT NULL,
  state           TEXT    NOT NULL CHECK (state IN ('staging', 'activated', 'superseded', 'rejected')),
  final_status    TEXT    NOT NULL DEFAULT '',
  manifest        BLOB,
  manifest_sha256 BLOB    CHECK (length(manifest_sha256) = 32),
  chunk_count     INTEGER NOT NULL DEFAULT 0,
  record_count    INTEGER NOT NULL DEFAULT 0,
  chunks_staged   INTEGER NOT NULL DEFAULT 0,
  staged_bytes    INTEGER NOT NULL DEFAULT 0,
  reason          TEXT    NOT NULL DEFAULT '',
  PRIMARY KEY (vessel_id, snapshot_id)
) STRICT;

CREATE TABLE chunks (
  vessel_id       BLOB    NOT NULL,
  snapshot_id     BLOB    NOT NULL,
  chunk_index     INTEGER NOT NULL CHECK (chunk_index >= 0),
  payload_sha256  BLOB    NOT NULL CHECK (length(payload_sha256) = 32),
  chunk_canonical BLOB    NOT NULL,
  PRIMARY KEY (vessel_id, snapshot_id, chunk_index)
) STRICT;

-- The record index of each vessel's active snapshot, one front-coded value.
CREATE TABLE record_index (
  vessel_id BLOB NOT NULL PRIMARY KEY,
  entries   BLOB NOT NULL
) STRICT;

-- The inventory: every path (kind 1, source_ref ''), source (kind 2, path
-- '') and observation (kind 3) any activated snapshot selected.
CREATE TABLE items (
  vessel_id           BLOB    NOT NULL,
  kind                INTEGER NOT NULL CHECK (kind IN (1, 2, 3)),
  path                TEXT    NOT NULL,
  source_ref          TEXT    NOT NULL,
  record              BLOB    NOT NULL,
  first_seen_revision INTEGER NOT NULL,
  first_seen_at_sec   INTEGER NOT NULL,
  first_seen_at_nsec  INTEGER NOT NULL CHECK (first_seen_at_nsec BETWEEN 0 AND 999999999),
  last_seen_revision  INTEGER NOT NULL,
  last_seen_at_sec    INTEGER NOT NULL,
  last_seen_at_nsec   INTEGER NOT NULL CHECK (last_seen_at_nsec BETWEEN 0 AND 999999999),
  currently_observed  INTEGER NOT NULL CHECK (currently_observed IN (0, 1)),
  PRIMARY KEY (vessel_id, kind, path, source_ref)
) STRICT;

-- On board: the last revision allocated per vessel, committed with the
-- entries it numbered, so a committed revision is never handed out again.
CREATE TABLE outbox_vessels (
  vessel_id     BLOB    NOT NULL PRIMARY KEY CHECK (length(vessel_id) = 16),
  last_revision INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;

-- One row per outbox entity; chunk_index -1 is the manifest, so the key
-- orders a snapshot's entities as they are sent. by_revision keeps two
-- snapshots of a vessel from sharing a revision.
CREATE TABLE outbox (
  vessel_id   BLOB    NOT NULL,
  snapshot_id BLOB    NOT NULL CHECK (length(snapshot_id) = 16),
  chunk_index INTEGER NOT NULL CHECK (chunk_index >= -1),
  revision    INTEGER NOT NULL,
  entity_type TEXT    NOT NULL,
  entity_key  TEXT    NOT NULL,
  payload     BLOB    NOT NULL,
  digest      BLOB    NOT NULL CHECK (length(digest) = 32),
  state       TEXT    NOT NULL CHECK (state IN ('pending', 'delivered', 'stopped')),
  PRIMARY KEY (vessel_id, snapshot_id, chunk_index),
  UNIQUE (vessel_id, revision, chunk_index)
) STRICT;

CREATE INDEX outbox_pending ON outbox (vessel_id, state, revision, chunk_index);
