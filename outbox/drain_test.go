package outbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/internal/fakeclock"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox/outboxtest"
)

var drainVessel = uuid.MustParse("5b2e8f0a-3c1d-4e6f-9a7b-0c8d2e4f6a1b")

var drainEpoch = time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)

// A script is a fake Transport answering each send with the error its
// answer returns for the send's number (from 0), or the honest receipt.
type script struct {
	mu     sync.Mutex
	n      int
	answer func(n int, e outbox.Entry) error
}

func (s *script) Send(_ context.Context, e outbox.Entry) (envelope.Receipt, error) {
	s.mu.Lock()
	n := s.n
	s.n++
	s.mu.Unlock()
	if s.answer != nil {
		switch err := s.answer(n, e); {
		case err == errWrongReceipt:
			rc := e.Receipt()
			rc.SnapshotID = uuid.New()
			return rc, nil
		case err != nil:
			return envelope.Receipt{}, err
		}
	}
	return e.Receipt(), nil
}

// errWrongReceipt makes a script answer a receipt for another snapshot.
var errWrongReceipt = errors.New("answer a receipt for another snapshot")

func (s *script) sends() int { s.mu.Lock(); defer s.mu.Unlock(); return s.n }

// drainRig is an outbox holding one committed boat (3 entries).
type drainRig struct {
	store  outbox.Store
	clock  *fakeclock.Clock
	cycles []outbox.Commit
}

func newDrainRig(t *testing.T, cycles int) *drainRig {
	t.Helper()
	g := &drainRig{store: outboxmem.New(), clock: fakeclock.New(drainEpoch)}
	for i := range cycles {
		c, err := outbox.NewWriter(g.store).Commit(context.Background(),
			outbox.NewCycle(drainVessel, drainEpoch.Add(time.Duration(i)*time.Minute), examples.Boat()))
		require.NoError(t, err)
		g.cycles = append(g.cycles, c)
	}
	return g
}

func (g *drainRig) drain(t *testing.T, ctx context.Context, tr outbox.Transport, opts outbox.DrainOptions) (outbox.DrainReport, error, []outbox.DrainPass) {
	t.Helper()
	opts.Clock = g.clock
	var steps []outbox.DrainPass
	opts.OnPass = func(p outbox.DrainPass) { steps = append(steps, p) }
	rep, err := outbox.NewPublisher(g.store, drainVessel, tr, outbox.WithReceiverV2(true)).Drain(ctx, opts)
	return rep, err, steps
}

func waits(steps []outbox.DrainPass) []time.Duration {
	var out []time.Duration
	for _, s := range steps {
		out = append(out, s.Wait)
	}
	return out
}

var transient = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "answer 503")

