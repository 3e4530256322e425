package httpbinding_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// TestManifestIndexThroughTheBinding: an unchanged cycle's index is one
// request that stages the whole set, answered with no chunk missing and
// activated; a changed cycle's index names exactly the changed chunks,
// which sent whole complete the set. The Handler declares the capability.
func TestManifestIndexThroughTheBinding(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, rigConfig{opts: []httpbinding.HandlerOption{httpbinding.WithManifestIndexes(true)}})
	cert := r.ca.vessel(t, vesselA)
	c := r.client(t, &cert)
	d, err := c.Declaration(ctx)
	require.NoError(t, err)
	assert.True(t, d.Has(httpbinding.CapabilityManifestIndex), "declared: %v", d)
	assert.False(t, d.Has(httpbinding.CapabilityChunkReference), "references stay off")

	b := newRefBoard(t)
	for _, e := range b.commit("nav", 150).Entries {
		_, err := c.Send(ctx, e)
		require.NoError(t, err)
	}
	same := b.commit("nav", 150)
	require.Greater(t, len(same.Entries), 2, "fixture: several chunks")
	x, err := outbox.IndexEntry(same.Entries)
	require.NoError(t, err)
	rc, err := c.Send(ctx, x)
	require.NoError(t, err)
	assert.Equal(t, sourcecatalog.ManifestIndexEntityType, rc.EntityType)
	assert.Equal(t, x.Digest, rc.Digest)
	assert.Equal(t, envelope.Staged, rc.Status)
	assert.Zero(t, rc.Missing.Len(), "every chunk held")
	assert.True(t, rc.Complete)
	b.activeIs(t, r, same) // the server finalized on the complete receipt

	changed := b.commit("nav", 160)
	x, err = outbox.IndexEntry(changed.Entries)
	require.NoError(t, err)
	rc, err = c.Send(ctx, x)
	require.NoError(t, err)
	missing := rc.Missing.Indices()
	require.NotEmpty(t, missing)
	require.Less(t, len(missing), len(changed.Entries)-1, "some chunks held")
	again, err := c.Send(ctx, x)
	require.NoError(t, err)
	assert.Equal(t, envelope.AlreadyReceived, again.Status)
	assert.Equal(t, rc.Missing, again.Missing, "a retry names the same chunks")
	for _, i := range missing {
		rc, err := c.Send(ctx, changed.Entries[1+i])
		require.NoError(t, err)
		assert.True(t, rc.Matches(changed.Entries[1+i].Receipt()))
	}
	b.activeIs(t, r, changed)
}

// TestManifestIndexRefusedByDefault: a Handler without
// WithManifestIndexes refuses an index as an unknown entity type and does
// not declare the capability.
func TestManifestIndexRefusedByDefault(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, rigConfig{})
	cert := r.ca.vessel(t, vesselA)
	c := r.client(t, &cert)
	d, err := c.Declaration(ctx)
	require.NoError(t, err)
	assert.False(t, d.Has(httpbinding.CapabilityManifestIndex))
	x, err := outbox.IndexEntry(newRefBoard(t).commit("nav", 40).Entries)
	require.NoError(t, err)
	_, err = c.Send(ctx, x)
	require.ErrorIs(t, err, sourcecatalog.ErrUnsupported)
	require.Equal(t, "entity_type", sourcecatalog.Problems(err)[0].Field)
}
