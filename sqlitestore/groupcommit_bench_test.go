package sqlitestore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/ncruces/go-sqlite3/vfs"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// syncVFS is the operating system's VFS with its syncs counted: real
// files, real fsyncs.
type syncVFS struct {
	name  string
	syncs atomic.Int64
}

var syncVFSSeq atomic.Int64

func newSyncVFS() *syncVFS {
	v := &syncVFS{name: fmt.Sprintf("syncs%d", syncVFSSeq.Add(1))}
	vfs.Register(v.name, v)
	return v
}

func (v *syncVFS) os() vfs.VFS { return vfs.Find("") }

func (v *syncVFS) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, flags, err := v.os().Open(name, flags)
	if err != nil {
		return nil, flags, err
	}
	return &syncFile{File: f, v: v}, flags, nil
}

func (v *syncVFS) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, flags, err := v.os().(vfs.VFSFilename).OpenFilename(name, flags)
	if err != nil {
		return nil, flags, err
	}
	return &syncFile{File: f, v: v}, flags, nil
}

func (v *syncVFS) Delete(name string, dirSync bool) error {
	if dirSync {
		v.syncs.Add(1)
	}
	return v.os().Delete(name, dirSync)
}

func (v *syncVFS) Access(name string, flags vfs.AccessFlag) (bool, error) {
	return v.os().Access(name, flags)
}

func (v *syncVFS) FullPathname(name string) (string, error) { return v.os().FullPathname(name) }

// syncFile counts its syncs and passes on the lock state, which SQLite's
// rollback journal uses.
type syncFile struct {
	vfs.File
	v *syncVFS
}

func (f *syncFile) Sync(flags vfs.SyncFlag) error {
	f.v.syncs.Add(1)
	return f.File.Sync(flags)
}

func (f *syncFile) LockState() vfs.LockLevel {
	if l, ok := f.File.(vfs.FileLockState); ok {
		return l.LockState()
	}
	return vfs.LOCK_EXCLUSIVE + 1
}

func (f *syncFile) Unwrap() vfs.File { return f.File }

// SharedMemory passes on the wrapped file's, for a WAL journal.
func (f *syncFile) SharedMemory() vfs.SharedMemory {
	if m, ok := f.File.(vfs.FileSharedMemory); ok {
		return m.SharedMemory()
	}
	return nil
}

// Benchmark of durable writes under concurrency: groupSenders goroutines,
// each a vessel of its own, send a typical snapshot (groupRecords records
// in groupChunks chunks, and the manifest) one message after the other
// through one Receiver over one Store, and finalize it when a receipt says
// it is complete. Each iteration sends new snapshots of new vessels into
// the same file. The floor, in the same iteration and from the same
// goroutines, appends each message's bytes to a file and syncs it, under a
// mutex: one fsync'd write per message, the least a durable receipt costs
// without batching.
//
// Metrics (means over the iterations; names stable for scripts/bench.sh):
//   - fsyncs/message (target ≤ 1): the Store's syncs (database, journal,
//     directory; finalizes included) over the messages received;
//   - messages/s: messages received per second, finalizes included in the
//     time;
//   - x_floor: the Store's time over the floor's;
//   - floor_messages/s: the floor's rate.
const (
	groupSenders = 8
	groupRecords = 1500
	groupChunks  = 15
)

func BenchmarkGroupCommit(b *testing.B) { benchGroupCommit(b) }

// BenchmarkJournalModes is BenchmarkGroupCommit in each journal mode:
// the rollback journal (WithRollbackJournal), the default WAL, and WAL
// with SQLite's exclusive locking mode.
func BenchmarkJournalModes(b *testing.B) {
	for _, mode := range []string{"truncate", "wal", "wal-exclusive"} {
		b.Run(mode, func(b *testing.B) {
			benchGroupCommit(b, sqlitestore.WithJournal(mode))
		})
	}
}

