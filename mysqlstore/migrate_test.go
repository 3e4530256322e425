package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/internal/dbtest"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
)

func TestSchemaText(t *testing.T) {
	var code strings.Builder // the DDL without comments
	for _, line := range strings.Split(mysqlstore.SchemaV2, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			code.WriteString(strings.ToUpper(line) + "\n")
		}
	}
	ddl := code.String()
	assert.NotRegexp(t, `\bUSE\b`, ddl, "the DDL must never select a schema")
	assert.NotRegexp(t, `\bJSON\b`, ddl, "canonical bytes never live in JSON columns")
	for _, v1 := range []string{"SIGNALK_CATALOG_STATE", "SIGNALK_DISCOVERY_SNAPSHOTS", "SIGNALK_DISCOVERED_PATHS", "SIGNALK_DISCOVERED_SOURCES"} {
		assert.NotRegexp(t, v1+`\b`, ddl, "v1 table %s must not be touched", v1)
	}
	for _, line := range strings.Split(mysqlstore.SchemaV2, "\n") {
		if strings.HasPrefix(line, "CREATE TABLE") {
			name := strings.Fields(line)[5]
			assert.True(t, strings.HasSuffix(name, "_v2"), "table %s must end in _v2", name)
		}
	}
}

func TestMigrateRefusesNoSchema(t *testing.T) {
	cfg := dbtest.MySQL(t).Clone()
	cfg.DBName = ""
	db, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	defer db.Close()
	assert.ErrorIs(t, mysqlstore.Migrate(context.Background(), db), mysqlstore.ErrNoSchema)
	assert.ErrorIs(t, mysqlstore.CheckSchema(context.Background(), db), mysqlstore.ErrNoSchema)
}

func TestMigrateRefusesProductionSchema(t *testing.T) {
	cfg := dbtest.MySQL(t)
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	defer admin.Close()
	ctx := context.Background()
	var exists int
	require.NoError(t, admin.QueryRowContext(ctx,
		`SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?`, mysqlstore.ProductionSchema).Scan(&exists))
	if exists == 0 {
		_, err = admin.ExecContext(ctx, "CREATE DATABASE "+mysqlstore.ProductionSchema)
		require.NoError(t, err)
		defer admin.ExecContext(context.Background(), "DROP DATABASE "+mysqlstore.ProductionSchema)
	}
	pc := cfg.Clone()
	pc.DBName = mysqlstore.ProductionSchema
	db, err := sql.Open("mysql", pc.FormatDSN())
	require.NoError(t, err)
	defer db.Close()
	err = mysqlstore.Migrate(ctx, db)
	require.ErrorIs(t, err, mysqlstore.ErrProductionSchema)
	requireClass(t, err, sourcecatalog.ErrInvalidValue, "a configuration to fix, not a retry")
	var tables int
	require.NoError(t, db.QueryRowContext(ctx,
		`SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE '%\_v2'`).Scan(&tables))
	assert.Zero(t, tables, "a refused Migrate creates nothing")

	if exists != 0 {
		t.Logf("%s existed before the test: the opt-in is not tried on it", mysqlstore.ProductionSchema)
		return
	}
	require.NoError(t, mysqlstore.Migrate(ctx, db, mysqlstore.AllowProductionSchema()), "the caller opts in")
	require.NoError(t, mysqlstore.CheckSchema(ctx, db))
}

// schemaDump renders every column of every table in the current schema.
func schemaDump(t *testing.T, db *sql.DB) string {
	rows, err := db.Query(`SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COALESCE(COLLATION_NAME, '')
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, ORDINAL_POSITION`)
	require.NoError(t, err)
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var a, c, d, e, f string
		require.NoError(t, rows.Scan(&a, &c, &d, &e, &f))
		b.WriteString(a + "." + c + " " + d + " " + e + " " + f + "\n")
	}
	require.NoError(t, rows.Err())
	return b.String()
}

