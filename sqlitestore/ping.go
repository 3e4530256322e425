package sqlitestore

import (
	"context"
	"fmt"

	"github.com/yachtmemory/sourcecatalog/finalize"
)

var _ finalize.Pinger = (*Store)(nil)

// Ping implements finalize.Pinger: it fails with ErrClosed or ErrPoisoned
// when the Store cannot run a transaction, and otherwise reads the
// schema's vessels table once, outside a write transaction, which reads
// the file: a file that fails to read poisons the Store (ErrPoisoned), and
// another process holding the write lock past the busy timeout is
// ErrLocked, and a path that no longer names the file opened poisons it
// too (ErrFileChanged). It waits for the Store's transaction in progress while ctx
// lasts. Closing the Store makes Ping fail, as it does the Outbox's.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.mu.LockContext(ctx); err != nil {
		return fmt.Errorf("sqlitestore: ping: waiting for the store's other transactions: %w", err)
	}
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	var n int
	err := s.conn.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT 1 FROM vessels LIMIT 1)").Scan(&n)
	if err != nil {
		return s.classify(ctx, "ping", err)
	}
	return s.checkMoved("ping")
}

// Ping is Store.Ping, for an agent's health check of its outbox.
func (o *Outbox) Ping(ctx context.Context) error { return o.s.Ping(ctx) }
