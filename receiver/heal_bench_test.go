package receiver_test

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/dbtest"
	"github.com/yachtmemory/sourcecatalog/internal/fsfault"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
	"github.com/yachtmemory/sourcecatalog/receiver"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// Healing under writes: senders keep sending snapshots to a receiver
// while its store is broken — a full disk, a read-only file system, a
// MariaDB server stopped — and mended. What is measured is how long the
// receiver still answers 503 once the fault is gone: from the moment it
// is mended (for MariaDB, the moment the restarted server answers) to the
// first receipt any sender gets. Then a new receiver over the same store
// is asked for every message a receipt was given for, and must answer
// already_received: nothing acknowledged was lost.

// vesselHeader names the vessel of a request to vesselAuth.
const vesselHeader = "X-Test-Vessel"

// vesselAuth authenticates a request as the vessel its header names, so
// that each snapshot of the senders is a vessel of its own: nothing is
// pruned, superseded or refused for the staging bounds, and every message
// acknowledged stays to be asked for.
type vesselAuth struct{}

func (vesselAuth) Authenticate(r *http.Request) (finalize.Origin, error) {
	v, err := uuid.Parse(r.Header.Get(vesselHeader))
	return finalize.Origin{VesselID: v}, err
}

// A fault breaks a store and mends it. mend returns the moment the store
// can serve again. A fault the store rides out is one it must serve
// through: no 503 while it holds, and receipts go on.
type fault struct {
	name      string
	src       storeheal.Source
	brk       func(tb testing.TB)
	mend      func(tb testing.TB) time.Time
	riddenOut bool
}

// acked is a message a receipt was given for.
type acked struct {
	vessel uuid.UUID
	body   []byte
}

// healRun is a receiver under senders.
type healRun struct {
	tb     testing.TB
	svc    *receiver.Service
	server *httptest.Server
	client *http.Client

	mu     sync.Mutex
	acked  []acked
	oks    []time.Time // when each receipt came
	codes  map[int]int // answers by status
	stop   chan struct{}
	wg     sync.WaitGroup
	failed error // a sender's unexpected answer
}

