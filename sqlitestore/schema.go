package sqlitestore

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/ncruces/go-sqlite3"
)

// applicationID marks a file as this package's database ("YSC1").
const applicationID = 0x59534331

// schemaVersion is the version of the schema this build writes, kept in
// user_version; migrations[v-1] brings version v-1 to v. A new file runs
// every migration in turn. Version 6 is schema_v6.sql, the server starts
// of the on-board side (SPEC.md §12.7); version 7 schema_v7.sql, the
// records staged chunks share (chunkbody.go); version 8 schema_v8.sql,
// the outbox table rebuilt so that a commit touches fewer pages
// (outbox.go, compactKey).
const schemaVersion = 8

//go:embed schema_v1.sql
var schemaV1 string

//go:embed schema_v2.sql
var schemaV2 string

//go:embed schema_v3.sql
var schemaV3 string

//go:embed schema_v4.sql
var schemaV4 string

//go:embed schema_v5.sql
var schemaV5 string

//go:embed schema_v6.sql
var schemaV6 string

//go:embed schema_v7.sql
var schemaV7 string

//go:embed schema_v8.sql
var schemaV8 string

var migrations = [schemaVersion]string{schemaV1, schemaV2, schemaV3, schemaV4, schemaV5, schemaV6, schemaV7, schemaV8}

// backfills[v-1], when not nil, runs after the statements of migration v,
// in its transaction.
var backfills = [schemaVersion]func(context.Context, *sql.Conn) error{2: backfillChecksums}

// fileState is what a database file says about itself.
type fileState struct {
	appID, version int64
	objects        int64 // tables, indexes, views and triggers
}

func readState(ctx context.Context, q *sql.Conn) (fileState, error) {
	var st fileState
	for _, r := range []struct {
		query string
		into  *int64
	}{
		{"PRAGMA application_id", &st.appID},
		{"PRAGMA user_version", &st.version},
		{"SELECT count(*) FROM sqlite_schema", &st.objects},
	} {
		if err := q.QueryRowContext(ctx, r.query).Scan(r.into); err != nil {
			return st, err
		}
	}
	return st, nil
}

// check tells whether st needs migrating, or refuses a file that is not
// this package's database or is newer than this build.
func (s *Store) check(st fileState) (migrate bool, err error) {
	switch {
	case st.appID == 0 && st.version == 0 && st.objects == 0:
		return true, nil // a new, empty database
	case st.appID != applicationID:
		return false, invalid(s.path, fmt.Sprintf("an SQLite database of another application (application_id %#x)", st.appID))
	case st.version < 1:
		return false, invalid(s.path, fmt.Sprintf("schema version %d", st.version))
	case st.version > schemaVersion:
		return false, invalid(s.path, fmt.Sprintf("schema version %d is newer than this build's %d", st.version, schemaVersion))
	}
	return st.version < schemaVersion, nil
}

// migrate checks the file and, when it is new or older than this build,
// brings it to schemaVersion in one transaction: SQLite's DDL is
// transactional, so a failed or interrupted migration leaves the file as it
// was. The check is repeated under the write lock, since another process
// may have migrated in between.
func (s *Store) migrate(ctx context.Context) error {
	st, err := readState(ctx, s.conn)
	if err != nil {
		return s.openError(ctx, "read the schema of", err)
	}
	if need, err := s.check(st); err != nil || !need {
		return err
	}
	if s.cfg.readOnly {
		if st.objects == 0 {
			return invalid(s.path, "an SQLite database with no schema (a read-only open creates none)")
		}
		return invalid(s.path, fmt.Sprintf("schema version %d is older than this build's %d (a read-only open migrates nothing: open it read-write once)", st.version, schemaVersion))
	}
	if _, err := s.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return s.openError(ctx, "migrate", err)
	}
	err = s.migrateLocked(ctx)
	if err == nil {
		_, err = s.conn.ExecContext(context.WithoutCancel(ctx), "COMMIT")
	}
	if err != nil {
		s.conn.ExecContext(context.Background(), "ROLLBACK")
		if errors.Is(err, ErrInvalidFile) {
			return err
		}
		return s.openError(ctx, "migrate", err)
	}
	return nil
}

func (s *Store) migrateLocked(ctx context.Context) error {
	st, err := readState(ctx, s.conn)
	if err != nil {
		return err
	}
	if need, err := s.check(st); err != nil || !need {
		return err
	}
	for v := st.version; v < schemaVersion; v++ {
		for _, stmt := range statements(migrations[v]) {
			if _, err := s.conn.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("schema version %d: %w", v+1, err)
			}
		}
		if fill := backfills[v]; fill != nil {
			if err := fill(ctx, s.conn); err != nil {
				return fmt.Errorf("schema version %d: %w", v+1, err)
			}
		}
	}
	for _, p := range []string{fmt.Sprintf("PRAGMA application_id = %d", applicationID), fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)} {
		if _, err := s.conn.ExecContext(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// statements splits a schema file at semicolons that end a line.
func statements(script string) []string {
	var out []string
	for _, part := range strings.Split(script, ";\n") {
		var lines []string
		for _, l := range strings.Split(part, "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "--") {
				lines = append(lines, l)
			}
		}
		if len(lines) > 0 {
			out = append(out, strings.Join(lines, "\n"))
		}
	}
	return out
}

// isNotADB reports SQLite's answer for a file that is not a database.
func isNotADB(err error) bool { return isCode(err, sqlite3.NOTADB) }
