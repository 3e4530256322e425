package memstore

import (
	"context"
	"maps"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

var _ finalize.VesselLister = (*Store)(nil)

// Vessels implements finalize.VesselLister. It waits for a transaction in
// progress on a vessel to end before reading that vessel.
func (s *Store) Vessels(ctx context.Context, staging bool) ([]uuid.UUID, error) {
	s.mu.Lock()
	all := maps.Clone(s.vessels)
	s.mu.Unlock()
	var ids []uuid.UUID
	for id, v := range all {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if v.listed(staging) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// listed reports whether Vessels lists v.
func (v *vessel) listed(staging bool) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, s := range v.snapshots {
		if !staging || s.State == finalize.StateStaging {
			return true
		}
	}
	return !staging && v.state.ActiveSnapshot != uuid.Nil
}
