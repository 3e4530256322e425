-- Schema version 8: an outbox commit touches fewer pages. Each page a
-- commit changes is written whole, to the WAL and again to the file, so
-- a commit of an identical cycle, which stores no records (version 5),
-- cost what its entry rows spread over: some 7 KB of rows for 16 entries,
-- three leaves and their parent, and page 1 for the file's growth.
--
-- compact 1 marks an entry stored compact (sqlitestore/outbox.go,
-- compactKey, compactPart): its entity_type and entity_key columns are
-- stored empty, and a chunk's payload empty and body_at NULL, as the
-- row's key columns and the body it names rebuild them byte for byte; the store stores an entry so only
-- when it has rebuilt the entry's bytes and found them equal. The row's
-- checksum (rowsum.go) covers the entry whole, as before, and so checks
-- the rebuild. An identical cycle's rows then fit in a page.
--
-- outbox_pending keeps the pending entries alone, in the order they are
-- sent: delivering an entry drops it from the index, which no longer
-- grows with every entry ever written. A query uses it by naming the
-- state 'pending' as a literal.
--
-- No row is rewritten: every entry written before this version is
-- compact 0 and reads and publishes as it did.

ALTER TABLE outbox ADD COLUMN compact INTEGER NOT NULL DEFAULT 0 CHECK (compact IN (0, 1));

DROP INDEX outbox_pending;

CREATE INDEX outbox_pending ON outbox (vessel_id, revision, chunk_index) WHERE state = 'pending';
