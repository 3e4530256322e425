package sqlitestore

import (
	"sync"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"
)

// The Store opens its files through a VFS of its own that wraps another
// (the operating system's, or a test's) and changes one thing: a write,
// truncation, sync, preallocation or creation that fails for want of
// space (ENOSPC, or EDQUOT for a quota) fails with SQLITE_FULL, as
// SQLite's own unix VFS does. The Go VFS underneath reports it as a plain
// I/O error ("disk I/O error"), so without the wrapper a full disk would
// not read as one.

// fullVFS wraps the VFS registered as inner ("" for the operating
// system's).
type fullVFS struct{ inner string }

// wrappedVFS registers, once, the fullVFS over the VFS named inner and
// returns its name.
func wrappedVFS(inner string) string {
	name := "sqlitestore"
	if inner != "" {
		name += "+" + inner
	}
	if _, loaded := registered.LoadOrStore(name, true); !loaded {
		vfs.Register(name, fullVFS{inner: inner})
	}
	return name
}

var registered sync.Map // names of the fullVFSes registered

func (v fullVFS) base() vfs.VFS { return vfs.Find(v.inner) }

func (v fullVFS) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, flags, err := v.base().Open(name, flags)
	return wrapFile(f, err), flags, noSpace(err)
}

// OpenFilename is what ncruces calls when the wrapped VFS has it (the
// operating system's does, and opens nothing through Open).
func (v fullVFS) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	b := v.base()
	ff, ok := b.(vfs.VFSFilename)
	if !ok {
		return v.Open(name.String(), flags)
	}
	f, flags, err := ff.OpenFilename(name, flags)
	return wrapFile(f, err), flags, noSpace(err)
}

func (v fullVFS) Delete(name string, syncDir bool) error { return v.base().Delete(name, syncDir) }

func (v fullVFS) Access(name string, flags vfs.AccessFlag) (bool, error) {
	return v.base().Access(name, flags)
}

func (v fullVFS) FullPathname(name string) (string, error) { return v.base().FullPathname(name) }

// noSpace returns err as SQLITE_FULL when it says the file system has no
// space left, and unchanged otherwise.
func noSpace(err error) error {
	if err != nil && outOfSpace(err) {
		return vfs.SystemError(err, sqlite3.FULL)
	}
	return err
}

func wrapFile(f vfs.File, err error) vfs.File {
	if err != nil || f == nil {
		return f
	}
	return &fullFile{File: f}
}

// fullFile is a file of a fullVFS. It passes on the optional interfaces
// of the operating system's files that SQLite uses with a rollback
// journal.
type fullFile struct{ vfs.File }

var (
	_ vfs.FileLockState          = (*fullFile)(nil)
	_ vfs.FileHasMoved           = (*fullFile)(nil)
	_ vfs.FileSizeHint           = (*fullFile)(nil)
	_ vfs.FilePowersafeOverwrite = (*fullFile)(nil)
	_ vfs.FileUnwrap             = (*fullFile)(nil)
	_ vfs.FileSharedMemory       = (*fullFile)(nil)
)

// SharedMemory passes on the wrapped file's, which only a WAL journal
// uses (measured in BenchmarkJournalModes; the Store keeps TRUNCATE).
func (f *fullFile) SharedMemory() vfs.SharedMemory {
	if m, ok := f.File.(vfs.FileSharedMemory); ok {
		return m.SharedMemory()
	}
	return nil
}

func (f *fullFile) Unwrap() vfs.File { return f.File }

func (f *fullFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	return n, noSpace(err)
}

func (f *fullFile) Truncate(size int64) error { return noSpace(f.File.Truncate(size)) }

func (f *fullFile) Sync(flags vfs.SyncFlag) error { return noSpace(f.File.Sync(flags)) }

func (f *fullFile) SizeHint(size int64) error {
	if h, ok := f.File.(vfs.FileSizeHint); ok {
		return noSpace(h.SizeHint(size))
	}
	return sqlite3.NOTFOUND
}

func (f *fullFile) LockState() vfs.LockLevel {
	if l, ok := f.File.(vfs.FileLockState); ok {
		return l.LockState()
	}
	return vfs.LOCK_EXCLUSIVE + 1 // unknown, as SQLite says when a VFS cannot tell
}

func (f *fullFile) HasMoved() (bool, error) {
	if m, ok := f.File.(vfs.FileHasMoved); ok {
		return m.HasMoved()
	}
	return false, nil
}

func (f *fullFile) PowersafeOverwrite() bool {
	if p, ok := f.File.(vfs.FilePowersafeOverwrite); ok {
		return p.PowersafeOverwrite()
	}
	return f.File.DeviceCharacteristics()&vfs.IOCAP_POWERSAFE_OVERWRITE != 0
}

func (f *fullFile) SetPowersafeOverwrite(psow bool) {
	if p, ok := f.File.(vfs.FilePowersafeOverwrite); ok {
		p.SetPowersafeOverwrite(psow)
	}
}
