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
-- case-sensitive and trailing spaces count. Times are Unix nanoseconds
-- (BIGINT, *_ns) so that discovered_at_utc survives exactly; in SQL,
-- FROM_UNIXTIME(x DIV 1000000000) reads them. Statements are separated by a
-- semicolon at the end of a line.

CREATE TABLE IF NOT EXISTS signalk_catalog_vessels_v2 (
  vessel_id            BINARY(16)  NOT NULL,
  active_snapshot_id   BINARY(16)  NULL,
  active_revision      BIGINT      NOT NULL DEFAULT 0,
  active_discovered_at_ns BIGINT NULL,
  active_document_sha256 BINARY(32) NULL,
  updated_at           TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (vessel_id)
) ENGINE=InnoDB;

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
-- hashes), one value replaced when the active document changes.
CREATE TABLE IF NOT EXISTS signalk_catalog_index_v2 (
  vessel_id BINARY(16) NOT NULL,
  entries   LONGBLOB   NOT NULL,
  PRIMARY KEY (vessel_id)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS signalk_catalog_paths_v2 (
  vessel_id           BINARY(16)   NOT NULL,
  path                VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
  unit_present        TINYINT(1)   NOT NULL,
  unit                VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NULL,
  record              BLOB         NOT NULL,
  first_seen_revision BIGINT       NOT NULL,
  first_seen_at_ns    BIGINT       NOT NULL,
  last_seen_revision  BIGINT       NOT NULL,
  last_seen_at_ns     BIGINT       NOT NULL,
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
  first_seen_at_ns    BIGINT       NOT NULL,
  last_seen_revision  BIGINT       NOT NULL,
  last_seen_at_ns     BIGINT       NOT NULL,
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
  first_seen_at_ns    BIGINT       NOT NULL,
  last_seen_revision  BIGINT       NOT NULL,
  last_seen_at_ns     BIGINT       NOT NULL,
  currently_observed  TINYINT(1)   NOT NULL,
  PRIMARY KEY (vessel_id, observation_key),
  KEY by_path (vessel_id, path(191))
) ENGINE=InnoDB;
