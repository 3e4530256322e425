package sqlitestore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// The damage tests make a receiver's file (shore: one snapshot activated,
// another staging with some of its chunks) and a sender's (board: two
// committed cycles, one delivered), then damage copies of their bytes in
// a memFS: cut short, or one byte flipped.

var damageVessel = uuid.MustParse("0b7a3c1e-5d2f-4a6b-9c8d-7e6f5a4b3c2d")

// cycleEntries commits cycle n of damageVessel in a throwaway outbox and
// returns its entries, manifest first.
func cycleEntries(t *testing.T, n int) []outbox.Entry {
	t.Helper()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Minute)
	c, err := outbox.NewWriter(outboxmem.New(), outbox.WithRevisionFloor(false)).Commit(context.Background(),
		outbox.NewCycle(damageVessel, at, examples.WithChangedUnits(examples.Scaled(500), n)))
	require.NoError(t, err)
	return c.Entries
}

// shoreFile returns the bytes of a closed receiver's file, and the
// entries of its staging snapshot, of which the manifest and chunks 0
// and 1 are staged.
func shoreFile(t *testing.T) ([]byte, []outbox.Entry) {
	t.Helper()
	ctx := context.Background()
	fs := newMemFS()
	defer fs.unregister()
	s := openFS(t, fs)
	r := receiver(s)
	origin := finalize.Origin{VesselID: damageVessel}
	receive := func(e outbox.Entry) {
		t.Helper()
		fn := r.ReceiveChunk
		if e.ChunkIndex < 0 {
			fn = r.ReceiveManifest
		}
		_, err := fn(ctx, origin, e.Payload)
		require.NoError(t, err)
	}
	first := cycleEntries(t, 1)
	for _, e := range first {
		receive(e)
	}
	out, err := r.Finalize(ctx, damageVessel, first[0].SnapshotID)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
	staging := cycleEntries(t, 2)
	require.Greater(t, len(staging), 3, "fixture: the staging snapshot has chunks left to send")
	for _, e := range staging[:3] {
		receive(e)
	}
	require.NoError(t, s.Close())
	return fs.file(dbPath), staging
}

// boardFile returns the bytes of a closed sender's file and its entries:
// cycle 1 delivered, cycle 2 pending.
func boardFile(t *testing.T) ([]byte, []outbox.Entry) {
	t.Helper()
	ctx := context.Background()
	fs := newMemFS()
	defer fs.unregister()
	s := openFS(t, fs)
	w := outbox.NewWriter(s.Outbox(), outbox.WithRevisionFloor(false))
	var all []outbox.Entry
	for n := 1; n <= 2; n++ {
		c, err := w.Commit(ctx, outbox.NewCycle(damageVessel, time.Date(2026, 5, 1, 12, n, 0, 0, time.UTC), examples.WithChangedUnits(examples.Scaled(300), n)))
		require.NoError(t, err)
		if n == 1 {
			require.NoError(t, s.Outbox().WithVessel(ctx, damageVessel, func(tx outbox.Tx) error {
				for _, e := range c.Entries {
					if err := tx.SetState(ctx, e.SnapshotID, e.ChunkIndex, outbox.Delivered); err != nil {
						return err
					}
				}
				return nil
			}))
		}
		all = append(all, c.Entries...)
	}
	require.NoError(t, s.Close())
	return fs.file(dbPath), all
}

// pageSize reads the page size from an SQLite header.
func pageSize(data []byte) int {
	p := int(binary.BigEndian.Uint16(data[16:]))
	if p == 1 {
		return 65536
	}
	return p
}

// cuts are the sizes a file of n bytes and the given page size is cut to:
// every size within its first 101 bytes, at every page boundary, and
// every size within its last two pages; with sample, of the last two
// pages only every 61st size and those next to a page boundary.
func cuts(n, page int, sample bool) []int {
	var out []int
	for c := 1; c <= 101; c++ {
		out = append(out, c)
	}
	for c := page; c < n-2*page; c += page {
		out = append(out, c)
	}
	for c := max(n-2*page, 102); c < n; c++ {
		if d := c % page; !sample || c%61 == 0 || d <= 1 || d >= page-1 {
			out = append(out, c)
		}
	}
	return out
}

