package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/yachtmemory/sourcecatalog/internal/demo"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

var demoCommand = &command{
	name:     "demo",
	synopsis: "[--seed N] [--sqlite FILE] [--mysql DSN] [--http]",
	summary:  "run the protocol end to end over a lossy link and check the result",
	help:     helpText("demo"),
	run:      runDemo,
}

func runDemo(e *env, c *command, args []string) (status int) {
	var (
		seed = seedFlag{n: 1}
		dsn  stringFlag // parse never echoes a value, so the password stays unprinted
		file stringFlag
		web  boolFlag
	)
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.Var(&seed, "seed", "")
	fs.Var(&file, "sqlite", "")
	fs.Var(&dsn, "mysql", "")
	fs.Var(&web, "http", "")
	operands, status, ok := c.parse(e, fs, args)
	if !ok {
		return status
	}
	if len(operands) > 0 {
		return c.usageError(e, "unexpected argument %q: demo takes no arguments", operands[0])
	}
	var dbCfg *mysql.Config
	if dsn.set {
		var err error
		if dbCfg, err = mysql.ParseDSN(dsn.s); err != nil {
			return c.usageError(e, "--mysql: %v", err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := demo.Config{Seed: seed.n, AfterStep: e.afterStep}
	if web.on {
		link := demoHTTP
		cfg.HTTP = &link
	}
	if file.set {
		s, err := sqlitestore.Open(ctx, file.s, sqlitestore.WithExclusiveLock())
		if errors.Is(err, sqlitestore.ErrLocked) {
			return c.failf(e, "another process has %s open", file.s)
		}
		if err != nil {
			return c.failf(e, "%v", err)
		}
		defer func() {
			if err := s.Close(); err != nil {
				status = c.failf(e, "%v", err)
			}
		}()
		name := "sqlitestore " + file.s
		cfg.OutboxStore, cfg.OutboxName = s.Outbox(), name
		cfg.ReceiverStore, cfg.StoreName = s, name
	}
	if dbCfg != nil {
		m, err := openDemoDB(ctx, dbCfg)
		if err != nil {
			return c.failf(e, "%v", err)
		}
		defer func() {
			if err := m.close(); err != nil {
				status = c.failf(e, "%v", err)
			} else if m.throwaway {
				fmt.Fprintf(e.stdout, "mysql: dropped the throwaway schema %s\n", m.schema)
			}
		}()
		cfg.ReceiverStore, cfg.StoreName = m.store, m.name()
	}
	if _, err := demo.Run(ctx, cfg, e.stdout); err != nil {
		return c.failf(e, "%v", err)
	}
	return exitOK
}

// demoHTTP is the HTTP link of demo --http; tests break it.
var demoHTTP = demo.DefaultHTTP

// demoDB is the receiver's database of a demo run.
type demoDB struct {
	db        *sql.DB // on the schema
	admin     *sql.DB // without a schema; nil unless throwaway
	store     *mysqlstore.Store
	schema    string
	version   string
	throwaway bool // created by demo, dropped by close
}

func (m *demoDB) name() string {
	s := fmt.Sprintf("mysqlstore on %s, schema %s", m.version, m.schema)
	if m.throwaway {
		s += " (throwaway)"
	}
	return s
}

// openDemoDB opens the receiver's database, creating a throwaway schema
// when cfg names none, and migrates it. It never prints the DSN, which may
// hold a password.
func openDemoDB(ctx context.Context, cfg *mysql.Config) (m *demoDB, err error) {
	cfg = cfg.Clone()
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	m = &demoDB{schema: cfg.DBName}
	defer func() {
		if err != nil {
			err = errors.Join(err, m.close())
		}
	}()
	if m.schema == "" {
		admin, err := openDB(cfg)
		if err != nil {
			return m, err
		}
		m.admin = admin
		var suffix [6]byte
		rand.Read(suffix[:])
		name := "sourcecatalog_demo_" + hex.EncodeToString(suffix[:])
		if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"); err != nil {
			return m, fmt.Errorf("mysql: creating the throwaway schema %s: %w", name, err)
		}
		m.schema, m.throwaway = name, true
		cfg.DBName = name
	}
	if m.db, err = openDB(cfg); err != nil {
		return m, err
	}
	if err := m.db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&m.version); err != nil {
		return m, fmt.Errorf("mysql: %w", err)
	}
	if err := mysqlstore.Migrate(ctx, m.db); err != nil {
		return m, fmt.Errorf("mysql: schema %s: %w", m.schema, err)
	}
	m.store = mysqlstore.New(m.db)
	return m, nil
}

func openDB(cfg *mysql.Config) (*sql.DB, error) {
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	return sql.OpenDB(conn), nil
}

// close closes the pools and drops a throwaway schema.
func (m *demoDB) close() error {
	var errs []error
	if m.db != nil {
		errs = append(errs, m.db.Close())
		m.db = nil
	}
	if m.admin == nil {
		return errors.Join(errs...)
	}
	if m.throwaway {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := m.admin.ExecContext(ctx, "DROP DATABASE "+m.schema); err != nil {
			errs = append(errs, fmt.Errorf("mysql: dropping the throwaway schema %s: %w", m.schema, err))
		}
	}
	errs = append(errs, m.admin.Close())
	m.admin = nil
	return errors.Join(errs...)
}

// seedFlag is a uint64 written in digits, given at most once.
type seedFlag struct {
	n   uint64
	set bool
}

func (f *seedFlag) String() string { return "" }
func (f *seedFlag) Set(s string) error {
	if f.set {
		return errTwice
	}
	bad := errors.New("must be digits, 0 to 18446744073709551615")
	n, err := strconv.ParseUint(s, 10, 64)
	if !digits(s) || err != nil {
		return bad
	}
	f.n, f.set = n, true
	return nil
}
