-- Schema version 2: the record index as a base value and a delta. Run
-- after schema_v1.sql, in the same transaction.
--
-- Version 1 kept a vessel's record index as one front-coded value, so an
-- activation that changed one record in a hundred rewrote (and journalled)
-- the whole value, about 45 bytes an entry. Version 2 keeps that value as
-- a base and writes, at each activation, only the difference between the
-- new index and the base: an activation writes what changed since the
-- base, and the base is rewritten only when that difference outgrows an
-- eighth of the index (sqlitestore/index.go).

-- The base value: the front-coded index (internal/indexblob) and a random
-- stamp that changes with every new value, so that a process may keep the
-- decoded value and know it current by reading the stamp alone. The stamp
-- precedes the value, which a read of the stamp therefore never fetches.
CREATE TABLE index_base (
  vessel_id BLOB    NOT NULL PRIMARY KEY,
  stamp     INTEGER NOT NULL,
  entries   BLOB    NOT NULL
) STRICT;

INSERT INTO index_base (vessel_id, stamp, entries) SELECT vessel_id, random(), entries FROM record_index;

DROP TABLE record_index;

-- The difference of the index from its base, when there is one: puts, the
-- entries that are new or have another digest, and dels, the keys of the
-- base's entries that left (their digests are zero), both front-coded.
CREATE TABLE index_delta (
  vessel_id BLOB NOT NULL PRIMARY KEY,
  puts      BLOB NOT NULL,
  dels      BLOB NOT NULL
) STRICT;
