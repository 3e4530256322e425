package fleetfloor

import (
	"context"
	"fmt"
	"os"

	"github.com/google/uuid"
)

// AppendFile is the Sink of the SQLite floor: each body appended to one
// file, then fdatasync(2) before the answer.
type AppendFile struct{ f *os.File }

var _ Sink = (*AppendFile)(nil)

// CreateAppendFile creates the file at path, which must not exist.
func CreateAppendFile(path string) (*AppendFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("fleetfloor: %w", err)
	}
	return &AppendFile{f: f}, nil
}

// Message implements Sink: one write(2) of body (atomic with O_APPEND)
// and one fdatasync(2).
func (a *AppendFile) Message(_ context.Context, _ uuid.UUID, body []byte) error {
	if _, err := a.f.Write(body); err != nil {
		return fmt.Errorf("fleetfloor: %w", err)
	}
	if err := datasync(a.f); err != nil {
		return fmt.Errorf("fleetfloor: %w", err)
	}
	return nil
}

// Close closes the file.
func (a *AppendFile) Close() error { return a.f.Close() }
