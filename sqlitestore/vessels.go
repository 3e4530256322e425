package sqlitestore

import (
	"context"
	"database/sql"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

var _ finalize.VesselLister = (*Store)(nil)

// Vessels implements finalize.VesselLister. It reads in a transaction of
// its own, so it waits for one in progress.
func (s *Store) Vessels(ctx context.Context, staging bool) ([]uuid.UUID, error) {
	query := "SELECT DISTINCT vessel_id FROM snapshots WHERE state = 'staging'"
	if !staging {
		query = "SELECT vessel_id FROM snapshots UNION SELECT vessel_id FROM vessels WHERE active_snapshot_id IS NOT NULL"
	}
	var ids []uuid.UUID
	err := s.transact(ctx, func(q *sql.Conn) error {
		b := &base{s: s, q: q}
		return b.query(ctx, "list vessels", query, nil, func(rows *sql.Rows) error {
			var raw []byte
			if err := rows.Scan(&raw); err != nil {
				return err
			}
			id, err := uuid.FromBytes(raw)
			ids = append(ids, id)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}
