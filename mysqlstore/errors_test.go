package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/dbtest"
	"github.com/yachtmemory/sourcecatalog/internal/indexblob"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// requireClass requires err to wrap class and no other class.
func requireClass(t *testing.T, err, class error, msgAndArgs ...any) {
	t.Helper()
	var got []error
	for _, c := range sourcecatalog.Classes() {
		if errors.Is(err, c) {
			got = append(got, c)
		}
	}
	require.Equal(t, []error{class}, got, msgAndArgs...)
}

// TestWrapKeepsTheDriverError: a failed statement wraps
// ErrStoreUnavailable and keeps the driver's error, so that errors.As,
// ErrorNumber and the retry classifier still see it.
func TestWrapKeepsTheDriverError(t *testing.T) {
	for _, tc := range []struct {
		number    uint16
		retryable bool
	}{{1213, true}, {1205, true}, {1047, true}, {1146, false}} {
		err := mysqlstore.Wrap("write chunk", fmt.Errorf("exec: %w", &mysql.MySQLError{Number: tc.number, Message: "x"}))
		requireClass(t, err, sourcecatalog.ErrStoreUnavailable, "%d", tc.number)
		var me *mysql.MySQLError
		require.ErrorAs(t, err, &me, "%d", tc.number)
		n, ok := mysqlstore.ErrorNumber(err)
		assert.True(t, ok, "%d", tc.number)
		assert.Equal(t, tc.number, n)
		assert.Equal(t, tc.retryable, mysqlstore.IsRetryable(err), "%d", tc.number)
	}
	lost := mysqlstore.Wrap("check transaction", mysqlstore.ErrTransactionLost)
	requireClass(t, lost, sourcecatalog.ErrStoreUnavailable, "a lost transaction is classed once")
	assert.ErrorIs(t, lost, mysqlstore.ErrTransactionLost)
	assert.True(t, mysqlstore.IsRetryable(lost))

	done := mysqlstore.Wrap("read vessel", context.Canceled)
	requireClass(t, done, sourcecatalog.ErrStoreUnavailable, "a done context")
	assert.ErrorIs(t, done, context.Canceled)
	assert.NoError(t, mysqlstore.Wrap("read vessel", nil))
}

// TestErrorsAreClassed provokes the package's errors on a server and checks
// the one class each wraps.
func TestErrorsAreClassed(t *testing.T) {
	ctx := context.Background()
	t.Run("no schema", func(t *testing.T) {
		cfg := dbtest.MySQL(t).Clone()
		cfg.DBName = ""
		db, err := sql.Open("mysql", cfg.FormatDSN())
		require.NoError(t, err)
		defer db.Close()
		for name, err := range map[string]error{"Migrate": mysqlstore.Migrate(ctx, db), "CheckSchema": mysqlstore.CheckSchema(ctx, db)} {
			require.ErrorIs(t, err, mysqlstore.ErrNoSchema, name)
			requireClass(t, err, sourcecatalog.ErrInvalidValue, name)
		}
	})
	t.Run("tables missing", func(t *testing.T) {
		db, _ := testSchema(t)
		err := mysqlstore.CheckSchema(ctx, db)
		var se *mysqlstore.SchemaError
		require.ErrorAs(t, err, &se)
		requireClass(t, err, sourcecatalog.ErrInvalidValue)

		// The store's statements fail on the missing tables: the driver's
		// error is kept under ErrStoreUnavailable.
		for name, err := range map[string]error{
			"Store":  mysqlstore.New(db).WithVessel(ctx, uuid.New(), func(finalize.Tx) error { return nil }),
			"Outbox": mysqlstore.NewOutbox(db).WithVessel(ctx, uuid.New(), func(outbox.Tx) error { return nil }),
		} {
			requireClass(t, err, sourcecatalog.ErrStoreUnavailable, name)
			var me *mysql.MySQLError
			require.ErrorAs(t, err, &me, name)
			assert.Equal(t, uint16(1146), me.Number, "%s: no such table", name)
			n, _ := mysqlstore.ErrorNumber(err)
			assert.Equal(t, uint16(1146), n, name)
		}
	})
	t.Run("corrupt index", func(t *testing.T) {
		db := migrated(t)
		vessel := uuid.New()
		_, err := db.ExecContext(ctx, "INSERT INTO signalk_catalog_index_v2 (vessel_id, entries) VALUES (?, ?)", vessel[:], []byte{0xff})
		require.NoError(t, err)
		err = mysqlstore.New(db).WithVessel(ctx, vessel, func(tx finalize.Tx) error {
			_, err := tx.Index(ctx)
			return err
		})
		requireClass(t, err, sourcecatalog.ErrStoreUnavailable)
		assert.ErrorIs(t, err, indexblob.ErrCorrupt)
	})
	t.Run("callback error unchanged", func(t *testing.T) {
		db := migrated(t)
		boom := errors.New("callback failed")
		assert.Same(t, boom, mysqlstore.New(db).WithVessel(ctx, uuid.New(), func(finalize.Tx) error { return boom }))
	})
	t.Run("done context", func(t *testing.T) {
		db := migrated(t)
		done, cancel := context.WithCancel(ctx)
		cancel()
		err := mysqlstore.New(db).WithVessel(done, uuid.New(), func(finalize.Tx) error { return nil })
		requireClass(t, err, sourcecatalog.ErrStoreUnavailable)
		assert.ErrorIs(t, err, context.Canceled)
	})
}
