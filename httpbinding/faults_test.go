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
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// An answer lost after the request reached the server — the connection
// reset, or the answer cut midway — is a classed failure for the sender;
// the Publisher resends and the receiver answers already_received.
func TestLostAnswersAreResent(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  bool
	}{{"connection reset", false}, {"answer cut midway", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := startRig(t, rigConfig{tlsMax: tls.VersionTLS12}) // the proxy reads TLS 1.2 records
			p := startProxy(t, r.addr, tc.cut)
			cert := r.ca.vessel(t, vesselA)
			c, err := httpbinding.NewClient(p.url(), httpbinding.WithTLSConfig(r.tlsFor(&cert)), httpbinding.WithTimeout(10*time.Second))
			require.NoError(t, err)
			defer c.CloseIdleConnections()
			b := commitCycle(t, vesselA, uuid.Nil, "nav", 1) // manifest and 1 chunk
			pub := outbox.NewPublisher(b.store, vesselA, c, outbox.WithReceiverV2(true))

			p.armed.Store(true) // the manifest's receipt is lost
			pass, err := pub.Publish(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 1, p.faults.Load())
			assert.Equal(t, outbox.Pass{Sent: 2, Delivered: 1, Failed: 1, Remaining: 1}, pass)
			pass, err = pub.Publish(ctx)
			require.NoError(t, err)
			assert.Equal(t, outbox.Pass{Sent: 1, Delivered: 1}, pass)
			assert.Equal(t, []string{"staged", "staged", "already_received"}, r.events.outcomes())
			active, err := r.recv.Active(ctx, vesselA)
			require.NoError(t, err)
			assert.Equal(t, b.snapID, active.SnapshotID)

			// What the Transport returns for a lost answer: one class,
			// store_unavailable; a resend gets the receipt.
			p.armed.Store(true)
			_, err = c.Send(ctx, b.entries[1])
			require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
			assert.Equal(t, sourcecatalog.ErrStoreUnavailable, sourcecatalog.Class(err))
			require.EqualValues(t, 2, p.faults.Load())
			rc, err := c.Send(ctx, b.entries[1])
			require.NoError(t, err)
			assert.Equal(t, envelope.AlreadyReceived, rc.Status)
		})
	}
}
