package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
)

var errInjected = errors.New("injected failure")

// faultFS is the real file system with failures injected: fail decides,
// for the i-th operation (counted from 0) and its name, whether it fails.
// Without hard links, every Link fails as on a file system that has none.
type faultFS struct {
	osFileSystem
	noLinks bool
	fail    func(i int, op string) bool
	ops     []string // the operations attempted, in order
}

func (f *faultFS) step(op string) error {
	i := len(f.ops)
	f.ops = append(f.ops, op)
	if f.fail != nil && f.fail(i, op) {
		return fmt.Errorf("%s: %w", op, errInjected)
	}
	return nil
}

func (f *faultFS) Lstat(name string) (fs.FileInfo, error) {
	if err := f.step("lstat"); err != nil {
		return nil, err
	}
	return f.osFileSystem.Lstat(name)
}

func (f *faultFS) MkdirAll(path string, perm fs.FileMode) error {
	if err := f.step("mkdir"); err != nil {
		return err
	}
	return f.osFileSystem.MkdirAll(path, perm)
}

func (f *faultFS) CreateTemp(dir, pattern string) (tempFile, error) {
	if err := f.step("create"); err != nil {
		return nil, err
	}
	file, err := f.osFileSystem.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &faultFile{file, f}, nil
}

func (f *faultFS) Link(oldname, newname string) error {
	if err := f.step("link"); err != nil {
		return err
	}
	if f.noLinks {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errors.ErrUnsupported}
	}
	return f.osFileSystem.Link(oldname, newname)
}

func (f *faultFS) Rename(oldname, newname string) error {
	if err := f.step("rename"); err != nil {
		return err
	}
	return f.osFileSystem.Rename(oldname, newname)
}

func (f *faultFS) Remove(name string) error {
	if err := f.step("remove"); err != nil {
		return err
	}
	return f.osFileSystem.Remove(name)
}

func (f *faultFS) SyncDir(dir string) error {
	if err := f.step("syncdir"); err != nil {
		return err
	}
	return f.osFileSystem.SyncDir(dir)
}

type faultFile struct {
	tempFile
	fs *faultFS
}

func (f *faultFile) Write(b []byte) (int, error) {
	if err := f.fs.step("write"); err != nil {
		return 0, err
	}
	return f.tempFile.Write(b)
}

func (f *faultFile) Chmod(mode fs.FileMode) error {
	if err := f.fs.step("chmod"); err != nil {
		return err
	}
	return f.tempFile.Chmod(mode)
}

func (f *faultFile) Sync() error {
	if err := f.fs.step("sync"); err != nil {
		return err
	}
	return f.tempFile.Sync()
}

func (f *faultFile) Close() error {
	if err := f.fs.step("close"); err != nil {
		return err
	}
	return f.tempFile.Close()
}

// withFS makes Write use f for the rest of the test.
func withFS(t *testing.T, f fileSystem) {
	old := fsys
	fsys = f
	t.Cleanup(func() { fsys = old })
}

// tree maps every entry under root to its mode and, for a file, content.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		m[rel] = fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[rel] += " " + string(b)
		}
		return nil
	})
	require.NoError(t, err)
	return m
}

const oldChunks, oldHeader = "old chunks\n", "old header\n"

// writeScenario is the state of the output directory before Write.
type writeScenario struct {
	name                   string
	dir                    string // relative to the test's base directory
	oldChunks, oldHeader   bool   // the targets exist with old content (mode 0600)
	noLinks                bool
	headerName, chunksName string
}

func writeScenarios() []writeScenario {
	var out []writeScenario
	for _, links := range []bool{true, false} {
		for _, s := range []writeScenario{
			{name: "missing dir", dir: "a/b"},
			{name: "empty dir", dir: "out"},
			{name: "both old", dir: "out", oldChunks: true, oldHeader: true},
			{name: "old chunks only", dir: "out", oldChunks: true},
			{name: "old header only", dir: "out", oldHeader: true},
		} {
			s.noLinks = !links
			if !links {
				s.name += ", no hard links"
			}
			s.headerName, s.chunksName = HeaderName, ChunksName
			out = append(out, s)
		}
	}
	return out
}

// setup creates the scenario under a new base directory and returns the
// base and the output directory.
func (s writeScenario) setup(t *testing.T) (base, dir string) {
	t.Helper()
	base = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(base, "unrelated"), []byte("x"), 0o644))
	dir = filepath.Join(base, filepath.FromSlash(s.dir))
	if s.oldChunks || s.oldHeader || s.dir == "out" {
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	for _, f := range []struct {
		old        bool
		name, data string
	}{{s.oldChunks, s.chunksName, oldChunks}, {s.oldHeader, s.headerName, oldHeader}} {
		if f.old {
			require.NoError(t, os.WriteFile(filepath.Join(dir, f.name), []byte(f.data), 0o600))
		}
	}
	return base, dir
}

func boat(t *testing.T) *envelope.Snapshot {
	t.Helper()
	s, err := examples.BoatSnapshot()
	require.NoError(t, err)
	return s
}

// want returns the tree under base after a successful Write.
func (s writeScenario) want(t *testing.T, before map[string]string, snap *envelope.Snapshot) map[string]string {
	want := map[string]string{}
	for k, v := range before {
		want[k] = v
	}
	rel := filepath.FromSlash(s.dir)
	for d := rel; d != "."; d = filepath.Dir(d) {
		want[d] = "drwxr-xr-x"
	}
	want[filepath.Join(rel, s.chunksName)] = "-rw-r--r-- " + string(Chunks(snap))
	want[filepath.Join(rel, s.headerName)] = "-rw-r--r-- " + string(Header(snap))
	return want
}

