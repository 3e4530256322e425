package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
)

// maxSizedStmts bounds the statements built for a number of rows that a
// Store keeps prepared.
const maxSizedStmts = 32

// stmtCache keeps the statements prepared on the Store's connection, by
// their SQL text, so that a statement is parsed once per connection, not
// once per call. It keeps two sets. The fixed statements — every text
// written out in this package, a set as small as its code — are kept
// until Close, and never evicted. The sized ones — a multi-row INSERT or
// an IN list, whose text depends on how many values it holds — are kept up to
// maxSizedStmts, and one of them is closed to make room for another, so
// that texts of many sizes never push a fixed statement out. It is used
// only by whoever holds the connection; Close closes its statements
// before the connection. A poisoned Store keeps them until Close, and a
// Store opened again prepares its own.
type stmtCache struct {
	fixed, sized map[string]*sql.Stmt
}

// prepared returns the fixed statement of query, preparing it on conn
// when it is not kept.
func (c *stmtCache) prepared(ctx context.Context, conn *sql.Conn, query string) (*sql.Stmt, error) {
	return prepare(ctx, conn, &c.fixed, query, 0)
}

// preparedSized returns the sized statement of query, preparing it on
// conn when it is not kept, and closing another sized one when
// maxSizedStmts are.
func (c *stmtCache) preparedSized(ctx context.Context, conn *sql.Conn, query string) (*sql.Stmt, error) {
	return prepare(ctx, conn, &c.sized, query, maxSizedStmts)
}

// prepare returns the statement of query kept in *m, or prepares it and
// keeps it there, closing one kept first when limit (if not 0) are.
func prepare(ctx context.Context, conn *sql.Conn, m *map[string]*sql.Stmt, query string, limit int) (*sql.Stmt, error) {
	if st, ok := (*m)[query]; ok {
		return st, nil
	}
	st, err := conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if *m == nil {
		*m = map[string]*sql.Stmt{}
	}
	if limit > 0 && len(*m) >= limit {
		for q, old := range *m {
			delete(*m, q)
			if err := old.Close(); err != nil {
				st.Close()
				return nil, err
			}
			break
		}
	}
	(*m)[query] = st
	return st, nil
}

// close closes every statement kept.
func (c *stmtCache) close() error {
	var errs []error
	for _, m := range []map[string]*sql.Stmt{c.fixed, c.sized} {
		for q, st := range m {
			errs = append(errs, st.Close())
			delete(m, q)
		}
	}
	return errors.Join(errs...)
}