func benchGroupCommit(b *testing.B, opts ...sqlitestore.Option) {
	ctx := context.Background()
	dir := b.TempDir()
	counter := newSyncVFS()
	defer vfs.Unregister(counter.name)
	s, err := sqlitestore.Open(ctx, filepath.Join(dir, "catalog.db"), append(opts, sqlitestore.WithVFS(counter.name))...)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	floorFile, err := os.Create(filepath.Join(dir, "floor"))
	if err != nil {
		b.Fatal(err)
	}
	defer floorFile.Close()
	r := finalize.NewReceiver(s, finalize.WithLimits(finalize.Limits{
		IncompleteSnapshots: 8, IncompleteBytes: 1 << 30, RetainedSnapshots: 1 << 20, RetainedBytes: 1 << 40}))
	records := examples.Scaled(groupRecords)
	var elapsed, floor time.Duration
	var syncs, messages int64
	for range b.N {
		b.StopTimer()
		snaps := make([]*envelope.Snapshot, groupSenders)
		for i := range snaps {
			snaps[i] = scaledSnapshot(b, uuid.New(), 1, records)
			if len(snaps[i].Chunks) != groupChunks || snaps[i].Manifest.RecordCount != groupRecords {
				b.Fatalf("a typical snapshot has %d chunks and %d records, want %d and %d",
					len(snaps[i].Chunks), snaps[i].Manifest.RecordCount, groupChunks, groupRecords)
			}
			messages += int64(1 + len(snaps[i].Chunks))
		}
		b.StartTimer()
		floor += floorAppends(b, floorFile, snaps)
		before := counter.syncs.Load()
		elapsed += sendConcurrently(b, r, snaps)
		syncs += counter.syncs.Load() - before
	}
	b.ReportMetric(float64(syncs)/float64(messages), "fsyncs/message")
	b.ReportMetric(float64(messages)/elapsed.Seconds(), "messages/s")
	b.ReportMetric(float64(messages)/floor.Seconds(), "floor_messages/s")
	b.ReportMetric(float64(elapsed)/float64(floor), "x_floor")
}

// sendConcurrently sends each snapshot from a goroutine of its own,
// finalizing it once complete, and returns the elapsed time.
func sendConcurrently(b *testing.B, r *finalize.Receiver, snaps []*envelope.Snapshot) time.Duration {
	ctx := context.Background()
	errs := make([]error, len(snaps))
	var wg sync.WaitGroup
	start := time.Now()
	for i, snap := range snaps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			origin := finalize.Origin{VesselID: snap.Manifest.VesselID}
			rc, err := r.ReceiveManifest(ctx, origin, snap.Manifest.Canonical())
			for _, c := range snap.Chunks {
				if err != nil {
					break
				}
				rc, err = r.ReceiveChunk(ctx, origin, c.Canonical())
			}
			if err == nil && !rc.Complete {
				err = fmt.Errorf("the last receipt is not complete")
			}
			if err == nil {
				var out finalize.Outcome
				out, err = r.Finalize(ctx, origin.VesselID, snap.Manifest.SnapshotID)
				if err == nil && out.Status != finalize.Activated {
					err = fmt.Errorf("finalize: %v", out.Status)
				}
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	d := time.Since(start)
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return d
}

// floorAppends appends every message's bytes to f and syncs it, one
// message at a time under a mutex, from one goroutine per snapshot.
func floorAppends(b *testing.B, f *os.File, snaps []*envelope.Snapshot) time.Duration {
	var mu sync.Mutex
	var failed atomic.Bool
	var wg sync.WaitGroup
	start := time.Now()
	for _, snap := range snaps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs := [][]byte{snap.Manifest.Canonical()}
			for _, c := range snap.Chunks {
				msgs = append(msgs, c.Canonical())
			}
			for _, m := range msgs {
				mu.Lock()
				_, err := f.Write(m)
				if err == nil {
					err = f.Sync()
				}
				mu.Unlock()
				if err != nil {
					failed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		b.Fatal("floor: write or sync failed")
	}
	return time.Since(start)
}
