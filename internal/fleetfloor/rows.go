package fleetfloor

import (
	"crypto/sha256"
	"strings"
	"time"

	"github.com/yachtmemory/sourcecatalog/catalog"
)

// A row is one inventory row of a record, but for the vessel: the
// columns both stores write (sqlitestore's items, mysqlstore's three
// tables), and the descriptive columns mysqlstore parses from the record.
type row struct {
	kind      catalog.Kind
	path      string
	sourceRef string
	record    []byte
	mysql     []any // the key and descriptive columns after vessel_id
}

// Seen: every floor row is first and last seen at revision 1, then.
var (
	seenRevision int64 = 1
	seenAt             = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
)

// rowsOf returns the rows of records, in their order.
func rowsOf(records []*catalog.Record) []row {
	rows := make([]row, len(records))
	for i, r := range records {
		rw := row{kind: r.Kind(), path: r.PathName(), sourceRef: r.SourceRef(), record: r.Canonical()}
		switch r.Kind() {
		case catalog.KindPath:
			p, _ := r.AsPath()
			var unit any
			if !p.Unit.IsUnknown() && !p.Unit.IsNone() {
				unit = p.Unit.Symbol()
			}
			rw.mysql = []any{rw.path, !p.Unit.IsUnknown(), unit}
		case catalog.KindSource:
			s, _ := r.AsSource()
			rw.mysql = []any{rw.sourceRef, optional(s.Label), optional(s.Type)}
		case catalog.KindObservation:
			o, _ := r.AsObservation()
			h := sha256.New()
			h.Write([]byte(rw.path))
			h.Write([]byte{0})
			h.Write([]byte(rw.sourceRef))
			rw.mysql = []any{h.Sum(nil), rw.path, rw.sourceRef, o.ValueType.String()}
		}
		rows[i] = rw
	}
	return rows
}

func optional(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// placeholders returns the VALUES list of a multi-row INSERT of rows rows
// of n columns each: "(?, ?), (?, ?)" for 2 and 2.
func placeholders(n, rows int) string {
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(tuple+", ", rows), ", ")
}
