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
	"github.com/yachtmemory/sourcecatalog/catalog"
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
	items     map[catalog.Key]item
}

// item is an inventory item without its key, which is the map's: small
// enough for a map to hold in place, where a whole finalize.Item would be
// allocated apart for every entry. The rest of the item is shared: the
// items an activation writes all point to one sighting (see tx.intern).
type item struct {
	record []byte
	*sighting
}

// A sighting is what an item holds besides its key and record. It is
// never modified once an item points to it.
type sighting struct {
	firstSeen, lastSeen finalize.Seen
	current             bool
}

func (it item) with(k catalog.Key) finalize.Item {
	return finalize.Item{Key: k, Record: it.record, FirstSeen: it.firstSeen, CurrentlyObserved: it.current, LastSeen: it.lastSeen}
}

func (s *Store) vessel(id uuid.UUID) *vessel {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.vessels[id]
	if v == nil {
		v = &vessel{
			snapshots: make(map[uuid.UUID]finalize.Snapshot),
			chunks:    make(map[chunkKey]finalize.StagedChunk),
			items:     make(map[catalog.Key]item),
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
	items     map[catalog.Key]item
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
	v.items = merge(v.items, t.items)
}

// merge returns committed updated with the entries of written, which
// override committed's. It copies the smaller map into the larger one, so
// that a transaction writing a whole inventory hands over its buffer.
func merge[K comparable, V any](committed, written map[K]V) map[K]V {
	if len(written) <= len(committed) {
		maps.Copy(committed, written)
		return committed
	}
	for k, v := range committed {
		if _, ok := written[k]; !ok {
			written[k] = v
		}
	}
	return written
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

func (t *tx) item(k catalog.Key) (item, bool) {
	if it, ok := t.items[k]; ok {
		return it, true
	}
	it, ok := t.v.items[k]
	return it, ok
}

// intern returns a sighting equal to s: the last call's when s equals
// that, so that the items of one activation share theirs.
func (t *tx) intern(s sighting) *sighting {
	if t.sighting == nil || *t.sighting != s {
		t.sighting = new(sighting)
		*t.sighting = s
	}
	return t.sighting
}

func (t *tx) PutItems(ctx context.Context, items []finalize.Item) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	if t.items == nil {
		t.items = make(map[catalog.Key]item, len(items))
	}
	for _, it := range items {
		s := sighting{firstSeen: it.FirstSeen, lastSeen: it.LastSeen, current: it.CurrentlyObserved}
		if old, ok := t.item(it.Key); ok {
			s.firstSeen = old.firstSeen
		}
		t.items[it.Key] = item{record: it.Record, sighting: t.intern(s)}
	}
	return nil
}

func (t *tx) RetireItems(ctx context.Context, keys []catalog.Key, last finalize.Seen) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	if t.items == nil {
		t.items = make(map[catalog.Key]item, len(keys))
	}
	for _, k := range keys {
		if it, ok := t.item(k); ok {
			it.sighting = t.intern(sighting{firstSeen: it.firstSeen, lastSeen: last})
			t.items[k] = it
		}
	}
	return nil
}

func (t *tx) Items(ctx context.Context) ([]finalize.Item, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	out := make([]finalize.Item, 0, len(t.v.items)+len(t.items))
	for k, it := range t.v.items {
		if _, ok := t.items[k]; !ok {
			out = append(out, it.with(k))
		}
	}
	for k, it := range t.items {
		out = append(out, it.with(k))
	}
	return out, nil
}
