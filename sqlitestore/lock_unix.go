//go:build unix

package sqlitestore

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lifetimeLock opens the lock file at path (creating it) and takes a
// non-blocking flock on it, exclusive or shared, held until the file is
// closed. A lock held against it fails with ErrLocked at once.
func lifetimeLock(path string, exclusive bool) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return nil, invalid(path, "the lock file is a symlink")
	}
	if err != nil {
		return nil, unavailable("open the lock file", path, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, invalid(path, "the lock file is not a regular file")
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return nil, fmt.Errorf("sqlitestore: %s: %w", path, ErrLocked)
	case err != nil:
		f.Close()
		return nil, unavailable("lock", path, err)
	}
	return f, nil
}

// releaseLock releases the lifetime lock f and closes it. The lock is
// released explicitly first: a process forked by another goroutine holds
// a copy of f until it execs (O_CLOEXEC closes it only then), and the
// flock, which belongs to the open file, would outlive the Close until
// then, so that a reopen right after Close could find it held.
func releaseLock(f *os.File) error {
	var err error
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		if err != syscall.EINTR {
			break
		}
	}
	return errors.Join(err, f.Close())
}