// Write leaves both targets new after success and both as they were after
// a failure of any single file system operation.
func TestWriteFailureAtEachStep(t *testing.T) {
	snap := boat(t)
	for _, s := range writeScenarios() {
		t.Run(s.name, func(t *testing.T) {
			base, dir := s.setup(t)
			before := tree(t, base)
			clean := &faultFS{noLinks: s.noLinks}
			withFS(t, clean)
			require.NoError(t, Write(dir, snap, s.headerName, s.chunksName))
			assert.Equal(t, s.want(t, before, snap), tree(t, base))
			require.NotEmpty(t, clean.ops)

			for k, op := range clean.ops {
				t.Run(fmt.Sprintf("%d %s", k, op), func(t *testing.T) {
					base, dir := s.setup(t)
					before := tree(t, base)
					f := &faultFS{noLinks: s.noLinks, fail: func(i int, _ string) bool { return i == k }}
					withFS(t, f)
					err := Write(dir, snap, s.headerName, s.chunksName)
					after := tree(t, base)
					switch op {
					case "link": // falls back to moving the old file aside
						require.NoError(t, err)
						assert.Equal(t, s.want(t, before, snap), after)
					case "remove": // only removes a backup after success
						require.NoError(t, err)
						want := s.want(t, before, snap)
						for name, v := range after {
							if _, ok := want[name]; !ok {
								assert.Regexp(t, `^\.(chunks|header)\.json\.[0-9a-f]{16}\.bak$`, filepath.Base(name))
								assert.Contains(t, []string{"-rw------- " + oldChunks, "-rw------- " + oldHeader}, v)
								want[name] = v
							}
						}
						assert.Equal(t, want, after)
					default:
						require.ErrorIs(t, err, errInjected)
						assert.Equal(t, before, after, "nothing changed, nothing left behind")
					}
				})
			}
		})
	}
}

// When the old content cannot be put back, the error says where it is.
func TestWriteRestoreFails(t *testing.T) {
	snap := boat(t)
	for _, noLinks := range []bool{false, true} {
		t.Run(fmt.Sprintf("no hard links %v", noLinks), func(t *testing.T) {
			s := writeScenario{dir: "out", oldChunks: true, oldHeader: true, headerName: HeaderName, chunksName: ChunksName}
			_, dir := s.setup(t)
			// The rename of the new header fails, and so does every rename
			// after it: the chunks file cannot be restored.
			renames, moveAside := 0, 0
			if noLinks {
				moveAside = 2
			}
			f := &faultFS{noLinks: noLinks, fail: func(_ int, op string) bool {
				if op == "rename" {
					renames++
				}
				return renames > moveAside+1
			}}
			withFS(t, f)
			err := Write(dir, snap, s.headerName, s.chunksName)
			require.ErrorIs(t, err, errInjected)
			// Each old file is in place, or the error names the backup
			// that holds it; the chunks file, renamed first, cannot be
			// in place.
			for _, f := range []struct{ name, old string }{{ChunksName, oldChunks}, {HeaderName, oldHeader}} {
				path := filepath.Join(dir, f.name)
				if b, err := os.ReadFile(path); err == nil && string(b) == f.old {
					assert.NotEqual(t, ChunksName, f.name, "the chunks file was restored")
					continue
				}
				assert.Contains(t, err.Error(), "restoring "+path)
				backups, globErr := filepath.Glob(filepath.Join(dir, "."+f.name+".*.bak"))
				require.NoError(t, globErr)
				require.Len(t, backups, 1)
				assert.Contains(t, err.Error(), "its old content is in "+backups[0])
				b, readErr := os.ReadFile(backups[0])
				require.NoError(t, readErr)
				assert.Equal(t, f.old, string(b))
			}
		})
	}
}

// A target that exists as anything but a regular file is refused before
// anything changes.
func TestWriteRefusesNonRegularTargets(t *testing.T) {
	snap := boat(t)
	for _, tc := range []struct {
		name   string
		target string
		make   func(path string) error
		want   string
	}{
		{"header is a directory", HeaderName, func(p string) error { return os.Mkdir(p, 0o755) }, "is a directory"},
		{"chunks is a directory", ChunksName, func(p string) error { return os.Mkdir(p, 0o755) }, "is a directory"},
		{"header is a symbolic link", HeaderName, func(p string) error { return os.Symlink("elsewhere.json", p) }, "is a symbolic link"},
		{"chunks is a symbolic link", ChunksName, func(p string) error { return os.Symlink("elsewhere.json", p) }, "is a symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := writeScenario{dir: "out", oldChunks: tc.target != ChunksName, oldHeader: tc.target != HeaderName, headerName: HeaderName, chunksName: ChunksName}
			base, dir := s.setup(t)
			require.NoError(t, tc.make(filepath.Join(dir, tc.target)))
			before := tree(t, base)
			err := Write(dir, snap, HeaderName, ChunksName)
			require.Error(t, err)
			assert.Contains(t, err.Error(), filepath.Join(dir, tc.target)+" "+tc.want+", not a regular file")
			assert.Equal(t, before, tree(t, base))
		})
	}
}

// The names Write is given are the names it writes.
func TestWriteNames(t *testing.T) {
	snap := boat(t)
	dir := t.TempDir()
	require.NoError(t, Write(dir, snap, "h", "c"))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"c", "h"}, names)
	b, err := os.ReadFile(filepath.Join(dir, "c"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), "[\n"))
}