// TestOpenRefusesCutFile cuts a shore and a board file at every size
// cuts lists: Open refuses each with ErrInvalidFile and writes nothing.
// A memFS holds each cut file, so that the opens cost no disk I/O; an
// open still costs an SQLite connection, ten times dearer under the race
// detector, which therefore opens a sample (some 300 cuts of each file's
// 8,300) while the check Open makes (Damage) runs on every cut.
func TestOpenRefusesCutFile(t *testing.T) {
	t.Parallel()
	files := map[string]func(*testing.T) ([]byte, []outbox.Entry){"shore": shoreFile, "board": boardFile}
	for name, make := range files {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, _ := make(t)
			page := pageSize(data)
			require.Zero(t, len(data)%page, "fixture: a whole file")
			require.Empty(t, sqlitestore.Damage(data[:100], int64(len(data))), "fixture: a whole file")
			for _, n := range cuts(len(data), page, false) {
				if sqlitestore.Damage(data[:min(n, 100)], int64(n)) == "" {
					t.Fatalf("a file of %d bytes cut to %d: no damage found", len(data), n)
				}
			}
			fs := newMemFS()
			defer fs.unregister()
			fs.set(dbPath, data)
			s := openFS(t, fs) // the whole file opens
			require.NoError(t, s.Close())

			// The cut files share data's bytes; that Open writes nothing is
			// checked by the memFS's count of writes, truncations, syncs and
			// deletions, of any file, and data is compared once at the end.
			pristine := bytes.Clone(data)
			start := time.Now()
			sizes := cuts(len(data), page, raceEnabled)
			for _, n := range sizes {
				fs.set(dbPath, data[:n])
				before, _ := fs.Ops()
				s, err := sqlitestore.Open(context.Background(), dbPath, sqlitestore.WithVFS(fs.name))
				if s != nil {
					s.Close()
				}
				if !errors.Is(err, sqlitestore.ErrInvalidFile) || !errors.Is(err, sourcecatalog.ErrStoreUnavailable) {
					t.Fatalf("a file of %d bytes cut to %d: Open: %v", len(data), n, err)
				}
				if after, kinds := fs.Ops(); after != before || fs.size(dbPath) != n {
					t.Fatalf("cut to %d: Open wrote (%d operations: %v)", n, after-before, kinds)
				}
			}
			t.Logf("%d bytes of %d-byte pages: %d cuts refused in %v", len(data), page, len(sizes), time.Since(start))
			require.Equal(t, pristine, data, "nothing was written to the cut files")
		})
	}
}

// flip returns data with one byte changed inside within, at a place where
// a run of within's bytes is stored once, contiguously (a long value
// spans pages), and is in none of others, the other values stored, so
// that the run stored is within's (or a part within shares); it tries
// runs from the end of within, where a chunk's or entry's own revision
// and ids are.
func flip(t *testing.T, data, within []byte, others ...[]byte) []byte {
	t.Helper()
	const run = 64
	for end := len(within); end >= run; end -= run / 4 {
		probe := within[end-run : end]
		at := bytes.Index(data, probe)
		if at < 0 || bytes.Contains(data[at+1:], probe) || slices.ContainsFunc(others, func(o []byte) bool { return bytes.Contains(o, probe) }) {
			continue
		}
		out := bytes.Clone(data)
		out[at+run/2] ^= 0x20
		return out
	}
	t.Fatal("fixture: no run of the bytes is stored once")
	return nil
}

