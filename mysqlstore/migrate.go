package mysqlstore

import (
	"context"
	"database/sql"
	_ "embed"
	"maps"
	"slices"
	"strings"

	"github.com/yachtmemory/sourcecatalog"
)

// SchemaV2 is the DDL of every table this package uses, as run by Migrate.
//
//go:embed schema_v2.sql
var SchemaV2 string

// ProductionSchema is the schema Migrate refuses unless AllowProductionSchema
// is given: the draft protocol runs only in a dedicated schema until it is
// reviewed for production.
const ProductionSchema = "yachtmemory_telemetry"

// ErrNoSchema is returned by Migrate and CheckSchema when the connection has
// no current schema. It wraps sourcecatalog.ErrInvalidValue.
var ErrNoSchema error = sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue,
	"mysqlstore: the connection has no current schema (add one to the DSN)")

// ErrProductionSchema is returned by Migrate in ProductionSchema without
// AllowProductionSchema. It wraps sourcecatalog.ErrInvalidValue.
var ErrProductionSchema error = sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue,
	"mysqlstore: refusing to migrate "+ProductionSchema+" without AllowProductionSchema")

// A MigrateOption changes what Migrate accepts.
type MigrateOption func(*migrateConfig)

type migrateConfig struct{ allowProduction bool }

// AllowProductionSchema lets Migrate run in ProductionSchema.
func AllowProductionSchema() MigrateOption {
	return func(c *migrateConfig) { c.allowProduction = true }
}

// Migrate creates the _v2 tables in the connection's current schema, and
// brings tables of shape 1 (the record index in segments only) to the
// current shape: it adds the vessel row's index_stamp (ALTER TABLE … ADD
// COLUMN IF NOT EXISTS, a nullable column, which MariaDB adds without
// copying the table) and creates the tables of the index's base and
// delta. Rows are left as they are: a vessel's index of shape 1 is read
// as it is and moved by the vessel's next activation (see index.go). It
// is idempotent: tables that exist are otherwise left as they are (CREATE
// TABLE IF NOT EXISTS). It never selects another schema and never touches
// the v1 tables. DDL is not transactional in MySQL or MariaDB: after
// Migrate, CheckSchema verifies the result, so a table of an earlier shape
// that Migrate does not convert (times as Unix nanoseconds) makes Migrate
// return a *SchemaError.
func Migrate(ctx context.Context, db *sql.DB, opts ...MigrateOption) error {
	var cfg migrateConfig
	for _, o := range opts {
		o(&cfg)
	}
	schema, err := currentSchema(ctx, db)
	if err != nil {
		return err
	}
	if strings.EqualFold(schema, ProductionSchema) && !cfg.allowProduction {
		return ErrProductionSchema
	}
	for _, stmt := range statements(SchemaV2) {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return wrap("migrate", err)
		}
	}
	return CheckSchema(ctx, db)
}

func currentSchema(ctx context.Context, db *sql.DB) (string, error) {
	var schema sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&schema); err != nil {
		return "", wrap("read the current schema", err)
	}
	if !schema.Valid || schema.String == "" {
		return "", ErrNoSchema
	}
	return schema.String, nil
}

