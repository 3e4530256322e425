package httpbinding_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/faultproxy"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// An answer lost after the request reached the server — the connection
// reset, or the answer cut midway — is a classed failure for the sender;
// the Publisher resends and the receiver answers already_received.
func TestLostAnswersAreResent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault faultproxy.Fault
	}{{"connection reset", faultproxy.Reset}, {"answer cut midway", faultproxy.Cut}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := startRig(t, rigConfig{tlsMax: tls.VersionTLS12, http1: true}) // the proxy reads TLS 1.2 records
			p, err := faultproxy.Start(faultproxy.Config{Target: r.addr})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, p.Close()) })
			cert := r.ca.vessel(t, vesselA)
			c, err := httpbinding.NewClient("https://"+p.Addr()+"/v2/messages", httpbinding.WithTLSConfig(r.tlsFor(&cert)), httpbinding.WithTimeout(10*time.Second))
			require.NoError(t, err)
			defer c.CloseIdleConnections()
			b := commitCycle(t, vesselA, uuid.Nil, "nav", 1) // manifest and 1 chunk
			pub := outbox.NewPublisher(b.store, vesselA, c, outbox.WithReceiverV2(true))

			p.Arm(tc.fault) // the manifest's receipt is lost
			pass, err := pub.Publish(ctx)
			require.NoError(t, err)
			require.Equal(t, faults(tc.fault, 1, 2), answers(p))
			require.Len(t, pass.Failures, 1)
			assert.Equal(t, sourcecatalog.ErrStoreUnavailable, pass.Failures[0].Class, "a lost answer is transient: %v", pass.Failures[0].Err)
			pass.Failures = nil
			assert.Equal(t, outbox.Pass{Sent: 2, Delivered: 1, Failed: 1, Remaining: 1}, noBytes(pass))
			pass, err = pub.Publish(ctx)
			require.NoError(t, err)
			assert.Equal(t, outbox.Pass{Sent: 1, Delivered: 1, AlreadyReceived: 1}, noBytes(pass), "the receiver had staged the manifest")
			assert.Equal(t, []string{"staged", "staged", "already_received"}, r.events.outcomes())
			active, err := r.recv.Active(ctx, vesselA)
			require.NoError(t, err)
			assert.Equal(t, b.snapID, active.SnapshotID)

			// What the Transport returns for a lost answer: one class,
			// store_unavailable; a resend gets the receipt.
			p.Arm(tc.fault)
			_, err = c.Send(ctx, b.entries[1])
			require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
			assert.Equal(t, sourcecatalog.ErrStoreUnavailable, sourcecatalog.Class(err))
			require.Equal(t, faults(tc.fault, 2, 4), answers(p))
			rc, err := c.Send(ctx, b.entries[1])
			require.NoError(t, err)
			assert.Equal(t, envelope.AlreadyReceived, rc.Status)
			assert.Equal(t, faults(tc.fault, 2, 5), answers(p))
		})
	}
}

// faults is the proxy's counts of answers after n faults of kind f among
// answers answers.
func faults(f faultproxy.Fault, n, answers int) faultproxy.Counts {
	c := faultproxy.Counts{Answers: answers}
	switch f {
	case faultproxy.Reset:
		c.Resets = n
	case faultproxy.Cut:
		c.Cuts = n
	}
	return c
}

// answers is the proxy's counts without the connections, which depend on
// the client's pool.
func answers(p *faultproxy.Proxy) faultproxy.Counts {
	c := p.Counts()
	c.Conns = 0
	return c
}
