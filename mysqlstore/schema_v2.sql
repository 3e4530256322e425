-- Source Catalog protocol v2: receiver and on-board tables for MariaDB 10.6+
-- (InnoDB). Run by mysqlstore.Migrate in the connection's
-- current schema. Every statement is idempotent. This file never selects a
-- schema and never touches the v1 tables (signalk_catalog_state,
-- signalk_discovery_snapshots, signalk_discovered_paths,
-- signalk_discovered_sources).
--
-- Canonical bytes live in BLOB columns, never JSON columns: a JSON column
-- re-serialises and would break the hashes. Identifiers that are compared
-- use utf8mb4 with the binary, no-pad collation, so paths are
-- case-sensitive and trailing spaces count. A time is two columns, as Go's
-- time.Unix takes it: *_sec, Unix seconds (BIGINT), and *_nsec, the
-- nanoseconds within that second (0 to 999999999). Every time the protocol
-- accepts (years 0000 to 9999, to the nanosecond) survives exactly, which
-- neither Unix nanoseconds in a BIGINT (years 1678 to 2262) nor a
-- DATETIME(6) (microseconds, from year 1000) would do. In SQL,
-- '1970-01-01' + INTERVAL x_sec SECOND reads one, within the years a
-- DATETIME holds.
-- Statements are separated by a semicolon at the end of a line.

CREATE TABLE IF NOT EXISTS signalk_catalog_vessels_v2 (
  vessel_id            BINARY(16)  NOT NULL,
  active_snapshot_id   BINARY(16)  NULL,
  active_revision      BIGINT      NOT NULL DEFAULT 0,
  active_discovered_at_sec  BIGINT      NULL,
  active_discovered_at_nsec INT         NULL CHECK (active_discovered_at_nsec BETWEEN 0 AND 999999999),
  active_document_sha256 BINARY(32) NULL,
  lock_token           BIGINT      NOT NULL DEFAULT 0,
  updated_at           TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  index_stamp          BIGINT      NULL,
  PRIMARY KEY (vessel_id)
) ENGINE=InnoDB;

-- index_stamp names the vessel's record index as last written (see
-- mysqlstore's index.go); added to the tables of shape 1, which lacked it.
ALTER TABLE signalk_catalog_vessels_v2 ADD COLUMN IF NOT EXISTS index_stamp BIGINT NULL;

