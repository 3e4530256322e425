package memstore

import (
	"context"

	"github.com/yachtmemory/sourcecatalog/finalize"
)

var _ finalize.Pinger = (*Store)(nil)

// Ping implements finalize.Pinger: an in-memory store always serves, so
// it returns ctx's error alone.
func (s *Store) Ping(ctx context.Context) error { return ctx.Err() }
