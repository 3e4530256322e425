package files

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/yachtmemory/sourcecatalog/envelope"
)

// Write writes the header and chunks files of s into dir, creating dir when
// it is missing, so that either both files hold the new content or both
// keep what they held before (or stay absent).
//
// Before anything changes, Write checks that neither target exists as
// anything but a regular file (a directory, a symbolic link or a device is
// an error). It then writes both files under temporary names in dir and
// syncs them, keeps each existing target under a backup name (a hard link,
// or the file itself moved aside where the file system has no hard links),
// and renames the chunks file into place, then the header, syncing dir
// after each rename. When any step fails, the targets are restored from
// the backups, the temporary files and backups are removed, a dir that
// Write created is removed again, and the error is returned. On success
// the backups are removed; one that cannot be removed is left behind.
//
// A reader never sees a partially written file. A crash (power loss, a
// killed process) between the two renames leaves the new chunks file
// beside the old header file. That pair fails verification, since the
// header names the snapshot and its document hash covers every record,
// unless the new chunks file holds the old bytes, and then it is the old
// pair. The old chunks file is still in dir under its backup name
// (".NAME.*.bak"), and running Write again completes the pair. Two files
// cannot be replaced in one atomic step, so this window cannot be closed
// without another layout on disk. Without hard links, a crash while a
// target is moved aside can also leave it missing, its old content under
// the backup name. A crash at any other point leaves both old or both new,
// with at most stray temporary and backup files beside them.
//
// If restoring a backup fails after an error, the returned error says so
// and names the backup that holds the old content.
func Write(dir string, s *envelope.Snapshot, headerName, chunksName string) (err error) {
	created, err := mkdirAll(dir)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			for _, d := range created {
				fsys.Remove(d) // fails harmlessly when not empty
			}
		}
	}()
	targets := []*target{
		{path: filepath.Join(dir, chunksName), data: Chunks(s)},
		{path: filepath.Join(dir, headerName), data: Header(s)},
	}
	for _, t := range targets {
		if err := t.check(); err != nil {
			return err
		}
	}
	defer func() {
		if err != nil {
			for _, t := range targets {
				if rerr := t.restore(); rerr != nil {
					err = errors.Join(err, rerr)
				}
			}
			fsys.SyncDir(dir) // best effort: the restored state is already visible
		}
	}()
	for _, t := range targets {
		if t.tmp, err = writeTemp(dir, filepath.Base(t.path), t.data); err != nil {
			return err
		}
	}
	for _, t := range targets {
		if err := t.keepOld(dir); err != nil {
			return err
		}
	}
	for _, t := range targets {
		if err := t.replace(dir); err != nil {
			return err
		}
	}
	for _, t := range targets {
		if t.backup != "" {
			fsys.Remove(t.backup) // best effort; see the doc comment
		}
	}
	return nil
}

// A target is one file Write replaces, and the state needed to undo it.
type target struct {
	path     string
	data     []byte
	existed  bool   // path held a regular file before Write
	tmp      string // the new content under a temporary name, until renamed
	backup   string // the old content under a backup name
	movedOut bool   // path was renamed to backup, not linked
	replaced bool   // tmp was renamed to path
}

// check refuses a target that exists as anything but a regular file.
func (t *target) check() error {
	fi, err := fsys.Lstat(t.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		kind := "a special file"
		if fi.IsDir() {
			kind = "a directory"
		} else if fi.Mode()&fs.ModeSymlink != 0 {
			kind = "a symbolic link"
		}
		return fmt.Errorf("%s is %s, not a regular file", t.path, kind)
	}
	t.existed = true
	return nil
}

// keepOld gives the old content of the target a backup name, keeping it in
// place when the file system supports hard links.
func (t *target) keepOld(dir string) error {
	if !t.existed {
		return nil
	}
	name, err := randomName(dir, filepath.Base(t.path), ".bak")
	if err != nil {
		return err
	}
	if err := fsys.Link(t.path, name); err != nil {
		if err := fsys.Rename(t.path, name); err != nil {
			return err
		}
		t.movedOut = true
	}
	t.backup = name
	return nil
}

// replace renames the new content into place and syncs dir, so that the
// rename is durable before the next one begins.
func (t *target) replace(dir string) error {
	if err := fsys.Rename(t.tmp, t.path); err != nil {
		return err
	}
	t.tmp, t.replaced = "", true
	return fsys.SyncDir(dir)
}

// restore undoes what Write did to the target: it removes the temporary
// file and brings back the old content, or removes the new file when there
// was none. It returns an error only when the old content could not be
// put back.
func (t *target) restore() error {
	if t.tmp != "" {
		fsys.Remove(t.tmp) // best effort: a stray temporary file is harmless
		t.tmp = ""
	}
	switch {
	case t.backup != "" && (t.replaced || t.movedOut):
		if err := fsys.Rename(t.backup, t.path); err != nil {
			return fmt.Errorf("restoring %s: %w; its old content is in %s", t.path, err, t.backup)
		}
	case t.backup != "":
		fsys.Remove(t.backup) // the target was never touched
	case t.replaced:
		fsys.Remove(t.path) // it did not exist before
	}
	t.backup, t.replaced, t.movedOut = "", false, false
	return nil
}

// mkdirAll creates dir and any missing parents, and returns the directories
// it created, deepest first.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		_, err := fsys.Lstat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return missing, nil
}

// writeTemp writes b to a new temporary file in dir named after name, with
// mode 0644, syncs it and returns its path. The file is removed on failure.
func writeTemp(dir, name string, b []byte) (path string, err error) {
	f, err := fsys.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			f.Close()
			fsys.Remove(f.Name())
		}
	}()
	if _, err := f.Write(b); err != nil {
		return "", err
	}
	if err := f.Chmod(0o644); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// randomName returns a path in dir, hidden and named after name, that is
// very unlikely to exist; Link refuses an existing one.
func randomName(dir, name, suffix string) (string, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	return filepath.Join(dir, "."+name+"."+hex.EncodeToString(r[:])+suffix), nil
}

// fileSystem is every file system operation Write performs, so that tests
// can make each one fail in turn.
type fileSystem interface {
	Lstat(name string) (fs.FileInfo, error)
	MkdirAll(path string, perm fs.FileMode) error
	CreateTemp(dir, pattern string) (tempFile, error)
	Link(oldname, newname string) error
	Rename(oldname, newname string) error
	Remove(name string) error
	SyncDir(dir string) error
}

// tempFile is the part of *os.File that writeTemp uses.
type tempFile interface {
	Name() string
	Write(b []byte) (int, error)
	Chmod(mode fs.FileMode) error
	Sync() error
	Close() error
}

var fsys fileSystem = osFileSystem{}

// osFileSystem is the fileSystem of package os.
type osFileSystem struct{}

func (osFileSystem) Lstat(name string) (fs.FileInfo, error)       { return os.Lstat(name) }
func (osFileSystem) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }
func (osFileSystem) Link(oldname, newname string) error           { return os.Link(oldname, newname) }
func (osFileSystem) Rename(oldname, newname string) error         { return os.Rename(oldname, newname) }
func (osFileSystem) Remove(name string) error                     { return os.Remove(name) }

func (osFileSystem) CreateTemp(dir, pattern string) (tempFile, error) {
	return os.CreateTemp(dir, pattern)
}

// SyncDir makes the entries of dir durable: the renames done in it.
func (osFileSystem) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	return nil
}