CREATE TABLE IF NOT EXISTS signalk_catalog_snapshots_v2 (
  vessel_id       BINARY(16)   NOT NULL,
  snapshot_id     BINARY(16)   NOT NULL,
  revision        BIGINT       NOT NULL,
  state           VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  final_status    VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  manifest        BLOB         NULL,
  manifest_sha256 BINARY(32)   NULL,
  chunk_count     INT          NOT NULL DEFAULT 0,
  record_count    INT          NOT NULL DEFAULT 0,
  chunks_staged   INT          NOT NULL DEFAULT 0,
  staged_bytes    BIGINT       NOT NULL DEFAULT 0,
  reason          VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL DEFAULT '',
  created_at      TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at      TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (vessel_id, snapshot_id),
  KEY by_revision (vessel_id, revision)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS signalk_catalog_chunks_v2 (
  vessel_id       BINARY(16) NOT NULL,
  snapshot_id     BINARY(16) NOT NULL,
  chunk_index     SMALLINT UNSIGNED NOT NULL,
  payload_sha256  BINARY(32) NOT NULL,
  chunk_canonical MEDIUMBLOB NOT NULL,
  received_at     TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (vessel_id, snapshot_id, chunk_index)
) ENGINE=InnoDB;

-- The record index of each vessel's active snapshot (keys and record
-- hashes; see mysqlstore's index.go): a base, in parts, and the delta from
-- it, written when the active document changes.
CREATE TABLE IF NOT EXISTS signalk_catalog_index_base_v2 (
  vessel_id BINARY(16)        NOT NULL,
  part      SMALLINT UNSIGNED NOT NULL,
  entries   MEDIUMBLOB        NOT NULL,
  PRIMARY KEY (vessel_id, part)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS signalk_catalog_index_delta_v2 (
  vessel_id BINARY(16) NOT NULL,
  puts      MEDIUMBLOB NOT NULL,
  dels      MEDIUMBLOB NOT NULL,
  PRIMARY KEY (vessel_id)
) ENGINE=InnoDB;

-- The index as earlier shapes of these tables kept it, read until the
-- vessel's next activation moves it to the base and delta: one value,
-- then segments (runs of consecutive entries). A vessel moved keeps one
-- segment, a marker that code of those shapes cannot read.
CREATE TABLE IF NOT EXISTS signalk_catalog_index_v2 (
  vessel_id BINARY(16) NOT NULL,
  entries   LONGBLOB   NOT NULL,
  PRIMARY KEY (vessel_id)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS signalk_catalog_index_segments_v2 (
  vessel_id  BINARY(16) NOT NULL,
  segment_id BINARY(32) NOT NULL,
  entries    MEDIUMBLOB NOT NULL,
  PRIMARY KEY (vessel_id, segment_id)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS signalk_catalog_paths_v2 (
  vessel_id           BINARY(16)   NOT NULL,
  path                VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
  unit_present        TINYINT(1)   NOT NULL,
  unit                VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NULL,
  record              BLOB         NOT NULL,
  first_seen_revision BIGINT       NOT NULL,
  first_seen_at_sec   BIGINT       NOT NULL,
  first_seen_at_nsec  INT          NOT NULL CHECK (first_seen_at_nsec BETWEEN 0 AND 999999999),
  last_seen_revision  BIGINT       NOT NULL,
  last_seen_at_sec    BIGINT       NOT NULL,
  last_seen_at_nsec   INT          NOT NULL CHECK (last_seen_at_nsec BETWEEN 0 AND 999999999),
  currently_observed  TINYINT(1)   NOT NULL,
  PRIMARY KEY (vessel_id, path)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS signalk_catalog_sources_v2 (
  vessel_id           BINARY(16)   NOT NULL,
  source_ref          VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
  label               VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NULL,
  source_type         VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NULL,
  record              BLOB         NOT NULL,
  first_seen_revision BIGINT       NOT NULL,
  first_seen_at_sec   BIGINT       NOT NULL,
  first_seen_at_nsec  INT          NOT NULL CHECK (first_seen_at_nsec BETWEEN 0 AND 999999999),
  last_seen_revision  BIGINT       NOT NULL,
  last_seen_at_sec    BIGINT       NOT NULL,
  last_seen_at_nsec   INT          NOT NULL CHECK (last_seen_at_nsec BETWEEN 0 AND 999999999),
  currently_observed  TINYINT(1)   NOT NULL,
  PRIMARY KEY (vessel_id, source_ref)
) ENGINE=InnoDB;

-- An observation is keyed by the SHA-256 of path, NUL, source_ref: the two
-- identifiers together are too long for an InnoDB key.
CREATE TABLE IF NOT EXISTS signalk_catalog_observations_v2 (
  vessel_id           BINARY(16)   NOT NULL,
  observation_key     BINARY(32)   NOT NULL,
  path                VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
  source_ref          VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
  value_type          VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  record              BLOB         NOT NULL,
  first_seen_revision BIGINT       NOT NULL,
  first_seen_at_sec   BIGINT       NOT NULL,
  first_seen_at_nsec  INT          NOT NULL CHECK (first_seen_at_nsec BETWEEN 0 AND 999999999),
  last_seen_revision  BIGINT       NOT NULL,
  last_seen_at_sec    BIGINT       NOT NULL,
  last_seen_at_nsec   INT          NOT NULL CHECK (last_seen_at_nsec BETWEEN 0 AND 999999999),
  currently_observed  TINYINT(1)   NOT NULL,
  PRIMARY KEY (vessel_id, observation_key),
  KEY by_path (vessel_id, path(191))
) ENGINE=InnoDB;

-- On board: the outbox of mysqlstore.Outbox (package outbox). One row per
-- vessel holds the last revision allocated; its row lock (every
-- transaction writes lock_token first) serialises the vessel's writers and
-- publishers, and the counter commits with the entries it numbered, so a
-- revision whose transaction committed is never handed out again.
CREATE TABLE IF NOT EXISTS signalk_catalog_outbox_vessels_v2 (
  vessel_id     BINARY(16)   NOT NULL,
  last_revision BIGINT       NOT NULL DEFAULT 0,
  lock_token    BIGINT       NOT NULL DEFAULT 0,
  updated_at    TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (vessel_id)
) ENGINE=InnoDB;

-- One row per outbox entity. chunk_index is -1 (sourcecatalog.NoIndex)
-- for the manifest, so the primary key orders a snapshot's entities as they
-- are sent: manifest first, then chunks by index. payload holds the
-- entity's canonical bytes exactly as built (never a JSON column); digest
-- is what the receiver's receipt carries: a chunk's payload_sha256, or the
-- SHA-256 of the manifest's bytes. by_revision keeps two snapshots of a
-- vessel from ever sharing a revision; pending serves the publisher's
-- oldest-first scan of pending entries.
CREATE TABLE IF NOT EXISTS signalk_catalog_outbox_v2 (
  vessel_id   BINARY(16)   NOT NULL,
  snapshot_id BINARY(16)   NOT NULL,
  chunk_index SMALLINT     NOT NULL,
  revision    BIGINT       NOT NULL,
  entity_type VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  entity_key  VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  payload     MEDIUMBLOB   NOT NULL,
  digest      BINARY(32)   NOT NULL,
  state       VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  created_at  TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at  TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (vessel_id, snapshot_id, chunk_index),
  UNIQUE KEY by_revision (vessel_id, revision, chunk_index),
  KEY pending (vessel_id, state, revision, chunk_index)
) ENGINE=InnoDB;

-- Chunk references (SPEC.md §6.6): the receiver finds a staged chunk of a
-- vessel by its payload_sha256, and the sender a delivered outbox entry
-- of a vessel by its digest (mysqlstore/chunkref.go).
CREATE INDEX IF NOT EXISTS by_payload ON signalk_catalog_chunks_v2 (vessel_id, payload_sha256);

CREATE INDEX IF NOT EXISTS by_digest ON signalk_catalog_outbox_v2 (vessel_id, digest, revision);
