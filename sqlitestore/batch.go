package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ncruces/go-sqlite3/driver"
)

// Group commit. Every transaction of the Store (WithVessel of both sides,
// Vessels) is a call queued on the Store. Whoever takes the turn (the
// connection) while calls are queued starts a coordinator, which runs one
// SQLite transaction for as many queued calls as the bounds allow, taking
// calls that queue while it runs too: natural batching, with no delay
// added to wait for company. Each call's callback runs in its caller's own
// goroutine, told by the coordinator when the connection is its, inside a
// SAVEPOINT of its own: RELEASE when it returns nil, ROLLBACK TO and
// RELEASE when it returns an error, panics or exits its goroutine. Then
// the coordinator COMMITs once — one sync for the batch — and only then
// answers the callers: nil to each whose callback returned nil, or the
// commit's error to all of them. A caller whose callback failed gets its
// own error, also only after the batch ends, since its callback may have
// read what the others wrote.

// Bounds of one batch: at most maxBatchCalls callbacks, and no callback
// joins once those before it passed maxBatchBytes of statement arguments.
const (
	maxBatchCalls = 64
	maxBatchBytes = 8 << 20
)

// The states of a call.
const (
	queued    int32 = iota // waiting in the queue
	claimed                // taken by a coordinator, which answers it
	abandoned              // its caller left (its context ended) before a coordinator took it
)

// A call is one transaction's callback waiting for, or running in, a
// batch.
type call struct {
	ctx    context.Context
	called time.Time // when it was queued, for the busy timeout
	body   func(q *sql.Conn) error
	state  atomic.Int32
	run    chan struct{} // the coordinator's word that the connection is the call's
	ended  chan outcome  // how the callback ended, for the coordinator
	done   chan struct{} // closed once err is the call's answer
	err    error
}

// outcome is how a callback ended.
type outcome struct {
	ran    bool  // false: the caller's context had ended, it did not run
	normal bool  // it returned (did not panic or exit its goroutine)
	err    error // what it returned
}

// transact runs body in a transaction shared with the calls batched with
// it, isolated in a savepoint of its own, and returns nil once the
// transaction committed durably. When body returns an error, or panics,
// only body's savepoint is rolled back: the call returns body's error
// unchanged, or the panic goes on in the caller's goroutine, once the
// batch has ended. If the COMMIT fails, or any callback of the batch met
// an I/O error, the Store is poisoned and every call of the batch whose
// body returned nil fails with an error wrapping ErrPoisoned.
//
// A call waits for the Store's batches before it only while ctx lasts
// (one whose ctx ends before its body runs returns ctx's error at once,
// having run nothing), and for another process's write lock only for what
// is left of the busy timeout, counted from the call (begin).
func (s *Store) transact(ctx context.Context, body func(q *sql.Conn) error) error {
	c := &call{ctx: ctx, body: body, run: make(chan struct{}, 1), ended: make(chan outcome, 1), done: make(chan struct{})}
	s.qmu.Lock()
	c.called = time.Now()
	s.queue = append(s.queue, c)
	s.qmu.Unlock()
	cancelled := ctx.Done()
	for {
		select {
		case <-c.run:
			return c.runBody(s.conn)
		case <-c.done:
			return c.err
		case <-cancelled:
			if c.state.CompareAndSwap(queued, abandoned) {
				s.dequeue(c)
				return fmt.Errorf("sqlitestore: begin: waiting for the store's other transactions: %w", ctx.Err())
			}
			cancelled = nil // claimed: the coordinator answers it
		case s.mu.c() <- struct{}{}:
			go s.coordinate()
		}
	}
}

// runBody runs the call's body in the caller's goroutine, when the
// coordinator says so, and waits for the batch's answer. A panic (or
// runtime.Goexit) in body goes on once the batch has ended.
func (c *call) runBody(q *sql.Conn) error {
	if err := c.ctx.Err(); err != nil {
		c.ended <- outcome{}
		return fmt.Errorf("sqlitestore: begin: %w", err)
	}
	normal := false
	defer func() {
		if !normal {
			c.ended <- outcome{ran: true}
			<-c.done
		}
	}()
	err := c.body(q)
	normal = true
	c.ended <- outcome{ran: true, normal: true, err: err}
	<-c.done
	return c.err
}

// dequeue removes an abandoned call from the queue.
func (s *Store) dequeue(c *call) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if i := slices.Index(s.queue, c); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
	}
}

