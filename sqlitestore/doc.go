// Package sqlitestore keeps a receiver's staging and catalog (a
// finalize.Store) and an on-board outbox (an outbox.Store) in one SQLite
// database file: the durable embedded store for a boat or a single-box
// receiver without a database server. It uses a pure Go SQLite
// (github.com/ncruces/go-sqlite3), so it builds without cgo.
//
//	s, err := sqlitestore.Open(ctx, "/var/lib/yachtmemory/catalog.db")
//	...
//	receiver := finalize.NewReceiver(s)
//	writer := outbox.NewWriter(s.Outbox())
//
// # Durability
//
// The database uses a rollback journal (journal_mode=TRUNCATE) with
// synchronous=FULL. Before a transaction writes the database it syncs the
// journal (the pages to restore); at COMMIT it syncs the database and then
// commits by truncating the journal to zero bytes, and FULL syncs that
// truncation too. So a WithVessel call that returned nil — a receipt, an
// outbox commit, an activation — survives a power cut at the next instant.
// With synchronous=NORMAL the truncation is not synced: after a power cut
// the old journal could come back and roll the acknowledged transaction
// back. (WAL would need synchronous=FULL just the same, plus a
// shared-memory index file; DELETE mode would need EXTRA, which also
// syncs the directory after unlinking the journal. TRUNCATE keeps the
// journal file, so a commit changes no directory entry.)
// When the database file is created, Open syncs its directory too.
//
// A commit costs about five syncs, whatever it holds; concurrent calls
// share them (group commit, below), so that under load a message costs
// under one. WAL measured fewer (BenchmarkJournalModes). In WAL mode
// (WithJournal in the tests) a commit appends its pages to the WAL and,
// with synchronous=FULL, syncs it before it is acknowledged; a checkpoint
// copies the WAL into the file and syncs the file before the WAL is
// restarted or truncated; the WAL index (the -shm file) is rebuilt from
// the WAL after a crash. The power-cut and crash-point tests cut WAL
// commits and checkpoints at every write, sync, truncation and deletion,
// with the WAL index lost, and with the unsynced writes lost, partly
// kept in another order, or all kept (TestWALCutPoints); Open checks a WAL
// database as its file overlaid with the WAL's committed frames (a
// checkpoint cut short leaves a page 1 counting pages only the WAL holds),
// and refuses one on a network file system (ErrNetworkFileSystem), where
// the WAL index cannot be shared. TRUNCATE stays the journal until the
// remaining tests pass in WAL mode.
//
// # Transactions and processes
//
// SQLite has one writer per file, so the Store runs its transactions, of
// any vessel and of both sides, on one connection, and across processes
// SQLite's file locks serialise them. The calls made while a transaction
// runs are batched (group commit): one BEGIN IMMEDIATE transaction runs
// their callbacks one after the other, each in a SAVEPOINT of its own and
// in its caller's goroutine, and one COMMIT — one set of syncs — makes
// them all durable. A batch takes at most 64 callbacks, and no more once
// its callbacks have written 8 MiB of statement arguments; nothing waits
// for company. A callback that returns an error, panics or exits its
// goroutine is rolled back to its savepoint alone: its caller gets the
// callback's error unchanged (or the panic goes on in its goroutine) and
// the others commit. Every caller is answered once the batch has ended,
// nil only after the COMMIT is durable; a failed COMMIT, or an I/O error
// in any callback of the batch, poisons the Store and fails every caller
// whose callback returned nil. Callbacks of one vessel in one batch run
// in order, each seeing what the one before wrote.
//
// A transaction that cannot take the write lock within the busy timeout
// (WithBusyTimeout, 5 s by default), counted from the call and so
// including the wait behind the Store's own transactions, fails with
// ErrLocked; no call waits longer for another process, however many calls
// are queued, and a call whose context ends while it is queued returns at
// once, its callback not run. A write statement, once started, runs to
// its end whatever the context says (SQLite would roll back the whole
// batch's transaction if it were interrupted); the context is checked
// before each. Callbacks are never re-run. Statements are prepared once
// on the connection and kept until Close.
//
// Every Open takes a lifetime lock on a sidecar file, the database path
// with ".lock" appended: shared by default, so several processes (a timer's
// commit and a long-running publish) can share the file, and exclusive
// with WithExclusiveLock, so that the process is the file's sole owner and
// any other Open, exclusive or not, fails at once with ErrLocked. The lock
// binds the processes that open the file through this package.
//
// # Failures
//
// After a failed COMMIT or ROLLBACK, or an I/O error (a failed write,
// sync, truncate or lock, a full disk, a corrupt page), the handle is
// poisoned: whether the transaction committed may be unknown, so every
// further call fails with ErrPoisoned until Close. Opening the file again
// recovers it (SQLite rolls back a half-written transaction from its
// journal); nothing acknowledged is lost. A full disk — SQLite's
// SQLITE_FULL, or ENOSPC or EDQUOT from the file system, which the Store's
// files map to SQLITE_FULL — also wraps ErrDiskFull ("disk full").
//
// A file removed, renamed away or replaced by another (another store, a
// copy of this one) while the Store has it open poisons the Store with
// ErrFileChanged: the Store compares the device and inode of the file it
// opened with what its path names after every COMMIT, before any caller
// of the batch is answered, and at every Ping, so that nothing is
// acknowledged into a file the path no longer names. A Source reopens
// only the file it opened first, never another at the path nor a new
// one; Open creates a missing file unless WithExistingFile (or
// WithReadOnly) says not to.
//
// # Damage
//
// SQLite reads a file cut inside its last page as if the missing bytes
// were zeros, and would write its next transaction on top. Open refuses,
// with ErrInvalidFile and before writing anything, a file that is not a
// whole number of pages, holds another number of pages than its header
// counts, or whose header is otherwise inconsistent; it reads the header
// and size under SQLite's shared lock, after SQLite has rolled back a
// transaction cut short by a crash (a hot journal is recovery, not
// damage). A file emptied to zero bytes cannot be told from a new one.
// Every row holding bytes the stores hand out — a staged chunk, a
// snapshot with its manifest, an outbox entry, the records outbox entries
// share — carries a CRC-32C
// checksum written with it and checked at every read: a row damaged at
// rest fails with ErrDamaged, naming the row, and its bytes are never
// handed out. A reference or an index resolving a chunk by its digest
// skips a damaged row for another with the digest, and answers
// hash_mismatch when every one is damaged (SPEC.md §6.6).
//
// # Schema
//
// The file carries application_id 0x59534331 ("YSC1") and its schema
// version in user_version. Open creates the schema in a new or empty file
// (WithReadOnly neither creates nor migrates, and refuses a missing or
// empty file), migrates an older version in one transaction — SQLite's DDL is
// transactional, unlike MariaDB's, so a migration cut short leaves the old
// version intact — and refuses with ErrInvalidFile a path that is a
// symlink, a directory or another non-regular file, a file that is not an
// SQLite database, an SQLite database of another application, or a newer
// schema version, and a file cut short or with a damaged header (see
// Damage).
//
// Canonical bytes (manifests, chunks, records, outbox payloads) are BLOBs,
// stored exactly as received. An outbox chunk entry keeps the content of
// its records array apart, in a row the vessel's entries with the same
// records share (schema version 5), so that a cycle repeating the last
// one writes entry rows and no records; the entry reads back whole, byte
// for byte, and a shared row that is damaged fails the read of every entry
// sharing it, and is mended by the next commit that holds its records. A time is two integer columns, Unix seconds
// and the nanoseconds within that second, so every time the protocol
// accepts (years 0000 to 9999) survives exactly. Tables are STRICT.
package sqlitestore
