package fleetload

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
)

// A Config is one run of the service benchmark on one store.
type Config struct {
	Serve string // the sourcecatalog binary
	Floor string // the fleetfloor binary
	Dir   string // an empty directory for the run's files
	// MySQL is an account that may create and drop databases, with no
	// database named: the run is on MariaDB, each server on a database of
	// its own, dropped at the end. Nil: the run is on SQLite, each server
	// on files of its own.
	MySQL *mysql.Config
	// Strace is strace's path: on SQLite, a pass of serve under strace,
	// outside the timed ones, counts its fsyncs. Empty: none.
	Strace string
	// StraceVessels is the vessels of the strace pass, the first of the
	// fleet (0: all), sent by as many senders as the timed rounds: a
	// smaller fleet for a pass that is slower by half, with as many
	// messages in flight.
	StraceVessels int

	Vessels  int // the fleet
	Records  int // of each snapshot (examples.Scaled)
	Messages int // of each snapshot, manifest included: checked
	Senders  int // vessels sending at once
}

// A Report is what a run measured.
type Report struct {
	// Rounds are serve's: 1, every vessel's first snapshot; 2, an
	// identical document as the next revision, sent as a boat sends it
	// to a receiver holding the first: its index alone.
	Rounds [2]Round
	// FloorA and FloorB are the floors' times for round 1's messages,
	// each the mean of a run before serve's and one after: A, one durable
	// write per message; B, A and each snapshot's inventory rows.
	FloorA, FloorB time.Duration
	// FloorA2 is floor A's time for round 2's messages, after round 1's
	// in the same process, the mean of the same two runs: one durable
	// write per index, the least an identical round asks of a receiver —
	// the request read and the new revision made durable — as SPEC.md
	// §8.4 verifies the set by identity and §8.5 then only moves the
	// active pointer, writing no inventory row.
	FloorA2 time.Duration
	PeakRSS int64 // serve's VmHWM at the end, bytes
	// Syncs are serve's fsync and fdatasync calls per message in each
	// round, counted under strace; nil when not counted.
	Syncs []float64
}

// A Round is one of serve's rounds.
type Round struct {
	Result
	CPU time.Duration // serve's user and system CPU time in the round
}

// Run runs the benchmark of cfg: floor A, floor B, serve, floor B, floor
// A, each a fresh server process on a fresh store sent both rounds, all
// driven by the same senders with the same messages over the same TLS and
// tokens; then, with cfg.Strace on SQLite, the untimed strace pass. It
// checks that serve acknowledged every message as staged, named missing
// exactly the chunks sent whole (none of an identical round), and
// activated every snapshot.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	r := &run{Config: cfg, fleet: NewFleet(cfg.Vessels)}
	defer func() { err = errors.Join(err, r.cleanup()) }()
	if err := r.setup(); err != nil {
		return nil, err
	}
	rep = &Report{}
	var floors [4][2]time.Duration
	for i, inventory := range []bool{false, true} {
		if floors[i], err = r.floor(ctx, inventory); err != nil {
			return nil, err
		}
	}
	if rep.Rounds, rep.PeakRSS, err = r.serve(ctx); err != nil {
		return nil, err
	}
	for i, inventory := range []bool{true, false} {
		if floors[2+i], err = r.floor(ctx, inventory); err != nil {
			return nil, err
		}
	}
	rep.FloorA, rep.FloorB = (floors[0][0]+floors[3][0])/2, (floors[1][0]+floors[2][0])/2
	rep.FloorA2 = (floors[0][1] + floors[3][1]) / 2
	if cfg.Strace != "" && cfg.MySQL == nil {
		if rep.Syncs, err = r.straced(ctx); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// run is the state of one Run.
type run struct {
	Config
	fleet           []Vessel
	rounds          [2][]Snapshot
	roots           *x509.CertPool
	cert, key, toks string // files
	admin           *sql.DB
	databases       []string
	stores          int // files or databases made so far
}

// setup makes the certificates, the token file, the rounds' snapshots —
// the second's missing chunks those a receiver that staged the first
// lacks (Follow) — and, on MariaDB, the admin connection.
func (r *run) setup() error {
	ca, err := testpki.NewCA("fleetload CA")
	if err != nil {
		return err
	}
	c, err := ca.Server()
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := testpki.PEM(c)
	if err != nil {
		return err
	}
	r.roots = ca.Pool
	r.cert, r.key, r.toks = filepath.Join(r.Dir, "server.pem"), filepath.Join(r.Dir, "server-key.pem"), filepath.Join(r.Dir, "tokens")
	for f, b := range map[string][]byte{r.cert: certPEM, r.key: keyPEM, r.toks: TokenFile(r.fleet)} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			return err
		}
	}
	records := examples.Scaled(r.Records)
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for i := range r.rounds {
		if r.rounds[i], err = BuildRound(r.fleet, int64(i+1), at.Add(time.Duration(i)*15*time.Minute), records, r.Messages); err != nil {
			return err
		}
	}
	if err := Follow(r.rounds[1], r.rounds[0]); err != nil {
		return err
	}
	if r.MySQL != nil {
		if r.admin, err = sql.Open("mysql", r.MySQL.FormatDSN()); err != nil {
			return err
		}
	}
	return nil
}

