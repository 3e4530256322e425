-- Schema version 3: a checksum on every row that holds bytes the stores
-- hand out. Run after schema_v2.sql, in the same transaction; Open then
-- writes the checksum of every row already stored (sqlitestore/rowsum.go).
--
-- The checksum is CRC-32C over the row's fields, written with the row and
-- checked whenever it is read: a row damaged at rest is an error naming it
-- (ErrDamaged), never bytes passed on. It is NULL for no row once the
-- migration has committed; a row read without one is damaged. An outbox
-- entry's state, which SetState changes alone, is not covered: a read
-- checks that it is one of the three states instead.

ALTER TABLE chunks ADD COLUMN checksum INTEGER;

ALTER TABLE snapshots ADD COLUMN checksum INTEGER;

ALTER TABLE outbox ADD COLUMN checksum INTEGER;
