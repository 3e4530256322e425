package outboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// The Tx contract, checked directly: what the Writer and the Publisher rely
// on.
var storeCases = []testCase{
	{"NextRevisionPersisted", testNextRevision},
	{"RollbackOnError", testRollback},
	{"EntriesOrderAndReadYourWrites", testEntriesOrder},
	{"EntriesNotFound", testEntriesNotFound},
	{"PendingOrderAndLimit", testPending},
	{"SetState", testSetState},
	{"BytesVerbatim", testBytesVerbatim},
	{"VesselIsolation", testVesselIsolation},
	{"Serialised", testSerialised},
	{"ContextCanceled", testContextCanceled},
	{"TxContextDone", testTxContextDone},
	{"CallbackErrorUnchanged", testCallbackErrorUnchanged},
	{"BytesOutliveTransaction", testBytesOutliveTransaction},
}

// fakeEntries returns the entries of a snapshot with a manifest and n
// chunks at revision rev. The payloads are not protocol messages: a Store
// keeps bytes, it does not read them.
func fakeEntries(vessel uuid.UUID, rev int64, chunks int) []outbox.Entry {
	id := uuid.New()
	manifest := []byte(`{"manifest":"` + id.String() + `","revision":` + strconv.FormatInt(rev, 10) + `}`)
	out := []outbox.Entry{{
		VesselID: vessel, SnapshotID: id, Revision: rev,
		EntityType: sourcecatalog.ManifestEntityType, EntityKey: id.String(), ChunkIndex: sourcecatalog.NoIndex,
		Payload: manifest, Digest: canonical.Sum(manifest), State: outbox.Pending,
	}}
	for i := range chunks {
		b := []byte(`{"chunk":` + strconv.Itoa(i) + `,"of":"` + id.String() + `"}`)
		out = append(out, outbox.Entry{
			VesselID: vessel, SnapshotID: id, Revision: rev,
			EntityType: sourcecatalog.ChunkEntityType, EntityKey: id.String() + "/" + strconv.Itoa(i), ChunkIndex: i,
			Payload: b, Digest: canonical.Sum(b), State: outbox.Pending,
		})
	}
	return out
}

// put commits entries in one transaction.
func (e *env) put(entries ...outbox.Entry) {
	e.t.Helper()
	e.in(func(tx outbox.Tx) error { return tx.PutEntries(e.ctx, entries) })
}

// setState commits one state change.
func (e *env) setState(en outbox.Entry, s outbox.State) {
	e.t.Helper()
	e.in(func(tx outbox.Tx) error { return tx.SetState(e.ctx, en.SnapshotID, en.ChunkIndex, s) })
}

func testNextRevision(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	next := func(tx outbox.Tx, want int64) {
		t.Helper()
		got, err := tx.NextRevision(e.ctx, 0)
		require.NoError(t, err, "NextRevision")
		require.Equal(t, want, got, "revisions are allocated one after the other")
	}
	e.in(func(tx outbox.Tx) error {
		next(tx, 1)
		next(tx, 2)
		next(tx, 3)
		return nil
	})
	e.in(func(tx outbox.Tx) error {
		next(tx, 4) // persisted by the commit
		next(tx, 5)
		return nil
	})
	for want := int64(6); want <= 9; want++ {
		e.in(func(tx outbox.Tx) error { next(tx, want); return nil })
	}
	e.requireNextRevision(10)
}

