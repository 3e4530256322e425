package sqlitestore_test

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"
)

// memFS is an SQLite VFS of in-memory files that keeps, besides what the
// process sees, what a power cut would leave: every file's contents as of
// its last Sync, and the writes and truncations made since (a power cut
// loses them all, or, with PowerCutKeeping, keeps some of them, in any
// order), and the directory as of its last sync. A directory is
// synced when a file created as a journal is first synced (as SQLite's unix
// VFS does) and by a Delete asking for it. Writes, truncations, syncs and
// deletions are counted; one of them can cut the power (it and every
// operation after it fail, and PowerCut returns what survives), or one
// operation of a kind can fail with an I/O error.
//
// A main database file has shared memory (the WAL index, which a WAL
// journal needs): ncruces's own, backed by a file under a directory of
// the memFS's own on the real file system, which SQLite maps. It is not
// durable: a power cut (PowerCut) or a crash (Crash) hands the new memFS
// a new, empty directory, as a reboot leaves no WAL index and as the
// first connection to open a WAL index after a crash empties it (SQLite
// rebuilds it from the WAL either way). Its operations are not counted:
// they write memory, not the file system.
type memFS struct {
	name   string
	shmDir string // where the files backing the shared memory are

	mu      sync.Mutex
	names   map[string]*inode // the directory as the process sees it
	durable map[string]*inode // the directory as a power cut leaves it
	ops     []string          // the kinds of the mutating operations so far
	cutAt   int               // cut the power at this operation (1-based); 0: never
	off     bool              // the power is cut
	failOp  string            // fail the failAt-th operation of this kind
	failAt  int
	failErr error
	failed  bool
	kinds   map[string]int
	perFile map[string]int // mutating operations by kind and file name ("sync /catalog.db-wal")
	written int64          // bytes written, to every file
	journal int64          // bytes written to journals (rollback or WAL)
}

type inode struct {
	data, synced []byte
	pending      []change // the changes made to synced since, in order
}

// A change is a write of data at off, or a truncation to size when data
// is nil.
type change struct {
	off  int64
	data []byte
	size int64
}

// apply returns b with c made to it.
func (c change) apply(b []byte) []byte {
	if c.data == nil {
		if c.size < int64(len(b)) {
			return b[:c.size]
		}
		return append(b, make([]byte, c.size-int64(len(b)))...)
	}
	if end := c.off + int64(len(c.data)); end > int64(len(b)) {
		b = append(b, make([]byte, end-int64(len(b)))...)
	}
	copy(b[c.off:], c.data)
	return b
}

var vfsSeq atomic.Int64

// newMemFS registers an empty memFS under a fresh name.
func newMemFS() *memFS {
	fs := &memFS{name: fmt.Sprintf("memfs%d", vfsSeq.Add(1)), names: map[string]*inode{}, durable: map[string]*inode{}, kinds: map[string]int{}, perFile: map[string]int{}}
	fs.shmDir = filepath.Join(shmRoot(), fs.name)
	if err := os.Mkdir(fs.shmDir, 0o700); err != nil {
		panic(err)
	}
	vfs.Register(fs.name, fs)
	return fs
}

// shmRoot is the directory, made once and removed by TestMain, holding
// the memFSes' shared-memory directories.
var shmRoot = sync.OnceValue(func() string {
	dir, err := os.MkdirTemp("", "sqlitestore-shm")
	if err != nil {
		panic(err)
	}
	shmRootMade.Store(true)
	return dir
})

var shmRootMade atomic.Bool

// removeShmRoot removes shmRoot's directory if it was made.
func removeShmRoot() {
	if shmRootMade.Load() {
		os.RemoveAll(shmRoot())
	}
}

// unregister removes fs from SQLite's VFS registry.
func (fs *memFS) unregister() { vfs.Unregister(fs.name) }

// PowerCut returns a new memFS holding what survives a power cut now:
// the durable directory, each file with its synced contents.
func (fs *memFS) PowerCut() *memFS { return fs.PowerCutKeeping(keepNone) }

