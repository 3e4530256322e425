package outbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	finalmem "github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

// sensors returns n depth sensors of one source.
func sensors(t *testing.T, n int) []*catalog.Record {
	src, err := catalog.NewSource(catalog.Source{SourceRef: "can0.sounder"})
	require.NoError(t, err)
	out := []*catalog.Record{src}
	for i := range n {
		name := fmt.Sprintf("environment.depth.sensor%03d", i)
		path, err := catalog.NewPath(catalog.Path{Path: name, Unit: catalog.UnitOf("m")})
		require.NoError(t, err)
		obs, err := catalog.NewObservation(catalog.Observation{Path: name, SourceRef: "can0.sounder", ValueType: catalog.Number})
		require.NoError(t, err)
		out = append(out, path, obs)
	}
	return out
}

// TestManifestIndexEntry: the index entry of a committed snapshot stands
// for its manifest entry, lists every chunk entry's digest at its index,
// and is acknowledged by the receipt of the index; a receiver holding
// the chunks stages the set from it alone.
func TestManifestIndexEntry(t *testing.T) {
	ctx := context.Background()
	vessel := uuid.New()
	board := memstore.New()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	commit := func() outbox.Commit {
		at = at.Add(15 * time.Minute)
		c, err := outbox.NewWriter(board).Commit(ctx, outbox.NewCycle(vessel, at, sensors(t, 150)))
		require.NoError(t, err)
		return c
	}
	first := commit()
	require.Greater(t, len(first.Entries), 2, "fixture: several chunks")
	x, err := outbox.IndexEntry(first.Entries)
	require.NoError(t, err)
	man := first.Entries[0]
	assert.Equal(t, sourcecatalog.ManifestIndexEntityType, x.EntityType)
	assert.Equal(t, man.EntityKey, x.EntityKey)
	assert.Equal(t, man.SnapshotID, x.SnapshotID)
	assert.Equal(t, sourcecatalog.NoIndex, x.ChunkIndex)
	assert.Equal(t, canonical.Sum(x.Payload), x.Digest)
	idx, err := envelope.DecodeManifestIndex(x.Payload)
	require.NoError(t, err)
	m := idx.Manifest()
	assert.Equal(t, string(man.Payload), string(m.Canonical()))
	for _, e := range first.Entries[1:] {
		assert.Equal(t, e.Digest, idx.PayloadSHA256(e.ChunkIndex))
	}
	shuffled := append([]outbox.Entry{first.Entries[2], first.Entries[0]}, first.Entries[3:]...)
	shuffled = append(shuffled, first.Entries[1])
	y, err := outbox.IndexEntry(shuffled)
	require.NoError(t, err)
	assert.Equal(t, x, y, "entries in any order")

	for name, entries := range map[string][]outbox.Entry{
		"no manifest":   first.Entries[1:],
		"a chunk short": first.Entries[:len(first.Entries)-1],
		"a chunk twice": append(append([]outbox.Entry(nil), first.Entries[:len(first.Entries)-1]...), first.Entries[1]),
		"another snapshot": append(append([]outbox.Entry(nil), first.Entries[:len(first.Entries)-1]...),
			commit().Entries[len(first.Entries)-1]),
	} {
		_, err := outbox.IndexEntry(entries)
		require.ErrorIs(t, err, sourcecatalog.ErrIntegrity, name)
	}

	recv := finalize.NewReceiver(finalmem.New())
	origin := finalize.Origin{VesselID: vessel}
	for _, e := range first.Entries {
		send := recv.ReceiveChunk
		if e.ChunkIndex == sourcecatalog.NoIndex {
			send = recv.ReceiveManifest
		}
		_, err := send(ctx, origin, e.Payload)
		require.NoError(t, err)
	}
	out, err := recv.Finalize(ctx, vessel, first.Entries[0].SnapshotID)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
	next := commit()
	x, err = outbox.IndexEntry(next.Entries)
	require.NoError(t, err)
	rc, err := recv.ReceiveManifestIndex(ctx, origin, x.Payload)
	require.NoError(t, err)
	assert.Equal(t, x.Digest, rc.Digest, "the receipt carries the entry's digest")
	assert.True(t, rc.Matches(x.Receipt()), "the receipt of the index matches its entry (SPEC.md §9.3)")
	assert.Zero(t, rc.Missing.Len())
	assert.True(t, rc.Complete)
}