func TestMigrateIdempotentAndChecked(t *testing.T) {
	db, _ := testSchema(t)
	ctx := context.Background()
	var se *mysqlstore.SchemaError
	require.ErrorAs(t, mysqlstore.CheckSchema(ctx, db), &se, "an empty schema lacks everything")
	assert.Contains(t, se.Missing, "signalk_catalog_vessels_v2")

	require.NoError(t, mysqlstore.Migrate(ctx, db))
	first := schemaDump(t, db)
	require.NoError(t, mysqlstore.Migrate(ctx, db))
	assert.Equal(t, first, schemaDump(t, db), "a second Migrate changes nothing")
	assert.Contains(t, first, "signalk_catalog_paths_v2.path varchar(512) NO utf8mb4_nopad_bin")

	_, err := db.Exec("ALTER TABLE signalk_catalog_paths_v2 DROP COLUMN unit_present")
	require.NoError(t, err)
	err = mysqlstore.CheckSchema(ctx, db)
	require.True(t, errors.As(err, &se))
	assert.Equal(t, []string{"signalk_catalog_paths_v2.unit_present"}, se.Missing)
}

// TestNoDriverInTheLibrary: the package uses database/sql only; the driver
// is the integrator's choice (this module's tests and command use
// go-sql-driver/mysql).
func TestNoDriverInTheLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "database/sql\n")
	for _, pkg := range strings.Fields(string(out)) {
		assert.NotContains(t, pkg, "go-sql-driver", "mysqlstore depends on %s", pkg)
	}
}

// TestCheckSchemaRefusesNanosecondTimes: tables of the earlier shape, which
// kept times as Unix nanoseconds in one BIGINT, are refused by name, and
// Migrate leaves them as they are.
func TestCheckSchemaRefusesNanosecondTimes(t *testing.T) {
	db, _ := testSchema(t)
	ctx := context.Background()
	require.NoError(t, mysqlstore.Migrate(ctx, db))
	old := map[string][]string{ // table -> time columns of the earlier shape
		"signalk_catalog_vessels_v2":      {"active_discovered_at"},
		"signalk_catalog_paths_v2":        {"first_seen_at", "last_seen_at"},
		"signalk_catalog_sources_v2":      {"first_seen_at", "last_seen_at"},
		"signalk_catalog_observations_v2": {"first_seen_at", "last_seen_at"},
	}
	var wantMissing, wantObsolete []string
	for table, cols := range old {
		for _, c := range cols {
			_, err := db.ExecContext(ctx, "ALTER TABLE "+table+" CHANGE "+c+"_sec "+c+"_ns BIGINT NULL, DROP COLUMN "+c+"_nsec")
			require.NoError(t, err)
			wantMissing = append(wantMissing, table+"."+c+"_sec", table+"."+c+"_nsec")
			wantObsolete = append(wantObsolete, table+"."+c+"_ns")
		}
	}
	before := schemaDump(t, db)
	for name, run := range map[string]func(context.Context, *sql.DB) error{
		"CheckSchema": mysqlstore.CheckSchema,
		"Migrate":     func(ctx context.Context, db *sql.DB) error { return mysqlstore.Migrate(ctx, db) },
	} {
		var se *mysqlstore.SchemaError
		require.ErrorAs(t, run(ctx, db), &se, name)
		assert.ElementsMatch(t, wantMissing, se.Missing, name)
		assert.ElementsMatch(t, wantObsolete, se.Obsolete, name)
		assert.Contains(t, se.Error(), "earlier shape", name)
	}
	assert.Equal(t, before, schemaDump(t, db), "Migrate does not touch a table of the earlier shape")
}

// TestSchemaRefusesBadNanoseconds: the nanoseconds of a stored time are
// within their second, so no row can hold a time two ways.
func TestSchemaRefusesBadNanoseconds(t *testing.T) {
	db := migrated(t)
	for i, c := range []struct {
		nsec int64
		ok   bool
	}{{-1, false}, {0, true}, {999_999_999, true}, {1_000_000_000, false}} {
		vessel := uuid.New()
		_, err := db.Exec(`INSERT INTO signalk_catalog_vessels_v2 (vessel_id, active_discovered_at_sec, active_discovered_at_nsec)
			VALUES (?, ?, ?)`, vessel[:], i, c.nsec)
		if c.ok {
			assert.NoError(t, err, "nanoseconds %d", c.nsec)
		} else {
			assert.Error(t, err, "nanoseconds %d", c.nsec)
		}
	}
}
