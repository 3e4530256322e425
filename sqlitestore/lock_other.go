//go:build !unix

package sqlitestore

import (
	"errors"
	"os"
)

// lifetimeLock is not implemented outside Unix: Open fails.
func lifetimeLock(path string, exclusive bool) (*os.File, error) {
	return nil, unavailable("lock", path, errors.New("lifetime locks need flock, which this platform lacks"))
}

// releaseLock closes f.
func releaseLock(f *os.File) error { return f.Close() }