// PowerCutKeeping is PowerCut on a disk that had written some of the
// changes made since each file's last Sync when the power went: those
// whose index in the file's changes since its last Sync keep reports.
// Writes reach a disk in any order, so keep may skip one and keep a later
// one.
func (fs *memFS) PowerCutKeeping(keep func(i int) bool) *memFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	next := newMemFS()
	for name, ino := range fs.durable {
		data := slices.Clone(ino.synced)
		for i, c := range ino.pending {
			if keep(i) {
				data = c.apply(data)
			}
		}
		c := &inode{data: data, synced: slices.Clone(data)}
		next.names[name], next.durable[name] = c, c
	}
	return next
}

// What a power cut keeps of the changes since a file's last sync: none;
// every other one, the first among them (a disk that wrote in another
// order than the process's); every other one, the second among them.
func keepNone(int) bool   { return false }
func keepEven(i int) bool { return i%2 == 0 }
func keepOdd(i int) bool  { return i%2 == 1 }

// Crash returns a new memFS holding what survives the process being
// killed now: every file as the process sees it, written or not synced
// (the operating system's page cache outlives the process).
func (fs *memFS) Crash() *memFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	next := newMemFS()
	for name, ino := range fs.names {
		c := &inode{data: slices.Clone(ino.data), synced: slices.Clone(ino.data)}
		next.names[name], next.durable[name] = c, c
	}
	return next
}

// Arm cuts the power at the nth mutating operation from now.
func (fs *memFS) Arm(n int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.cutAt = len(fs.ops) + n
}

// FailNext makes the nth operation of kind ("write", "sync", "truncate",
// "lock", "delete") from now fail with err.
func (fs *memFS) FailNext(kind string, n int, err error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.failOp, fs.failAt, fs.failErr, fs.failed = kind, fs.kinds[kind]+n, err, false
}

// Ops returns the number of mutating operations so far, and of each kind.
func (fs *memFS) Ops() (int, map[string]int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.ops), maps.Clone(fs.kinds)
}

// OpsByFile returns the number of mutating operations so far by kind and
// file name, as "sync /catalog.db-wal".
func (fs *memFS) OpsByFile() map[string]int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return maps.Clone(fs.perFile)
}

// Written returns the number of bytes written so far to every file (the
// database, its journal, temporary files), and to journals alone.
func (fs *memFS) Written() (all, journal int64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.written, fs.journal
}

// Off reports whether the power was cut; Failed whether the I/O error fired.
func (fs *memFS) Off() bool    { fs.mu.Lock(); defer fs.mu.Unlock(); return fs.off }
func (fs *memFS) Failed() bool { fs.mu.Lock(); defer fs.mu.Unlock(); return fs.failed }

// op counts an operation of kind on the named file and returns the error
// it fails with. fs.mu is held. Locks do not count as mutations.
func (fs *memFS) op(kind, name string, ioerr error) error {
	if fs.off {
		return sqlite3.IOERR
	}
	fs.kinds[kind]++
	if kind != "lock" {
		fs.perFile[kind+" "+name]++
	}
	if fs.failOp == kind && !fs.failed && fs.kinds[kind] == fs.failAt {
		fs.failed = true
		return fs.failErr
	}
	if kind == "lock" {
		return nil
	}
	fs.ops = append(fs.ops, kind)
	if fs.cutAt > 0 && len(fs.ops) >= fs.cutAt {
		fs.off = true
		return ioerr
	}
	return nil
}

func (fs *memFS) syncDir() { fs.durable = maps.Clone(fs.names) }

func (fs *memFS) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.off {
		return nil, flags, sqlite3.CANTOPEN
	}
	ino := fs.names[name]
	if name == "" { // a temporary file
		ino = &inode{}
	} else if ino == nil {
		if flags&vfs.OPEN_CREATE == 0 {
			return nil, flags, sqlite3.CANTOPEN
		}
		ino = &inode{}
		fs.names[name] = ino
	}
	journal := flags&(vfs.OPEN_MAIN_JOURNAL|vfs.OPEN_SUPER_JOURNAL|vfs.OPEN_WAL) != 0
	f := &memFile{fs: fs, name: name, ino: ino, journal: journal, dirSync: journal && flags&vfs.OPEN_CREATE != 0}
	if name != "" {
		f.shm = vfs.NewSharedMemory(filepath.Join(fs.shmDir, filepath.Base(name)+"-shm"), flags)
	}
	return f, flags, nil
}

