package httpbinding_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

// TestPublishManifestIndexOverHTTP publishes cycles through the binding
// to a Handler with WithManifestIndexes, the Publisher following the
// receiver's declaration (Gate): an identical cycle is one POST, the
// index, plus at most one GET of the declaration; a cycle with changed
// chunks is the index and those chunks whole (SPEC.md §6.7, §7.5).
func TestPublishManifestIndexOverHTTP(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records func() []*catalog.Record
	}{
		{"150 sensors", func() []*catalog.Record { return records(t, "nav", 150) }},
		{"examples.Boat", examples.Boat},
		{"examples.Scaled(1500)", func() []*catalog.Record { return examples.Scaled(1500) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := startRig(t, rigConfig{opts: []httpbinding.HandlerOption{httpbinding.WithManifestIndexes(true), httpbinding.WithChunkReferences(true)}})
			cert := r.ca.vessel(t, vesselA)
			c := r.client(t, &cert)
			store := outboxmem.New()
			pub := outbox.NewPublisher(store, vesselA, c, outbox.WithGate(httpbinding.NewGate(c)))
			at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
			held := map[canonical.Digest]bool{}
			// cycle commits recs and publishes them, and returns the POSTs
			// and GETs it took.
			cycle := func(recs []*catalog.Record) (posts, gets, missing int) {
				t.Helper()
				at = at.Add(15 * time.Minute)
				com, err := outbox.NewWriter(store).Commit(ctx, outbox.NewCycle(vesselA, at, recs))
				require.NoError(t, err)
				for _, e := range com.Entries[1:] {
					if !held[e.Digest] {
						missing++
					}
					held[e.Digest] = true
				}
				before := len(r.events.outcomes())
				pass, err := pub.Publish(ctx)
				require.NoError(t, err)
				require.Equal(t, len(com.Entries), pass.Delivered)
				for _, o := range r.events.outcomes()[before:] {
					if o == httpbinding.OutcomeDeclaration {
						gets++
					} else {
						posts++
					}
				}
				active, err := r.recv.Active(ctx, vesselA)
				require.NoError(t, err)
				require.Equal(t, com.Entries[0].SnapshotID, active.SnapshotID, "activated")
				return posts, gets, missing
			}
			recs := tc.records()
			posts, gets, missing := cycle(recs)
			require.Equal(t, 1+missing, posts, "first cycle: the index and every chunk")
			t.Logf("first cycle: %d POSTs, %d GETs", posts, gets)
			posts, gets, missing = cycle(recs)
			require.Zero(t, missing)
			require.Equal(t, 1, posts, "identical cycle: the index alone")
			require.LessOrEqual(t, gets, 1)
			t.Logf("identical cycle: %d POST, %d GET", posts, gets)
			posts, gets, missing = cycle(examples.WithChangedUnits(recs, 1))
			require.Equal(t, 1+missing, posts, "the index and the changed chunks whole")
			require.LessOrEqual(t, gets, 1)
			t.Logf("one unit changed: %d chunks changed, %d POSTs, %d GET", missing, posts, gets)
		})
	}
}

// TestGateManifestIndexes: the Gate offers manifest indexes only while
// the receiver declares manifest_index, and a Publisher following it
// sends none to a Handler without WithManifestIndexes.
func TestGateManifestIndexes(t *testing.T) {
	ctx := context.Background()
	for _, on := range []bool{false, true} {
		r := startRig(t, rigConfig{opts: []httpbinding.HandlerOption{httpbinding.WithManifestIndexes(on)}})
		cert := r.ca.vessel(t, vesselA)
		c := r.client(t, &cert)
		g := httpbinding.NewGate(c)
		require.False(t, g.ManifestIndexes(), "nothing read yet")
		b := newRefBoard(t)
		pub := outbox.NewPublisher(b.store, vesselA, c, outbox.WithGate(g))
		b.commit("nav", 150)
		_, err := pub.Publish(ctx)
		require.NoError(t, err)
		require.Equal(t, on, g.ManifestIndexes())
		second := b.commit("nav", 150)
		pass, err := pub.Publish(ctx)
		require.NoError(t, err)
		want := len(second.Entries)
		if on {
			want = 1
		}
		require.Equal(t, want, pass.Sent, "declared %v", on)
		b.activeIs(t, r, second)
	}
}
