package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/internal/dbtest"
)

// mysqlAdmin connects to the MariaDB server dbtest.MySQLEnv names, without
// a database, until the test ends; it returns the connection's
// configuration with it.
func mysqlAdmin(t *testing.T) (*mysql.Config, *sql.DB) {
	t.Helper()
	cfg := dbtest.MySQL(t)
	cfg.DBName = ""
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close() })
	return cfg, admin
}

// throwawayDatabase creates a database named prefix and 12 random hex
// digits on admin's server, dropped when the test ends, and returns its
// name.
func throwawayDatabase(t *testing.T, admin *sql.DB, prefix string) string {
	t.Helper()
	var suffix [6]byte
	rand.Read(suffix[:])
	name := prefix + hex.EncodeToString(suffix[:])
	_, err := admin.ExecContext(context.Background(), "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin")
	require.NoError(t, err)
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE "+name); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	return name
}
