package outbox_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// A rounds transport holds every Send until the test releases the
// round it arrived in, and counts the Sends in flight at once.
type rounds struct {
	mu                      sync.Mutex
	gate                    chan struct{}
	waiting, inFlight, most int
}

func newRounds() *rounds { return &rounds{gate: make(chan struct{})} }

func (r *rounds) Send(ctx context.Context, e outbox.Entry) (envelope.Receipt, error) {
	r.mu.Lock()
	r.inFlight++
	r.most = max(r.most, r.inFlight)
	r.waiting++
	g := r.gate
	r.mu.Unlock()
	<-g
	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()
	return e.Receipt(), nil
}

// release lets the Sends of the current round answer, and returns how
// many there were.
func (r *rounds) release() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.waiting
	close(r.gate)
	r.gate, r.waiting = make(chan struct{}), 0
	return n
}

func (r *rounds) waitingNow() int { r.mu.Lock(); defer r.mu.Unlock(); return r.waiting }

// A pass with k in flight sends each snapshot of n entries in
// ceil(n/k) round trips, not n: every round fills the window with the
// snapshot's entries, no more than k Sends are ever in flight at once,
// and a snapshot's entries start once the one before it is answered, so
// that the snapshots complete in order. Rounds are counted, not timed.
func TestPublishInFlightRounds(t *testing.T) {
	for _, k := range []int{1, 2, 4, 5, 16} {
		g := newDrainRig(t, 5)
		n, rounds := 0, 0
		var windows []int // each round's Sends
		for _, c := range g.cycles {
			n += len(c.Entries)
			rounds += (len(c.Entries) + k - 1) / k
			for left := len(c.Entries); left > 0; left -= k {
				windows = append(windows, min(k, left))
			}
		}
		tr := newRounds()
		type result struct {
			pass outbox.Pass
			err  error
		}
		done := make(chan result, 1)
		go func() {
			pass, err := outbox.NewPublisher(g.store, drainVessel, tr, outbox.WithReceiverV2(true), outbox.WithInFlight(k)).Publish(context.Background())
			done <- result{pass, err}
		}()
		trips, released := 0, 0
		for released < n {
			want := windows[trips]
			require.Eventually(t, func() bool { return tr.waitingNow() == want }, 5*time.Second, time.Millisecond, "k=%d round %d fills its window of %d", k, trips+1, want)
			time.Sleep(5 * time.Millisecond) // room for a Send that should not start
			require.Equal(t, want, tr.release(), "k=%d round %d: no other snapshot's entry with it", k, trips+1)
			released += want
			trips++
		}
		r := <-done
		require.NoError(t, r.err)
		assert.Equal(t, outbox.Pass{Sent: n, Delivered: n}, r.pass, "k=%d", k)
		assert.Equal(t, rounds, trips, "k=%d: round trips for %d entries", k, n)
		assert.LessOrEqual(t, tr.most, k, "k=%d: Sends in flight at once", k)
	}
}

// A byEntry transport answers each entry by its key, whatever the order
// of the calls, after a delay drawn from the key, so that answers come
// back out of order; it counts the bytes of each request.
type byEntry struct {
	fail func(e outbox.Entry) error
}

func (b byEntry) SendCounted(ctx context.Context, e outbox.Entry) (envelope.Receipt, outbox.RequestBytes, error) {
	h := fnv.New32a()
	h.Write([]byte(e.EntityKey))
	time.Sleep(time.Duration(h.Sum32()%5) * time.Millisecond)
	n := outbox.RequestBytes{Sent: int64(len(e.Payload)), Uncompressed: int64(len(e.Payload)) + 7}
	if err := b.fail(e); err != nil {
		return envelope.Receipt{}, n, err
	}
	return e.Receipt(), n, nil
}

func (b byEntry) Send(ctx context.Context, e outbox.Entry) (envelope.Receipt, error) {
	rc, _, err := b.SendCounted(ctx, e)
	return rc, err
}

// publishOutcome is what a test compares of two passes: the Pass with its
// Failures reduced to revisions, chunk indexes and classes, the error, the states.
type publishOutcome struct {
	pass     outbox.Pass
	failures []string
	err      error
	states   [][]outbox.State
}

