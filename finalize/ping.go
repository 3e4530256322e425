package finalize

import (
	"context"

	"github.com/yachtmemory/sourcecatalog"
)

// A Pinger is a Store that can tell whether it serves, for a server's
// health check. Stores should implement it; memstore and the database
// stores of this module do. It is an interface of its own, not a method
// of Store, so that a Store written before it still compiles.
type Pinger interface {
	// Ping returns nil when the store can serve a transaction now, and
	// otherwise why not: its connection is lost, its file cannot be read,
	// it is closed or must be reopened. It returns ctx's error when ctx
	// is done. It reads at most, writes nothing, creates no vessel (a
	// VesselLister does not list one for it) and takes no vessel's lock;
	// it may wait for a transaction in progress while ctx lasts. It must
	// be safe for concurrent use.
	Ping(ctx context.Context) error
}

// Ping reports whether the Receiver's store can serve, for a health
// check: the store's own Ping when it is a [Pinger], else, when it is a
// [VesselLister], a listing of the vessels with staging work (a read).
// It returns nil; the store's error classed as every method's — wrapping
// sourcecatalog.ErrStoreUnavailable and the cause, unless the store gave
// it a class (a MariaDB schema that is not current is ErrInvalidValue) —
// or ctx's, when the store does not serve or ctx is done; or an error
// wrapping sourcecatalog.ErrUnsupported when the store is neither.
func (r *Receiver) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return unavailable(err, "pinging the store")
	}
	switch s := r.store.(type) {
	case Pinger:
		return unavailable(s.Ping(ctx), "the store does not answer")
	case VesselLister:
		_, err := s.Vessels(ctx, true)
		return unavailable(err, "the store does not answer")
	}
	return sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "the store cannot be pinged")
}
