package sqlitestore_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// The fault tests run cycles of both sides on one file: the outbox
// commits a discovery cycle, and its entries are received and finalized.
// Every call that returns successfully is acknowledged with one line of a
// ledger; after a crash, the file must keep all of them (verify).

// faultVessel is the vessel of the fault tests.
var faultVessel = uuid.MustParse("6f1c1a57-9d4e-4c7e-8a4b-2f6d3e5a7b90")

// runCycle commits cycle n in the outbox and delivers it to a receiver on
// the same store, calling ack with a ledger line after every success. It
// stops at the first error.
func runCycle(ctx context.Context, s *sqlitestore.Store, n int, ack func(string)) error {
	return runCycleOn(ctx, s.Outbox(), s, n, ack)
}

// runCycleOn runs cycle n as runCycle does, on the outbox and the receiver
// stores given.
func runCycleOn(ctx context.Context, ob outbox.Store, rs finalize.Store, n int, ack func(string)) error {
	records := examples.WithChangedUnits(examples.Scaled(150), 1+n%7)
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Minute)
	c, err := outbox.NewWriter(ob, outbox.WithRevisionFloor(false)).Commit(ctx, outbox.NewCycle(faultVessel, at, records)) // counted: checked gap-free below
	if err != nil {
		return err
	}
	m := c.Entries[0]
	ack(fmt.Sprintf("commit %d %s %s", c.Revision, m.SnapshotID, hex.EncodeToString(m.Digest[:])))
	r := receiver(rs)
	origin := finalize.Origin{VesselID: faultVessel}
	for _, e := range c.Entries {
		receive := r.ReceiveChunk
		if e.ChunkIndex < 0 {
			receive = r.ReceiveManifest
		}
		if _, err := receive(ctx, origin, e.Payload); err != nil {
			return err
		}
		ack(fmt.Sprintf("receipt %s %d", e.SnapshotID, e.ChunkIndex))
	}
	out, err := r.Finalize(ctx, faultVessel, m.SnapshotID)
	if err != nil {
		return err
	}
	if out.Status != finalize.Activated {
		return fmt.Errorf("cycle %d: finalize: %s", n, out.Status)
	}
	ack(fmt.Sprintf("activated %s %d", m.SnapshotID, c.Revision))
	return nil
}

// receiver returns a Receiver on s whose bounds never fill in a test, so
// that nothing acknowledged is ever pruned or refused.
func receiver(s finalize.Store) *finalize.Receiver {
	return finalize.NewReceiver(s, finalize.WithLimits(finalize.Limits{
		IncompleteSnapshots: 1 << 20, IncompleteBytes: 1 << 40, RetainedSnapshots: 1 << 20, RetainedBytes: 1 << 40}))
}

// A ledger collects acknowledgement lines; it is safe for concurrent use.
type ledger struct {
	mu    sync.Mutex
	lines []string
}

