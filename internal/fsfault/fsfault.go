// Package fsfault breaks file systems under the tests that need it: a
// tmpfs of their own, filled to the last byte. Mounting needs root: off
// CI such a test skips without it, under CI=true it fails.
package fsfault

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// NeedRoot skips a test that must run as root, except under CI=true,
// where it fails; what names it.
func NeedRoot(tb testing.TB, what string) {
	tb.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s must run as root under CI=true", what)
	}
	tb.Skipf("not root: skipping %s", what)
}

// Tmpfs mounts a tmpfs of size bytes on a new directory, unmounted when
// the test ends, and returns the directory. The caller checks NeedRoot.
func Tmpfs(tb testing.TB, size int) string {
	tb.Helper()
	dir := tb.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(size)+",mode=0700", "tmpfs", dir).CombinedOutput()
	require.NoError(tb, err, "mount: %s", out)
	tb.Cleanup(func() { // before TempDir's removal: cleanups run last first
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			tb.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// ReadOnly makes directory dir read-only under whatever has files open
// in it: a read-only bind mount of dir over itself. The files already
// open stay writable, as under a directory whose permissions changed
// under a running service, while a file opened anew for writing, or
// created, is refused (EROFS, which root meets as well). It returns
// mend, which removes that mount lazily (an open attempt may still hold
// a file open on it) and may be called more than once; the test's
// cleanup calls it too. The caller checks NeedRoot.
func ReadOnly(tb testing.TB, dir string) (mend func()) {
	tb.Helper()
	out, err := exec.Command("mount", "--bind", "-o", "ro", dir, dir).CombinedOutput()
	require.NoError(tb, err, "mount: %s", out)
	mend = sync.OnceFunc(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			tb.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	tb.Cleanup(mend) // before Tmpfs's: cleanups run last first
	return mend
}

// FillDisk writes the new file path until its file system is full.
func FillDisk(tb testing.TB, path string) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(tb, err)
	defer f.Close()
	buf := make([]byte, 1<<16)
	for n := len(buf); n > 0; n /= 2 { // then ever smaller writes fill the last page
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				require.ErrorIs(tb, err, syscall.ENOSPC)
				break
			}
		}
	}
}