func (fs *memFS) Delete(name string, syncDir bool) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.op("delete", name, sqlite3.IOERR_DELETE); err != nil {
		return err
	}
	if fs.names[name] == nil {
		return sqlite3.IOERR_DELETE_NOENT
	}
	delete(fs.names, name)
	if syncDir {
		fs.syncDir()
	}
	return nil
}

func (fs *memFS) Access(name string, _ vfs.AccessFlag) (bool, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.names[name] != nil, nil
}

func (fs *memFS) FullPathname(name string) (string, error) { return name, nil }

type memFile struct {
	fs      *memFS
	name    string
	ino     *inode
	journal bool // opened as a journal
	dirSync bool // the next Sync also syncs the directory
	lock    vfs.LockLevel
	shm     vfs.SharedMemory // a main database's WAL index; nil for other files
}

var _ vfs.FileSharedMemory = (*memFile)(nil)

func (f *memFile) Close() error {
	if f.shm != nil {
		return f.shm.Close()
	}
	return nil
}

// SharedMemory returns the file's WAL index, the same for its lifetime.
func (f *memFile) SharedMemory() vfs.SharedMemory { return f.shm }

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.fs.off {
		return 0, sqlite3.IOERR_READ
	}
	n := 0
	if off < int64(len(f.ino.data)) {
		n = copy(p, f.ino.data[off:])
	}
	if n < len(p) {
		clear(p[n:])
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.fs.op("write", f.name, sqlite3.IOERR_WRITE); err != nil {
		return 0, err
	}
	f.fs.written += int64(len(p))
	if f.journal {
		f.fs.journal += int64(len(p))
	}
	c := change{off: off, data: slices.Clone(p)}
	if c.data == nil {
		c.data = []byte{}
	}
	f.ino.pending = append(f.ino.pending, c)
	f.ino.data = c.apply(f.ino.data)
	return len(p), nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.fs.op("truncate", f.name, sqlite3.IOERR_TRUNCATE); err != nil {
		return err
	}
	c := change{size: size}
	f.ino.pending = append(f.ino.pending, c)
	f.ino.data = c.apply(f.ino.data)
	return nil
}

func (f *memFile) Sync(vfs.SyncFlag) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.fs.op("sync", f.name, sqlite3.IOERR_FSYNC); err != nil {
		return err
	}
	f.ino.synced, f.ino.pending = slices.Clone(f.ino.data), nil
	if f.dirSync {
		f.dirSync = false
		f.fs.syncDir()
	}
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return int64(len(f.ino.data)), nil
}

// Lock grants every level: one connection uses a memFS at a time.
func (f *memFile) Lock(l vfs.LockLevel) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.fs.off {
		return sqlite3.IOERR_LOCK
	}
	if err := f.fs.op("lock", f.name, sqlite3.IOERR_LOCK); err != nil {
		return err
	}
	f.lock = l
	return nil
}

func (f *memFile) Unlock(l vfs.LockLevel) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	f.lock = l
	return nil
}

func (f *memFile) CheckReservedLock() (bool, error) { return false, nil }

func (f *memFile) SectorSize() int { return 512 }

func (f *memFile) DeviceCharacteristics() vfs.DeviceCharacteristic {
	return vfs.IOCAP_POWERSAFE_OVERWRITE
}

// set replaces the named file with data, as the process and a power cut
// both see it. The file shares data's array until it is written (a write
// within it changes data too; one beyond it moves the file).
func (fs *memFS) set(name string, data []byte) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	data = data[:len(data):len(data)]
	ino := &inode{data: data, synced: data}
	fs.names[name], fs.durable[name] = ino, ino
}

// file returns the named file's contents as the process sees them, or nil
// when it does not exist.
func (fs *memFS) file(name string) []byte {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if ino := fs.names[name]; ino != nil {
		return slices.Clone(ino.data)
	}
	return nil
}

// size returns the named file's size, or -1 when it does not exist.
func (fs *memFS) size(name string) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if ino := fs.names[name]; ino != nil {
		return len(ino.data)
	}
	return -1
}
