package outboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// The Publisher over a recording fake transport: the capability gate,
// receipts, retries, conflicts and bytes that changed in the store.
var publisherCases = []testCase{
	{"CapabilityOffByDefault", testCapabilityOff},
	{"DeliversOnMatchingReceipts", testDelivers},
	{"Batches", testBatches},
	{"ReceiptMismatch", testReceiptMismatch},
	{"TransportErrorRetried", testTransportError},
	{"OperatorFailureStopsPass", testOperatorFailure},
	{"AlreadyReceivedCounted", testAlreadyReceived},
	{"ConflictStopsSnapshot", testConflict},
	{"TamperedBytes", testTampered},
	{"RerunCallbacks", testPublisherRerun},
}

// A recorder is a fake Transport that records every entry handed to it and
// answers with answer, or with the honest receipt when answer is nil.
type recorder struct {
	mu     sync.Mutex
	sent   []outbox.Entry
	answer func(n int, e outbox.Entry) (envelope.Receipt, error) // n counts sends from 0
}

// receiptOf is the receipt a receiver that staged e answers, built from
// e's fields one by one, not with Entry.Receipt, which the kit checks.
func receiptOf(e outbox.Entry) envelope.Receipt {
	return envelope.Receipt{
		EntityType: e.EntityType, VesselID: e.VesselID, SnapshotID: e.SnapshotID, Revision: e.Revision,
		ChunkIndex: e.ChunkIndex, Digest: e.Digest, Status: envelope.Staged,
	}
}

func (r *recorder) Send(ctx context.Context, e outbox.Entry) (envelope.Receipt, error) {
	r.mu.Lock()
	n := len(r.sent)
	e.Payload = bytes.Clone(e.Payload)
	r.sent = append(r.sent, e)
	answer := r.answer
	r.mu.Unlock()
	if answer != nil {
		return answer(n, e)
	}
	return receiptOf(e), nil
}

func (r *recorder) entries() []outbox.Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]outbox.Entry, len(r.sent))
	copy(out, r.sent)
	return out
}

// count returns how many times each entity key was sent.
func (r *recorder) count() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int)
	for _, e := range r.sent {
		out[e.EntityKey]++
	}
	return out
}