// store returns a fresh store for one server: a file name under Dir, or
// a new database's DSN.
func (r *run) store(ctx context.Context, what string) (string, error) {
	r.stores++
	name := fmt.Sprintf("%s-%d", what, r.stores)
	if r.MySQL == nil {
		return filepath.Join(r.Dir, name), nil
	}
	var b [4]byte
	rand.Read(b[:])
	db := fmt.Sprintf("fleetload_%s_%d_%s", what, r.stores, hex.EncodeToString(b[:]))
	if _, err := r.admin.ExecContext(ctx, "CREATE DATABASE "+db+" CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"); err != nil {
		return "", fmt.Errorf("fleetload: %w", err)
	}
	r.databases = append(r.databases, db)
	cfg := r.MySQL.Clone()
	cfg.DBName = db
	return cfg.FormatDSN(), nil
}

// cleanup drops the databases made.
func (r *run) cleanup() error {
	if r.admin == nil {
		return nil
	}
	var errs []error
	for _, db := range r.databases {
		if _, err := r.admin.Exec("DROP DATABASE " + db); err != nil {
			errs = append(errs, fmt.Errorf("fleetload: drop %s: %w", db, err))
		}
	}
	return errors.Join(append(errs, r.admin.Close())...)
}

// floor runs a floor server, with or without the inventory, sends it
// round 1, then round 2 from fresh connections, as serve is sent them,
// and returns the rounds' times.
func (r *run) floor(ctx context.Context, inventory bool) (times [2]time.Duration, err error) {
	args := []string{"--listen", "127.0.0.1:0", "--tls-cert", r.cert, "--tls-key", r.key, "--tokens", r.toks,
		"--records", strconv.Itoa(r.Records), "--messages", strconv.Itoa(r.Messages)}
	what := map[bool]string{false: "floor_a", true: "floor_b"}[inventory]
	s, err := r.store(ctx, what)
	if err != nil {
		return times, err
	}
	switch {
	case r.MySQL != nil:
		args = append(args, "--mysql", s)
		if inventory {
			args = append(args, "--inventory", "mysql")
		}
	default:
		args = append(args, "--append", s+".log")
		if inventory {
			args = append(args, "--inventory", "sqlite:"+s+".db")
		}
	}
	p, err := Start(r.Floor, args, StartOptions{})
	if err != nil {
		return times, err
	}
	defer p.Kill()
	clients, err := NewClients("https://"+p.Addr+"/", r.roots, r.fleet, false)
	if err != nil {
		return times, err
	}
	for i, round := range r.rounds {
		res, err := Send(ctx, clients, round, r.Senders, nil)
		clients.CloseIdle()
		if err != nil {
			return times, fmt.Errorf("%s round %d: %w; its log:\n%s", what, i+1, err, p.Log())
		}
		times[i] = res.Elapsed
	}
	return times, p.Stop()
}

// serveArgs returns serve's command line on a fresh store.
func (r *run) serveArgs(ctx context.Context) ([]string, error) {
	s, err := r.store(ctx, "serve")
	if err != nil {
		return nil, err
	}
	store := "sqlite:" + s + ".db"
	args := []string{"serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--retain", "8",
		"--tls-cert", r.cert, "--tls-key", r.key, "--tokens", r.toks, "--log-format", "json"}
	if r.MySQL != nil {
		store = "mysql:" + s
		args = append(args, "--migrate")
	} else {
		args = append(args, "--create-store")
	}
	return append(args, "--store", store), nil
}