func publishWith(t *testing.T, k int, fail func(e outbox.Entry) error) publishOutcome {
	t.Helper()
	g := newDrainRig(t, 5)
	pass, err := outbox.NewPublisher(g.store, drainVessel, byEntry{fail}, outbox.WithReceiverV2(true), outbox.WithInFlight(k)).Publish(context.Background())
	var o publishOutcome
	for _, f := range pass.Failures {
		o.failures = append(o.failures, fmt.Sprintf("%d/%d %v", f.Revision, f.ChunkIndex, f.Class))
	}
	pass.Failures = nil
	o.pass, o.err = pass, err
	for _, c := range g.cycles {
		var st []outbox.State
		require.NoError(t, g.store.WithVessel(context.Background(), drainVessel, func(tx outbox.Tx) error {
			es, err := tx.Entries(context.Background(), c.Entries[0].SnapshotID)
			for _, e := range es {
				st = append(st, e.State)
			}
			return err
		}))
		o.states = append(o.states, st)
	}
	return o
}

// With failures spread over the pass, k in flight report what one at a
// time does: the same counts, bytes, Failures in the order of the
// entries, and states.
func TestPublishInFlightSameOutcomes(t *testing.T) {
	fail := func(e outbox.Entry) error {
		if e.ChunkIndex == 0 || e.Revision%3 == 0 && e.ChunkIndex == sourcecatalog.NoIndex {
			return sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "link down")
		}
		return nil
	}
	one := publishWith(t, 1, fail)
	require.NoError(t, one.err)
	require.NotEmpty(t, one.failures)
	require.NotZero(t, one.pass.Bytes.Sent)
	for _, k := range []int{2, 4, 7} {
		for range 3 {
			got := publishWith(t, k, fail)
			require.NoError(t, got.err)
			assert.Equal(t, one.pass, got.pass, "k=%d", k)
			assert.Equal(t, one.failures, got.failures, "k=%d: Failures in the order of the entries", k)
			assert.Equal(t, one.states, got.states, "k=%d", k)
		}
	}
}

// A conflict stops its snapshot with k in flight as with one: its
// entries are stopped, the entries before it delivered, the pass returns
// the conflict; entries already in flight finish, and a later snapshot's
// entries are delivered or left pending, never stopped.
func TestPublishInFlightConflict(t *testing.T) {
	var conflicted string
	fail := func(e outbox.Entry) error {
		if e.EntityKey == conflicted {
			return sourcecatalog.Errorf(sourcecatalog.ErrConflict, "another revision")
		}
		return nil
	}
	for _, k := range []int{1, 4} {
		g := newDrainRig(t, 4)
		conflicted = g.cycles[1].Entries[0].EntityKey // the second snapshot's manifest
		pass, err := outbox.NewPublisher(g.store, drainVessel, byEntry{fail}, outbox.WithReceiverV2(true), outbox.WithInFlight(k)).Publish(context.Background())
		require.ErrorIs(t, err, sourcecatalog.ErrConflict, "k=%d", k)
		require.Len(t, pass.Failures, 1, "k=%d", k)
		assert.Equal(t, conflicted, pass.Failures[0].EntityKey)
		first := len(g.cycles[0].Entries)
		assert.LessOrEqual(t, pass.Sent, first+k, "k=%d: nothing started after the conflict", k)
		assert.Equal(t, len(g.cycles)*first-pass.Delivered, pass.Remaining, "k=%d", k)
		delivered := 0
		for i, c := range g.cycles {
			require.NoError(t, g.store.WithVessel(context.Background(), drainVessel, func(tx outbox.Tx) error {
				es, err := tx.Entries(context.Background(), c.Entries[0].SnapshotID)
				for _, e := range es {
					switch i {
					case 0:
						assert.Equal(t, outbox.Delivered, e.State, "k=%d", k)
					case 1:
						assert.Equal(t, outbox.Stopped, e.State, "k=%d", k)
					default:
						assert.Contains(t, []outbox.State{outbox.Pending, outbox.Delivered}, e.State, "k=%d", k)
					}
					if e.State == outbox.Delivered {
						delivered++
					}
				}
				return err
			}))
		}
		assert.Equal(t, delivered, pass.Delivered, "k=%d", k)
	}
}