// next claims the oldest call still queued, or returns nil.
func (s *Store) next() *call {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	for len(s.queue) > 0 {
		c := s.queue[0]
		s.queue = slices.Delete(s.queue, 0, 1)
		if c.state.CompareAndSwap(queued, claimed) {
			return c
		}
	}
	return nil
}

// answer gives a claimed call its answer.
func answer(c *call, err error) {
	c.err = err
	close(c.done)
}

// coordinate runs one batch and gives the turn back; the turn is held.
// Calls still queued then take the turn again, so none is left behind.
func (s *Store) coordinate() {
	defer s.mu.Unlock()
	s.runBatch()
}

// errTransactionEnded is a batch whose transaction SQLite ended before
// its COMMIT (as it may after an interrupted write): what the callbacks
// before wrote is gone, so their callers cannot be told it committed.
var errTransactionEnded = errors.New("the batch's transaction ended before its commit")

// runBatch runs the queued calls' callbacks in one transaction (see
// transact) and answers them.
func (s *Store) runBatch() {
	var committing, failed []*call // bodies that returned nil; bodies that did not
	open := false
	s.batchBytes = 0
	for n := 0; n < maxBatchCalls && s.batchBytes < maxBatchBytes; {
		c := s.next()
		if c == nil {
			break
		}
		if err := s.usable(); err != nil {
			// Every call queued is answered: none can run.
			answer(c, err)
			continue
		}
		if !open {
			if err := c.ctx.Err(); err != nil {
				answer(c, fmt.Errorf("sqlitestore: begin: %w", err))
				continue
			}
			if err := s.begin(c.ctx, time.Since(c.called)); err != nil {
				answer(c, err)
				continue
			}
			open = true
		}
		n++
		if err := s.savepoint("SAVEPOINT call"); err != nil {
			answer(c, err)
			break
		}
		c.run <- struct{}{}
		o := <-c.ended
		switch {
		case !o.ran:
			// The caller has returned its context's error.
			s.savepoint("RELEASE call")
		case o.normal && o.err == nil && s.poisoned == nil:
			if s.savepoint("RELEASE call") == nil {
				committing = append(committing, c)
			} else {
				failed = append(failed, c)
			}
		default:
			c.err = o.err
			failed = append(failed, c)
			if s.savepoint("ROLLBACK TO call") == nil {
				s.savepoint("RELEASE call")
			}
		}
		if s.poisoned == nil && !s.inTransaction() {
			s.poison(errTransactionEnded)
		}
		if s.poisoned != nil {
			break // the calls still queued are answered by the next batch
		}
	}
	err := s.finish(open, len(committing) > 0)
	for _, c := range committing {
		answer(c, err)
	}
	for _, c := range failed {
		close(c.done)
	}
}

// finish ends the batch's transaction: COMMIT when a callback is to be
// committed and nothing poisoned the Store, ROLLBACK otherwise. It returns
// the error the committed callbacks' callers get.
func (s *Store) finish(open, commit bool) error {
	switch {
	case !open:
		return nil
	case s.poisoned != nil:
		s.rollback()
		return s.usable()
	case !commit:
		s.rollback()
		return nil
	}
	if _, err := s.conn.ExecContext(context.Background(), "COMMIT"); err != nil {
		err = storageFailure(err)
		s.poison(err)
		s.rollback()
		return fmt.Errorf("sqlitestore: commit: %w: %w", ErrPoisoned, err)
	}
	return s.checkMoved("commit")
}

// savepoint runs a SAVEPOINT, RELEASE or ROLLBACK TO statement of the
// batch; a failure poisons the Store, since the batch's state is then in
// doubt.
func (s *Store) savepoint(stmt string) error {
	if _, err := s.conn.ExecContext(context.Background(), stmt); err != nil {
		err = storageFailure(err)
		s.poison(err)
		return fmt.Errorf("sqlitestore: %s: %w: %w", stmt, ErrPoisoned, err)
	}
	return nil
}

// inTransaction reports whether the connection is inside a transaction.
func (s *Store) inTransaction() bool {
	open := false
	if err := s.conn.Raw(func(c any) error {
		open = !c.(driver.Conn).Raw().GetAutocommit()
		return nil
	}); err != nil {
		s.poison(storageFailure(err))
	}
	return open
}