// TestDamagedChunk flips one byte inside a staged chunk's bytes: every
// read of it fails with ErrDamaged naming the row, no call hands the bytes
// on or writes the file, and the rest of the file still serves.
func TestDamagedChunk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data, staging := shoreFile(t)
	chunk := staging[2] // chunk 1 of the staging snapshot
	var others [][]byte
	for _, e := range append(cycleEntries(t, 1), staging...) {
		if e.ChunkIndex != chunk.ChunkIndex || e.SnapshotID != chunk.SnapshotID {
			others = append(others, e.Payload)
		}
	}
	damaged := flip(t, data, chunk.Payload, others...)
	fs := newMemFS()
	defer fs.unregister()
	fs.set(dbPath, damaged)
	s := openFS(t, fs)
	defer s.Close()
	r := receiver(s)
	want := fmt.Sprintf("vessel %s snapshot %s chunk 1", damageVessel, chunk.SnapshotID)
	calls := []struct {
		name string
		call func() error
	}{
		{"Chunk", func() error {
			return s.WithVessel(ctx, damageVessel, func(tx finalize.Tx) error {
				_, err := tx.Chunk(ctx, chunk.SnapshotID, 1)
				return err
			})
		}},
		{"Chunks", func() error {
			return s.WithVessel(ctx, damageVessel, func(tx finalize.Tx) error {
				_, err := tx.Chunks(ctx, chunk.SnapshotID)
				return err
			})
		}},
		{"receive again", func() error {
			_, err := r.ReceiveChunk(ctx, finalize.Origin{VesselID: damageVessel}, chunk.Payload)
			return err
		}},
		{"status", func() error { _, err := r.Status(ctx, damageVessel); return err }},
		{"finalize", func() error {
			for _, e := range staging[3:] {
				if _, err := r.ReceiveChunk(ctx, finalize.Origin{VesselID: damageVessel}, e.Payload); err != nil {
					return err
				}
			}
			_, err := r.Finalize(ctx, damageVessel, chunk.SnapshotID)
			return err
		}},
	}
	for _, c := range calls {
		before := fs.file(dbPath)
		err := c.call()
		require.ErrorIs(t, err, sqlitestore.ErrDamaged, c.name)
		require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable, c.name)
		require.ErrorContains(t, err, want, c.name)
		if c.name != "finalize" { // finalize first stages the missing chunks
			require.Equal(t, before, fs.file(dbPath), "%s wrote the file", c.name)
		}
	}
	// The handle is not poisoned: the active snapshot still reads.
	require.NoError(t, s.WithVessel(ctx, damageVessel, func(tx finalize.Tx) error {
		v, err := tx.Vessel(ctx)
		if err == nil && v.ActiveRevision != 1 {
			err = fmt.Errorf("active revision %d", v.ActiveRevision)
		}
		return err
	}))
	// Discarding the damaged snapshot reads none of its chunks.
	require.NoError(t, r.Discard(ctx, damageVessel, chunk.SnapshotID))
	st, err := r.Status(ctx, damageVessel)
	require.NoError(t, err)
	require.Len(t, st.Snapshots, 1)
}

// TestDamagedEntry flips one byte inside a pending outbox entry's bytes:
// reading it fails with ErrDamaged naming the entry, and neither a
// publish nor a retried commit hands the bytes on or writes the file.
func TestDamagedEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data, entries := boardFile(t)
	var e outbox.Entry // the manifest of the pending cycle
	for _, c := range entries {
		if c.ChunkIndex < 0 {
			e = c
		}
	}
	damaged := flip(t, data, e.Payload)
	fs := newMemFS()
	defer fs.unregister()
	fs.set(dbPath, damaged)
	s := openFS(t, fs)
	defer s.Close()
	want := fmt.Sprintf("outbox entry of vessel %s snapshot %x (manifest)", damageVessel, e.SnapshotID[:])
	sent := 0
	calls := []struct {
		name string
		call func() error
	}{
		{"Pending", func() error {
			return s.Outbox().WithVessel(ctx, damageVessel, func(tx outbox.Tx) error {
				_, err := tx.Pending(ctx, 1000)
				return err
			})
		}},
		{"Entries", func() error {
			return s.Outbox().WithVessel(ctx, damageVessel, func(tx outbox.Tx) error {
				_, err := tx.Entries(ctx, e.SnapshotID)
				return err
			})
		}},
		{"publish", func() error {
			p := outbox.NewPublisher(s.Outbox(), damageVessel, countingTransport{&sent}, outbox.WithReceiverV2(true))
			_, err := p.Publish(ctx)
			return err
		}},
	}
	for _, c := range calls {
		before := fs.file(dbPath)
		err := c.call()
		require.ErrorIs(t, err, sqlitestore.ErrDamaged, c.name)
		require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable, c.name)
		require.ErrorContains(t, err, want, c.name)
		require.Equal(t, before, fs.file(dbPath), "%s wrote the file", c.name)
	}
	require.Zero(t, sent, "a publish of damaged entries sent something")
}

// countingTransport counts what it is asked to send, and sends nothing.
type countingTransport struct{ n *int }

func (c countingTransport) Send(_ context.Context, e outbox.Entry) (envelope.Receipt, error) {
	*c.n++
	return e.Receipt(), nil
}

