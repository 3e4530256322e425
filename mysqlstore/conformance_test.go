package mysqlstore_test

import (
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
