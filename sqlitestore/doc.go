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
// The database uses a write-ahead log (journal_mode=WAL) with
// synchronous=FULL. A commit appends the pages it changed to the WAL (the
// file beside the database, with "-wal" appended) and syncs the WAL
// before it is acknowledged, so a WithVessel call that returned nil — a
// receipt, an outbox commit, an activation — survives a power cut at the
// next instant. A checkpoint copies the WAL into the database file and
// syncs the file before the WAL is started over; SQLite runs one when the
// WAL passes 1000 pages (4 MiB at the 4096-byte page), in the commit that
// passed it: the bound keeps the WAL, and what a reader or a recovery
// reads through it, small, and a page rewritten by many commits is copied
// once per checkpoint (BenchmarkBoardWrites counts a commit's checkpoint
// too). Close runs a TRUNCATE checkpoint, so the file it leaves is the
// whole database even while another process has it open; the last
// connection to close deletes the WAL. The WAL index (the "-shm" file, in
// shared memory) is rebuilt from the WAL after a crash. The power-cut and
// crash-point tests cut WAL commits and checkpoints at every write, sync,
// truncation and deletion, with the WAL index lost, and with the unsynced
// writes lost, partly kept in another order, or all kept
// (TestWALCutPoints). When the database file is created, Open syncs its
// directory too.
//
// Open checks a WAL database as its file overlaid with the WAL's
// committed frames (a checkpoint cut short leaves a page 1 counting pages
// only the WAL holds), and refuses with ErrInvalidFile a missing file
// beside a non-empty WAL or rollback journal: that log holds commits of
// a file removed without it, which SQLite would delete on creating a new
// database. It refuses WAL on a network file system
// (ErrNetworkFileSystem), where the WAL index cannot be shared. A
// read-only Open (WithReadOnly) of a WAL database reads the WAL beside
// it and maps the WAL index, so it needs the directory and the files
// beside the database readable and, for the index, writable; it sees
// every commit made before each of its transactions, and writes nothing
// to the database file.
//
// WithRollbackJournal keeps the rollback journal instead
// (journal_mode=TRUNCATE, tested by TestPowerLoss, TestCrashPoints and
// the fault tests): before a transaction writes the database it syncs the
// journal (the pages to restore); at COMMIT it syncs the database and
// then commits by truncating the journal to zero bytes, and FULL syncs
// that truncation too (with NORMAL the old journal could come back after
// a power cut and roll the acknowledged transaction back). It serves
// where the WAL index cannot be shared, at about five syncs a commit to
// WAL's two (BenchmarkJournalModes); concurrent calls share them (group
// commit, below), so that under load a message costs well under one.
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
// recovers it (SQLite ignores the WAL's frames past its last commit, or
// rolls back a half-written transaction from its rollback journal);
// nothing acknowledged is lost. A full disk — SQLite's
// SQLITE_FULL, or ENOSPC or EDQUOT from the file system, which the Store's
// files map to SQLITE_FULL — also wraps ErrDiskFull ("disk full").
//
// A directory made read-only under a running Store (its permissions
// changed, a read-only mount over it) is no failure in WAL mode: the Store
// writes only to the files it holds open — the database, its WAL and WAL
// index — and commits on. Under the rollback journal the next transaction
// fails to open its journal, an I/O error that poisons the Store. Open
// needs the directory writable in either mode (it opens the lock file
// read-write), so a reopen fails, wrapping ErrStoreUnavailable, until the
// directory is writable again, and then succeeds in the same process
// (TestReadOnlyDirectory).
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
// In WAL mode the commits since the last checkpoint are in the WAL
// beside the path, and SQLite does not checkpoint into a file moved
// away: a file moved or replaced under a running Store leaves them in
// the "-wal" at the path. Move, copy or replace a store file only with
// every process that has it open stopped (Close checkpoints the WAL into
// the file): nothing binds a WAL to its database, so a database put at
// the path beside another's WAL would be read with that WAL's pages over
// its own. Open refuses a WAL beside a missing file (see Durability).
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
// sharing it, and is mended by the next commit that holds its records.
// A staged chunk does the same on the receiver's side (schema version 7):
// the vessel's chunks with the same records share one row of them, so an
// identical cycle a manifest index resolves stages a few hundred bytes a
// chunk rather than a copy of every record; damaged shared records fail
// every chunk sharing them, answer hash_mismatch to a reference or an
// index, and are mended by the chunk the sender then sends whole. An
// outbox entry whose entity type and key, and for a chunk the bytes
// around its records, are exactly what its snapshot, index, revision and
// digest rebuild is stored without them (schema version 8), so that an
// identical cycle's commit touches a page or two of entry rows; the row
// checksum covers the rebuilt entry, so a rebuild that differs reads as
// damaged. A time is two integer columns, Unix seconds
// and the nanoseconds within that second, so every time the protocol
// accepts (years 0000 to 9999) survives exactly. Tables are STRICT.
package sqlitestore
