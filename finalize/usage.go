package finalize

import (
	"context"
	"math"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
)

// Usage is how much of each staging bound ([Limits]) a vessel uses. A full
// bound fails closed with sourcecatalog.ErrStagingExhausted, so watch Usage and warn
// before it fills: with DefaultLimits and no [WithRetention], a vessel
// stops finalizing after 32 finalized snapshots — about eight hours of
// 15-minute cycles — until an operator prunes.
//
// Finalize reports the usage after its call in [Outcome]; [Receiver.Usage]
// reports it at any time. Each Gauge is exact for the committed state it
// was read from.
type Usage struct {
	IncompleteSnapshots Gauge // snapshots still staging
	IncompleteBytes     Gauge // their staged bytes
	RetainedSnapshots   Gauge // finalized snapshots kept: activated, superseded, rejected
	RetainedBytes       Gauge // their staged bytes
}

// A Gauge is an amount used against its bound.
type Gauge struct {
	Used  int64
	Limit int64
}

// Fraction is Used/Limit: 0 when nothing is used, 1 when the bound is
// full. It exceeds 1 when the limits were lowered below what is already
// staged. A bound of zero or less admits nothing and reads as full: 1, or
// +Inf when something is used. A byte bound may refuse a message before
// its Fraction reaches 1.
func (g Gauge) Fraction() float64 {
	if g.Limit <= 0 {
		if g.Used > 0 {
			return math.Inf(1)
		}
		return 1
	}
	return float64(g.Used) / float64(g.Limit)
}

// fits reports whether n more fit the bound, whatever the values.
func (g Gauge) fits(n int64) bool { return g.Used <= g.Limit && n <= g.Limit-g.Used }

// Highest is the largest Fraction of u's gauges: a server may warn when it
// reaches, say, 0.8.
func (u Usage) Highest() float64 {
	return max(u.IncompleteSnapshots.Fraction(), u.IncompleteBytes.Fraction(),
		u.RetainedSnapshots.Fraction(), u.RetainedBytes.Fraction())
}

// Usage returns the vessel's usage of its staging bounds. Errors:
// ErrInvalidValue for uuid.Nil; Store errors.
func (r *Receiver) Usage(ctx context.Context, vesselID uuid.UUID) (Usage, error) {
	var u Usage
	err := r.withVessel(ctx, "Usage", vesselID, func(tx Tx) error {
		var err error
		u, _, err = r.usage(ctx, tx)
		return err
	})
	if err != nil {
		return Usage{}, err
	}
	return u, nil
}

// usage sums the vessel's staged snapshots by bound, and returns them too.
func (r *Receiver) usage(ctx context.Context, tx Tx) (Usage, []Snapshot, error) {
	all, err := tx.Snapshots(ctx)
	if err != nil {
		return Usage{}, nil, err
	}
	u := Usage{
		IncompleteSnapshots: Gauge{Limit: int64(r.limits.IncompleteSnapshots)},
		IncompleteBytes:     Gauge{Limit: r.limits.IncompleteBytes},
		RetainedSnapshots:   Gauge{Limit: int64(r.limits.RetainedSnapshots)},
		RetainedBytes:       Gauge{Limit: r.limits.RetainedBytes},
	}
	for _, s := range all {
		if s.State == StateStaging {
			u.IncompleteSnapshots.Used++
			u.IncompleteBytes.Used += s.StagedBytes
		} else {
			u.RetainedSnapshots.Used++
			u.RetainedBytes.Used += s.StagedBytes
		}
	}
	return u, all, nil
}

// admitNewSnapshot checks that one more staging snapshot of size bytes
// fits, and returns the usage once it is staged.
func (r *Receiver) admitNewSnapshot(ctx context.Context, tx Tx, size int64) (Usage, error) {
	u, _, err := r.usage(ctx, tx)
	if err != nil {
		return Usage{}, err
	}
	if !u.IncompleteSnapshots.fits(1) {
		return Usage{}, sourcecatalog.Errorf(sourcecatalog.ErrStagingExhausted, "too many incomplete snapshots staged for the vessel")
	}
	if !u.IncompleteBytes.fits(size) {
		return Usage{}, sourcecatalog.Errorf(sourcecatalog.ErrStagingExhausted, "incomplete staging bytes exhausted for the vessel")
	}
	u.IncompleteSnapshots.Used++
	u.IncompleteBytes.Used += size
	return u, nil
}

// admitBytes checks that size more bytes of incomplete staging fit, and
// returns the usage once they are staged.
func (r *Receiver) admitBytes(ctx context.Context, tx Tx, size int64) (Usage, error) {
	u, _, err := r.usage(ctx, tx)
	if err != nil {
		return Usage{}, err
	}
	if !u.IncompleteBytes.fits(size) {
		return Usage{}, sourcecatalog.Errorf(sourcecatalog.ErrStagingExhausted, "incomplete staging bytes exhausted for the vessel")
	}
	u.IncompleteBytes.Used += size
	return u, nil
}
