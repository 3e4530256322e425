//go:build !linux

package sqlitestore

// statfsType does not tell the file system type outside Linux.
func statfsType(string) (int64, bool, error) { return 0, false, nil }