func TestDrain(t *testing.T) {
	ms := time.Millisecond
	unauthorized := sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, fmt.Errorf("401: %w", outbox.ErrNeedsOperator))
	for _, tc := range []struct {
		name    string
		cycles  int
		answer  func(n int, e outbox.Entry) error
		backoff outbox.Backoff
		want    outbox.DrainReport // Stopped and Last checked apart
		stopped int                // snapshots stopped
		last    error              // what Last wraps
		err     error              // what the error wraps, or nil
		waits   []time.Duration    // each pass's wait
	}{
		{
			name: "delivers then finds nothing", cycles: 2,
			want:  outbox.DrainReport{Outcome: outbox.Drained, Passes: 2, Sent: 6, Delivered: 6},
			waits: []time.Duration{0, 0},
		},
		{
			name: "nothing pending", cycles: 0,
			want:  outbox.DrainReport{Outcome: outbox.Drained, Passes: 1},
			waits: []time.Duration{0},
		},
		{
			// Four passes fail in full: the wait doubles up to Max.
			name: "backoff doubles, capped", cycles: 1, backoff: outbox.Backoff{Min: 5 * ms, Max: 20 * ms},
			answer: func(n int, _ outbox.Entry) error { return failFirst(n, 12) },
			want:   outbox.DrainReport{Outcome: outbox.Drained, Passes: 6, Sent: 15, Delivered: 3, Failed: 12},
			last:   transient,
			waits:  []time.Duration{5 * ms, 10 * ms, 20 * ms, 20 * ms, 0, 0},
		},
		{
			// The second pass delivers two of three: the wait starts again.
			name: "backoff starts again after a delivery", cycles: 1, backoff: outbox.Backoff{Min: 5 * ms, Max: 20 * ms},
			answer: func(n int, _ outbox.Entry) error { return failFirst(n, 4) },
			want:   outbox.DrainReport{Outcome: outbox.Drained, Passes: 4, Sent: 7, Delivered: 3, Failed: 4},
			last:   transient,
			waits:  []time.Duration{5 * ms, 5 * ms, 0, 0},
		},
		{
			name: "default backoff", cycles: 1,
			answer: func(n int, _ outbox.Entry) error { return failFirst(n, 3*7) },
			want:   outbox.DrainReport{Outcome: outbox.Drained, Passes: 9, Sent: 24, Delivered: 3, Failed: 21},
			last:   transient,
			waits:  []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, 0, 0},
		},
		{
			// A conflict stops the first snapshot; the second is delivered.
			name: "conflict stops a snapshot", cycles: 2,
			answer: func(n int, _ outbox.Entry) error {
				if n == 1 {
					return sourcecatalog.Errorf(sourcecatalog.ErrConflict, "other bytes")
				}
				return nil
			},
			want:    outbox.DrainReport{Outcome: outbox.DrainStopped, Passes: 3, Sent: 5, Delivered: 4},
			stopped: 1,
			waits:   []time.Duration{0, 0, 0},
		},
		{
			name: "refused credentials stop at once", cycles: 2,
			answer: func(int, outbox.Entry) error { return unauthorized },
			want:   outbox.DrainReport{Outcome: outbox.DrainFailed, Passes: 1, Sent: 1, Failed: 1},
			last:   outbox.ErrNeedsOperator, err: outbox.ErrNeedsOperator,
			waits: []time.Duration{0},
		},
		{
			name: "unregistered vessel stops at once", cycles: 1,
			answer: func(int, outbox.Entry) error {
				return sourcecatalog.Errorf(sourcecatalog.ErrUnregisteredVessel, "403")
			},
			want: outbox.DrainReport{Outcome: outbox.DrainFailed, Passes: 1, Sent: 1, Failed: 1},
			last: sourcecatalog.ErrUnregisteredVessel, err: sourcecatalog.ErrUnregisteredVessel,
			waits: []time.Duration{0},
		},
		{
			name: "a receipt for another entry fails", cycles: 1,
			answer: func(n int, _ outbox.Entry) error {
				if n == 0 {
					return errWrongReceipt
				}
				return nil
			},
			want: outbox.DrainReport{Outcome: outbox.DrainFailed, Passes: 1, Sent: 1},
			last: outbox.ErrReceiptMismatch, err: outbox.ErrReceiptMismatch,
			waits: []time.Duration{0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newDrainRig(t, tc.cycles)
			tr := &script{answer: tc.answer}
			// Until bounds a drain that would not end: a loop that retries
			// what it must not gives up there, failing the case.
			rep, err, steps := g.drain(t, context.Background(), tr, outbox.DrainOptions{Backoff: tc.backoff, Until: drainEpoch.Add(time.Hour)})
			if tc.err == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.err)
			}
			assert.Len(t, rep.Stopped, tc.stopped)
			if tc.stopped > 0 {
				assert.Equal(t, g.cycles[0].Entries[0].SnapshotID, rep.Stopped[0])
			}
			if tc.last == nil {
				assert.NoError(t, rep.Last)
			} else {
				assert.ErrorIs(t, rep.Last, tc.last)
			}
			assert.Equal(t, outbox.DeclaredByOperator, rep.Declared, "what the gate reported")
			rep.Stopped, rep.Last, rep.Declared = nil, nil, ""
			assert.Equal(t, tc.want, rep)
			assert.Equal(t, tc.waits, waits(steps), "the wait after each pass")
			var slept []time.Duration
			for _, w := range tc.waits {
				if w > 0 {
					slept = append(slept, w)
				}
			}
			assert.Equal(t, slept, g.clock.Sleeps(), "the waits are slept on the clock")
			assert.Equal(t, tr.sends(), rep.Sent)
			for i, s := range steps {
				assert.Equal(t, i+1, s.N)
			}
		})
	}
}

// failFirst fails the first k sends.
func failFirst(n, k int) error {
	if n < k {
		return transient
	}
	return nil
}