func testRollback(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	var kept []outbox.Entry
	e.in(func(tx outbox.Tx) error {
		rev, err := tx.NextRevision(e.ctx, 0)
		if err != nil {
			return err
		}
		kept = fakeEntries(e.vessel, rev, 2)
		return tx.PutEntries(e.ctx, kept)
	})

	boom := errors.New("callback failed")
	var lost []outbox.Entry
	err := e.store.WithVessel(e.ctx, e.vessel, func(tx outbox.Tx) error {
		rev, err := tx.NextRevision(e.ctx, 0)
		require.NoError(t, err)
		require.Equal(t, int64(2), rev, "NextRevision: one more than the last committed")
		lost = fakeEntries(e.vessel, rev, 3)
		require.NoError(t, tx.PutEntries(e.ctx, lost))
		require.NoError(t, tx.SetState(e.ctx, kept[0].SnapshotID, kept[0].ChunkIndex, outbox.Delivered))
		require.NoError(t, tx.SetState(e.ctx, kept[1].SnapshotID, kept[1].ChunkIndex, outbox.Stopped))
		require.NoError(t, tx.SetState(e.ctx, lost[1].SnapshotID, lost[1].ChunkIndex, outbox.Delivered))
		return boom
	})
	require.Truef(t, err == boom, "WithVessel must return the callback's error unchanged (outbox.Store contract): got %v", err)

	// A callback that fails after allocating a revision only.
	err = e.store.WithVessel(e.ctx, e.vessel, func(tx outbox.Tx) error {
		rev, err := tx.NextRevision(e.ctx, 0)
		require.NoError(t, err)
		require.Equal(t, int64(2), rev, "the rolled-back revision is allocated again")
		return boom
	})
	require.Truef(t, err == boom, "WithVessel must return the callback's error unchanged (outbox.Store contract): got %v", err)

	e.requireNoEntries(lost[0].SnapshotID)
	require.Equal(t, kept, e.entries(kept[0].SnapshotID), "a failed callback changes no state")
	require.Equal(t, kept, e.pending(), "only the committed entries are pending")
	e.requireNextRevision(2)
	e.in(func(tx outbox.Tx) error {
		require.ErrorIs(t, tx.SetState(e.ctx, lost[0].SnapshotID, lost[0].ChunkIndex, outbox.Delivered), sourcecatalog.ErrNotFound,
			"a rolled-back entry does not exist")
		return nil
	})
}

func testEntriesOrder(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := fakeEntries(e.vessel, 1, 3)
	b := fakeEntries(e.vessel, 2, 2)
	// Put in no particular order, the two snapshots interleaved.
	shuffled := []outbox.Entry{a[3], b[2], a[0], a[2], b[0], b[1], a[1]}
	e.in(func(tx outbox.Tx) error {
		if err := tx.PutEntries(e.ctx, shuffled[:3]); err != nil {
			return err
		}
		if err := tx.PutEntries(e.ctx, shuffled[3:]); err != nil {
			return err
		}
		got, err := tx.Entries(e.ctx, a[0].SnapshotID)
		require.NoError(t, err)
		require.Equal(t, a, got, "a transaction reads its own writes, manifest first, then chunks by index")
		got, err = tx.Entries(e.ctx, b[0].SnapshotID)
		require.NoError(t, err)
		require.Equal(t, b, got, "a transaction reads its own writes, manifest first, then chunks by index")
		return nil
	})
	require.Equal(t, a, e.entries(a[0].SnapshotID), "committed: manifest first, then chunks by index")
	require.Equal(t, b, e.entries(b[0].SnapshotID), "committed: manifest first, then chunks by index")

	// Chunks put before their manifest, in separate transactions.
	c := fakeEntries(e.vessel, 3, 2)
	e.put(c[2])
	e.put(c[1])
	e.put(c[0])
	require.Equal(t, c, e.entries(c[0].SnapshotID), "Entries in entity order whatever the order of the puts")
}

func testEntriesNotFound(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	missing := uuid.New()
	e.requireNoEntries(missing)
	e.put(fakeEntries(e.vessel, 1, 1)...)
	e.requireNoEntries(missing)
}

