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
	help: `Demo runs the library's main job end to end, with no setup. On board, two
discovery cycles of the example boat are committed to the outbox (in
memory unless --sqlite), each in one transaction with the next revision:
the boat as it is, then 15 minutes later with the autopilot's firmware
updated (a source record that changes) and the anchor light circuit no
longer selected (its path, observation and only source leave the
selection). A publisher sends the outbox entries over a simulated link
that loses requests, loses receipts after the receiver staged the message,
duplicates and reorders messages, and retries until every entry is
acknowledged. On shore a receiver stages every message, answers identical
retries already_received, and finalizes and activates each snapshot. The
cycles run one after the other.

Demo prints a line per step and a report: what the link did, the
receiver's answers, each snapshot's outcomes, the active revision and the
inventory difference between the two activations. It then checks the
final state: the second cycle's revision active with its snapshot, the
inventory exactly as the earlier one updated by the two cycles implies
(what left is kept, not currently observed, with its first and last
sighting), every outbox entry delivered and none pending. The exit status
is 0 when it is right and 1 otherwise. The same seed on the same stores
prints the same output: for that the demo's outbox counts revisions 1, 2,
3 with the revision floor of SPEC.md §2.4 off, which commit and a real
outbox keep on.

Stores that outlive the run carry on. A run first resumes what earlier
runs left: it publishes the entries still pending in the outbox (those
of a run that was killed) and reconciles the receiver, which finalizes a
snapshot left complete but not finalized; its cycles then take the next
two revisions (3 and 4 on a second run), and the inventory keeps its
history (first seen at revision 1). The receiver keeps the newest 8
finalized snapshots staged.

With --http the entries travel through the HTTP binding instead of the
simulated link: demo makes a certificate authority, a server certificate
for 127.0.0.1 and a client certificate naming the example vessel, all in
memory, serves the receiver over HTTPS with mutual TLS on a free loopback
port, and puts a fault proxy in front of it. The proxy resets the
connection after the server answered (the receipt is lost: the publisher
sends again and the receiver answers already_received), cuts answers
midway, and delays some; the server finalizes a snapshot on the receipt
that completes it. The proxy decides answer after answer from the seed,
so a seed prints the same output as long as every request reaches the
server within the client's 10 s timeout, as it does on an idle machine.
The report says what the proxy did; demo shuts the server down at the end.

Flags (each at most once):
  --seed N       seeds the snapshot ids and the link's losses: digits,
                 0 to 18446744073709551615 (default 1)
  --sqlite FILE  keeps the outbox and the receiver's state in the SQLite
                 database FILE (created when absent), which demo holds
                 exclusively while it runs: another process that has it
                 open is an error. Run demo again on FILE to continue.
  --mysql DSN    keeps the receiver's state in MariaDB or MySQL; with
                 --sqlite too, the outbox stays in FILE (the boat) and the
                 receiver is in MariaDB (the shore). DSN is a
                 github.com/go-sql-driver/mysql DSN such as
                 'user:password@tcp(127.0.0.1:3306)/'. Without a database
                 name, demo creates a throwaway schema
                 sourcecatalog_demo_<random> (the account needs CREATE and
                 DROP) and drops it at the end. With one, the _v2 tables are
                 created in that schema if missing and kept; the schema may
                 hold state for the example vessel only from earlier runs
                 on the same outbox (so only with --sqlite), and
                 yachtmemory_telemetry is refused.
  --http         publishes through the HTTP binding and a fault proxy on
                 loopback, as above, instead of the simulated link
`,
	run: runDemo,
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
