package main

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// source returns the storeheal.Source of the receiver's store f names,
// for serve: opened as open does, the MariaDB schema migrated by the
// first open only when migrate (a reopen checks it), and reopened after
// the failures poisoned accepts.
func (f *storeFlag) source(migrate bool) storeheal.Source {
	if f.kind == "sqlite" {
		return sqlitestore.Source(f.arg)
	}
	name, opts := "memory", storeOptions{migrate: migrate}
	if f.kind == "mysql" {
		name = "mysql schema " + f.dsn.DBName
	}
	return storeheal.Source{
		Name: name,
		Open: func(ctx context.Context) (finalize.Store, io.Closer, error) {
			st, err := f.open(ctx, opts)
			opts.migrate = false // Open calls are sequential: the first, then the reopening goroutine's
			if err != nil {
				return nil, nil, err
			}
			return st.receiver, closerFunc(st.close), nil
		},
		Poisoned: f.poisoned(),
	}
}

// closerFunc is an io.Closer.
type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// openHealing opens the stores f names as open does, for a command that
// runs for long (serve), under a storeheal.Handle: when a failure poisons
// the store — an I/O error or a full disk under SQLite, a connection lost
// to MariaDB — the Handle closes it and opens it again with backoff,
// refusing every call with store_unavailable meanwhile, and serves again
// once the store opens and can write. Only the first open migrates; a
// reopen checks the schema. observe gets every change of the Handle's
// Status. A store that fails its first open, or the probe of a write
// after it, is an error.
func (f *storeFlag) openHealing(ctx context.Context, opts storeOptions, observe func(storeheal.Status)) (*stores, *storeheal.Handle[*stores], error) {
	next := opts
	var name string // of the first open's stores, which storeheal.Open returns after
	open := func(ctx context.Context) (*stores, io.Closer, error) {
		st, err := f.open(ctx, next)
		next.migrate = false // Opener calls are sequential: Open's, then the reopening goroutine's
		if err != nil {
			return nil, nil, err
		}
		if name == "" {
			name = st.name
		}
		if err := probe(ctx, st); err != nil {
			return nil, nil, errors.Join(fmt.Errorf("%s cannot write: %w", st.name, err), st.close())
		}
		return st, closerFunc(st.close), nil
	}
	h, err := storeheal.Open(ctx, open, f.poisoned(), storeheal.WithObserver(observe))
	if err != nil {
		return nil, nil, err
	}
	st := &stores{
		name:     name,
		receiver: storeheal.Receiver(h, func(s *stores) finalize.Store { return s.receiver }),
		ping:     func(ctx context.Context) error { return h.Do(func(s *stores) error { return s.ping(ctx) }) },
		close:    h.Close,
	}
	if opts.outbox {
		st.outbox = storeheal.Outbox(h, func(s *stores) outbox.Store { return s.outbox })
	}
	return st, h, nil
}

// probe checks that the stores can write.
func probe(ctx context.Context, st *stores) error {
	if err := storeheal.ProbeReceiver(ctx, st.receiver); err != nil {
		return err
	}
	if st.outbox != nil {
		return storeheal.ProbeOutbox(ctx, st.outbox)
	}
	return nil
}

// poisoned returns the predicate of the failures after which the store
// f names must be reopened: sqlitestore.ErrPoisoned, or a connection lost
// to MariaDB. A memory store is never reopened: a new one would be empty.
func (f *storeFlag) poisoned() func(error) bool {
	switch f.kind {
	case "sqlite":
		return func(err error) bool { return errors.Is(err, sqlitestore.ErrPoisoned) }
	case "mysql":
		return connectionLost
	}
	return func(error) bool { return false }
}

// MariaDB error numbers that end a connection.
const (
	erServerShutdown   = 1053 // the server is shutting down
	erConnectionKilled = 1927 // KILL CONNECTION
	erClientTimeout    = 4031 // disconnected for inactivity
)

// connectionLost reports whether err says that the connection to MariaDB
// is gone: a dial or a network operation failed (connection refused or
// reset), the driver found the connection broken, or the server ended it.
// database/sql opens a new connection for the next call by itself; the
// reopen adds the schema check and the probe, and refuses calls at once
// while the server is down instead of letting each wait for its dial. A
// statement's own failure (a deadlock, a duplicate key) or a context done
// is not a lost connection.
func connectionLost(err error) bool {
	var op *net.OpError
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &op), errors.Is(err, driver.ErrBadConn), errors.Is(err, mysql.ErrInvalidConn),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE):
		return true
	case errors.As(err, &me):
		return me.Number == erServerShutdown || me.Number == erConnectionKilled || me.Number == erClientTimeout
	}
	return false
}
