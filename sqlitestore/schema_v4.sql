-- Schema version 4: lookups by payload digest, for chunk references
-- (SPEC.md §6.6; sqlitestore/chunkref.go). The receiver finds a staged
-- chunk of a vessel by its payload_sha256, and the sender a delivered
-- outbox entry of a vessel by its digest, without scanning the vessel's
-- rows. Indexes only: no row changes, and no checksum covers them.

CREATE INDEX chunks_payload ON chunks (vessel_id, payload_sha256);

CREATE INDEX outbox_digest ON outbox (vessel_id, digest, revision);
