// Package memstore is the in-memory outbox.Store: the reference
// implementation of the Store contract, for tests and throwaway demos.
// Nothing survives the process, so it must never hold a vessel's real
// outbox (see SPEC.md §7.4).
package memstore

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// Store is a concurrency-safe in-memory outbox.Store, the reference
// implementation of the Store contract. Transactions are serialised per
// vessel and buffer their writes until the callback returns nil. Nothing
// survives the process.
type Store struct {
	mu      sync.Mutex
	vessels map[uuid.UUID]*memVessel
	starts  map[string]outbox.ServerStart // the server starts remembered
}

var _ outbox.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store { return &Store{vessels: make(map[uuid.UUID]*memVessel)} }

type entryKey struct {
	snapshot uuid.UUID
	index    int
}

type memVessel struct {
	mu       sync.Mutex // held for a whole transaction
	revision int64
	entries  []outbox.Entry
	at       map[entryKey]int // position in entries
}

// WithVessel implements Store.
func (s *Store) WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(outbox.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	v := s.vessels[vesselID]
	if v == nil {
		v = &memVessel{at: make(map[entryKey]int)}
		s.vessels[vesselID] = v
	}
	s.mu.Unlock()
	v.mu.Lock()
	defer v.mu.Unlock()
	t := &memTx{v: v, revision: v.revision}
	defer func() { t.done = true }()
	if err := fn(t); err != nil {
		return err
	}
	v.revision = t.revision
	for _, e := range t.added {
		v.at[entryKey{e.SnapshotID, e.ChunkIndex}] = len(v.entries)
		v.entries = append(v.entries, e)
	}
	for k, st := range t.states {
		v.entries[v.at[k]].State = st
	}
	return nil
}

type memTx struct {
	v        *memVessel
	done     bool
	revision int64
	added    []outbox.Entry
	states   map[entryKey]outbox.State
}

func (t *memTx) check(ctx context.Context) error {
	if t.done {
		panic("outbox/memstore: Tx used after its callback returned")
	}
	return ctx.Err()
}

func (t *memTx) NextRevision(ctx context.Context, floor int64) (int64, error) {
	if err := t.check(ctx); err != nil {
		return 0, err
	}
	t.revision = max(t.revision+1, floor)
	return t.revision, nil
}

// all returns the committed entries overlaid with this transaction's.
func (t *memTx) all() []outbox.Entry {
	out := make([]outbox.Entry, 0, len(t.v.entries)+len(t.added))
	out = append(out, t.v.entries...)
	out = append(out, t.added...)
	for i := range out {
		if st, ok := t.states[entryKey{out[i].SnapshotID, out[i].ChunkIndex}]; ok {
			out[i].State = st
		}
	}
	return out
}

func (t *memTx) Entries(ctx context.Context, snapshot uuid.UUID) ([]outbox.Entry, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	var out []outbox.Entry
	for _, e := range t.all() {
		if e.SnapshotID == snapshot {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil, sourcecatalog.ErrNotFound
	}
	slices.SortFunc(out, func(a, b outbox.Entry) int { return cmp.Compare(a.ChunkIndex, b.ChunkIndex) })
	return out, nil
}

func (t *memTx) PutEntries(ctx context.Context, entries []outbox.Entry) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.added = append(t.added, entries...)
	return nil
}

// CountPending implements outbox.PendingCounter.
func (t *memTx) CountPending(ctx context.Context) (int, error) {
	if err := t.check(ctx); err != nil {
		return 0, err
	}
	n := 0
	for _, e := range t.all() {
		if e.State == outbox.Pending {
			n++
		}
	}
	return n, nil
}

func (t *memTx) Pending(ctx context.Context, limit int) ([]outbox.Entry, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	var out []outbox.Entry
	for _, e := range t.all() {
		if e.State == outbox.Pending {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b outbox.Entry) int {
		if c := cmp.Compare(a.Revision, b.Revision); c != 0 {
			return c
		}
		return cmp.Compare(a.ChunkIndex, b.ChunkIndex)
	})
	return out[:min(max(limit, 0), len(out))], nil
}

func (t *memTx) SetState(ctx context.Context, snapshot uuid.UUID, chunkIndex int, state outbox.State) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	k := entryKey{snapshot, chunkIndex}
	_, committed := t.v.at[k]
	added := slices.ContainsFunc(t.added, func(e outbox.Entry) bool { return e.SnapshotID == snapshot && e.ChunkIndex == chunkIndex })
	if !committed && !added {
		return sourcecatalog.ErrNotFound
	}
	if t.states == nil {
		t.states = make(map[entryKey]outbox.State)
	}
	t.states[k] = state
	return nil
}

var _ outbox.StartMemory = (*Store)(nil)

// RememberStart implements outbox.StartMemory.
func (s *Store) RememberStart(ctx context.Context, st outbox.ServerStart) (outbox.ServerStart, error) {
	if err := ctx.Err(); err != nil {
		return outbox.ServerStart{}, err
	}
	if err := outbox.CheckServerStart(st); err != nil {
		return outbox.ServerStart{}, err
	}
	st.FirstSeen, st.Settled, st.Others = toMilli(st.FirstSeen), toMilli(st.Settled), 0
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.starts == nil {
		s.starts = make(map[string]outbox.ServerStart)
	}
	old, ok := s.starts[st.ID]
	switch {
	case ok:
		if old.Settled.IsZero() {
			old.Settled = st.Settled
		}
		st = old
	case len(s.starts) >= outbox.MaxServerStarts:
		var oldest outbox.ServerStart
		for _, o := range s.starts {
			if oldest.ID == "" || o.FirstSeen.Before(oldest.FirstSeen) || (o.FirstSeen.Equal(oldest.FirstSeen) && o.ID < oldest.ID) {
				oldest = o
			}
		}
		delete(s.starts, oldest.ID)
	}
	s.starts[st.ID] = st
	st.Others = len(s.starts) - 1
	return st, nil
}

// toMilli truncates t to the millisecond, in UTC; the zero time stays zero.
func toMilli(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}
