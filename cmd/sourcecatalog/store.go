package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// storeFlag is the --store flag of serve, commit, publish and the operator
// commands: memory, sqlite:FILE or mysql:DSN, given once.
type storeFlag struct {
	kind string // "memory", "sqlite" or "mysql"
	arg  string // the file or the DSN
	dsn  *mysql.Config
}

// storeSpelling is the flag's syntax, for usage lines and errors.
const storeSpelling = "memory, sqlite:FILE or mysql:DSN"

func (f *storeFlag) String() string { return "" } // never echo a DSN
func (f *storeFlag) Set(s string) error {
	if f.kind != "" {
		return errTwice
	}
	kind, arg, _ := strings.Cut(s, ":")
	switch {
	case s == "memory":
	case kind == "sqlite" && arg != "":
	case kind == "mysql" && arg != "":
		cfg, err := mysql.ParseDSN(arg)
		if err != nil {
			return errors.New("the mysql DSN does not parse") // its text may hold a password
		}
		if cfg.DBName == "" {
			return errors.New("the mysql DSN must name a database, as in 'user:password@tcp(host:3306)/catalog'")
		}
		f.dsn = cfg
	default:
		return errors.New("must be " + storeSpelling)
	}
	f.kind, f.arg = kind, arg
	return nil
}

// storeOptions say how to open a store.
type storeOptions struct {
	// migrate creates or upgrades the MariaDB schema (serve --migrate);
	// without it a schema that is not current is an error.
	migrate bool
	// outbox asks for the on-board outbox; memory has none worth having,
	// since it ends with the process.
	outbox bool
	// readOnly opens for reading only (status): an SQLite file is opened
	// read-only and never created or migrated, so a missing or empty file
	// is an error; a MariaDB schema is only checked, as without migrate.
	readOnly bool
}

// stores are the stores one --store names, open.
type stores struct {
	name     string // for logs and messages; never holds a password
	receiver finalize.Store
	outbox   outbox.Store // nil unless storeOptions.outbox
	// ping checks that the store can serve, for /healthz: the store's
	// finalize.Pinger.
	ping  func(ctx context.Context) error
	close func() error
}

// open opens the stores f names. A SQLite file is created when absent
// (unless opts.readOnly) and may be shared with other processes; a
// MariaDB schema must be current unless opts.migrate, and
// yachtmemory_telemetry is refused by Migrate as in the library. It never
// prints the DSN.
func (f *storeFlag) open(ctx context.Context, opts storeOptions) (*stores, error) {
	switch f.kind {
	case "memory":
		if opts.outbox {
			return nil, errors.New("--store memory keeps no outbox across runs: use sqlite:FILE or mysql:DSN")
		}
		m := memstore.New()
		return &stores{
			name: "memory", receiver: m, ping: m.Ping, close: func() error { return nil },
		}, nil
	case "sqlite":
		var o []sqlitestore.Option
		if opts.readOnly {
			o = append(o, sqlitestore.WithReadOnly())
		}
		s, err := sqlitestore.Open(ctx, f.arg, o...)
		if err != nil {
			return nil, err
		}
		st := &stores{
			name: "sqlite " + f.arg, receiver: s, close: s.Close, ping: s.Ping,
		}
		if opts.outbox {
			st.outbox = s.Outbox()
		}
		return st, nil
	case "mysql":
		cfg := f.dsn.Clone()
		if cfg.Timeout == 0 {
			cfg.Timeout = 10 * time.Second
		}
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, fmt.Errorf("mysql: %w", err)
		}
		db := sql.OpenDB(conn)
		check := mysqlstore.CheckSchema // reads information_schema only
		if opts.migrate && !opts.readOnly {
			check = func(ctx context.Context, db *sql.DB) error { return mysqlstore.Migrate(ctx, db) }
		}
		if err := check(ctx, db); err != nil {
			db.Close()
			return nil, fmt.Errorf("mysql schema %s: %w", cfg.DBName, err)
		}
		recv := mysqlstore.New(db)
		st := &stores{
			name: "mysql schema " + cfg.DBName, receiver: recv, ping: recv.Ping, close: db.Close,
		}
		if opts.outbox {
			st.outbox = mysqlstore.NewOutbox(db)
		}
		return st, nil
	}
	return nil, errors.New("no --store given")
}

// cutFlag is --cut: the rule that cuts a snapshot's records into chunks
// (SPEC.md §7.2), greedy when absent.
type cutFlag struct {
	contentDefined bool
	set            bool
}

func (f *cutFlag) String() string { return "" }
func (f *cutFlag) Set(s string) error {
	if f.set {
		return errTwice
	}
	switch s {
	case "greedy", "content-defined":
		f.contentDefined, f.set = s == "content-defined", true
		return nil
	}
	return errors.New(`must be greedy or content-defined`)
}

// options are the build options of the rule.
func (f *cutFlag) options() []envelope.Option {
	if f.contentDefined {
		return []envelope.Option{envelope.WithContentDefinedCuts()}
	}
	return nil
}

// boolFlag is a flag that takes no value: --json. It may be given once.
type boolFlag struct{ on bool }

func (f *boolFlag) String() string   { return "" }
func (f *boolFlag) IsBoolFlag() bool { return true }
func (f *boolFlag) Set(s string) error {
	if f.on {
		return errTwice
	}
	if s != "true" {
		return errors.New("takes no value")
	}
	f.on = true
	return nil
}
