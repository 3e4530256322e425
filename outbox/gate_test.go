package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// A gateScript answers each Open with the next of its answers, the last
// one repeated, and counts the calls.
type gateScript struct {
	answers []error
	calls   int
}

func (g *gateScript) Open(context.Context) (string, error) {
	err := g.answers[min(g.calls, len(g.answers)-1)]
	g.calls++
	if err == nil {
		return "v2", nil
	}
	if errors.Is(err, outbox.ErrCapabilityOff) {
		return "none", err
	}
	return "", err
}

// The Publisher sends only through an open gate (SPEC.md §7.5): Drain
// asks it once before its first pass, retries a gate that failed to
// answer after the backoff, and stops at once when it is closed or only
// an operator can open it.
func TestDrainGate(t *testing.T) {
	off := fmt.Errorf("no declaration: %w", outbox.ErrCapabilityOff)
	operator := sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, fmt.Errorf("401: %w", outbox.ErrNeedsOperator))
	unclassed := errors.New("connection reset")
	for _, tc := range []struct {
		name     string
		answers  []error
		outcome  outbox.DrainOutcome
		err      error // nil: no error
		calls    int
		sleeps   []time.Duration
		sent     int
		declared string
		failures int // OnGate calls
	}{
		{"open", []error{nil}, outbox.Drained, nil, 1, nil, 3, "v2", 0},
		{"closed", []error{off}, outbox.DrainFailed, outbox.ErrCapabilityOff, 1, nil, 0, "none", 0},
		{"an operator must act", []error{operator}, outbox.DrainFailed, outbox.ErrNeedsOperator, 1, nil, 0, "", 0},
		{"failed twice, then open", []error{transient, unclassed, nil}, outbox.Drained, nil, 3,
			[]time.Duration{time.Second, 2 * time.Second}, 3, "v2", 2},
		{"failed, then closed", []error{transient, off}, outbox.DrainFailed, outbox.ErrCapabilityOff, 2,
			[]time.Duration{time.Second}, 0, "none", 1},
		{"failing until given up", []error{transient}, outbox.DrainGaveUp, sourcecatalog.ErrStoreUnavailable, 5,
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 5 * time.Second}, 0, "", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newDrainRig(t, 1)
			gate := &gateScript{answers: tc.answers}
			tr := &script{}
			var failures []error
			rep, err := outbox.NewPublisher(g.store, drainVessel, tr, outbox.WithGate(gate)).Drain(context.Background(),
				outbox.DrainOptions{Clock: g.clock, Until: drainEpoch.Add(20 * time.Second),
					OnGate: func(err error, _ time.Duration) { failures = append(failures, err) }})
			if tc.err == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.err)
			}
			assert.Equal(t, tc.outcome, rep.Outcome)
			assert.Equal(t, tc.calls, gate.calls, "the gate is asked once, and again only after a failed attempt")
			assert.Equal(t, tc.sleeps, g.clock.Sleeps())
			assert.Equal(t, tc.sent, tr.sends(), "nothing is sent through a gate that is not open")
			assert.Equal(t, tc.declared, rep.Declared)
			assert.Len(t, failures, tc.failures)
			for _, f := range failures {
				assert.Equal(t, sourcecatalog.ErrStoreUnavailable, sourcecatalog.Class(f), "a failed attempt is classed: %v", f)
			}
		})
	}
}

// Publish asks the gate on every call; the last of WithReceiverV2 and
// WithGate wins, and a nil gate is closed.
func TestPublishGate(t *testing.T) {
	g := newDrainRig(t, 1)
	for _, tc := range []struct {
		name string
		opts []outbox.PublisherOption
		open bool
	}{
		{"default", nil, false},
		{"nil gate", []outbox.PublisherOption{outbox.WithGate(nil)}, false},
		{"gate over operator", []outbox.PublisherOption{outbox.WithReceiverV2(true), outbox.WithGate(&gateScript{answers: []error{outbox.ErrCapabilityOff}})}, false},
		{"operator over gate", []outbox.PublisherOption{outbox.WithGate(&gateScript{answers: []error{outbox.ErrCapabilityOff}}), outbox.WithReceiverV2(true)}, true},
		{"open gate", []outbox.PublisherOption{outbox.WithGate(&gateScript{answers: []error{nil}})}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &script{}
			_, err := outbox.NewPublisher(g.store, drainVessel, tr, tc.opts...).Publish(context.Background())
			if tc.open {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, outbox.ErrCapabilityOff)
			assert.Zero(t, tr.sends())
		})
	}
	gate := &gateScript{answers: []error{errors.New("timeout")}}
	tr := &script{}
	_, err := outbox.NewPublisher(g.store, drainVessel, tr, outbox.WithGate(gate)).Publish(context.Background())
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable, "a gate's unclassed failure is classed")
	assert.NotErrorIs(t, err, outbox.ErrCapabilityOff)
	assert.Zero(t, tr.sends())
}