// statements splits DDL at semicolons that end a line, dropping comments.
func statements(ddl string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(ddl, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	return out
}

// requiredColumns lists every table and column the package reads or writes.
var requiredColumns = map[string][]string{
	"signalk_catalog_vessels_v2":        {"vessel_id", "active_snapshot_id", "active_revision", "active_discovered_at_sec", "active_discovered_at_nsec", "active_document_sha256", "lock_token", "index_stamp"},
	"signalk_catalog_snapshots_v2":      {"vessel_id", "snapshot_id", "revision", "state", "final_status", "manifest", "manifest_sha256", "chunk_count", "record_count", "chunks_staged", "staged_bytes", "reason"},
	"signalk_catalog_chunks_v2":         {"vessel_id", "snapshot_id", "chunk_index", "payload_sha256", "chunk_canonical"},
	"signalk_catalog_index_v2":          {"vessel_id", "entries"},
	"signalk_catalog_index_segments_v2": {"vessel_id", "segment_id", "entries"},
	"signalk_catalog_index_base_v2":     {"vessel_id", "part", "entries"},
	"signalk_catalog_index_delta_v2":    {"vessel_id", "puts", "dels"},
	"signalk_catalog_paths_v2":          {"vessel_id", "path", "unit_present", "unit", "record", "first_seen_revision", "first_seen_at_sec", "first_seen_at_nsec", "last_seen_revision", "last_seen_at_sec", "last_seen_at_nsec", "currently_observed"},
	"signalk_catalog_sources_v2":        {"vessel_id", "source_ref", "label", "source_type", "record", "first_seen_revision", "first_seen_at_sec", "first_seen_at_nsec", "last_seen_revision", "last_seen_at_sec", "last_seen_at_nsec", "currently_observed"},
	"signalk_catalog_observations_v2": {"vessel_id", "observation_key", "path", "source_ref", "value_type", "record",
		"first_seen_revision", "first_seen_at_sec", "first_seen_at_nsec", "last_seen_revision", "last_seen_at_sec", "last_seen_at_nsec", "currently_observed"},
	"signalk_catalog_outbox_vessels_v2": {"vessel_id", "last_revision", "lock_token"},
	"signalk_catalog_outbox_v2": {"vessel_id", "snapshot_id", "chunk_index", "revision", "entity_type", "entity_key",
		"payload", "digest", "state"},
}

// obsoleteColumns are columns of an earlier shape of the _v2 tables, which
// stored times as Unix nanoseconds and so changed every time outside the
// years 1678 to 2262. Migrate does not convert them: a table that has one
// is refused, and must be dropped (or converted by hand) and migrated again.
var obsoleteColumns = []string{"active_discovered_at_ns", "first_seen_at_ns", "last_seen_at_ns"}

// A SchemaError lists what CheckSchema found missing, as "table" or
// "table.column", and the columns of an earlier shape of the tables it
// found, as "table.column". It wraps sourcecatalog.ErrInvalidValue: the
// schema needs Migrate or an operator, not a retry.
type SchemaError struct {
	Schema   string
	Missing  []string
	Obsolete []string
}

func (e *SchemaError) Error() string {
	msg := "mysqlstore: schema " + e.Schema
	if len(e.Missing) > 0 {
		msg += " lacks " + strings.Join(e.Missing, ", ")
	}
	if len(e.Obsolete) > 0 {
		if len(e.Missing) > 0 {
			msg += ";"
		}
		msg += " has " + strings.Join(e.Obsolete, ", ") +
			" of an earlier shape of the _v2 tables (times as Unix nanoseconds, wrong outside 1678-2262):" +
			" drop those tables, or convert them by hand, and run Migrate again"
	}
	return msg
}

// Unwrap returns sourcecatalog.ErrInvalidValue, the class.
func (e *SchemaError) Unwrap() error { return sourcecatalog.ErrInvalidValue }

// CheckSchema verifies that every table and column the package needs exists
// in the connection's current schema, and that no table has a column of an
// earlier shape of the tables. It returns a *SchemaError naming everything
// missing and obsolete, ErrNoSchema, or a database error.
func CheckSchema(ctx context.Context, db *sql.DB) error {
	schema, err := currentSchema(ctx, db)
	if err != nil {
		return err
	}
	rows, err := db.QueryContext(ctx,
		`SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE '%\_v2'`, schema)
	if err != nil {
		return wrap("check schema", err)
	}
	defer rows.Close()
	have := make(map[string]bool)
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			return wrap("check schema", err)
		}
		have[table] = true
		have[table+"."+column] = true
	}
	if err := rows.Err(); err != nil {
		return wrap("check schema", err)
	}
	var missing, obsolete []string
	for _, table := range slices.Sorted(maps.Keys(requiredColumns)) {
		if !have[table] {
			missing = append(missing, table)
			continue
		}
		for _, col := range requiredColumns[table] {
			if !have[table+"."+col] {
				missing = append(missing, table+"."+col)
			}
		}
		for _, col := range obsoleteColumns {
			if have[table+"."+col] {
				obsolete = append(obsolete, table+"."+col)
			}
		}
	}
	if len(missing) > 0 || len(obsolete) > 0 {
		return &SchemaError{Schema: schema, Missing: missing, Obsolete: obsolete}
	}
	return nil
}