func (l *ledger) ack(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

func (l *ledger) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// errRollback ends a read-only look at the store.
var errRollback = errors.New("rolled back")

// verify checks the invariants of a file after a crash, on a Store opened
// on it: the file is intact, every acknowledged line still holds, the
// outbox's revisions are 1 to the last allocated without a gap and each is
// one snapshot, Reconcile activates what was complete, and the active
// catalog is exactly the active snapshot's records.
func verify(t *testing.T, ctx context.Context, s *sqlitestore.Store, acked []string) {
	t.Helper()
	ok, err := s.IntegrityCheck(ctx)
	require.NoError(t, err)
	require.Equal(t, "ok", ok, "integrity_check")

	// The outbox: revisions gap-free, one snapshot and manifest each.
	type rev struct {
		snapshot uuid.UUID
		digest   string
	}
	revs := map[int64]rev{}
	var last int64
	err = s.Outbox().WithVessel(ctx, faultVessel, func(tx outbox.Tx) error {
		entries, err := tx.Pending(ctx, 1<<30)
		require.NoError(t, err)
		for _, e := range entries {
			got, seen := revs[e.Revision]
			if e.ChunkIndex < 0 {
				require.False(t, seen && got.digest != "", "revision %d has two manifests", e.Revision)
				got.digest = hex.EncodeToString(e.Digest[:])
			}
			require.True(t, !seen || got.snapshot == e.SnapshotID, "revision %d is two snapshots", e.Revision)
			got.snapshot = e.SnapshotID
			revs[e.Revision] = got
		}
		next, err := tx.NextRevision(ctx, 0)
		require.NoError(t, err)
		last = next - 1
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	require.Len(t, revs, int(last), "revisions 1 to %d, each with entries", last)
	for r := int64(1); r <= last; r++ {
		require.Contains(t, revs, r, "revision %d has no entries", r)
		require.NotEmpty(t, revs[r].digest, "revision %d has no manifest", r)
	}

	// Acknowledged lines.
	var activated int64
	err = s.WithVessel(ctx, faultVessel, func(tx finalize.Tx) error {
		for _, line := range acked {
			f := strings.Fields(line)
			switch f[0] {
			case "commit":
				n, _ := strconv.ParseInt(f[1], 10, 64)
				require.Equal(t, rev{uuid.MustParse(f[2]), f[3]}, revs[n], "acknowledged: %s", line)
			case "receipt":
				id := uuid.MustParse(f[1])
				i, _ := strconv.Atoi(f[2])
				if i < 0 {
					snap, err := tx.Snapshot(ctx, id)
					require.NoError(t, err, "acknowledged: %s", line)
					require.NotNil(t, snap.Manifest, "acknowledged: %s", line)
				} else {
					_, err := tx.Chunk(ctx, id, i)
					require.NoError(t, err, "acknowledged: %s", line)
				}
			case "activated":
				n, _ := strconv.ParseInt(f[2], 10, 64)
				activated = max(activated, n)
			default:
				t.Fatalf("ledger line %q", line)
			}
		}
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)

	// Reconcile completes every complete snapshot.
	r := receiver(s)
	_, err = r.Reconcile(ctx, faultVessel)
	require.NoError(t, err, "reconcile")
	err = s.WithVessel(ctx, faultVessel, func(tx finalize.Tx) error {
		snaps, err := tx.Snapshots(ctx)
		require.NoError(t, err)
		for _, sn := range snaps {
			complete := sn.Manifest != nil && sn.ChunksStaged == sn.ChunkCount
			require.False(t, complete && sn.State == finalize.StateStaging, "snapshot %s complete but still staging after Reconcile", sn.ID)
		}
		v, err := tx.Vessel(ctx)
		require.NoError(t, err)
		require.GreaterOrEqual(t, v.ActiveRevision, activated, "an acknowledged activation was lost")
		checkActive(t, ctx, tx, v)
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
}

// checkActive checks that the current items are exactly the records of
// the active snapshot, as its staged chunks hold them.
func checkActive(t *testing.T, ctx context.Context, tx finalize.Tx, v finalize.VesselState) {
	t.Helper()
	items, err := tx.Items(ctx)
	require.NoError(t, err)
	current := map[catalog.Key]string{}
	for _, it := range items {
		if it.CurrentlyObserved {
			current[it.Key] = string(it.Record)
		}
	}
	want := map[catalog.Key]string{}
	if v.ActiveSnapshot != uuid.Nil {
		snap, err := tx.Snapshot(ctx, v.ActiveSnapshot)
		require.NoError(t, err)
		require.Equal(t, finalize.StateActivated, snap.State)
		chunks, err := tx.Chunks(ctx, v.ActiveSnapshot)
		require.NoError(t, err)
		require.Len(t, chunks, snap.ChunkCount)
		for _, c := range chunks {
			dc, err := envelope.DecodeChunk(c.Canonical)
			require.NoError(t, err)
			for _, r := range dc.Records() {
				want[catalog.Key{Kind: r.Kind(), Path: r.PathName(), SourceRef: r.SourceRef()}] = string(r.Canonical())
			}
		}
	}
	require.Equal(t, want, current, "the active catalog is the active snapshot's records")
}