// serve runs serve's two rounds and returns them and serve's peak RSS.
func (r *run) serve(ctx context.Context) (rounds [2]Round, rss int64, err error) {
	args, err := r.serveArgs(ctx)
	if err != nil {
		return rounds, 0, err
	}
	p, err := Start(r.Serve, args, StartOptions{Admin: true})
	if err != nil {
		return rounds, 0, err
	}
	defer p.Kill()
	clients, err := NewClients("https://"+p.Addr+"/", r.roots, r.fleet, true)
	if err != nil {
		return rounds, 0, err
	}
	for i := range rounds {
		if rounds[i], _, err = r.serveRound(ctx, p, clients, i, r.rounds[i]); err != nil {
			return rounds, 0, err
		}
	}
	if rss, err = PeakRSS(p.Pid()); err != nil {
		return rounds, 0, err
	}
	return rounds, rss, p.Stop()
}

// serveRound sends round, the snapshots of round i or the first of them,
// to serve p through clients, whose gates a boat's process keeps from
// round to round, from fresh connections, and checks that serve activated
// every snapshot. It returns the round and its span.
func (r *run) serveRound(ctx context.Context, p *Process, clients Clients, i int, round []Snapshot) (Round, Window, error) {
	defer clients.CloseIdle()
	cpu0, err := CPUTime(p.Pid())
	if err != nil {
		return Round{}, Window{}, err
	}
	w := Window{From: time.Now()}
	res, err := Send(ctx, clients, round, r.Senders, CheckStaged)
	w.To = time.Now()
	if err != nil {
		return Round{}, w, fmt.Errorf("serve round %d: %w; its log:\n%s", i+1, err, p.Log())
	}
	cpu1, err := CPUTime(p.Pid())
	if err != nil {
		return Round{}, w, err
	}
	want := float64(len(round) * (i + 1))
	if got, err := metric(ctx, "http://"+p.Admin+"/metrics", `sourcecatalog_finalize_total{outcome="activated"}`); err != nil || got != want {
		return Round{}, w, fmt.Errorf("fleetload: serve round %d: %v snapshots activated, want %v: %v", i+1, got, want, err)
	}
	return Round{Result: res, CPU: cpu1 - cpu0}, w, nil
}

// straced runs serve's two rounds, or their first StraceVessels
// snapshots, under strace and returns the fsyncs per message of each.
func (r *run) straced(ctx context.Context) ([]float64, error) {
	args, err := r.serveArgs(ctx)
	if err != nil {
		return nil, err
	}
	log := filepath.Join(r.Dir, "strace.log")
	p, err := Start(r.Strace, StraceArgs(log, r.Serve, args...), StartOptions{Admin: true, Traced: true})
	if err != nil {
		return nil, err
	}
	defer p.Kill()
	clients, err := NewClients("https://"+p.Addr+"/", r.roots, r.fleet, true)
	if err != nil {
		return nil, err
	}
	var windows []Window
	var messages []int
	for i, round := range r.rounds {
		if r.StraceVessels > 0 {
			round = round[:min(r.StraceVessels, len(round))]
		}
		_, w, err := r.serveRound(ctx, p, clients, i, round)
		if err != nil {
			return nil, err
		}
		windows, messages = append(windows, w), append(messages, Messages(round))
	}
	if err := p.Stop(); err != nil {
		return nil, err
	}
	f, err := os.Open(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	counts, err := CountSyncs(f, windows)
	if err != nil {
		return nil, err
	}
	perMessage := make([]float64, len(counts))
	for i, n := range counts {
		perMessage[i] = float64(n) / float64(messages[i])
	}
	return perMessage, nil
}

// metric returns the value of series in the Prometheus text at url.
func metric(ctx context.Context, url, series string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return 0, err
	}
	return metricValue(body, series)
}

// metricValue returns the value of the sample of series (name and
// labels, exactly as written) in Prometheus text.
func metricValue(text []byte, series string) (float64, error) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte(series+" ")); ok {
			return strconv.ParseFloat(string(v), 64)
		}
	}
	return 0, fmt.Errorf("no sample of %s", series)
}
