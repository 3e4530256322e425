// Package memstore is a concurrency-safe in-memory finalize.Store: the
// reference implementation of the Store contract, the embedded default of
// the command-line demo, and a store for tests.
//
// Its transactions are serialised per vessel by a mutex and buffer their
// writes until the callback returns nil; nothing survives the process.
package memstore

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// Store is an in-memory finalize.Store. The zero value is not usable; call
// New.
type Store struct {
	mu      sync.Mutex // guards vessels
	vessels map[uuid.UUID]*vessel
}

var _ finalize.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store { return &Store{vessels: make(map[uuid.UUID]*vessel)} }

type chunkKey struct {
	snapshot uuid.UUID
	index    int
}

// vessel is the committed state of one vessel.
type vessel struct {
	mu        sync.Mutex // held for the whole transaction
	state     finalize.VesselState
	snapshots map[uuid.UUID]finalize.Snapshot
	chunks    map[chunkKey]finalize.StagedChunk
	index     []finalize.IndexEntry
	items     []entry // sorted by key, one per key
}

func (s *Store) vessel(id uuid.UUID) *vessel {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.vessels[id]
	if v == nil {
		v = &vessel{
			snapshots: make(map[uuid.UUID]finalize.Snapshot),
			chunks:    make(map[chunkKey]finalize.StagedChunk),
		}
		s.vessels[id] = v
	}
	return v
}

// WithVessel implements finalize.Store.
func (s *Store) WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(finalize.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	v := s.vessel(vesselID)
	v.mu.Lock()
	defer v.mu.Unlock()
	t := &tx{v: v}
	defer func() { t.done = true }()
	if err := fn(t); err != nil {
		return err
	}
	t.commit()
	return nil
}

// tx buffers writes over the committed vessel state; reads see the buffer
// first. A nil snapshot marks a deletion; dropped lists the snapshots whose
// committed chunks were deleted, even if the snapshot was put again since.
type tx struct {
	v         *vessel
	done      bool
	state     *finalize.VesselState
	snapshots map[uuid.UUID]*finalize.Snapshot
	dropped   map[uuid.UUID]bool
	chunks    map[chunkKey]finalize.StagedChunk
	index     *[]finalize.IndexEntry
	items     []entry   // written items, sorted by key, one per key
	sighting  *sighting // the one interned last
}

func (t *tx) check(ctx context.Context) error {
	if t.done {
		panic("memstore: Tx used after its callback returned")
	}
	return ctx.Err()
}

func (t *tx) commit() {
	v := t.v
	if t.state != nil {
		v.state = *t.state
	}
	if len(t.dropped) > 0 {
		for k := range v.chunks {
			if t.dropped[k.snapshot] {
				delete(v.chunks, k)
			}
		}
	}
	for id, s := range t.snapshots {
		if s == nil {
			delete(v.snapshots, id)
			continue
		}
		v.snapshots[id] = *s
	}
	maps.Copy(v.chunks, t.chunks)
	if t.index != nil {
		v.index = *t.index
	}
	v.items = mergeEntries(v.items, t.items, true)
}

func (t *tx) Vessel(ctx context.Context) (finalize.VesselState, error) {
	if err := t.check(ctx); err != nil {
		return finalize.VesselState{}, err
	}
	if t.state != nil {
		return *t.state, nil
	}
	return t.v.state, nil
}

func (t *tx) SetVessel(ctx context.Context, s finalize.VesselState) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.state = &s
	return nil
}

func (t *tx) Snapshot(ctx context.Context, id uuid.UUID) (finalize.Snapshot, error) {
	if err := t.check(ctx); err != nil {
		return finalize.Snapshot{}, err
	}
	if s, ok := t.snapshots[id]; ok {
		if s == nil {
			return finalize.Snapshot{}, sourcecatalog.ErrNotFound
		}
		return *s, nil
	}
	if s, ok := t.v.snapshots[id]; ok {
		return s, nil
	}
	return finalize.Snapshot{}, sourcecatalog.ErrNotFound
}

func (t *tx) Snapshots(ctx context.Context) ([]finalize.Snapshot, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	var out []finalize.Snapshot
	for id, s := range t.v.snapshots {
		if _, ok := t.snapshots[id]; !ok {
			out = append(out, s)
		}
	}
	for _, s := range t.snapshots {
		if s != nil {
			out = append(out, *s)
		}
	}
	return out, nil
}

func (t *tx) PutSnapshot(ctx context.Context, s finalize.Snapshot) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	if t.snapshots == nil {
		t.snapshots = make(map[uuid.UUID]*finalize.Snapshot)
	}
	t.snapshots[s.ID] = &s
	return nil
}

func (t *tx) DeleteSnapshot(ctx context.Context, id uuid.UUID) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	if t.snapshots == nil {
		t.snapshots = make(map[uuid.UUID]*finalize.Snapshot)
	}
	t.snapshots[id] = nil
	if t.dropped == nil {
		t.dropped = make(map[uuid.UUID]bool)
	}
	t.dropped[id] = true
	for k := range t.chunks {
		if k.snapshot == id {
			delete(t.chunks, k)
		}
	}
	return nil
}

func (t *tx) Chunk(ctx context.Context, snapshot uuid.UUID, index int) (finalize.StagedChunk, error) {
	if err := t.check(ctx); err != nil {
		return finalize.StagedChunk{}, err
	}
	k := chunkKey{snapshot, index}
	if c, ok := t.chunks[k]; ok {
		return c, nil
	}
	if c, ok := t.v.chunks[k]; ok && !t.dropped[snapshot] {
		return c, nil
	}
	return finalize.StagedChunk{}, sourcecatalog.ErrNotFound
}

func (t *tx) Chunks(ctx context.Context, snapshot uuid.UUID) ([]finalize.StagedChunk, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	var out []finalize.StagedChunk
	if !t.dropped[snapshot] {
		for k, c := range t.v.chunks {
			if k.snapshot == snapshot {
				if _, ok := t.chunks[k]; !ok {
					out = append(out, c)
				}
			}
		}
	}
	for k, c := range t.chunks {
		if k.snapshot == snapshot {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b finalize.StagedChunk) int { return a.Index - b.Index })
	return out, nil
}

func (t *tx) PutChunk(ctx context.Context, c finalize.StagedChunk) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	if t.chunks == nil {
		t.chunks = make(map[chunkKey]finalize.StagedChunk)
	}
	t.chunks[chunkKey{c.Snapshot, c.Index}] = c
	return nil
}

func (t *tx) Index(ctx context.Context) ([]finalize.IndexEntry, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	if t.index != nil {
		return *t.index, nil
	}
	return t.v.index, nil
}

func (t *tx) SetIndex(ctx context.Context, index []finalize.IndexEntry) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.index = &index
	return nil
}