// TestDamagedManifest flips one byte inside a staged manifest: reading
// its snapshot fails with ErrDamaged naming it, and so does every call
// that reads it; the file is not written.
func TestDamagedManifest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data, staging := shoreFile(t)
	m := staging[0]
	fs := newMemFS()
	defer fs.unregister()
	fs.set(dbPath, flip(t, data, m.Payload))
	s := openFS(t, fs)
	defer s.Close()
	r := receiver(s)
	want := fmt.Sprintf("vessel %s snapshot %x", damageVessel, m.SnapshotID[:])
	before := fs.file(dbPath)
	for name, call := range map[string]func() error{
		"Snapshot": func() error {
			return s.WithVessel(ctx, damageVessel, func(tx finalize.Tx) error {
				_, err := tx.Snapshot(ctx, m.SnapshotID)
				return err
			})
		},
		"Snapshots": func() error {
			return s.WithVessel(ctx, damageVessel, func(tx finalize.Tx) error {
				_, err := tx.Snapshots(ctx)
				return err
			})
		},
		"receive again": func() error {
			_, err := r.ReceiveManifest(ctx, finalize.Origin{VesselID: damageVessel}, m.Payload)
			return err
		},
		"finalize": func() error { _, err := r.Finalize(ctx, damageVessel, m.SnapshotID); return err },
	} {
		err := call()
		require.ErrorIs(t, err, sqlitestore.ErrDamaged, name)
		require.ErrorContains(t, err, want, name)
		require.Equal(t, before, fs.file(dbPath), "%s wrote the file", name)
	}
}

// receiveWhole has r receive every entry whole, manifest and chunks.
func receiveWhole(t *testing.T, r *finalize.Receiver, origin finalize.Origin, entries []outbox.Entry) {
	t.Helper()
	for _, e := range entries {
		fn := r.ReceiveChunk
		if e.ChunkIndex < 0 {
			fn = r.ReceiveManifest
		}
		_, err := fn(context.Background(), origin, e.Payload)
		require.NoError(t, err)
	}
}

// TestDamagedIdenticalChunk flips one byte inside a staged chunk of a set
// identical to the active snapshot, which Finalize verifies by identity
// without decoding it (SPEC.md §8.4): reading it fails with ErrDamaged,
// nothing is activated, and the same set received again whole, after the
// damaged snapshot is discarded, activates.
func TestDamagedIdenticalChunk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	origin := finalize.Origin{VesselID: damageVessel}
	w := outbox.NewWriter(outboxmem.New(), outbox.WithRevisionFloor(false))
	records := examples.Scaled(500)
	cycle := func(n int) []outbox.Entry {
		c, err := w.Commit(ctx, outbox.NewCycle(damageVessel, time.Date(2026, 5, 1, 12, n, 0, 0, time.UTC), records))
		require.NoError(t, err)
		return c.Entries
	}
	receive := func(r *finalize.Receiver, entries []outbox.Entry) { receiveWhole(t, r, origin, entries) }
	first, same := cycle(1), cycle(2)
	require.Greater(t, len(same), 2, "fixture: chunks")
	fs := newMemFS()
	defer fs.unregister()
	s := openFS(t, fs)
	r := receiver(s)
	receive(r, first)
	out, err := r.Finalize(ctx, damageVessel, first[0].SnapshotID)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
	receive(r, same)
	require.NoError(t, s.Close())
	fs.set(dbPath, flip(t, fs.file(dbPath), same[2].Payload))

	s = openFS(t, fs)
	defer s.Close()
	r = receiver(s)
	_, err = r.Finalize(ctx, damageVessel, same[0].SnapshotID)
	require.ErrorIs(t, err, sqlitestore.ErrDamaged)
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
	c, err := r.Active(ctx, damageVessel)
	require.NoError(t, err)
	require.Equal(t, first[0].SnapshotID, c.SnapshotID, "nothing activated")

	require.NoError(t, r.Discard(ctx, damageVessel, same[0].SnapshotID))
	receive(r, same)
	out, err = r.Finalize(ctx, damageVessel, same[0].SnapshotID)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
}

