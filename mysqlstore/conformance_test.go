package mysqlstore_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/finalizetest"
	"github.com/yachtmemory/sourcecatalog/internal/dbtest"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
)

// TestConformance runs the finalize conformance suite on MariaDB, with a
// fresh schema for every store the suite asks for.
func TestConformance(t *testing.T) {
	dbtest.MySQL(t)
	finalizetest.Run(t, func(t *testing.T) finalize.Store {
		return mysqlstore.New(migrated(t))
	})
}

// TestConformanceReopen runs groups of the suite that write every kind of
// state with a new connection pool after every transaction: nothing the
// Store keeps in the process may stand in for what the server committed.
// The whole suite would take three times as long for little more.
func TestConformanceReopen(t *testing.T) {
	dbtest.MySQL(t)
	finalizetest.RunReopen(t, func(t *testing.T) (finalize.Store, func() (finalize.Store, error)) {
		db, cfg := testSchema(t)
		if err := mysqlstore.Migrate(context.Background(), db); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() }) // the last pool; testSchema closes the first
		return mysqlstore.New(db), func() (finalize.Store, error) {
			if err := db.Close(); err != nil {
				return nil, err
			}
			var err error
			db, err = sql.Open("mysql", cfg.FormatDSN())
			return mysqlstore.New(db), err
		}
	}, "Store", "Receive", "Finalize", "History")
}
