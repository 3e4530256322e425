//go:build unix

package sqlitestore

import (
	"os"
	"syscall"
)

// DupLock returns a copy of the Store's lifetime lock file descriptor, as
// a process forked by another goroutine holds it until it execs.
func (s *Store) DupLock() (*os.File, error) {
	fd, err := syscall.Dup(int(s.lock.Fd()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), s.lock.Name()), nil
}
