package mysqlstore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/internal/dbtest"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
)

// testSchema creates a fresh schema sourcecatalog_test_<random>, dropped
// when the test ends, and returns a pool whose connections use it.
func testSchema(t testing.TB) (*sql.DB, *mysql.Config) {
	t.Helper()
	cfg := dbtest.MySQL(t)
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close() })
	var suffix [6]byte
	rand.Read(suffix[:])
	name := "sourcecatalog_test_" + hex.EncodeToString(suffix[:])
	ctx := context.Background()
	_, err = admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin")
	require.NoError(t, err)
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE "+name); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	cfg = cfg.Clone()
	cfg.DBName = name
	db, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	db.SetMaxOpenConns(16)
	t.Cleanup(func() { db.Close() })
	return db, cfg
}

// migrated returns a pool on a fresh, migrated schema.
func migrated(t testing.TB) *sql.DB {
	t.Helper()
	db, _ := testSchema(t)
	require.NoError(t, mysqlstore.Migrate(context.Background(), db))
	return db
}
