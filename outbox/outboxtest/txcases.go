package outboxtest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/internal/suite"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// A txCall is one call of each Tx method, on a vessel whose entries
// committed are those of stageOne.
type txCall struct {
	method string
	call   func(ctx context.Context, tx outbox.Tx, e *env, committed []outbox.Entry) error
}

var txCalls = []txCall{
	{"NextRevision", func(ctx context.Context, tx outbox.Tx, _ *env, _ []outbox.Entry) error {
		_, err := tx.NextRevision(ctx, 0)
		return err
	}},
	{"Entries", func(ctx context.Context, tx outbox.Tx, _ *env, c []outbox.Entry) error {
		_, err := tx.Entries(ctx, c[0].SnapshotID)
		return err
	}},
	{"PutEntries", func(ctx context.Context, tx outbox.Tx, e *env, _ []outbox.Entry) error {
		return tx.PutEntries(ctx, fakeEntries(e.vessel, 2, 1))
	}},
	{"Pending", func(ctx context.Context, tx outbox.Tx, _ *env, _ []outbox.Entry) error {
		_, err := tx.Pending(ctx, 10)
		return err
	}},
	{"SetState", func(ctx context.Context, tx outbox.Tx, _ *env, c []outbox.Entry) error {
		return tx.SetState(ctx, c[1].SnapshotID, c[1].ChunkIndex, outbox.Delivered)
	}},
}

func txCallOf(method string) txCall {
	i := slices.IndexFunc(txCalls, func(c txCall) bool { return c.method == method })
	return txCalls[i]
}

// stageOne commits revision 1 and its entries, a manifest and two chunks,
// and returns them.
func (e *env) stageOne() []outbox.Entry {
	e.t.Helper()
	entries := fakeEntries(e.vessel, 1, 2)
	e.in(func(tx outbox.Tx) error {
		_, err := tx.NextRevision(e.ctx, 0)
		require.NoError(e.t, err, "NextRevision")
		return tx.PutEntries(e.ctx, entries)
	})
	return entries
}

// testTxContextDone calls every Tx method with a done context inside a
// transaction whose own context is live: each must return ctx's error,
// whatever WithVessel checked when it began.
func testTxContextDone(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	committed := e.stageOne()
	done, cancel := context.WithCancel(e.ctx)
	cancel()
	for _, c := range txCalls {
		t.Run(c.method, func(t *testing.T) {
			var got error
			err := e.store.WithVessel(e.ctx, e.vessel, func(tx outbox.Tx) error {
				got = c.call(done, tx, e, committed)
				return got
			})
			require.ErrorIs(t, got, context.Canceled,
				"Tx.%s must return ctx's error when ctx is done (outbox.Tx contract)", c.method)
			require.ErrorIs(t, err, context.Canceled, "WithVessel returns the callback's error")
		})
	}
	require.Equal(t, committed, e.pending(), "a transaction whose callback failed writes nothing (outbox.Store contract)")
	e.requireNextRevision(2)
}

// testCallbackErrorUnchanged fails callbacks in several ways, the third
// after a write: WithVessel must return the very error the callback
// returned, not a wrapper of it.
func testCallbackErrorUnchanged(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	committed := e.stageOne()
	suite.RunCallbackErrors(t, "outbox.Store", [4]string{"Pending", "Entries", "PutEntries", "NextRevision"}, func(t *testing.T, call string, fail error) error {
		return e.store.WithVessel(e.ctx, e.vessel, func(tx outbox.Tx) error {
			require.NoError(t, txCallOf(call).call(e.ctx, tx, e, committed), "Tx.%s", call)
			return fail
		})
	})
}

// testBytesOutliveTransaction keeps the payloads Entries and Pending
// return, then writes entries of the same shape in later transactions and
// reads them: the kept slices must not change, as they would in a store
// that hands out a buffer it reuses or memory it maps only during a
// transaction.
func testBytesOutliveTransaction(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	committed := e.stageOne()
	type kept struct {
		what      string
		got, want []byte
	}
	var held []kept
	keep := func(what string, entries []outbox.Entry) {
		for _, en := range entries {
			held = append(held, kept{fmt.Sprintf("%s: Payload of entry %d", what, en.ChunkIndex), en.Payload, bytes.Clone(en.Payload)})
		}
	}
	keep("Entries", e.entries(committed[0].SnapshotID))
	keep("Pending", e.pending())

	// More entries of the same lengths, read back; a state changed.
	more := fakeEntries(e.vessel, 2, 2)
	e.put(more...)
	e.entries(more[0].SnapshotID)
	e.setState(committed[0], outbox.Delivered)
	e.pending()
	for _, k := range held {
		require.Equalf(t, string(k.want), string(k.got),
			"%s changed after its transaction: byte slices a Tx returns must keep their contents for as long as the caller holds them (outbox.Tx contract)", k.what)
	}
}
