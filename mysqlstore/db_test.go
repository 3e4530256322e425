package mysqlstore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
)

// dsnEnv names the DSN of an account that may create and drop databases.
const dsnEnv = "SOURCECATALOG_MYSQL_DSN"

// serverDSN returns the configured DSN. Without one the test skips, except
// under CI=true, where a missing database is a failure.
func serverDSN(t testing.TB) *mysql.Config {
	t.Helper()
	dsn := os.Getenv(dsnEnv)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; under CI=true the MariaDB tests must run (bash scripts/test.sh provisions a server)", dsnEnv)
		}
		t.Skipf("%s is not set: skipping MariaDB tests (bash scripts/test.sh provisions a throwaway server)", dsnEnv)
	}
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err, "parse %s", dsnEnv)
	return cfg
}

// testSchema creates a fresh schema sourcecatalog_test_<random>, dropped
// when the test ends, and returns a pool whose connections use it.
func testSchema(t testing.TB) (*sql.DB, *mysql.Config) {
	t.Helper()
	cfg := serverDSN(t)
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