// A deadline ends the drain with entries pending; no wait runs past it.
func TestDrainUntil(t *testing.T) {
	g := newDrainRig(t, 1)
	tr := &script{answer: func(int, outbox.Entry) error { return transient }}
	until := drainEpoch.Add(10 * time.Second)
	rep, err, _ := g.drain(t, context.Background(), tr, outbox.DrainOptions{Until: until})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
	assert.Equal(t, outbox.DrainGaveUp, rep.Outcome)
	assert.ErrorIs(t, rep.Last, transient)
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 3 * time.Second}, g.clock.Sleeps(), "the last wait ends at Until")
	assert.Equal(t, until, g.clock.Now())
	assert.Equal(t, 4, rep.Passes, "no pass starts at Until")

	// Until already passed: no pass at all.
	rep, err, _ = g.drain(t, context.Background(), tr, outbox.DrainOptions{Until: drainEpoch})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, outbox.DrainReport{Outcome: outbox.DrainGaveUp}, rep)
}

// A context that ends during a wait ends the drain: gave up, with the
// context's error.
func TestDrainCancelled(t *testing.T) {
	g := newDrainRig(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g.clock.At(drainEpoch.Add(2*time.Second), cancel)
	tr := &script{answer: func(int, outbox.Entry) error { return transient }}
	rep, err, _ := g.drain(t, ctx, tr, outbox.DrainOptions{})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
	assert.Equal(t, outbox.DrainGaveUp, rep.Outcome)
	assert.Equal(t, 2, rep.Passes)
}

// A store that fails a pass is waited for, as a failed send is.
func TestDrainStoreFailure(t *testing.T) {
	g := newDrainRig(t, 1)
	fs := outboxtest.NewFaultStore(g.store)
	fs.Inject(outboxtest.FailOp, 1) // the first pass's Pending
	g.store = fs
	rep, err, steps := g.drain(t, context.Background(), &script{}, outbox.DrainOptions{})
	require.NoError(t, err)
	assert.Equal(t, outbox.Drained, rep.Outcome)
	assert.ErrorIs(t, rep.Last, outboxtest.ErrInjected)
	assert.ErrorIs(t, steps[0].Err, sourcecatalog.ErrStoreUnavailable)
	assert.Equal(t, []time.Duration{time.Second, 0, 0}, waits(steps))
	assert.Equal(t, 3, rep.Delivered)
}

// Bytes that changed in the store fail the drain: sending again cannot
// mend them.
func TestDrainTampered(t *testing.T) {
	g := newDrainRig(t, 1)
	fs := outboxtest.NewFaultStore(g.store)
	fs.Tamper(func(e outbox.Entry) outbox.Entry {
		e.Payload = bytes.Replace(e.Payload, []byte(`"revision":1`), []byte(`"revision":2`), 1)
		return e
	})
	g.store = fs
	tr := &script{}
	rep, err, _ := g.drain(t, context.Background(), tr, outbox.DrainOptions{})
	require.ErrorIs(t, err, sourcecatalog.ErrHashMismatch)
	assert.Equal(t, outbox.DrainFailed, rep.Outcome)
	assert.Zero(t, tr.sends())
}

func TestDrainCapabilityOff(t *testing.T) {
	g := newDrainRig(t, 1)
	tr := &script{}
	rep, err := outbox.NewPublisher(g.store, drainVessel, tr).Drain(context.Background(), outbox.DrainOptions{Clock: g.clock})
	require.ErrorIs(t, err, outbox.ErrCapabilityOff)
	assert.Equal(t, outbox.DrainReport{Outcome: outbox.DrainFailed}, rep)
	assert.Zero(t, tr.sends())
}

func TestBackoffNext(t *testing.T) {
	for _, tc := range []struct {
		b          outbox.Backoff
		wait, want time.Duration
	}{
		{outbox.Backoff{}, 0, time.Second},
		{outbox.Backoff{}, 16 * time.Second, 30 * time.Second},
		{outbox.Backoff{Min: time.Minute}, 0, time.Minute},
		{outbox.Backoff{Min: time.Minute}, time.Minute, time.Minute},
		{outbox.Backoff{Min: time.Minute, Max: time.Second}, time.Minute, time.Minute},
		{outbox.Backoff{Min: 3, Max: 10}, 6, 10},
	} {
		assert.Equal(t, tc.want, tc.b.Next(tc.wait), "%+v after %v", tc.b, tc.wait)
	}
}