func testPending(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	r1 := fakeEntries(e.vessel, 1, 3)
	r2 := fakeEntries(e.vessel, 2, 2)
	r3 := fakeEntries(e.vessel, 3, 1)
	r5 := fakeEntries(e.vessel, 5, 2)
	// Newest first, chunks backwards, so that the order is the store's.
	e.put(r5[2], r5[1], r5[0])
	e.put(r3[1], r3[0], r2[2])
	e.put(r2[1], r1[3], r1[2])
	e.put(r2[0], r1[1], r1[0])
	all := entriesOf(r1, r2, r3, r5)
	require.Equal(t, all, e.pending(), "oldest revision first, manifest then chunks by index")

	e.setState(r1[2], outbox.Delivered)
	e.setState(r2[0], outbox.Stopped)
	e.setState(r3[0], outbox.Delivered)
	e.setState(r3[1], outbox.Delivered)
	want := entriesOf(r1[:2], r1[3:], r2[1:], r5)
	require.Equal(t, want, e.pending(), "only pending entries")

	for limit := 1; limit <= len(want)+1; limit++ {
		e.in(func(tx outbox.Tx) error {
			got, err := tx.Pending(e.ctx, limit)
			require.NoError(t, err)
			require.Equal(t, want[:min(limit, len(want))], got, "Pending(%d)", limit)
			return nil
		})
	}
	e.in(func(tx outbox.Tx) error {
		for _, limit := range []int{0, -1} {
			got, err := tx.Pending(e.ctx, limit)
			require.NoError(t, err)
			require.Empty(t, got, "Pending(%d)", limit)
		}

		// Writes of the transaction count.
		r4 := fakeEntries(e.vessel, 4, 1)
		require.NoError(t, tx.PutEntries(e.ctx, r4))
		require.NoError(t, tx.SetState(e.ctx, r1[0].SnapshotID, r1[0].ChunkIndex, outbox.Delivered))
		got, err := tx.Pending(e.ctx, 100)
		require.NoError(t, err)
		require.Equal(t, entriesOf(r1[1:2], r1[3:], r2[1:], r4, r5), got, "a transaction reads its own writes")
		n, err := outbox.CountPending(e.ctx, tx)
		require.NoError(t, err)
		require.Equal(t, len(got), n, "CountPending counts what Pending reads, the transaction's writes too")
		return nil
	})
	after := e.pending()
	require.Len(t, after, len(want)+1, "the transaction's writes committed: one entry delivered, two added")
	e.in(func(tx outbox.Tx) error {
		_, ok := tx.(outbox.PendingCounter)
		_, faulty := e.store.(*FaultStore)
		require.True(t, ok || faulty, "the shipped stores' transactions count without reading (outbox.PendingCounter)")
		n, err := outbox.CountPending(e.ctx, tx)
		require.NoError(t, err)
		require.Equal(t, len(after), n, "CountPending after the transaction that wrote committed")
		return nil
	})
}

func testSetState(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := fakeEntries(e.vessel, 1, 2)
	e.put(a...)
	e.setState(a[0], outbox.Delivered)
	e.setState(a[2], outbox.Stopped)
	e.setState(a[2], outbox.Stopped) // the state it is already in
	want := []outbox.Entry{a[0], a[1], a[2]}
	want[0].State, want[2].State = outbox.Delivered, outbox.Stopped
	require.Equal(t, want, e.entries(a[0].SnapshotID), "states persist")
	e.setState(a[0], outbox.Pending)
	want[0].State = outbox.Pending
	require.Equal(t, want, e.entries(a[0].SnapshotID), "SetState replaces the state")

	e.in(func(tx outbox.Tx) error {
		for _, k := range []struct {
			snapshot uuid.UUID
			index    int
		}{{uuid.New(), sourcecatalog.NoIndex}, {uuid.New(), 0}, {a[0].SnapshotID, 2}, {a[0].SnapshotID, 7}} {
			require.ErrorIs(t, tx.SetState(e.ctx, k.snapshot, k.index, outbox.Delivered), sourcecatalog.ErrNotFound,
				"SetState(%s, %d)", k.snapshot, k.index)
		}
		// An entry put in the same transaction.
		b := fakeEntries(e.vessel, 2, 1)
		require.NoError(t, tx.PutEntries(e.ctx, b))
		require.NoError(t, tx.SetState(e.ctx, b[1].SnapshotID, b[1].ChunkIndex, outbox.Delivered))
		got, err := tx.Entries(e.ctx, b[0].SnapshotID)
		require.NoError(t, err)
		require.Equal(t, []outbox.State{outbox.Pending, outbox.Delivered}, []outbox.State{got[0].State, got[1].State}, "SetState of an entry put in the same transaction")
		return nil
	})
	require.Equal(t, want, e.entries(a[0].SnapshotID), "an unknown entry changes nothing")
}

