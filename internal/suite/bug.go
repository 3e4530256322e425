package suite

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/google/uuid"
)

// A Bug is the one bug of a broken store in a kit's own tests, with what a
// wrapper around a correct store needs to inject it. Name is one of
// "ignore-ctx", "wrap-error", "reuse-buffer" or another the wrapper tests
// itself; a Bug is safe for concurrent use.
type Bug struct {
	Name string

	mu    sync.Mutex
	arena map[uuid.UUID][]byte // reuse-buffer: the memory a vessel's reads return, reused by each transaction
}

// Begin starts a transaction of vessel: reuse-buffer hands its memory out
// again from the start, overwriting what earlier transactions returned.
func (b *Bug) Begin(vessel uuid.UUID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.arena == nil {
		b.arena = make(map[uuid.UUID][]byte)
	}
	b.arena[vessel] = b.arena[vessel][:0]
}

// Ctx returns the context a Tx call passes on: ignore-ctx drops it.
func (b *Bug) Ctx(ctx context.Context) context.Context {
	if b.Name == "ignore-ctx" {
		return context.Background()
	}
	return ctx
}

// Bytes returns p as a read of vessel hands it out: with reuse-buffer, in
// the vessel's arena, which the next transaction overwrites.
func (b *Bug) Bytes(vessel uuid.UUID, p []byte) []byte {
	if b.Name != "reuse-buffer" || p == nil {
		return p
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	arena := b.arena[vessel]
	if len(arena)+len(p) > cap(arena) {
		arena = slices.Grow(arena, max(len(p), 1<<16)) // a new buffer; what was handed out stays
	}
	start := len(arena)
	arena = append(arena, p...)
	b.arena[vessel] = arena
	return arena[start:len(arena):len(arena)]
}

// Err returns the error WithVessel passes on: wrap-error wraps it.
func (b *Bug) Err(err error) error {
	if b.Name == "wrap-error" && err != nil {
		return fmt.Errorf("brokenstore: %w", err)
	}
	return err
}
