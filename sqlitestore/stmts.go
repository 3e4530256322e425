package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
)

// maxStmts bounds the statements a Store keeps prepared.
const maxStmts = 96

// stmtCache keeps the statements prepared on the Store's connection, by
// their SQL text, so that a statement is parsed once per connection, not
// once per call. It is used only by whoever holds the connection; Close
// closes its statements before the connection. A poisoned Store keeps
// them until Close, and a Store opened again prepares its own.
type stmtCache struct {
	m map[string]*sql.Stmt
}

// prepared returns the statement of query, preparing it on conn when it
// is not kept. When the cache is full, one statement kept is closed to
// make room.
func (c *stmtCache) prepared(ctx context.Context, conn *sql.Conn, query string) (*sql.Stmt, error) {
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	st, err := conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	if len(c.m) >= maxStmts {
		for q, old := range c.m {
			delete(c.m, q)
			if err := old.Close(); err != nil {
				st.Close()
				return nil, err
			}
			break
		}
	}
	c.m[query] = st
	return st, nil
}

// close closes every statement kept.
func (c *stmtCache) close() error {
	var errs []error
	for q, st := range c.m {
		errs = append(errs, st.Close())
		delete(c.m, q)
	}
	return errors.Join(errs...)
}
