package fleetfloor

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"testing"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/internal/dbtest"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
)

// The MariaDB floor writes each message once and each snapshot's rows,
// one per record, into mysqlstore's inventory tables, whose keys refuse a
// vessel's rows twice.
func TestMySQL(t *testing.T) {
	ctx := context.Background()
	cfg := dbtest.MySQL(t).Clone()
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var b [6]byte
	rand.Read(b[:])
	cfg.DBName = "fleetfloor_test_" + hex.EncodeToString(b[:])
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+cfg.DBName+" CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"); err != nil {
		t.Fatal(err)
	}
	defer admin.ExecContext(ctx, "DROP DATABASE "+cfg.DBName)
	records := examples.Scaled(300)
	m, err := OpenMySQL(ctx, cfg, records)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	a, v := uuid.New(), uuid.New()
	for _, body := range []string{"one", "two"} {
		if err := m.Message(ctx, a, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	for _, vessel := range []uuid.UUID{a, v} {
		if err := m.Snapshot(ctx, vessel); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Snapshot(ctx, a); err == nil {
		t.Error("a vessel's rows twice: no error")
	}
	var n int
	if err := m.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM fleet_floor_messages WHERE vessel_id = ?", a[:]).Scan(&n); err != nil || n != 2 {
		t.Errorf("%d messages, want 2: %v", n, err)
	}
	rows := 0
	for _, k := range mysqlTables[1:] {
		if err := m.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+k.table+" WHERE vessel_id = ?", v[:]).Scan(&n); err != nil {
			t.Fatal(err)
		}
		rows += n
	}
	if rows != len(records) {
		t.Errorf("%d inventory rows of a vessel, want %d", rows, len(records))
	}
	// What the floor wrote, the store reads as its own inventory.
	if err := mysqlstore.CheckSchema(ctx, m.db); err != nil {
		t.Errorf("the schema: %v", err)
	}
}
