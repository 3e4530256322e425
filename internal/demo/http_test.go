package demo

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Over the HTTP binding every answer the proxy resets or cuts costs one
// resend, which the receiver answers already_received; everything is
// delivered and activated all the same, and a seed prints the same bytes.
func TestRunOverHTTP(t *testing.T) {
	link := DefaultHTTP
	r, out := runDemo(t, Config{Seed: 1, HTTP: &link})
	checkFinal(t, r)
	s := r.Stats
	assert.Positive(t, s.Resets, "connections reset after the server answered")
	assert.Positive(t, s.Cuts, "answers cut midway")
	assert.Positive(t, s.Delays, "answers delayed")
	lost := s.Resets + s.Cuts
	assert.Equal(t, lost, s.AlreadyReceived, "each lost receipt is resent and answered already_received")
	assert.Equal(t, r.Entries+lost, s.Sent, "nothing but the lost receipts is resent")
	assert.Equal(t, s.Sent, s.Deliveries, "every request reaches the server")
	assert.Zero(t, s.DroppedRequests+s.DroppedReceipts+s.Duplicated+s.Reordered)
	// The sender follows the declaration: every body gzipped, at most a
	// quarter of the same requests whole and uncompressed.
	for i, c := range r.Cycles {
		assert.Positive(t, c.BodyBytes, "cycle %d", i+1)
		assert.LessOrEqual(t, 4*c.BodyBytes, c.WholeBytes, "cycle %d: %d bytes sent, %d whole", i+1, c.BodyBytes, c.WholeBytes)
	}
	assert.Equal(t, s.BodyBytes, r.Cycles[0].BodyBytes+r.Cycles[1].BodyBytes)
	for _, want := range []string{
		"link: HTTPS with mutual TLS on 127.0.0.1 through a fault proxy that resets 15% of the connections after the server answered, cuts 15% of the answers midway and delays 15% by 20ms\n",
		"1 answer reset",
		"cut midway",
		"the server activated the snapshot on its complete receipt",
		"  link:       12 requests sent over HTTPS; the proxy reset 1 connection after the server answered, cut 5 midway, delayed 2\n",
		"  receiver:   12 deliveries: 6 staged, 6 already_received\n",
		"verified: active revision 2 is cycle 2's snapshot; 129 inventory items as expected; 6 of 6 outbox entries delivered\n",
		"shutdown: the server and the fault proxy stopped cleanly\n",
		`receiver declares: {"capabilities":["chunk_reference","request_gzip"],"protocols":["yachtmemory.source-catalog.v2"]}` + "\n",
		"  bytes: 14919 of request bodies in 7 requests; 81470 with every entry whole and uncompressed (82% saved)\n",
	} {
		assert.Contains(t, out, want)
	}
	closed(t, r)
	_, again := runDemo(t, Config{Seed: 1, HTTP: &link})
	assert.Equal(t, out, again, "the same seed prints the same output")
	_, other := runDemo(t, Config{Seed: 3, HTTP: &link})
	assert.NotEqual(t, out, other)
}

// A run whose receipts never come back fails, and shuts the server and the
// proxy down on its way out.
func TestRunOverHTTPWithoutReceipts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		link  HTTPLink
		exact bool // whether every request surely reached the server before the client gave up
	}{
		{"every connection reset", HTTPLink{Reset: 1}, true},
		{"every answer held past the deadline", HTTPLink{Delay: 1, DelayFor: time.Hour, Timeout: 100 * time.Millisecond}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			start := time.Now()
			r, err := Run(context.Background(), Config{Seed: 1, HTTP: &tc.link, MaxPasses: 2}, &out)
			require.ErrorContains(t, err, "demo: cycle 1: still not delivered and activated after 2 publish passes")
			assert.Less(t, time.Since(start), time.Minute, "the delay ends with the run")
			assert.Equal(t, 6, r.Stats.Sent, "3 entries, twice")
			if tc.exact {
				assert.Equal(t, 6, r.Stats.Deliveries, "each request reached the server")
				assert.Equal(t, 6, r.Stats.Resets)
			}
			assert.Zero(t, r.Stats.Staged+r.Stats.AlreadyReceived-r.Stats.Deliveries, "the server refused nothing")
			assert.NotContains(t, out.String(), "verified:")
			assert.NotContains(t, out.String(), "shutdown:")
			closed(t, r)
		})
	}
}

func TestRunRefusesTwoLinks(t *testing.T) {
	_, err := Run(context.Background(), Config{Link: &Link{}, HTTP: &HTTPLink{}}, &bytes.Buffer{})
	require.ErrorContains(t, err, "a simulated link and the HTTP link at once")
	_, err = Run(context.Background(), Config{HTTP: &HTTPLink{Reset: 0.7, Cut: 0.7}}, &bytes.Buffer{})
	require.ErrorContains(t, err, "faultproxy: the probabilities add up to more than 1")
}

// closed checks that the run's proxy and server no longer listen.
func closed(t *testing.T, r Report) {
	t.Helper()
	for _, addr := range []string{r.ProxyAddr, r.ServerAddr} {
		require.NotEmpty(t, addr)
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err == nil {
			c.Close()
		}
		assert.Error(t, err, "%s still listens", addr)
	}
}
