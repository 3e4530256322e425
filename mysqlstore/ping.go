package mysqlstore

import (
	"context"

	"github.com/yachtmemory/sourcecatalog/finalize"
)

var _ finalize.Pinger = (*Store)(nil)

// Ping implements finalize.Pinger with one read of the receiver's vessels
// table outside any transaction: it fails when no connection can be made
// or the table cannot be read (no schema, another shape, no privilege).
// Errors wrap sourcecatalog.ErrStoreUnavailable with the driver's error.
func (s *Store) Ping(ctx context.Context) error { return s.ping(ctx, vesselsTable) }

// Ping is Store.Ping for the outbox: one read of its vessels table, for an
// agent's health check.
func (o *Outbox) Ping(ctx context.Context) error { return o.s.ping(ctx, outboxVesselsTable) }

// ping reads whether table has a row, which needs a connection and the
// table.
func (s *Store) ping(ctx context.Context, table string) error {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT 1 FROM "+table+" LIMIT 1) AS t").Scan(&n)
	return wrap("ping", err)
}