func (r *recorder) setAnswer(fn func(n int, e outbox.Entry) (envelope.Receipt, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer = fn
}

// publisher returns a Publisher of e's vessel over store with the v2
// capability declared.
func (e *env) publisher(store outbox.Store, t outbox.Transport, opts ...outbox.PublisherOption) *outbox.Publisher {
	return outbox.NewPublisher(store, e.vessel, t, append([]outbox.PublisherOption{outbox.WithReceiverV2(true)}, opts...)...)
}

// publish runs a pass that must succeed.
func (e *env) publish(p *outbox.Publisher) outbox.Pass {
	e.t.Helper()
	pass, err := p.Publish(e.ctx)
	require.NoError(e.t, err, "Publish")
	return pass
}

// requireStates requires the states of a snapshot's entries.
func (e *env) requireStates(snapshot uuid.UUID, want ...outbox.State) {
	e.t.Helper()
	var got []outbox.State
	for _, en := range e.entries(snapshot) {
		got = append(got, en.State)
	}
	require.Equal(e.t, want, got, "states of %s", snapshot)
}

func states(n int, s outbox.State) []outbox.State {
	out := make([]outbox.State, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func testCapabilityOff(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	all := entriesOf(e.commit(e.cycle(inv("a", 120))).Entries, e.commit(e.cycle(inv("b", 2))).Entries)
	rec := &recorder{}
	for name, opts := range map[string][]outbox.PublisherOption{
		"Default":   nil,
		"Withdrawn": {outbox.WithReceiverV2(false)},
		"Overruled": {outbox.WithReceiverV2(true), outbox.WithReceiverV2(false)},
		"Batched":   {outbox.WithBatch(1)},
	} {
		for range 2 {
			pass, err := outbox.NewPublisher(e.store, e.vessel, rec, opts...).Publish(e.ctx)
			require.ErrorIs(t, err, outbox.ErrCapabilityOff, name)
			require.Zero(t, pass, name)
		}
	}
	require.Empty(t, rec.entries(), "nothing is sent to a receiver that has not declared v2")
	require.Equal(t, all, e.pending(), "everything stays pending")

	// Declared, the same entries go out.
	require.Equal(t, outbox.Pass{Sent: len(all), Delivered: len(all)}, e.publish(e.publisher(e.store, rec)))
	require.Equal(t, all, rec.entries())
}

func testDelivers(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.commit(e.cycle(inv("a", 130))).Entries
	b := e.commit(e.cycle(inv("b", 3))).Entries
	rec := &recorder{}
	p := e.publisher(e.store, rec)
	all := entriesOf(a, b)
	require.Equal(t, outbox.Pass{Sent: len(all), Delivered: len(all)}, e.publish(p))
	require.Equal(t, all, rec.entries(), "every entry once, oldest revision first, manifest then chunks, the committed bytes")
	e.requireStates(a[0].SnapshotID, states(len(a), outbox.Delivered)...)
	e.requireStates(b[0].SnapshotID, states(len(b), outbox.Delivered)...)
	require.Empty(t, e.pending())

	require.Equal(t, outbox.Pass{}, e.publish(p), "a delivered entry is not sent again")
	require.Len(t, rec.entries(), len(all))

	c := e.commit(e.cycle(inv("c", 1))).Entries
	require.Equal(t, outbox.Pass{Sent: len(c), Delivered: len(c)}, e.publish(p), "new entries go out on the next pass")
	require.Equal(t, entriesOf(all, c), rec.entries())
}

func testBatches(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	all := entriesOf(e.commit(e.cycle(inv("a", 130))).Entries, e.commit(e.cycle(inv("b", 3))).Entries)
	rec := &recorder{}
	p := e.publisher(e.store, rec, outbox.WithBatch(2))
	for sent := 0; sent < len(all); sent += 2 {
		n := min(2, len(all)-sent)
		require.Equal(t, outbox.Pass{Sent: n, Delivered: n}, e.publish(p), "a pass reads one batch")
		require.Equal(t, all[:sent+n], rec.entries(), "in order")
	}
	require.Equal(t, outbox.Pass{}, e.publish(p))
}

func testReceiptMismatch(t *testing.T, newStore NewStore) {
	for _, tc := range []struct {
		name string
		edit func(r *envelope.Receipt)
	}{
		{"EntityType", func(r *envelope.Receipt) { r.EntityType = sourcecatalog.ManifestEntityType }},
		{"Snapshot", func(r *envelope.Receipt) { r.SnapshotID = uuid.New() }},
		{"ChunkIndex", func(r *envelope.Receipt) { r.ChunkIndex++ }},
		{"Digest", func(r *envelope.Receipt) { r.Digest[31] ^= 1 }},
		{"Vessel", func(r *envelope.Receipt) { r.VesselID = uuid.New() }},
		{"Revision", func(r *envelope.Receipt) { r.Revision++ }},
		{"Empty", func(r *envelope.Receipt) { *r = envelope.Receipt{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, newStore)
			a := e.commit(e.cycle(inv("a", 130))).Entries
			rec := &recorder{answer: func(n int, en outbox.Entry) (envelope.Receipt, error) {
				r := receiptOf(en)
				if n == 1 { // chunk 0
					tc.edit(&r)
				}
				return r, nil
			}}
			pass, err := e.publisher(e.store, rec).Publish(e.ctx)
			require.ErrorIs(t, err, outbox.ErrReceiptMismatch)
			requireFailures(t, &pass, failed{a[1], sourcecatalog.ErrIntegrity, outbox.ErrReceiptMismatch})
			require.Equal(t, 2, pass.Sent)
			require.Equal(t, 1, pass.Delivered)
			require.Len(t, rec.entries(), 2, "the pass stops at the mismatch")
			e.requireStates(a[0].SnapshotID, append([]outbox.State{outbox.Delivered}, states(len(a)-1, outbox.Pending)...)...)

			// The next pass sends it again.
			rec.setAnswer(nil)
			require.Equal(t, outbox.Pass{Sent: len(a) - 1, Delivered: len(a) - 1}, e.publish(e.publisher(e.store, rec)))
			require.Equal(t, entriesOf(a[:2], a[1:]), rec.entries())
			require.Empty(t, e.pending())
		})
	}
}

func testTransportError(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.commit(e.cycle(inv("a", 130))).Entries
	b := e.commit(e.cycle(inv("b", 2))).Entries
	down := errors.New("link down")
	rec := &recorder{answer: func(n int, en outbox.Entry) (envelope.Receipt, error) {
		if en.SnapshotID == a[0].SnapshotID && en.ChunkIndex == 1 {
			return envelope.Receipt{}, fmt.Errorf("send: %w", down)
		}
		return receiptOf(en), nil
	}}
	p := e.publisher(e.store, rec)
	all := entriesOf(a, b)
	pass := e.publish(p)
	requireFailures(t, &pass, failed{a[2], sourcecatalog.ErrStoreUnavailable, down})
	require.Equal(t, outbox.Pass{Sent: len(all), Delivered: len(all) - 1, Failed: 1, Remaining: 1}, pass)
	require.Equal(t, []outbox.Entry{a[2]}, e.pending(), "the failed entry stays pending")

	pass = e.publish(p)
	requireFailures(t, &pass, failed{a[2], sourcecatalog.ErrStoreUnavailable, down})
	require.Equal(t, outbox.Pass{Sent: 1, Failed: 1, Remaining: 1}, pass, "retried on the next pass")
	rec.setAnswer(nil)
	require.Equal(t, outbox.Pass{Sent: 1, Delivered: 1}, e.publish(p))
	require.Equal(t, entriesOf(all, a[2:3], a[2:3]), rec.entries(), "only the failed entry is sent again")
	require.Empty(t, e.pending())
}

func testConflict(t *testing.T, newStore NewStore) {
	for _, tc := range []struct {
		name  string
		index int // the conflicting entry of a
	}{{"Manifest", 0}, {"Chunk", 2}, {"LastChunk", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, newStore)
			a := e.commit(e.cycle(inv("a", 130))).Entries
			b := e.commit(e.cycle(inv("b", 2))).Entries
			at := tc.index
			if at < 0 {
				at += len(a)
			}
			rec := &recorder{answer: func(n int, en outbox.Entry) (envelope.Receipt, error) {
				if en.SnapshotID == a[0].SnapshotID && en.ChunkIndex == a[at].ChunkIndex {
					return envelope.Receipt{}, fmt.Errorf("receiver: %s: %w", en.EntityKey, sourcecatalog.ErrConflict)
				}
				return receiptOf(en), nil
			}}
			p := e.publisher(e.store, rec)
			pass, err := p.Publish(e.ctx)
			require.ErrorIs(t, err, sourcecatalog.ErrConflict, "the conflict is surfaced")
			requireFailures(t, &pass, failed{a[at], sourcecatalog.ErrConflict, sourcecatalog.ErrConflict})
			require.Equal(t, at+1, pass.Sent)
			require.Equal(t, at, pass.Delivered)
			require.Equal(t, a[:at+1], rec.entries())
			want := append(states(at, outbox.Delivered), states(len(a)-at, outbox.Stopped)...)
			e.requireStates(a[0].SnapshotID, want...)
			e.requireStates(b[0].SnapshotID, states(len(b), outbox.Pending)...)

			// Later passes publish the other snapshots, never the stopped one.
			require.Equal(t, outbox.Pass{Sent: len(b), Delivered: len(b)}, e.publish(p))
			require.Equal(t, outbox.Pass{}, e.publish(e.publisher(e.store, rec)))
			require.Equal(t, entriesOf(a[:at+1], b), rec.entries())
			e.requireStates(a[0].SnapshotID, want...)
			e.requireStates(b[0].SnapshotID, states(len(b), outbox.Delivered)...)
		})
	}
}

// testTampered changes an entry's bytes as the store returns them, after
// the commit: the Publisher refuses to send it, or anything after it.
func testTampered(t *testing.T, newStore NewStore) {
	replace := func(old, new string) func(b []byte) []byte {
		return func(b []byte) []byte { return bytes.Replace(b, []byte(old), []byte(new), 1) }
	}
	for _, tc := range []struct {
		name  string
		index int // the tampered entry
		edit  func(b []byte) []byte
	}{
		{"ManifestField", 0, replace(`"revision":1`, `"revision":2`)},
		{"ManifestWhitespace", 0, replace(`{"chunk_count"`, `{ "chunk_count"`)},
		{"ChunkRecord", 2, replace(`sensor`, `sensos`)},
		{"ChunkRevision", 1, replace(`"revision":1`, `"revision":3`)},
		{"ChunkIndex", 2, replace(`"chunk_index":1`, `"chunk_index":0`)},
		{"ChunkWhitespace", 1, replace(`{"chunk_index"`, `{ "chunk_index"`)},
		{"ChunkPayloadHash", 3, func(b []byte) []byte {
			i := bytes.Index(b, []byte(`"payload_sha256":"`)) + len(`"payload_sha256":"`)
			if b[i] == '0' { // one hex digit to another
				b[i] = '1'
			} else {
				b[i] = '0'
			}
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := newEnv(t, newStore)
			a := raw.commit(raw.cycle(inv("a", 130))).Entries
			require.Greater(t, len(a), tc.index)
			fs := NewFaultStore(raw.store)
			target := a[tc.index]
			fs.Tamper(func(en outbox.Entry) outbox.Entry {
				if en.SnapshotID == target.SnapshotID && en.ChunkIndex == target.ChunkIndex {
					edited := tc.edit(en.Payload)
					require.False(t, bytes.Equal(edited, target.Payload), "fixture: the edit changes the bytes")
					en.Payload = edited
				}
				return en
			})
			rec := &recorder{}
			p := raw.publisher(fs, rec)
			pass, err := p.Publish(raw.ctx)
			require.ErrorIs(t, err, sourcecatalog.ErrHashMismatch)
			requireFailures(t, &pass, failed{a[tc.index], sourcecatalog.ErrHashMismatch, sourcecatalog.ErrHashMismatch})
			require.Equal(t, tc.index, pass.Delivered, "the entries before the tampered one")
			require.Equal(t, a[:tc.index], rec.entries(), "nothing is sent from the tampered entry on")
			pass, err = p.Publish(raw.ctx)
			require.ErrorIs(t, err, sourcecatalog.ErrHashMismatch, "on every pass")
			require.Zero(t, pass.Sent)
			require.Equal(t, a[:tc.index], rec.entries(), "nothing further sent")
			require.Equal(t, a[tc.index:], raw.pending(), "the tampered entry and the rest stay pending")
		})
	}
}

// testPublisherRerun publishes through a store that runs every callback
// twice, the first run rolled back.
func testPublisherRerun(t *testing.T, newStore NewStore) {
	raw := newEnv(t, newStore)
	fs := NewFaultStore(raw.store)
	fs.Rerun(true)
	e := raw.over(fs)
	a := e.commit(e.cycle(inv("a", 130))).Entries
	b := e.commit(e.cycle(inv("b", 2))).Entries
	rec := &recorder{answer: func(n int, en outbox.Entry) (envelope.Receipt, error) {
		if en.SnapshotID == a[0].SnapshotID && en.ChunkIndex == 1 {
			return envelope.Receipt{}, sourcecatalog.ErrConflict
		}
		return receiptOf(en), nil
	}}
	p := e.publisher(fs, rec)
	_, err := p.Publish(e.ctx)
	require.ErrorIs(t, err, sourcecatalog.ErrConflict)
	require.Equal(t, outbox.Pass{Sent: len(b), Delivered: len(b)}, e.publish(p))
	require.Equal(t, outbox.Pass{}, e.publish(p))
	require.Equal(t, entriesOf(a[:3], b), rec.entries(), "each entry sent once")
	raw.requireStates(a[0].SnapshotID, append(states(2, outbox.Delivered), states(len(a)-2, outbox.Stopped)...)...)
	raw.requireStates(b[0].SnapshotID, states(len(b), outbox.Delivered)...)
}

// failed is a Failure a pass must report: the entry, the class and an
// error its cause must wrap.
type failed struct {
	entry outbox.Entry
	class error
	cause error
}

// requireFailures requires pass.Failures to be want, in order, then
// clears them so that the rest of the Pass compares with ==.
func requireFailures(t *testing.T, pass *outbox.Pass, want ...failed) {
	t.Helper()
	require.Len(t, pass.Failures, len(want), "%+v", pass.Failures)
	for i, w := range want {
		f := pass.Failures[i]
		require.Equal(t, []any{w.entry.SnapshotID, w.entry.Revision, w.entry.EntityType, w.entry.EntityKey, w.entry.ChunkIndex},
			[]any{f.SnapshotID, f.Revision, f.EntityType, f.EntityKey, f.ChunkIndex}, "failure %d names its entry", i)
		require.Equal(t, w.class, f.Class, "failure %d's class: %v", i, f.Err)
		require.ErrorIs(t, f.Err, w.cause, "failure %d's cause", i)
		require.Equal(t, w.class, sourcecatalog.Class(f.Err), "failure %d's error wraps its class: %v", i, f.Err)
	}
	pass.Failures = nil
}

// testOperatorFailure: a send that only an operator can mend — refused
// credentials, a TLS verification failure, a refusal of the vessel — stops
// the pass at once; Publish says so, and the entry stays pending.
func testOperatorFailure(t *testing.T, newStore NewStore) {
	for _, tc := range []struct {
		name  string
		err   error
		class error
	}{
		{"Credentials", sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, fmt.Errorf("401: %w", outbox.ErrNeedsOperator)), sourcecatalog.ErrStoreUnavailable},
		{"TLS", sourcecatalog.Wrap(sourcecatalog.ErrInvalidValue, fmt.Errorf("x509: %w", outbox.ErrNeedsOperator)), sourcecatalog.ErrInvalidValue},
		{"ForeignVessel", sourcecatalog.Errorf(sourcecatalog.ErrForeignVessel, "403"), sourcecatalog.ErrForeignVessel},
		{"UnregisteredVessel", sourcecatalog.Errorf(sourcecatalog.ErrUnregisteredVessel, "403"), sourcecatalog.ErrUnregisteredVessel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, newStore)
			a := e.commit(e.cycle(inv("a", 130))).Entries
			b := e.commit(e.cycle(inv("b", 2))).Entries
			all := entriesOf(a, b)
			rec := &recorder{answer: func(n int, en outbox.Entry) (envelope.Receipt, error) {
				if n == 1 {
					return envelope.Receipt{}, tc.err
				}
				return receiptOf(en), nil
			}}
			pass, err := e.publisher(e.store, rec).Publish(e.ctx)
			require.Error(t, err, "an operator-facing failure is an error of Publish")
			require.True(t, outbox.NeedsOperator(err), "%v", err)
			require.ErrorIs(t, err, tc.err)
			require.Equal(t, tc.class, sourcecatalog.Class(err), "%v", err)
			requireFailures(t, &pass, failed{a[1], tc.class, tc.err})
			require.Equal(t, outbox.Pass{Sent: 2, Delivered: 1, Failed: 1, Remaining: len(all) - 1}, pass)
			require.Equal(t, a[:2], rec.entries(), "nothing is sent after it")
			require.Equal(t, all[1:], e.pending())
		})
	}
	require.False(t, outbox.NeedsOperator(sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "503")), "a transient failure needs no operator")
	require.False(t, outbox.NeedsOperator(nil))
}

// testAlreadyReceived: a receipt that says already_received delivers its
// entry and is counted apart.
func testAlreadyReceived(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.commit(e.cycle(inv("a", 130))).Entries
	rec := &recorder{answer: func(n int, en outbox.Entry) (envelope.Receipt, error) {
		r := receiptOf(en)
		if n != 1 {
			r.Status = envelope.AlreadyReceived
		}
		return r, nil
	}}
	require.Equal(t, outbox.Pass{Sent: len(a), Delivered: len(a), AlreadyReceived: len(a) - 1}, e.publish(e.publisher(e.store, rec)))
	require.Empty(t, e.pending())
}