// testBytesVerbatim stores payloads no JSON column would keep: whitespace,
// escapes, invalid UTF-8, NUL, every byte value, the largest request.
func testBytesVerbatim(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	every := make([]byte, 256)
	for i := range every {
		every[i] = byte(i)
	}
	payloads := [][]byte{
		[]byte(`{ "b" : 1.0, "a":"\u00e9\u0000" }`),
		[]byte("{\"x\":\"\xff\xfe\"}\n"),
		bytes.Repeat(every, sourcecatalog.MaxRequest/256),
	}
	in := fakeEntries(e.vessel, 1, len(payloads)-1)
	for i := range in {
		in[i].Payload = payloads[i]
		in[i].Digest = canonical.Sum(append([]byte("not the payload's hash "), byte(i)))
	}
	e.put(in...)
	got := e.entries(in[0].SnapshotID)
	require.Len(t, got, len(in), "Entries returns every entry put")
	for i := range in {
		require.True(t, bytes.Equal(in[i].Payload, got[i].Payload), "entry %d: the payload comes back byte for byte", i)
		require.Equal(t, in[i].Digest, got[i].Digest, "entry %d: the digest is kept, not recomputed", i)
	}
	require.Equal(t, in, got, "entries come back as put")
}

func testVesselIsolation(t *testing.T, newStore NewStore) {
	a := newEnv(t, newStore)
	b := envOn(t, a.store, uuid.New())
	ea := fakeEntries(a.vessel, 1, 2)
	a.in(func(tx outbox.Tx) error {
		rev, err := tx.NextRevision(a.ctx, 0)
		require.NoError(t, err)
		require.Equal(t, int64(1), rev, "a vessel's first revision is 1")
		_, err = tx.NextRevision(a.ctx, 0)
		require.NoError(t, err)
		return tx.PutEntries(a.ctx, ea)
	})
	b.requireNextRevision(1)
	b.requireNoEntries(ea[0].SnapshotID)
	require.Empty(t, b.pending(), "another vessel's entries are not pending here")
	b.in(func(tx outbox.Tx) error {
		require.ErrorIs(t, tx.SetState(b.ctx, ea[0].SnapshotID, ea[0].ChunkIndex, outbox.Delivered), sourcecatalog.ErrNotFound, "another vessel's entry is not found")
		return nil
	})

	// The same snapshot id under both vessels: each sees its own.
	eb := fakeEntries(b.vessel, 1, 1)
	for i := range eb {
		eb[i].SnapshotID = ea[0].SnapshotID
		eb[i].Payload = append([]byte("vessel b "), eb[i].Payload...)
	}
	b.put(eb...)
	b.setState(eb[0], outbox.Delivered)
	require.Equal(t, ea, a.entries(ea[0].SnapshotID), "each vessel sees its own entries of a snapshot id")
	require.Equal(t, ea, a.pending(), "another vessel's state changes are not seen")
	a.requireNextRevision(3)
	got := b.entries(eb[0].SnapshotID)
	eb[0].State = outbox.Delivered
	require.Equal(t, eb, got, "each vessel sees its own entries of a snapshot id")
}

// testSerialised runs transactions of one vessel from many goroutines,
// each reading, pausing and writing: only serialised transactions see every
// earlier one's writes and allocate gap-free revisions.
func testSerialised(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	const workers, each = 8, 4
	errs := make(chan error, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				errs <- e.store.WithVessel(e.ctx, e.vessel, func(tx outbox.Tx) error {
					rev, err := tx.NextRevision(e.ctx, 0)
					if err != nil {
						return err
					}
					seen, err := tx.Pending(e.ctx, 1000)
					if err != nil {
						return err
					}
					if int64(len(seen)) != rev-1 {
						return fmt.Errorf("revision %d sees %d earlier entries", rev, len(seen))
					}
					time.Sleep(time.Millisecond)
					return tx.PutEntries(e.ctx, fakeEntries(e.vessel, rev, 0))
				})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got := e.pending()
	require.Len(t, got, workers*each, "transactions of one vessel are serialised: none is lost")
	for i, en := range got {
		require.Equal(t, int64(i+1), en.Revision, "gap-free, each revision once")
	}
	e.requireNextRevision(workers*each + 1)
}

func testContextCanceled(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	lost := fakeEntries(e.vessel, 1, 1)
	err := e.store.WithVessel(ctx, e.vessel, func(tx outbox.Tx) error {
		if _, err := tx.NextRevision(ctx, 0); err != nil {
			return err
		}
		return tx.PutEntries(ctx, lost)
	})
	require.ErrorIs(t, err, context.Canceled, "a done context fails the transaction")
	e.requireNoEntries(lost[0].SnapshotID)
	e.requireNextRevision(1)
}
