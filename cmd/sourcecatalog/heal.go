package main

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
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
// the failures poisoned accepts. A SQLite file must exist unless create,
// and only the file opened first is ever reopened.
func (f *storeFlag) source(migrate, create bool) storeheal.Source {
	if f.kind == "sqlite" {
		if create {
			return sqlitestore.Source(f.arg)
		}
		return sqlitestore.Source(f.arg, sqlitestore.WithExistingFile())
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

// outboxSource returns the storeheal.OutboxSource of the outbox f names,
// for the agent: opened as open does, and reopened after the failures
// poisoned accepts.
func (f *storeFlag) outboxSource() storeheal.OutboxSource {
	if f.kind == "sqlite" {
		return sqlitestore.OutboxSource(f.arg)
	}
	name := "memory"
	if f.kind == "mysql" {
		name = "mysql schema " + f.dsn.DBName
	}
	return storeheal.OutboxSource{
		Name: name,
		Open: func(ctx context.Context) (outbox.Store, io.Closer, error) {
			st, err := f.open(ctx, storeOptions{outbox: true})
			if err != nil {
				return nil, nil, err
			}
			return st.outbox, closerFunc(st.close), nil
		},
		Poisoned: f.poisoned(),
	}
}

// newFile reports whether f names a SQLite file that does not exist yet,
// which opening it creates.
func (f *storeFlag) newFile() bool {
	if f.kind != "sqlite" {
		return false
	}
	_, err := os.Lstat(f.arg)
	return errors.Is(err, fs.ErrNotExist)
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