func newHealRun(tb testing.TB, src storeheal.Source) *healRun {
	svc, err := receiver.New(context.Background(), receiver.Config{Store: src, Retention: receiver.KeepAll(), Auth: vesselAuth{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(tb, err)
	r := &healRun{tb: tb, svc: svc, server: httptest.NewServer(svc.Handler()), codes: map[int]int{}, stop: make(chan struct{}),
		client: &http.Client{Timeout: 30 * time.Second}}
	return r
}

// close stops the senders and the receiver.
func (r *healRun) close() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	r.wg.Wait()
	r.server.Close()
	require.NoError(r.tb, r.svc.Close())
}

// post sends one message of vessel and returns the status and the answer.
func (r *healRun) post(vessel uuid.UUID, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, r.server.URL, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(vesselHeader, vessel.String())
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return resp.StatusCode, answer, err
}

// send starts n senders: each sends snapshot after snapshot, message
// after message, sending a message again 5 ms after a 503 until it gets a
// receipt, until close.
func (r *healRun) send(n int) {
	for range n {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for {
				vessel := uuid.New()
				for _, body := range healMessages(vessel) {
					for {
						select {
						case <-r.stop:
							return
						default:
						}
						code, answer, err := r.post(vessel, body)
						now := time.Now()
						r.mu.Lock()
						r.codes[code]++
						switch {
						case err != nil:
							r.failed = cmpOr(r.failed, err)
						case code == http.StatusOK:
							r.acked = append(r.acked, acked{vessel, body})
							r.oks = append(r.oks, now)
						case code != http.StatusServiceUnavailable:
							r.failed = cmpOr(r.failed, fmt.Errorf("answered %d: %s", code, answer))
						}
						r.mu.Unlock()
						if code == http.StatusOK {
							break
						}
						if code != http.StatusServiceUnavailable {
							return
						}
						time.Sleep(5 * time.Millisecond)
					}
				}
			}
		}()
	}
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// healMessages returns the wrapped messages of a snapshot of a vessel,
// the manifest first.
func healMessages(vessel uuid.UUID) [][]byte {
	s, err := envelope.Build(envelope.Input{VesselID: vessel, SnapshotID: uuid.New(), Revision: 1,
		DiscoveredAt: examples.DiscoveredAt, Records: examples.Scaled(120)})
	if err != nil {
		panic(err)
	}
	w := envelope.DefaultWrapper{}
	bodies := [][]byte{w.Wrap(nil, sourcecatalog.ManifestEntityType, envelope.ManifestKey(s.Manifest.SnapshotID), s.Manifest.Canonical())}
	for _, c := range s.Chunks {
		bodies = append(bodies, w.Wrap(nil, sourcecatalog.ChunkEntityType, envelope.ChunkKey(c.SnapshotID(), c.Index()), c.Canonical()))
	}
	return bodies
}

// state returns the receipts so far, the 503s and the first unexpected
// answer.
func (r *healRun) state() (oks, unavailable int, failed error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.oks), r.codes[http.StatusServiceUnavailable], r.failed
}

// firstOKAfter waits for the first receipt that came at or after t, and
// returns when it came.
func (r *healRun) firstOKAfter(t time.Time, limit time.Duration) time.Time {
	deadline := time.Now().Add(limit)
	for {
		r.mu.Lock()
		i := slices.IndexFunc(r.oks, func(ok time.Time) bool { return !ok.Before(t) })
		var at time.Time
		if i >= 0 {
			at = slices.MinFunc(r.oks[i:], func(a, b time.Time) int { return a.Compare(b) })
		}
		failed := r.failed
		r.mu.Unlock()
		require.NoError(r.tb, failed)
		if i >= 0 {
			return at
		}
		require.True(r.tb, time.Now().Before(deadline), "no receipt %v after the fault was mended", limit)
		time.Sleep(time.Millisecond)
	}
}

// cycle runs one fault of f held for hold, under the senders, and returns
// how long the receiver answered 503 after the fault was mended: the time
// from the mend to the first receipt after it (for a fault the store
// rides out, the gap between two receipts). The fault is broken once a
// receipt came, held at least until a 503 came — or, ridden out, for
// hold, requiring a receipt and no 503 meanwhile — and the next one waits
// for 20 receipts after it.
func (r *healRun) cycle(f *fault, hold time.Duration) time.Duration {
	oks, unavailable, _ := r.state()
	r.await(func(o, _ int) bool { return o > oks }, "a receipt before the fault")
	f.brk(r.tb)
	broken := time.Now()
	if f.riddenOut {
		oks, _, _ = r.state()
		r.await(func(o, _ int) bool { return o > oks }, f.name+": a receipt while the fault holds")
	} else {
		r.await(func(_, u int) bool { return u > unavailable }, f.name+": a 503 while the store is broken")
	}
	time.Sleep(hold - time.Since(broken))
	if _, u, _ := r.state(); f.riddenOut {
		require.Equal(r.tb, unavailable, u, "%s: answered 503 while the store should serve through the fault", f.name)
	}
	mended := f.mend(r.tb)
	healed := r.firstOKAfter(mended, time.Minute).Sub(mended)
	oks, _, _ = r.state()
	r.await(func(o, _ int) bool { return o >= oks+20 }, "20 receipts after the fault") // to be asked for again
	return healed
}

// await waits, a minute at most, until the receipts and 503s so far
// satisfy done.
func (r *healRun) await(done func(oks, unavailable int) bool, what string) {
	deadline := time.Now().Add(time.Minute)
	for {
		oks, unavailable, failed := r.state()
		require.NoError(r.tb, failed)
		if done(oks, unavailable) {
			return
		}
		require.True(r.tb, time.Now().Before(deadline), "no %s within a minute", what)
		time.Sleep(time.Millisecond)
	}
}

// requireNothingLost stops the senders, opens a new receiver over the
// same store and sends every acknowledged message again: each must be
// answered already_received.
func (r *healRun) requireNothingLost(src storeheal.Source) int {
	r.close()
	again := newHealRun(r.tb, src)
	defer again.close()
	for _, a := range r.acked {
		code, answer, err := again.post(a.vessel, a.body)
		require.NoError(r.tb, err)
		require.Equal(r.tb, http.StatusOK, code, "%s", answer)
		rc, err := envelope.DecodeReceipt(answer)
		require.NoError(r.tb, err)
		require.Equal(r.tb, envelope.AlreadyReceived, rc.Status, "a message acknowledged before was lost: vessel %v", a.vessel)
	}
	return len(r.acked)
}

// heal runs the cycles of f, one per hold, under senders, reports the
// figures when tb is a benchmark, and checks that nothing acknowledged
// was lost.
func heal(tb testing.TB, f *fault, senders int, holds []time.Duration) {
	r := newHealRun(tb, f.src)
	r.send(senders)
	var worst, total time.Duration
	for _, hold := range holds {
		healed := r.cycle(f, hold)
		if f.riddenOut {
			tb.Logf("%s held %v: served through it, the first receipt %v after it was mended", f.name, hold, healed)
		} else {
			tb.Logf("%s held %v: 503 for %v after it was mended", f.name, hold, healed)
		}
		worst, total = max(worst, healed), total+healed
	}
	_, unavailable, _ := r.state()
	n := r.requireNothingLost(f.src)
	if b, ok := tb.(*testing.B); ok {
		b.ReportMetric(worst.Seconds(), "heal_max_s")
		b.ReportMetric(total.Seconds()/float64(len(holds)), "heal_mean_s")
		b.ReportMetric(float64(n), "receipts")
		b.ReportMetric(float64(unavailable), "503s")
	}
}

// sqliteFaults returns the faults of a SQLite file on a tmpfs: the disk
// filled, and the directory made read-only (fsfault.ReadOnly: the files
// the store holds open stay writable, whatever it opens anew is refused),
// in WAL mode (the default) and under the rollback journal. A store in
// WAL mode rides that out, writing only to the files it holds open, so
// its tmpfs has room for what the senders write while the fault holds;
// under the rollback journal the next commit fails to open its journal,
// and the store heals once the directory is writable.
func sqliteFaults(tb testing.TB) []*fault {
	fsfault.NeedRoot(tb, "the file system faults, which mount a tmpfs")
	full := fsfault.Tmpfs(tb, 64<<20)
	filler := filepath.Join(full, "filler")
	return []*fault{
		{name: "disk full", src: sqlitestore.Source(filepath.Join(full, "shore.db")),
			brk: func(tb testing.TB) { fsfault.FillDisk(tb, filler) },
			mend: func(tb testing.TB) time.Time {
				require.NoError(tb, os.Remove(filler))
				return time.Now()
			}},
		readOnly(tb, "read-only", 512<<20, true),
		readOnly(tb, "read-only rollback", 64<<20, false, sqlitestore.WithRollbackJournal()),
	}
}

// readOnly returns the fault named name of a store opened with opts in a
// tmpfs of size bytes whose directory is made read-only; riddenOut says
// whether the store serves through it.
func readOnly(tb testing.TB, name string, size int, riddenOut bool, opts ...sqlitestore.Option) *fault {
	dir := fsfault.Tmpfs(tb, size)
	var writable func()
	return &fault{name: name, src: sqlitestore.Source(filepath.Join(dir, "shore.db"), opts...), riddenOut: riddenOut,
		brk: func(tb testing.TB) { writable = fsfault.ReadOnly(tb, dir) },
		mend: func(testing.TB) time.Time {
			writable()
			return time.Now()
		}}
}

// mysqlRestart returns the fault of a MariaDB server stopped and started
// again: the throwaway server of scripts/mariadb.sh that
// SOURCECATALOG_MYSQL_DIR names, which the benchmark stops and starts, in
// a schema of its own.
func mysqlRestart(tb testing.TB) *fault {
	cfg := dbtest.MySQL(tb)
	// The driver logs each connection the restart breaks, on the output
	// that carries the benchmark's figures.
	require.NoError(tb, mysql.SetLogger(log.New(io.Discard, "", 0)))
	dir := dbtest.Env(tb, dbtest.MySQLDirEnv, "the MariaDB restart", "the scripts/mariadb.sh directory of the server, which the benchmark restarts")
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(tb, err)
	tb.Cleanup(func() { admin.Close() })
	name := fmt.Sprintf("sourcecatalog_heal_%d", time.Now().UnixNano())
	_, err = admin.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin")
	require.NoError(tb, err)
	named := cfg.Clone()
	named.DBName, named.Timeout = name, 5*time.Second
	db, err := sql.Open("mysql", named.FormatDSN())
	require.NoError(tb, err)
	require.NoError(tb, mysqlstore.Migrate(context.Background(), db))
	require.NoError(tb, db.Close())
	tb.Cleanup(func() {
		dbtest.StartMariaDB(tb, dir, admin) // for later tests, should the benchmark stop half-way
		admin.Exec("DROP DATABASE " + name)
	})
	return &fault{name: "MariaDB restart",
		src: storeheal.Source{Name: "mysql schema " + name,
			Open: func(ctx context.Context) (finalize.Store, io.Closer, error) {
				conn, err := mysql.NewConnector(named)
				if err != nil {
					return nil, nil, err
				}
				db := sql.OpenDB(conn)
				if err := mysqlstore.CheckSchema(ctx, db); err != nil {
					return nil, nil, errors.Join(err, db.Close())
				}
				return mysqlstore.New(db), db, nil
			},
			Poisoned: connectionLost},
		brk:  func(tb testing.TB) { dbtest.StopMariaDB(tb, dir) },
		mend: func(tb testing.TB) time.Time { return dbtest.StartMariaDB(tb, dir, admin) },
	}
}

// connectionLost reports whether err says that the connection to MariaDB
// is gone, as serve's store flag does.
func connectionLost(err error) bool {
	var op *net.OpError
	n, numbered := mysqlstore.ErrorNumber(err)
	return errors.As(err, &op) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || numbered && (n == 1053 || n == 1927 || n == 4031)
}

// healHolds are how long the benchmark holds each fault: a short one,
// and one long enough for the reopening's backoff to reach its longest.
var healHolds = []time.Duration{time.Second, 5 * time.Second}

// BenchmarkHealUnderWrites reports, for each fault, how long the receiver
// answers 503 once the fault is gone while four senders keep sending
// (heal_max_s, target ≤ 2 s; heal_mean_s), and checks that every message
// acknowledged before, during and after is still held.
func BenchmarkHealUnderWrites(b *testing.B) {
	b.Run("sqlite-diskfull", func(b *testing.B) {
		f := sqliteFaults(b)[0]
		for range b.N {
			heal(b, f, 4, healHolds)
		}
	})
	b.Run("sqlite-readonly", func(b *testing.B) {
		f := sqliteFaults(b)[1]
		for range b.N {
			heal(b, f, 4, healHolds)
		}
	})
	b.Run("sqlite-rollback-readonly", func(b *testing.B) {
		f := sqliteFaults(b)[2]
		for range b.N {
			heal(b, f, 4, healHolds)
		}
	})
	b.Run("mysql-restart", func(b *testing.B) {
		f := mysqlRestart(b)
		for range b.N {
			heal(b, f, 4, healHolds)
		}
	})
}

// TestHealUnderWrites: a full disk and a read-only directory under a
// receiver that senders keep writing to; once mended, the receiver
// answers again without a restart — in WAL mode it serves through the
// read-only directory — and nothing it acknowledged is lost.
func TestHealUnderWrites(t *testing.T) {
	for _, f := range sqliteFaults(t) {
		t.Run(f.name, func(t *testing.T) { heal(t, f, 2, []time.Duration{300 * time.Millisecond}) })
	}
}