// TestDamagedChunkBehindDigest damages rows that chunk references and
// manifest indexes resolve from. A digest whose every row is damaged is
// hash_mismatch to a reference — every time, the transaction usable — and
// a missing chunk to an index, so the sender sends the chunk whole; that
// chunk's row then resolves the next reference. A damaged row is skipped
// for an undamaged one with the digest, older or newer.
func TestDamagedChunkBehindDigest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	origin := finalize.Origin{VesselID: damageVessel}
	w := outbox.NewWriter(outboxmem.New(), outbox.WithRevisionFloor(false))
	records := examples.Scaled(500)
	// Every other cycle changes its last path: no set is identical to the
	// active one (which Finalize would compare with, reading its chunks),
	// and the chunks before the change keep their digests.
	cycle := func(n int) []outbox.Entry {
		recs := records
		if n%2 == 0 {
			recs = examples.WithChangedUnits(records, 1)
		}
		c, err := w.Commit(ctx, outbox.NewCycle(damageVessel, time.Date(2026, 5, 1, 12, n, 0, 0, time.UTC), recs))
		require.NoError(t, err)
		return c.Entries
	}
	digests := func(entries []outbox.Entry) []canonical.Digest {
		var ds []canonical.Digest
		for _, e := range entries[1:] {
			c, err := envelope.DecodeChunk(e.Payload)
			require.NoError(t, err)
			ds = append(ds, c.PayloadSHA256())
		}
		return ds
	}
	s, _ := open(t)
	r := receiver(s)
	damage := func(entries []outbox.Entry, chunk int) {
		t.Helper()
		require.NoError(t, s.Exec(ctx, `UPDATE chunks SET chunk_canonical = x'7b7d' WHERE snapshot_id = ? AND chunk_index = ?`,
			entries[0].SnapshotID[:], chunk))
	}
	ref := func(e outbox.Entry) []byte {
		c, err := envelope.DecodeChunk(e.Payload)
		require.NoError(t, err)
		return envelope.NewChunkRef(c).Canonical()
	}
	index := func(entries []outbox.Entry) []byte {
		m, err := envelope.DecodeManifest(entries[0].Payload)
		require.NoError(t, err)
		x, err := envelope.NewManifestIndex(m, digests(entries))
		require.NoError(t, err)
		return x.Canonical()
	}
	activate := func(entries []outbox.Entry) {
		t.Helper()
		out, err := r.Finalize(ctx, damageVessel, entries[0].SnapshotID)
		require.NoError(t, err)
		require.Equal(t, finalize.Activated, out.Status)
	}

	first := cycle(1)
	require.Greater(t, len(first), 3, "fixture: chunks")
	receiveWhole(t, r, origin, first)
	activate(first)
	second := cycle(2)
	held, changed := digests(first), digests(second)
	var same []int // chunks of the same digest in both cycles
	for i, d := range changed {
		if i < len(held) && held[i] == d {
			same = append(same, i)
		}
	}
	require.GreaterOrEqual(t, len(same), 2, "fixture: unchanged chunks")
	older, newer := same[0], same[1]
	damage(first, older) // the only row with its digest

	var missing envelope.ChunkSet
	for i, d := range changed {
		if i == older || !slices.Contains(held, d) {
			missing.Add(i)
		}
	}
	require.Less(t, missing.Len(), len(changed), "fixture: chunks resolved")
	rc, err := r.ReceiveManifestIndex(ctx, origin, index(second))
	require.NoError(t, err)
	require.Equal(t, missing, rc.Missing, "the damaged chunk is missing, the others held resolved")
	for range 2 { // the same answer each time
		_, err = r.ReceiveChunkRef(ctx, origin, ref(second[older+1]))
		require.ErrorIs(t, err, sourcecatalog.ErrHashMismatch)
		p := sourcecatalog.Problems(err)[0]
		require.Equal(t, older, p.Chunk)
		require.Equal(t, "payload_sha256", p.Field)
	}
	for _, e := range second[1:] {
		if missing.Has(e.ChunkIndex) { // sent whole
			_, err = r.ReceiveChunk(ctx, origin, e.Payload)
			require.NoError(t, err)
		}
	}
	activate(second)

	third := cycle(3)
	_, err = r.ReceiveManifest(ctx, origin, third[0].Payload)
	require.NoError(t, err)
	for _, e := range third[1:] {
		rc, err := r.ReceiveChunkRef(ctx, origin, ref(e))
		require.NoError(t, err, "chunk %d: resolved past the damaged row", e.ChunkIndex)
		require.Equal(t, envelope.Staged, rc.Status)
	}
	activate(third)

	damage(third, newer) // the newest row with its digest: older ones resolve
	fourth := cycle(4)
	rc, err = r.ReceiveManifestIndex(ctx, origin, index(fourth))
	require.NoError(t, err)
	require.Equal(t, envelope.ChunkSet{}, rc.Missing)
	activate(fourth)
}
