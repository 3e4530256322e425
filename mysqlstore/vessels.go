package mysqlstore

import (
	"context"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

var _ finalize.VesselLister = (*Store)(nil)

// Vessels implements finalize.VesselLister with one read, outside any
// vessel's transaction, of what is committed. A row that does not hold a
// vessel id of 16 bytes fails the call with ErrStoreUnavailable.
func (s *Store) Vessels(ctx context.Context, staging bool) ([]uuid.UUID, error) {
	query := "SELECT DISTINCT vessel_id FROM signalk_catalog_snapshots_v2 WHERE state = 'staging'"
	if !staging {
		query = "SELECT vessel_id FROM signalk_catalog_snapshots_v2 UNION SELECT vessel_id FROM " + vesselsTable + " WHERE active_snapshot_id IS NOT NULL"
	}
	rows, err := s.db.QueryContext(ctx, query)
	if err != nil {
		return nil, wrap("list vessels", err)
	}
	defer rows.Close()
	var ids []uuid.UUID
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, wrap("list vessels", err)
		}
		id, err := uuid.FromBytes(raw)
		if err != nil {
			return nil, wrap("list vessels", err)
		}
		ids = append(ids, id)
	}
	return ids, wrap("list vessels", rows.Err())
}
